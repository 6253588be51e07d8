// SPDX-License-Identifier: MIT
/* Input readers of pmetrics analyze. Both are push parsers: feed them
 * bytes in chunks of any size, then call *_finish, so a file, a gzip
 * stream, stdin and a fuzzer's buffer all go through the same code. */
#ifndef PMETRICS_ANALYZE_READERS_H
#define PMETRICS_ANALYZE_READERS_H

#include <stddef.h>
#include <stdint.h>

#include "event.h"
#include "jsparse.h"
#include "model.h"

/* Longest line (JSON) or record (CSV) accepted; longer ones are skipped
 * and counted, so one runaway line cannot exhaust memory. */
#define ANALYZE_LINE_MAX (16u << 20)
#define ANALYZE_RECORD_MAX (1u << 20)
#define SERIES_MAX_FIELDS 16

/* ---- JSON lines of resourceMonitorReport events ------------------------ */
struct json_tokener;

struct jsonl_simd;

struct jsonl_reader {
	struct analysis *a;
	const char *source;
	struct json_tokener *tok;
	struct jsonl_simd *simd; /* NULL: json-c only */
	struct raw_event event;  /* the current line's fields, for event_take */
	struct jsparse_buf fixed; /* the line json-c reads, when rewritten */
	char *line;            /* a line split across chunks */
	size_t len, cap;
	int too_long;
	uint64_t lineno;
	uint64_t fast_lines;   /* lines simdjson parsed (the rest went to json-c) */
};

int jsonl_reader_init(struct jsonl_reader *r, struct analysis *a, const char *source);
void jsonl_feed(struct jsonl_reader *r, const char *buf, size_t len);
void jsonl_finish(struct jsonl_reader *r);
void jsonl_reader_destroy(struct jsonl_reader *r);
/* One line without its newline (exposed for the unit tests). */
void jsonl_process_line(struct jsonl_reader *r, const char *line, size_t len);
/* Drops the simdjson fast path: every line through json-c (tests, fuzzing). */
void jsonl_reader_json_c_only(struct jsonl_reader *r);

/* simdjson fast path (jsonl_simdjson.cpp, built when libsimdjson-dev is
 * installed: PM_HAVE_SIMDJSON). jsonl_simd_line returns 0 when it parsed
 * the line and handed its fields to event_take, -1 when simdjson refused
 * it and json-c must decide. */
struct jsonl_simd *jsonl_simd_new(void);
void jsonl_simd_free(struct jsonl_simd *s);
int jsonl_simd_line(struct jsonl_simd *s, struct jsonl_reader *r, const char *line, size_t len);

/* ---- pmetrics' memory series (memory_series_data) ---------------------- */
enum series_col { COL_QUERY_TIME, COL_UPTIME, COL_AVAIL, COL_COMMAND, COL_RSS, SERIES_COLS };

struct series_reader {
	struct analysis *a;
	const char *source;
	long version;          /* index of "capture", -1 when not wanted */
	int col[SERIES_COLS];  /* field index of each column */
	int n_cols;            /* fields a row must have */
	int seen_record;
	/* CSV state */
	int state;
	char *rec;
	size_t rec_len, rec_cap;
	size_t field_start[SERIES_MAX_FIELDS];
	int n_fields;
	int bad, too_long;
	uint64_t line, rec_line;
	double last_uptime;
	int have_uptime;
	struct jsparse_buf fixed; /* a command with invalid UTF-8, repaired */
};

int series_reader_init(struct series_reader *r, struct analysis *a, const char *source);
/* Column order from a header line (the _headers file); the default is
 * query_time,system_uptime_hrs,system_avail_mem_mb,command,mem_rss_mb. */
int series_set_header(struct series_reader *r, const char *line, size_t len);
void series_feed(struct series_reader *r, const char *buf, size_t len);
void series_finish(struct series_reader *r);
void series_reader_destroy(struct series_reader *r);

/* The process name as the ODD reports it: cut to 100 characters plus
 * "..." when longer. Writes into out (>= 4 * 100 + 4 bytes). */
size_t series_process_name(const char *cmd, size_t len, char *out);

/* ---- files --------------------------------------------------------------- */
/* Reads ARG: "-" for stdin, a capture directory (its memory_series_data),
 * or a file, plain or gzip; the format is told by the first byte ('{' is
 * JSON lines). Returns 0, or -1 after printing why (also counted in
 * a->input_errors). */
int analyze_read_input(struct analysis *a, const char *arg);

/* The file ARG's data is read from: ARG itself, or for a capture
 * directory its memory_series_data. Written into PATH (SIZE bytes);
 * returns 1 for a directory, 0 for a file, -1 when ARG cannot be
 * stat'ed (errno set). */
int analyze_input_path(const char *arg, char *path, size_t size);

#endif
