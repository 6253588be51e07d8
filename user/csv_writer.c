// SPDX-License-Identifier: MIT
/* CSV rows and files in the robot's two layouts; see csv_writer.h. */
#include "csv_writer.h"
#include "output_dir.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

int csv_layout_parse(const char *name, enum csv_layout *out)
{
	if (strcmp(name, "context") == 0)
		*out = CSV_LAYOUT_CONTEXT;
	else if (strcmp(name, "activity") == 0)
		*out = CSV_LAYOUT_ACTIVITY;
	else
		return -1;
	return 0;
}

static void row_put(struct csv_row *row, const char *s, size_t n)
{
	if (row->len + n >= sizeof(row->buf)) {
		row->overflow = true;
		return;
	}
	memcpy(row->buf + row->len, s, n);
	row->len += n;
}

static void row_sep(struct csv_row *row)
{
	if (row->fields++ > 0)
		row_put(row, ",", 1);
}

void csv_row_begin(struct csv_row *row, enum csv_layout layout)
{
	row->layout = layout;
	row->len = 0;
	row->fields = 0;
	row->overflow = false;
}

/* The one rule for every field, Python's csv module's (QUOTE_MINIMAL,
 * doubled quotes): a field holding ',', '"', CR or LF is quoted, so a
 * process name or a command line can never end a row or add a field. The
 * activity layout quotes every field, as upstream writes it. */
void csv_row_str(struct csv_row *row, const char *s)
{
	bool quote = row->layout == CSV_LAYOUT_ACTIVITY || s[strcspn(s, ",\"\r\n")] != '\0';

	row_sep(row);
	if (!quote) {
		row_put(row, s, strlen(s));
		return;
	}
	row_put(row, "\"", 1);
	for (const char *q; (q = strchr(s, '"')); s = q + 1) {
		row_put(row, s, (size_t)(q - s) + 1);
		row_put(row, "\"", 1);
	}
	row_put(row, s, strlen(s));
	row_put(row, "\"", 1);
}

void csv_row_u64(struct csv_row *row, uint64_t v)
{
	char num[24];

	snprintf(num, sizeof(num), "%" PRIu64, v);
	csv_row_str(row, num);
}

/* Python's repr(float): the shortest %.Ne that reads back exactly, then
 * fixed notation when the decimal exponent is in [-4, 16), else
 * scientific with at least two exponent digits. */
void format_pyfloat(char *buf, size_t size, double v)
{
	char sci[40], digits[24];
	int prec, exp10, nd = 0;

	if (isnan(v)) {
		snprintf(buf, size, "nan");
		return;
	}
	if (isinf(v)) {
		snprintf(buf, size, v < 0 ? "-inf" : "inf");
		return;
	}
	for (prec = 0; prec < 17; prec++) {
		snprintf(sci, sizeof(sci), "%.*e", prec, v);
		if (strtod(sci, NULL) == v)
			break;
	}
	/* sci is [-]d[.ddd]e[+-]XX: collect the digits and the exponent. */
	const char *p = sci + (sci[0] == '-');
	for (; *p && *p != 'e'; p++)
		if (*p != '.')
			digits[nd++] = *p;
	digits[nd] = '\0';
	exp10 = atoi(p + 1);
	while (nd > 1 && digits[nd - 1] == '0')
		digits[--nd] = '\0';

	char *o = buf, *end = buf + size - 1;
#define PUT(c) do { if (o < end) *o++ = (c); } while (0)
	if (signbit(v))
		PUT('-');
	if (exp10 < -4 || exp10 >= 16) {
		PUT(digits[0]);
		if (nd > 1) {
			PUT('.');
			for (int i = 1; i < nd; i++)
				PUT(digits[i]);
		}
		o += snprintf(o, (size_t)(end - o) + 1, "e%c%02d",
			      exp10 < 0 ? '-' : '+', abs(exp10));
		if (o > end)
			o = end;
	} else if (exp10 < 0) {
		PUT('0');
		PUT('.');
		for (int i = 0; i < -exp10 - 1; i++)
			PUT('0');
		for (int i = 0; i < nd; i++)
			PUT(digits[i]);
	} else {
		for (int i = 0; i <= exp10; i++)
			PUT(i < nd ? digits[i] : '0');
		PUT('.');
		if (nd <= exp10 + 1)
			PUT('0');
		for (int i = exp10 + 1; i < nd; i++)
			PUT(digits[i]);
	}
#undef PUT
	*o = '\0';
}

void csv_row_pyfloat(struct csv_row *row, double v)
{
	char num[40];

	format_pyfloat(num, sizeof(num), v);
	csv_row_str(row, num);
}

int csv_row_end(struct csv_row *row)
{
	if (row->layout == CSV_LAYOUT_ACTIVITY)
		row_put(row, "\r\n", 2);
	else
		row_put(row, "\n", 1);
	return row->overflow ? -1 : (int)row->len;
}

/* ---- files -------------------------------------------------------- */

#define CSV_QUEUE_SIZE (256 * 1024)

