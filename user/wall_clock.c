// SPDX-License-Identifier: MIT
#include "wall_clock.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static uint64_t read_clock(clockid_t id)
{
	struct timespec ts;

	clock_gettime(id, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

int time_ns_parse_offsets(const char *text, struct time_ns_offsets *out)
{
	*out = (struct time_ns_offsets){ 0 };
	while (*text) {
		const char *eol = strchr(text, '\n');
		size_t len = eol ? (size_t)(eol - text) : strlen(text);
		char line[64], clock[16], extra;
		long long sec;
		long nsec;

		/* one line at a time: sscanf alone would read on into the next */
		if (len >= sizeof(line))
			return -EINVAL;
		memcpy(line, text, len);
		line[len] = '\0';
		if (sscanf(line, "%15s %lld %ld %c", clock, &sec, &nsec, &extra) != 3 || nsec < 0 ||
		    nsec >= 1000000000l)
			return -EINVAL;
		/* the kernel names them; a clock id is what one writes */
		if (!strcmp(clock, "monotonic") || !strcmp(clock, "1"))
			out->monotonic_ns = sec * 1000000000ll + nsec;
		else if (!strcmp(clock, "boottime") || !strcmp(clock, "7"))
			out->boottime_ns = sec * 1000000000ll + nsec;
		if (!eol)
			break;
		text = eol + 1;
	}
	return 0;
}

static struct time_ns_offsets own_offsets;
static pthread_once_t own_offsets_once = PTHREAD_ONCE_INIT;

/* Whether the namespace /proc/self/timens_offsets describes, the one
 * children will be in, is pmetrics' own: not after unshare(CLONE_NEWTIME)
 * without a fork (`unshare --time pmetrics`) on a kernel old enough not
 * to move a process into it at exec, and then pmetrics is still in the
 * namespace it was started in, taken to have no offsets. */
static bool offsets_are_own(void)
{
	char own[64], children[64];
	ssize_t a = readlink("/proc/self/ns/time", own, sizeof(own) - 1);
	ssize_t b = readlink("/proc/self/ns/time_for_children", children, sizeof(children) - 1);

	if (a <= 0 || b <= 0)
		return true;
	own[a] = children[b] = '\0';
	return strcmp(own, children) == 0;
}

/* No file (a kernel without time namespaces) or one that does not
 * parse: the kernel's clocks are taken to be ours. */
static void read_own_offsets(void)
{
	char buf[256];
	int fd;
	ssize_t n;

	if (!offsets_are_own())
		return;
	fd = open("/proc/self/timens_offsets", O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return;
	buf[n] = '\0';
	if (time_ns_parse_offsets(buf, &own_offsets) != 0)
		own_offsets = (struct time_ns_offsets){ 0 };
}

const struct time_ns_offsets *time_ns_offsets(void)
{
	pthread_once(&own_offsets_once, read_own_offsets);
	return &own_offsets;
}

uint64_t monotonic_ns(void)
{
	return read_clock(CLOCK_MONOTONIC) - (uint64_t)time_ns_offsets()->monotonic_ns;
}

uint64_t realtime_ns(void) { return read_clock(CLOCK_REALTIME); }

uint64_t boottime_as_seen_here(uint64_t kernel_boottime_ns)
{
	return kernel_boottime_ns + (uint64_t)time_ns_offsets()->boottime_ns;
}

void wall_clock_sync(struct wall_clock *c)
{
	uint64_t best_gap = UINT64_MAX;

	for (int i = 0; i < 3; i++) {
		uint64_t before = monotonic_ns();
		uint64_t wall = realtime_ns();
		uint64_t after = monotonic_ns();
		if (after - before < best_gap) {
			best_gap = after - before;
			c->offset_ns = (int64_t)(wall - (before + (after - before) / 2));
		}
	}
}

uint64_t wall_clock_from_mono(const struct wall_clock *c, uint64_t mono_ns)
{
	return (uint64_t)((int64_t)mono_ns + c->offset_ns);
}
