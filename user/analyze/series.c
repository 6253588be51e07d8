// SPDX-License-Identifier: MIT
/* Reader for pmetrics' own memory series (memory_series_data): CSV in the
 * context layout (bare fields, command quoted when needed, "\n") or the
 * activity layout (every field quoted, "\r\n"). A record may span lines
 * when a quoted command holds a newline. */
#include "readers.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

enum csv_state { FIELD_START, UNQUOTED, QUOTED, QUOTE_IN_QUOTED };

static const char *const series_col_names[SERIES_COLS] = {
	"query_time", "system_uptime_hrs", "system_avail_mem_mb", "command", "mem_rss_mb",
};

static void default_columns(struct series_reader *r)
{
	int i;

	for (i = 0; i < SERIES_COLS; i++)
		r->col[i] = i;
	r->n_cols = SERIES_COLS;
}

int series_reader_init(struct series_reader *r, struct analysis *a, const char *source)
{
	memset(r, 0, sizeof(*r));
	r->a = a;
	r->source = source;
	r->rec_cap = 4096; /* grows to ANALYZE_RECORD_MAX for long records */
	r->rec = malloc(r->rec_cap);
	if (!r->rec)
		return -1;
	r->version = analysis_version(a, ANALYZE_CAPTURE_VERSION,
				      strlen(ANALYZE_CAPTURE_VERSION));
	r->line = 1;
	r->rec_line = 1;
	default_columns(r);
	return 0;
}

void series_reader_destroy(struct series_reader *r)
{
	free(r->rec);
	r->rec = NULL;
	jsparse_buf_free(&r->fixed);
}

static const char *field_ptr(const struct series_reader *r, int i, size_t *len)
{
	size_t start = r->field_start[i];
	size_t end = i + 1 < r->n_fields ? r->field_start[i + 1] : r->rec_len;

	*len = end - start;
	return r->rec + start;
}

static int field_is(const struct series_reader *r, int i, const char *s)
{
	size_t len;
	const char *p = field_ptr(r, i, &len);

	return len == strlen(s) && memcmp(p, s, len) == 0;
}

/* Our own files hold plain decimals: the whole field must be one. */
static double strict_number(const char *p, size_t len)
{
	char buf[64], *end;
	double v;

	if (len == 0 || len >= sizeof(buf))
		return NAN;
	memcpy(buf, p, len);
	buf[len] = '\0';
	errno = 0;
	v = strtod(buf, &end);
	if (*end != '\0' || end == buf)
		return NAN;
	return v;
}

/* Returns 1 when the record is a header row, which sets the columns. */
static int take_header(struct series_reader *r)
{
	int i, c, found = 0, max = 0;

	if (!field_is(r, 0, "query_time"))
		return 0;
	for (c = 0; c < SERIES_COLS; c++)
		r->col[c] = -1;
	for (i = 0; i < r->n_fields; i++)
		for (c = 0; c < SERIES_COLS; c++)
			if (field_is(r, i, series_col_names[c]) && r->col[c] < 0) {
				r->col[c] = i;
				found++;
				if (i + 1 > max)
					max = i + 1;
			}
	if (r->col[COL_UPTIME] < 0 || r->col[COL_AVAIL] < 0 || r->col[COL_COMMAND] < 0 ||
	    r->col[COL_RSS] < 0) {
		default_columns(r); /* not ours; keep the documented order */
		return 1;
	}
	(void)found;
	r->n_cols = max;
	return 1;
}

size_t series_process_name(const char *cmd, size_t len, char *out)
{
	size_t i = 0, chars = 0;

	while (i < len && chars < 100) {
		unsigned char c = (unsigned char)cmd[i];
		size_t step = c < 0x80 ? 1 : c >= 0xf0 ? 4 : c >= 0xe0 ? 3 : c >= 0xc0 ? 2 : 1;

		if (i + step > len)
			step = len - i;
		i += step;
		chars++;
	}
	memcpy(out, cmd, i);
	if (i < len) {
		memcpy(out + i, "...", 3);
		return i + 3;
	}
	return i;
}

static void take_system_row(struct series_reader *r, double uptime)
{
	size_t len;
	const char *p = field_ptr(r, r->col[COL_AVAIL], &len);
	double avail = strict_number(p, len);

	r->last_uptime = uptime;
	r->have_uptime = 1;
	if (isfinite(avail))
		analysis_add_system(r->a, (size_t)r->version, uptime, avail);
	else
		r->a->values_skipped++;
}

static void take_process_row(struct series_reader *r, double uptime)
{
	char name[4 * 100 + 4];
	size_t len, cmd_len, name_len;
	const char *cmd = field_ptr(r, r->col[COL_COMMAND], &cmd_len);
	const char *p = field_ptr(r, r->col[COL_RSS], &len);
	double mb = strict_number(p, len);
	long key;

	/* Names are keys as upstream would see them: decoded like Node does,
	 * so two commands that differ only in invalid bytes are one key. */
	if (utf8_repair(cmd, cmd_len, &r->fixed)) {
		cmd = r->fixed.s;
		cmd_len = r->fixed.len;
	}
	name_len = series_process_name(cmd, cmd_len, name);
	key = analysis_resolve_name(r->a, name, name_len);
	if (key < 0) {
		r->a->processes_dropped++;
		return;
	}
	if (!isfinite(mb)) {
		r->a->values_skipped++;
		return;
	}
	analysis_add_process(r->a, (size_t)r->version, key, uptime, mb);
}