struct csv_file {
	struct output_dir *dir;
	int fd;
	char name[NAME_MAX + 1];   /* the data file, in dir */
	char path[PATH_MAX + 256]; /* DIR/NAME, for messages */
	size_t queued;
	uint64_t queued_rows;
	uint64_t rows_written;
	uint64_t dropped;
	int error; /* first write error; later rows are dropped */
	bool created_data, created_header;
	struct stat header_id; /* the header file we wrote */
	char queue[CSV_QUEUE_SIZE];
};

static void header_name(const struct csv_file *f, char *buf, size_t size)
{
	snprintf(buf, size, "%s_headers", f->name);
}

static int write_header(struct csv_file *f, const char *const *header, int n_header,
			char *err, size_t errlen)
{
	char name[NAME_MAX + 16];
	struct csv_row row;

	/* formats.md gives the header line bare in both layouts, and
	 * upstream writes it without a line end. */
	csv_row_begin(&row, CSV_LAYOUT_CONTEXT);
	for (int i = 0; i < n_header; i++)
		csv_row_str(&row, header[i]);
	header_name(f, name, sizeof(name));
	return output_dir_replace(f->dir, name, row.buf, row.len, &f->created_header,
				  &f->header_id, err, errlen);
}

/* How far back a torn last row is looked at: the torn row and the row
 * before it are at most CSV_ROW_MAX bytes each, and a few rows more make
 * it plain where the window starts (see quote_open_at_end()). */
#define TORN_WINDOW (8 * CSV_ROW_MAX)

/* Reads BUF[0..len) from the quote state IN (inside a quoted field or
 * not) and counts what the CSV this file holds never has: a quote
 * opening a field after something else than ',' or a row start, one
 * closing it before something else than ',', CR, LF or the end, and a
 * row (or a part of one) longer than CSV_ROW_MAX. *IN_AT_END: the state
 * after the last byte. */
static size_t layout_breaks(const char *buf, size_t len, bool in, bool *in_at_end)
{
	size_t breaks = 0, row_len = 0;

	for (size_t i = 0; i < len; i++, row_len++) {
		char c = buf[i];

		if (in && c == '"' && i + 1 < len && buf[i + 1] == '"') {
			i++; /* a doubled quote inside the field */
			row_len++;
		} else if (in && c == '"') {
			in = false;
			breaks += i + 1 < len && !strchr(",\r\n", buf[i + 1]);
		} else if (c == '"') {
			in = true;
			breaks += i > 0 && buf[i - 1] != ',' && buf[i - 1] != '\n';
		} else if (!in && c == '\n') {
			breaks += row_len > CSV_ROW_MAX;
			row_len = 0;
		}
	}
	breaks += row_len > CSV_ROW_MAX;
	*in_at_end = in;
	return breaks;
}

/* Whether the file, of which BUF[0..len) are the last bytes
 * (AT_FILE_START: all of it), ends inside a quoted field. Inside one
 * every '"' is doubled and a field's quotes pair, so that is the parity
 * of the quotes counted from a row start; a quoted field may hold line
 * breaks, so the last one is not such a start. The file's first byte
 * is; when the window does not reach it, the window's first byte may be
 * inside quotes or not, and both are tried: read from the wrong one,
 * quoted line breaks end rows and row ends are quoted, which breaks the
 * layout (layout_breaks()) in any real file, so the reading with fewer
 * breaks is taken (on a tie, outside). */
static bool quote_open_at_end(const char *buf, size_t len, bool at_file_start)
{
	bool from_outside, from_inside;
	size_t outside = layout_breaks(buf, len, false, &from_outside);

	if (at_file_start)
		return from_outside;
	return layout_breaks(buf, len, true, &from_inside) < outside ? from_inside : from_outside;
}

/* An existing file whose last line has no line end (a writer that was
 * killed, a full disk) gets one before our first row, with the quote its
 * torn row left open closed first, and stderr hears of it once. */
static int end_torn_line(struct csv_file *f, enum csv_layout layout, char *err, size_t errlen)
{
	char *tail, fix[3];
	size_t len = 0, got = 0;
	struct stat st;
	bool open_quote;
	off_t want;
	ssize_t n;

	if (fstat(f->fd, &st) != 0 || st.st_size == 0)
		return 0;
	want = st.st_size < TORN_WINDOW ? st.st_size : TORN_WINDOW;
	tail = malloc((size_t)want);
	if (!tail) {
		snprintf(err, errlen, "out of memory");
		return -1;
	}
	while (got < (size_t)want &&
	       (n = pread(f->fd, tail + got, (size_t)want - got, st.st_size - want + (off_t)got)) > 0)
		got += (size_t)n;
	if (got < (size_t)want || tail[got - 1] == '\n') {
		free(tail);
		return 0;
	}
	open_quote = quote_open_at_end(tail, got, want == st.st_size);
	if (open_quote)
		fix[len++] = '"';
	if (layout == CSV_LAYOUT_ACTIVITY && (open_quote || tail[got - 1] != '\r'))
		fix[len++] = '\r';
	fix[len++] = '\n';
	free(tail);
	errno = 0;
	if (write(f->fd, fix, len) != (ssize_t)len) {
		snprintf(err, errlen, "cannot end the torn last line of %s: %s", f->path,
			 strerror(errno ? errno : EIO));
		return -1;
	}
	fprintf(stderr, "pmetrics: %s ended in a torn line (no line end: an earlier writer "
		"stopped mid-row); new rows start on a new line\n", f->path);
	return 0;
}

