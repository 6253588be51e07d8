// SPDX-License-Identifier: MIT
/* Opens analyze's inputs (files, gzip or not, stdin, capture directories)
 * and pushes their bytes into the matching reader. */
#include "readers.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#define CHUNK (1u << 20)

enum input_kind { KIND_UNKNOWN, KIND_JSONL, KIND_SERIES };

struct input {
	struct analysis *a;
	const char *source;
	enum input_kind kind;
	struct jsonl_reader jsonl;
	struct series_reader series;
	char *header_path; /* the series' _headers file */
};

static enum input_kind sniff(const char *buf, size_t len, size_t *skip)
{
	size_t i = 0;

	if (len >= 3 && memcmp(buf, "\xef\xbb\xbf", 3) == 0)
		i = 3; /* a UTF-8 byte order mark */
	*skip = i;
	/* blank lines first, as trim() sees them, are no clue */
	i += js_space_len(buf + i, len - i);
	if (i == len)
		return KIND_UNKNOWN;
	return buf[i] == '{' ? KIND_JSONL : KIND_SERIES;
}

static void read_series_header(struct input *in)
{
	char line[4096];
	FILE *f;
	size_t n;

	if (!in->header_path)
		return;
	f = fopen(in->header_path, "r");
	if (!f)
		return; /* optional: the default column order applies */
	n = fread(line, 1, sizeof(line), f);
	fclose(f);
	series_set_header(&in->series, line, n);
}

static int start_reader(struct input *in, enum input_kind kind)
{
	in->kind = kind;
	if (kind == KIND_JSONL)
		return jsonl_reader_init(&in->jsonl, in->a, in->source);
	if (series_reader_init(&in->series, in->a, in->source))
		return -1;
	read_series_header(in);
	return 0;
}

static void push(struct input *in, const char *buf, size_t len)
{
	if (in->kind == KIND_JSONL)
		jsonl_feed(&in->jsonl, buf, len);
	else
		series_feed(&in->series, buf, len);
}

static void finish(struct input *in)
{
	if (in->kind == KIND_JSONL) {
		jsonl_finish(&in->jsonl);
		jsonl_reader_destroy(&in->jsonl);
	} else if (in->kind == KIND_SERIES) {
		series_finish(&in->series);
		series_reader_destroy(&in->series);
	}
}

static int fail(struct analysis *a, const char *fmt, const char *what, const char *why)
{
	fprintf(stderr, fmt, what, why);
	a->input_errors++;
	return -1;
}

int analyze_input_path(const char *arg, char *path, size_t size)
{
	struct stat st;

	if (stat(arg, &st) != 0)
		return -1;
	if (!S_ISDIR(st.st_mode)) {
		snprintf(path, size, "%s", arg);
		return 0;
	}
	snprintf(path, size, "%s/memory_series_data", arg);
	return 1;
}

/* Resolves ARG to the file to open and its header file; a directory
 * means its series. */
static int resolve_path(struct analysis *a, const char *arg, char **path, char **header)
{
	size_t n = strlen(arg) + 40;
	int is_dir;

	*path = *header = NULL;
	if (strcmp(arg, "-") == 0)
		return 0;
	*path = malloc(n);
	*header = malloc(n + 8);
	if (!*path || !*header) {
		free(*path);
		free(*header);
		*path = *header = NULL;
		return fail(a, "pmetrics: analyze: %s: %s\n", arg, "out of memory");
	}
	is_dir = analyze_input_path(arg, *path, n);
	if (is_dir < 0 || (is_dir && access(*path, R_OK) != 0)) {
		if (is_dir < 0)
			fail(a, "pmetrics: analyze: cannot open %s: %s; check the path\n", arg,
			     strerror(errno));
		else
			fail(a, "pmetrics: analyze: %s has no readable %s; pass a capture directory written by pmetrics, or an export file\n",
			     arg, "memory_series_data");
		free(*path);
		free(*header);
		*path = *header = NULL;
		return -1;
	}
	snprintf(*header, n + 8, "%s_headers", *path);
	return 0;
}

static gzFile open_gz(struct analysis *a, const char *path)
{
	gzFile gz;

	if (!path) {
		int fd = dup(STDIN_FILENO);

		gz = fd >= 0 ? gzdopen(fd, "rb") : NULL;
		if (!gz && fd >= 0)
			close(fd);
	} else {
		gz = gzopen(path, "rb");
	}
	if (!gz)
		fail(a, "pmetrics: analyze: cannot open %s: %s\n", path ? path : "stdin",
		     errno ? strerror(errno) : "out of memory");
	else
		gzbuffer(gz, 1u << 18);
	return gz;
}

/* Reads the whole stream; returns 0, or -1 when it was cut short. */
static int pump(struct input *in, gzFile gz, char *buf)
{
	int n, errnum = Z_OK;
	size_t skip;

	while ((n = gzread(gz, buf, CHUNK)) > 0) {
		size_t off = 0;

		if (in->kind == KIND_UNKNOWN) {
			enum input_kind k = sniff(buf, (size_t)n, &skip);

			if (k == KIND_UNKNOWN)
				continue; /* only white space so far */
			if (start_reader(in, k))
				return -2;
			off = skip;
		}
		push(in, buf + off, (size_t)n - off);
	}
	if (n < 0)
		return -1;
	gzerror(gz, &errnum);
	return errnum == Z_BUF_ERROR ? -1 : 0;
}

int analyze_read_input(struct analysis *a, const char *arg)
{
	struct input in = { .a = a, .source = strcmp(arg, "-") ? arg : "<stdin>" };
	char *path, *header, *buf;
	gzFile gz;
	int rc, close_rc;

	if (resolve_path(a, arg, &path, &header))
		return -1;
	in.header_path = header;
	gz = open_gz(a, path);
	buf = malloc(CHUNK);
	if (!gz || !buf) {
		if (gz)
			gzclose_r(gz);
		free(buf);
		free(path);
		free(header);
		return gz ? fail(a, "pmetrics: analyze: %s: %s\n", in.source, "out of memory") : -1;
	}
	rc = pump(&in, gz, buf);
	if (rc == -1) {
		int errnum;
		const char *msg = gzerror(gz, &errnum);

		fprintf(stderr, "pmetrics: analyze: %s: read stopped early (%s): the file is truncated or corrupt; the lines before that point were used\n",
			in.source, errnum == Z_BUF_ERROR ? "gzip stream ends mid-way" : msg);
		a->input_errors++;
	}
	close_rc = gzclose_r(gz);
	if (rc == 0 && close_rc == Z_BUF_ERROR) {
		fprintf(stderr, "pmetrics: analyze: %s: gzip stream ends mid-way: the file is truncated; the lines before that point were used\n",
			in.source);
		a->input_errors++;
		rc = -1;
	}
	if (in.kind == KIND_UNKNOWN && rc == 0)
		fprintf(stderr, "pmetrics: analyze: %s is empty\n", in.source);
	finish(&in);
	free(buf);
	free(path);
	free(header);
	return rc == 0 ? 0 : -1;
}
