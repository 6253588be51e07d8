// SPDX-License-Identifier: MIT
/* Opens analyze's inputs (files, gzip or not, stdin, capture directories)
 * and pushes their bytes into the matching reader. */
#include "readers.h"

#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
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

/* Hands decoded bytes to the reader their first ones choose; -2 when
 * that reader cannot start, -3 when they are binary data (pump()'s
 * codes). */
static int deliver(struct input *in, const char *buf, size_t len)
{
	size_t skip = 0;

	if (in->kind == KIND_UNKNOWN) {
		/* NULs a crash left where the file began are no clue, and
		 * no line: passed over */
		while (len && !*buf)
			buf++, len--;
		if (!len)
			return 0;
		enum input_kind k = sniff(buf, len, &skip);

		/* Neither format holds a NUL byte in its first line: a binary
		 * file was named (one damaged line later is only skipped). */
		const char *eol = memchr(buf, '\n', len);
		if (memchr(buf, '\0', eol ? (size_t)(eol - buf) : len))
			return -3;

		if (k == KIND_UNKNOWN)
			return 0; /* only white space so far */
		if (start_reader(in, k))
			return -2;
	}
	push(in, buf + skip, len - skip);
	return 0;
}

static ssize_t read_some(int fd, void *buf, size_t len)
{
	ssize_t n;

	do
		n = read(fd, buf, len);
	while (n < 0 && errno == EINTR);
	return n;
}

/* A gzip stream, member after member, decoded by hand with inflate()
 * rather than gzread(): gzread() drops every byte of a read that ends in
 * an error, so a bad checksum at a file's end lost the last megabyte of
 * lines decoded before it. Bytes after a member that start no other are
 * ignored, as gzip(1) does. */
static int pump_gzip(struct input *in, int fd, unsigned char *ibuf, size_t have, char *obuf,
		     const char **why)
{
	z_stream zs = { 0 };
	int zrc = Z_OK, rc = 0;
	bool eof = false, out_full = false;

	if (inflateInit2(&zs, 16 + MAX_WBITS) != Z_OK) {
		*why = "out of memory";
		return -1;
	}
	zs.next_in = ibuf;
	zs.avail_in = (uInt)have;
	for (;;) {
		if (zs.avail_in == 0 && !eof) {
			ssize_t n = read_some(fd, ibuf, CHUNK);

			if (n < 0) {
				*why = strerror(errno);
				rc = -1;
				break;
			}
			eof = n == 0;
			zs.next_in = ibuf;
			zs.avail_in = (uInt)n;
		}
		if (zs.avail_in == 0 && eof && !out_full) {
			if (zrc != Z_STREAM_END) {
				*why = "gzip stream ends mid-way";
				rc = -1;
			}
			break;
		}
		if (zrc == Z_STREAM_END) {
			/* a member ended: another may follow, once input is here */
			if (zs.avail_in == 0) {
				if (eof)
					break;
				continue;
			}
			if (zs.next_in[0] != 0x1f)
				break;
			inflateReset(&zs);
		}
		zs.next_out = (unsigned char *)obuf;
		zs.avail_out = CHUNK;
		zrc = inflate(&zs, Z_NO_FLUSH);
		out_full = zs.avail_out == 0;
		if (CHUNK - zs.avail_out && (rc = deliver(in, obuf, CHUNK - zs.avail_out)) != 0)
			break;
		if (zrc == Z_DATA_ERROR || zrc == Z_MEM_ERROR || zrc == Z_NEED_DICT) {
			*why = zs.msg ? zs.msg : "corrupt data";
			rc = -1;
			break;
		}
	}
	inflateEnd(&zs);
	return rc;
}

/* Reads the whole stream, plain or gzip; returns 0, -1 when it was cut
 * short (*why says how), -2 when its reader could not start, or -3 when
 * it holds binary data. */
static int pump(struct input *in, int fd, unsigned char *ibuf, char *obuf, const char **why)
{
	size_t have = 0;
	ssize_t n = 1;

	while (have < 2 && (n = read_some(fd, ibuf + have, CHUNK - have)) > 0)
		have += (size_t)n;
	if (n < 0) {
		*why = strerror(errno);
		return -1;
	}
	if (have >= 2 && ibuf[0] == 0x1f && ibuf[1] == 0x8b)
		return pump_gzip(in, fd, ibuf, have, obuf, why);
	while (have > 0) {
		int rc = deliver(in, (const char *)ibuf, have);

		if (rc)
			return rc;
		n = read_some(fd, ibuf, CHUNK);
		if (n < 0) {
			*why = strerror(errno);
			return -1;
		}
		have = (size_t)n;
	}
	return 0;
}

int analyze_read_input(struct analysis *a, const char *arg)
{
	struct input in = { .a = a, .source = strcmp(arg, "-") ? arg : "<stdin>" };
	char *path, *header, *obuf;
	unsigned char *ibuf;
	const char *why = NULL;
	int fd, rc;

	if (resolve_path(a, arg, &path, &header))
		return -1;
	if (path)
		in.source = path; /* a capture directory's series file, by name */
	in.header_path = header;
	fd = path ? open(path, O_RDONLY | O_CLOEXEC) : STDIN_FILENO;
	if (fd < 0) {
		fail(a, "pmetrics: analyze: cannot open %s: %s\n", path, strerror(errno));
		free(path);
		free(header);
		return -1;
	}
	ibuf = malloc(CHUNK);
	obuf = malloc(CHUNK);
	rc = ibuf && obuf ? pump(&in, fd, ibuf, obuf, &why) : -4;
	if (rc == -1) {
		fprintf(stderr, "pmetrics: analyze: %s: read stopped early (%s): the file is truncated or corrupt; the lines before that point were used\n",
			in.source, why);
		a->input_errors++;
	}
	if (in.kind == KIND_UNKNOWN && rc == 0)
		fprintf(stderr, "pmetrics: analyze: %s is empty\n", in.source);
	if (rc == -3)
		fail(a, "pmetrics: analyze: %s holds binary data, not JSON lines nor a memory "
		     "series: %s\n", in.source, "give an export (JSON lines, plain or gzip) or a "
		     "capture directory");
	if (rc == -4)
		fail(a, "pmetrics: analyze: %s: %s\n", in.source, "out of memory");
	finish(&in);
	if (path)
		close(fd);
	free(ibuf);
	free(obuf);
	free(path); /* in.source may be it: no message after this */
	free(header);
	return rc == 0 ? 0 : -1;
}
