// SPDX-License-Identifier: MIT
/* The few /proc reads of the resource sampler; see resource_procfs.h. */
#include "resource_procfs.h"
#include "proc_stat.h"
#include "resource_records.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define CMDLINE_MAX (64 * 1024)

/* Reads a whole small file at DIRFD/NAME into a malloc'ed NUL-terminated
 * buffer of at most MAX bytes. */
static int read_file_at(int dirfd, const char *name, size_t max, char **out, size_t *len)
{
	int fd = openat(dirfd, name, O_RDONLY | O_CLOEXEC);
	char *buf;
	size_t n = 0;

	if (fd < 0)
		return -errno;
	buf = malloc(max + 1);
	if (!buf) {
		close(fd);
		return -ENOMEM;
	}
	while (n < max) {
		ssize_t r = read(fd, buf + n, max - n);

		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0) {
			int err = -errno;

			close(fd);
			free(buf);
			return err;
		}
		if (r == 0)
			break;
		n += (size_t)r;
	}
	close(fd);
	buf[n] = '\0';
	*out = buf;
	*len = n;
	return 0;
}

/* Value of "KEY: N kB" in /proc/meminfo, in bytes. */
static int meminfo_value(const char *key, uint64_t *bytes)
{
	char *buf, *at;
	size_t len, klen = strlen(key);
	int err = read_file_at(AT_FDCWD, "/proc/meminfo", 16384, &buf, &len);

	if (err)
		return err;
	err = -ENOENT;
	for (at = buf; at && *at; at = strchr(at, '\n'), at = at ? at + 1 : NULL) {
		if (strncmp(at, key, klen) == 0 && at[klen] == ':') {
			*bytes = strtoull(at + klen + 1, NULL, 10) * 1024;
			err = 0;
			break;
		}
	}
	free(buf);
	return err;
}

int resource_read_mem_available(uint64_t *bytes)
{
	return meminfo_value("MemAvailable", bytes);
}

static int read_btime(double *out)
{
	char *buf, *at;
	size_t len;
	int err = read_file_at(AT_FDCWD, "/proc/stat", 1 << 20, &buf, &len);

	if (err)
		return err;
	at = strstr(buf, "\nbtime ");
	if (at)
		*out = (double)strtoull(at + 7, NULL, 10);
	free(buf);
	return at ? 0 : -ENOENT;
}

int resource_clock_init(struct resource_clock *c)
{
	c->clk_tck = sysconf(_SC_CLK_TCK);
	c->page_size = sysconf(_SC_PAGESIZE);
	if (c->clk_tck <= 0)
		c->clk_tck = 100;
	if (c->page_size <= 0)
		c->page_size = 4096;
	c->mem_total_bytes = 1;
	c->boot_time_s = 0;
	int err = meminfo_value("MemTotal", &c->mem_total_bytes);

	if (!err)
		err = read_btime(&c->boot_time_s);
	return err;
}

static uint64_t ns_to_ticks(long clk_tck, uint64_t ns)
{
	return ns / (1000000000ULL / (uint64_t)clk_tck);
}

double resource_start_seconds(const struct resource_clock *c, uint64_t boottime_ns)
{
	return (double)ns_to_ticks(c->clk_tck, boottime_ns) / (double)c->clk_tck +
	       c->boot_time_s;
}

double resource_ticks_seconds(const struct resource_clock *c, uint64_t ns)
{
	return (double)ns_to_ticks(c->clk_tck, ns) / (double)c->clk_tck;
}

/* a * b / c without overflowing 64 bits. */
static uint64_t scale_u64(uint64_t a, uint64_t b, uint64_t c)
{
	return (uint64_t)((unsigned __int128)a * b / c);
}

void resource_cputime_adjust(struct resource_cputime *prev,
			     const struct resource_cputime *raw,
			     struct resource_cputime *out)
{
	uint64_t rtime = raw->runtime_ns, stime, utime;

	/* Ticks can run ahead of the exact runtime between updates; the
	 * kernel then keeps the previous split. */
	if (prev->utime_ns + prev->stime_ns >= rtime) {
		*out = *prev;
		return;
	}
	if (raw->stime_ns == 0)
		stime = 0;
	else if (raw->utime_ns == 0)
		stime = rtime;
	else
		stime = scale_u64(raw->stime_ns, rtime, raw->stime_ns + raw->utime_ns);
	if (stime < prev->stime_ns)
		stime = prev->stime_ns;
	utime = rtime - stime;
	if (utime < prev->utime_ns) {
		utime = prev->utime_ns;
		stime = rtime - utime;
	}
	prev->utime_ns = out->utime_ns = utime;
	prev->stime_ns = out->stime_ns = stime;
	prev->runtime_ns = out->runtime_ns = rtime;
}

