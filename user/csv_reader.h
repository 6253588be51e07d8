/* SPDX-License-Identifier: MIT */
/* Reading back the CSV files pmetrics writes (csv_writer.h), in either
 * layout: fields quoted the way Python's csv module quotes them, rows
 * ended by "\n" or "\r\n", a quoted field may hold line breaks.
 *
 * A file is read whole into memory and split in place. Its last row is
 * only taken when it ends with a line end: a row without one was torn
 * (a writer killed mid-row, a crash) and is cut back, counted in
 * torn_bytes. The file is opened inside its directory without following
 * a symlink or blocking on a FIFO, and must be a regular file: a capture
 * directory others can write to cannot point the reader elsewhere. */
#ifndef PMETRICS_CSV_READER_H
#define PMETRICS_CSV_READER_H

#include <stdbool.h>
#include <stddef.h>

#define CSV_READ_MAX_FIELDS 32

struct csv_data {
	char *buf;
	size_t len;        /* the whole rows */
	size_t pos;
	size_t line;       /* line number of the next row (1-based) */
	size_t torn_bytes; /* bytes of a torn last row left out */
	char path[4352];   /* DIR/NAME, for messages */
};

struct csv_record {
	size_t line;   /* where the row starts */
	int n;         /* fields (more than CSV_READ_MAX_FIELDS: the rest joined into the last) */
	char *field[CSV_READ_MAX_FIELDS];
	size_t len[CSV_READ_MAX_FIELDS];
};

/* Reads DIR/NAME. Returns 0, 1 when the file does not exist (D is then
 * empty), or -1 with a one-line reason in err. */
int csv_data_load(const char *dir, const char *name, struct csv_data *d, char *err, size_t errlen);
/* The next row, fields unquoted and NUL-terminated in place. Returns 1,
 * or 0 at the end. A blank line is a row of one empty field. */
int csv_data_next(struct csv_data *d, struct csv_record *rec);
void csv_data_free(struct csv_data *d);

#endif