struct csv_file *csv_file_open(const char *dir, const char *data_name,
			       const char *const *header, int n_header,
			       enum csv_layout layout, char *err, size_t errlen)
{
	struct csv_file *f = calloc(1, sizeof(*f));

	if (!f) {
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	f->fd = -1;
	f->dir = output_dir_open(dir, err, errlen);
	if (!f->dir) {
		free(f);
		return NULL;
	}
	snprintf(f->name, sizeof(f->name), "%s", data_name);
	output_dir_file_path(f->dir, data_name, f->path, sizeof(f->path));
	f->fd = output_dir_open_append(f->dir, data_name, &f->created_data, err, errlen);
	if (f->fd < 0 || end_torn_line(f, layout, err, errlen) ||
	    write_header(f, header, n_header, err, errlen)) {
		csv_file_discard(f);
		return NULL;
	}
	return f;
}

void csv_file_discard(struct csv_file *f)
{
	char name[NAME_MAX + 16];
	struct stat st;

	if (!f)
		return;
	/* Unlinked while still locked, so no sibling starts appending to it. */
	if (f->created_data && f->rows_written == 0 && fstat(f->fd, &st) == 0)
		output_dir_remove(f->dir, f->name, &st);
	header_name(f, name, sizeof(name));
	if (f->created_header)
		output_dir_remove(f->dir, name, &f->header_id);
	if (f->fd >= 0)
		close(f->fd);
	output_dir_discard(f->dir);
	free(f);
}

int csv_file_append(struct csv_file *f, const struct csv_row *row)
{
	int ret = 0;

	if (row->overflow) {
		f->dropped++;
		return 0;
	}
	if (f->queued + row->len > sizeof(f->queue))
		ret = csv_file_flush(f);
	if (f->error) {
		f->dropped++;
		return ret;
	}
	memcpy(f->queue + f->queued, row->buf, row->len);
	f->queued += row->len;
	f->queued_rows++;
	return ret;
}

/* Cuts the file back to SIZE so it ends on a whole row. */
static void cut_back(struct csv_file *f, off_t size)
{
	if (ftruncate(f->fd, size) != 0)
		fprintf(stderr, "pmetrics: %s: cannot remove a partial row: %s\n",
			f->path, strerror(errno));
}

/* The length of the whole rows at the start of BUF[0..len), and their
 * number in *rows. A row ends at a '\n' outside quotes: a quoted field
 * may hold line breaks. */
static size_t whole_rows(const char *buf, size_t len, uint64_t *rows)
{
	size_t whole = 0;
	bool quoted = false;

	*rows = 0;
	for (size_t i = 0; i < len; i++) {
		if (buf[i] == '"')
			quoted = !quoted;
		else if (buf[i] == '\n' && !quoted) {
			whole = i + 1;
			++*rows;
		}
	}
	return whole;
}

/* Writes the queue; returns the bytes that reached the file, with
 * f->error set when not all did (ENOSPC, EFBIG past a file size limit,
 * EIO). */
static size_t write_queue(struct csv_file *f)
{
	size_t done = 0;

	while (done < f->queued) {
		ssize_t n = write(f->fd, f->queue + done, f->queued - done);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			f->error = n < 0 ? errno : ENOSPC;
			break;
		}
		done += (size_t)n;
	}
	return done;
}

int csv_file_flush(struct csv_file *f)
{
	struct stat st;
	size_t done;

	if (f->error) {
		f->dropped += f->queued_rows;
		f->queued = f->queued_rows = 0;
		return -f->error;
	}
	if (f->queued == 0)
		return 0;
	if (fstat(f->fd, &st) != 0)
		st.st_size = -1;
	done = write_queue(f);
	if (f->error) {
		/* Keep the whole rows that made it, drop the torn tail. */
		uint64_t kept;
		size_t whole = whole_rows(f->queue, done, &kept);
		if (done > whole && st.st_size >= 0)
			cut_back(f, st.st_size + (off_t)whole);
		f->rows_written += kept;
		f->dropped += f->queued_rows - kept;
	} else {
		f->rows_written += f->queued_rows;
	}
	f->queued = f->queued_rows = 0;
	return -f->error;
}

uint64_t csv_file_rows_written(const struct csv_file *f) { return f->rows_written; }
uint64_t csv_file_dropped(const struct csv_file *f) { return f->dropped; }
const char *csv_file_path(const struct csv_file *f) { return f->path; }

int csv_file_close(struct csv_file *f)
{
	int ret;

	if (!f)
		return 0;
	ret = csv_file_flush(f);
	if (close(f->fd) != 0 && !ret)
		ret = -errno;
	output_dir_close(f->dir);
	free(f);
	return ret;
}