static bool is_py_space(unsigned char c)
{
	/* str.strip(): ASCII whitespace and the \x1c-\x1f separators. */
	return c == ' ' || (c >= '\t' && c <= '\r') || (c >= 0x1c && c <= 0x1f);
}

/* Appends the trimmed ARG[0..len) to OUT at *n (a space before it unless
 * it is the first argument). */
static void append_arg(const char *arg, size_t len, bool first, char *out,
		       size_t outlen, size_t *n)
{
	while (len && is_py_space((unsigned char)arg[0]))
		arg++, len--;
	while (len && is_py_space((unsigned char)arg[len - 1]))
		len--;
	if (!first && *n + 1 < outlen)
		out[(*n)++] = ' ';
	for (size_t i = 0; i < len && *n + 1 < outlen; i++)
		out[(*n)++] = arg[i];
}

void resource_format_command(const char *raw, size_t len, char *out, size_t outlen)
{
	char sep;
	size_t n = 0, start = 0, end;
	bool first = true;

	if (outlen == 0)
		return;
	out[0] = '\0';
	if (len == 0)
		return;
	sep = raw[len - 1] == '\0' ? '\0' : ' ';
	if (raw[len - 1] == sep)
		len--;
	/* One NUL-terminated argument holding spaces: split on spaces. */
	if (sep == '\0' && !memchr(raw, '\0', len) && memchr(raw, ' ', len))
		sep = ' ';
	for (end = 0; end <= len; end++) {
		if (end < len && raw[end] != sep)
			continue;
		append_arg(raw + start, end - start, first, out, outlen, &n);
		first = false;
		start = end + 1;
	}
	while (n && is_py_space((unsigned char)out[n - 1]))
		n--;
	out[n] = '\0';
	start = 0;
	while (out[start] && is_py_space((unsigned char)out[start]))
		start++;
	if (start)
		memmove(out, out + start, n - start + 1);
}

int resource_read_command(uint32_t pid, uint64_t start_boottime_ns, long clk_tck,
			  char **out)
{
	char path[32], *raw = NULL, *command = NULL;
	struct proc_stat st = { .state = '?' };
	size_t len = 0;
	int dirfd, err;

	*out = NULL;
	snprintf(path, sizeof(path), "/proc/%" PRIu32, pid);
	/* The directory fd stays bound to this process: if it exits, reads
	 * through it fail instead of reaching a new owner of the pid. */
	dirfd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dirfd < 0)
		return errno == ENOENT ? -ESRCH : -errno;
	err = read_file_at(dirfd, "cmdline", CMDLINE_MAX, &raw, &len);
	if (!err)
		err = proc_stat_read_at(dirfd, &st);
	if (!err && st.start_ticks != ns_to_ticks(clk_tck, start_boottime_ns))
		err = -ESTALE;
	if (!err) {
		command = malloc(len + 1);
		if (!command)
			err = -ENOMEM;
	}
	if (!err) {
		if (st.state == 'Z')
			len = 0;
		resource_format_command(raw, len, command, len + 1);
		*out = command;
	}
	free(raw);
	close(dirfd);
	return err;
}
/* FNV-1a of the command name: the exec generation /proc cannot give. */
static uint64_t comm_hash(const char *comm)
{
	uint64_t h = 0xcbf29ce484222325ull;

	for (; *comm; comm++)
		h = (h ^ (unsigned char)*comm) * 0x100000001b3ull;
	return h;
}

int resource_procfs_task(uint32_t pid, long clk_tck, struct resource_task *out)
{
	uint64_t tick_ns = 1000000000ull / (uint64_t)clk_tck;
	struct proc_stat st;
	int err = proc_stat_read((pid_t)pid, &st);

	if (err)
		return err == -ENOENT ? -ESRCH : err;
	if (st.flags & PF_KTHREAD)
		return -EPERM;
	memset(out, 0, sizeof(*out));
	out->tgid = out->tid = pid;
	out->ppid = (uint32_t)st.ppid;
	out->flags = RESOURCE_TASK_LEADER;
	if (st.state == 'Z' || st.state == 'X')
		out->flags |= RESOURCE_TASK_ZOMBIE;
	out->group_utime_ns = st.utime_ticks * tick_ns;
	out->group_stime_ns = st.stime_ticks * tick_ns;
	out->group_runtime_ns = out->group_utime_ns + out->group_stime_ns;
	out->start_boottime_ns = st.start_ticks * tick_ns;
	out->exec_id = comm_hash(st.comm);
	out->rss_pages = st.rss_pages;
	return 0;
}