static void take_row(struct series_reader *r)
{
	size_t len, cmd_len, rss_len;
	const char *p;
	double uptime;

	if (r->n_fields < r->n_cols) {
		analysis_skip(r->a, r->source, r->rec_line, SKIP_MALFORMED);
		return;
	}
	if (r->version < 0) {
		r->a->left_out[LEFT_OTHER_VERSION]++;
		return;
	}
	r->a->versions[r->version].has_reports = 1;
	field_ptr(r, r->col[COL_COMMAND], &cmd_len);
	field_ptr(r, r->col[COL_RSS], &rss_len);
	p = field_ptr(r, r->col[COL_UPTIME], &len);
	uptime = strict_number(p, len);
	if (cmd_len == 0 && rss_len == 0) {
		if (!isfinite(uptime)) {
			analysis_skip(r->a, r->source, r->rec_line, SKIP_BAD_UPTIME);
			return;
		}
		r->a->records_used++;
		take_system_row(r, uptime);
		return;
	}
	/* A process row may leave the uptime to its poll's system row. */
	if (len == 0 && r->have_uptime)
		uptime = r->last_uptime;
	if (!isfinite(uptime)) {
		analysis_skip(r->a, r->source, r->rec_line, SKIP_BAD_UPTIME);
		return;
	}
	r->a->records_used++;
	take_process_row(r, uptime);
}

static void end_record(struct series_reader *r)
{
	int first = !r->seen_record;
	size_t len;

	if (r->n_fields == 1 && (field_ptr(r, 0, &len), len == 0) && !r->bad) {
		/* blank line */
	} else {
		r->seen_record = 1;
		r->a->lines++;
		if (r->too_long)
			analysis_skip(r->a, r->source, r->rec_line, SKIP_TOO_LONG);
		else if (r->bad)
			analysis_skip(r->a, r->source, r->rec_line, SKIP_MALFORMED);
		else if (!(first && take_header(r)))
			take_row(r);
	}
	r->rec_len = 0;
	r->n_fields = 0;
	r->bad = r->too_long = 0;
	r->state = FIELD_START;
	r->rec_line = r->line;
}

static void begin_field(struct series_reader *r)
{
	if (r->n_fields == SERIES_MAX_FIELDS) {
		r->bad = 1;
		return;
	}
	r->field_start[r->n_fields++] = r->rec_len;
}

static void put_byte(struct series_reader *r, char c)
{
	if (r->n_fields == 0)
		begin_field(r);
	if (r->rec_len == r->rec_cap) {
		char *p = r->rec_cap < ANALYZE_RECORD_MAX ? realloc(r->rec, r->rec_cap * 2) : NULL;

		if (!p) {
			r->too_long = 1;
			return;
		}
		r->rec = p;
		r->rec_cap *= 2;
	}
	if (!r->bad || r->n_fields < SERIES_MAX_FIELDS)
		r->rec[r->rec_len++] = c;
}

static void feed_byte(struct series_reader *r, char c)
{
	if (c == '\n')
		r->line++;
	switch (r->state) {
	case FIELD_START:
	case UNQUOTED:
		if (r->n_fields == 0)
			begin_field(r);
		if (c == ',') {
			begin_field(r);
			r->state = FIELD_START;
		} else if (c == '\n') {
			end_record(r);
		} else if (c == '\r') {
			/* part of "\r\n" */
		} else if (c == '"' && r->state == FIELD_START) {
			r->state = QUOTED;
		} else {
			put_byte(r, c);
			r->state = UNQUOTED;
		}
		break;
	case QUOTED:
		if (c == '"')
			r->state = QUOTE_IN_QUOTED;
		else
			put_byte(r, c);
		break;
	case QUOTE_IN_QUOTED:
		if (c == '"') {
			put_byte(r, '"');
			r->state = QUOTED;
		} else if (c == ',') {
			begin_field(r);
			r->state = FIELD_START;
		} else if (c == '\n') {
			end_record(r);
		} else if (c != '\r') {
			r->bad = 1; /* text after a closing quote */
			r->state = UNQUOTED;
		}
		break;
	}
}

void series_feed(struct series_reader *r, const char *buf, size_t len)
{
	size_t i;

	for (i = 0; i < len; i++)
		feed_byte(r, buf[i]);
}

void series_finish(struct series_reader *r)
{
	if (r->state == QUOTED)
		r->bad = 1; /* the file ends inside a quoted field */
	if (r->n_fields > 0 || r->rec_len > 0)
		end_record(r);
}

int series_set_header(struct series_reader *r, const char *line, size_t len)
{
	struct series_reader tmp;
	size_t i;

	if (series_reader_init(&tmp, r->a, r->source))
		return -1;
	tmp.version = -1;
	for (i = 0; i < len && line[i] != '\n'; i++)
		feed_byte(&tmp, line[i]);
	if (tmp.n_fields > 0 && take_header(&tmp)) {
		memcpy(r->col, tmp.col, sizeof(r->col));
		r->n_cols = tmp.n_cols;
	}
	series_reader_destroy(&tmp);
	return 0;
}
