// SPDX-License-Identifier: MIT
/* CSV files read back; see csv_reader.h. */
#include "csv_reader.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static int open_in_dir(const char *dir, const char *name, const char *path, int *fd_out,
		       char *err, size_t errlen)
{
	int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC), fd;
	struct stat st;

	if (dfd < 0) {
		snprintf(err, errlen, "cannot open directory %s: %s", dir, strerror(errno));
		return -1;
	}
	fd = openat(dfd, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
	int saved = errno;
	close(dfd);
	if (fd < 0 && saved == ENOENT)
		return 1;
	if (fd < 0) {
		snprintf(err, errlen, "cannot read %s: %s", path,
			 saved == ELOOP ? "it is a symbolic link" : strerror(saved));
		return -1;
	}
	if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
		snprintf(err, errlen, "cannot read %s: not a regular file", path);
		close(fd);
		return -1;
	}
	*fd_out = fd;
	return 0;
}

static int read_all(int fd, struct csv_data *d, char *err, size_t errlen)
{
	size_t cap = 65536;

	d->buf = malloc(cap + 1);
	for (;;) {
		if (!d->buf) {
			snprintf(err, errlen, "out of memory reading %s", d->path);
			return -1;
		}
		ssize_t n = read(fd, d->buf + d->len, cap - d->len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			snprintf(err, errlen, "cannot read %s: %s", d->path, strerror(errno));
			return -1;
		}
		if (n == 0)
			break;
		d->len += (size_t)n;
		if (d->len == cap) {
			char *b = realloc(d->buf, cap * 2 + 1);
			if (!b)
				free(d->buf);
			d->buf = b;
			cap *= 2;
		}
	}
	d->buf[d->len] = '\0';
	return 0;
}

/* Leaves out a last row with no line end (outside quotes). */
static void cut_torn_tail(struct csv_data *d)
{
	size_t whole = 0;
	int quoted = 0;

	for (size_t i = 0; i < d->len; i++) {
		if (d->buf[i] == '"')
			quoted = !quoted;
		else if (d->buf[i] == '\n' && !quoted)
			whole = i + 1;
	}
	d->torn_bytes = d->len - whole;
	d->len = whole;
	d->buf[whole] = '\0';
}

int csv_data_load(const char *dir, const char *name, struct csv_data *d, char *err, size_t errlen)
{
	int fd = -1, rc;

	memset(d, 0, sizeof(*d));
	d->line = 1;
	snprintf(d->path, sizeof(d->path), "%s/%s", dir, name);
	rc = open_in_dir(dir, name, d->path, &fd, err, errlen);
	if (rc)
		return rc;
	rc = read_all(fd, d, err, errlen);
	close(fd);
	if (rc) {
		csv_data_free(d);
		return -1;
	}
	cut_torn_tail(d);
	return 0;
}

int csv_data_next(struct csv_data *d, struct csv_record *rec)
{
	char *p, *out, *end = d->buf + d->len;
	int quoted = 0;

	if (!d->buf || d->pos >= d->len)
		return 0;
	p = out = d->buf + d->pos;
	rec->line = d->line;
	rec->n = 1;
	rec->field[0] = out;
	/* Unquotes in place: the output never overtakes the input. */
	for (; p < end; p++) {
		char c = *p;
		if (quoted) {
			if (c == '"' && p + 1 < end && p[1] == '"') {
				*out++ = '"';
				p++;
			} else if (c == '"') {
				quoted = 0;
			} else {
				d->line += c == '\n';
				*out++ = c;
			}
		} else if (c == '"') {
			quoted = 1;
		} else if (c == ',' && rec->n < CSV_READ_MAX_FIELDS) {
			rec->len[rec->n - 1] = (size_t)(out - rec->field[rec->n - 1]);
			*out++ = '\0';
			rec->field[rec->n++] = out;
		} else if (c == '\n') {
			break;
		} else {
			*out++ = c;
		}
	}
	/* "\r\n" ends a row of the activity layout. */
	if (out > rec->field[rec->n - 1] && out[-1] == '\r' && p < end)
		out--;
	rec->len[rec->n - 1] = (size_t)(out - rec->field[rec->n - 1]);
	*out = '\0';
	d->pos = (size_t)(p - d->buf) + 1;
	d->line++;
	return 1;
}

void csv_data_free(struct csv_data *d)
{
	free(d->buf);
	d->buf = NULL;
	d->len = d->pos = 0;
}
