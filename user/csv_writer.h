/* SPDX-License-Identifier: MIT */
/* CSV files in the two layouts existing tooling reads (formats.md s.1-2).
 *
 * A csv_file is a data file, appended to and never truncated, plus its
 * header file holding exactly one line with no trailing newline. Rows are
 * built with csv_row_*, queued with csv_file_append, and reach the disk
 * whole on csv_file_flush: a write that fails part way (disk full, a file
 * size limit) is cut back to the last whole row, so the file never holds
 * a torn row. Files are opened through output_dir.h: no symlink followed,
 * nothing but a regular file of ours written, one writer per data file. */
#ifndef PMETRICS_CSV_WRITER_H
#define PMETRICS_CSV_WRITER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum csv_layout {
	CSV_LAYOUT_CONTEXT,  /* bare fields, "\n" */
	CSV_LAYOUT_ACTIVITY, /* every field quoted, '"' doubled, "\r\n" */
};

/* Parses "context" or "activity"; returns -1 for anything else. */
int csv_layout_parse(const char *name, enum csv_layout *out);

/* The longest row: a profile_stacks row holds a whole stack, hundreds
 * of frames with their file paths. */
#define CSV_ROW_MAX 65536

struct csv_row {
	enum csv_layout layout;
	size_t len;
	int fields;
	bool overflow;
	char buf[CSV_ROW_MAX];
};

void csv_row_begin(struct csv_row *row, enum csv_layout layout);
/* A text field, quoted as Python's csv module would (QUOTE_MINIMAL):
 * when it holds ',', '"', CR or LF in the context layout, always in the
 * activity layout; '"' doubled inside quotes. */
void csv_row_str(struct csv_row *row, const char *s);
void csv_row_u64(struct csv_row *row, uint64_t v);
/* A double in Python's repr() form: shortest string that reads back to
 * the same value ("12.34", "1720546820.17", "0.0", "1e-05"). */
void csv_row_pyfloat(struct csv_row *row, double v);
/* Ends the row; returns its length, or -1 when it did not fit. */
int csv_row_end(struct csv_row *row);

/* Writes Python repr() of v into buf (at least 32 bytes). */
void format_pyfloat(char *buf, size_t size, double v);

struct csv_file;

/* Opens DIR/DATA_NAME for appending (creating DIR and the file when
 * missing), locked against a second writer, starts a new line when its
 * last one is torn, and (re)writes DIR/DATA_NAME_headers with HEADER
 * (bare, no line end, in both layouts). On failure returns NULL with a
 * one-line reason in err, having removed what it created. */
struct csv_file *csv_file_open(const char *dir, const char *data_name,
			       const char *const *header, int n_header,
			       enum csv_layout layout, char *err, size_t errlen);
/* Queues a finished row. Returns 0, or -errno from an implicit flush. */
int csv_file_append(struct csv_file *f, const struct csv_row *row);
/* Writes queued rows. Returns 0 or -errno; on error the file holds only
 * whole rows and the unwritten rows are counted in csv_file_dropped(). */
int csv_file_flush(struct csv_file *f);
uint64_t csv_file_rows_written(const struct csv_file *f);
uint64_t csv_file_dropped(const struct csv_file *f);
const char *csv_file_path(const struct csv_file *f);
/* Closes F after a failed start: the files it created (and holding no
 * row) are removed, and the directories when this was their last user. */
void csv_file_discard(struct csv_file *f);
/* Flushes, closes and frees; returns the flush result. */
int csv_file_close(struct csv_file *f);

#endif
