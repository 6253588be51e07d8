/* SPDX-License-Identifier: MIT */
/* What the resource sampler reads from /proc, and when: the boot time,
 * clock tick and memory size once at start, a new process's command line
 * once, MemAvailable once per poll. Plus the conversions that make the
 * kernel's numbers read like psutil's. */
#ifndef PMETRICS_RESOURCE_PROCFS_H
#define PMETRICS_RESOURCE_PROCFS_H

#include <stddef.h>
#include <stdint.h>

struct resource_clock {
	long clk_tck;             /* USER_HZ: /proc/PID/stat's unit */
	long page_size;
	double boot_time_s;       /* /proc/stat btime, as psutil uses it */
	uint64_t mem_total_bytes; /* MemTotal */
};

int resource_clock_init(struct resource_clock *c);

/* psutil's Process.create_time(): btime + start ticks / CLK_TCK. */
double resource_start_seconds(const struct resource_clock *c, uint64_t boottime_ns);
/* Kernel ns cut to clock ticks the way /proc/PID/stat does, in seconds. */
double resource_ticks_seconds(const struct resource_clock *c, uint64_t ns);

struct resource_cputime {
	uint64_t utime_ns;
	uint64_t stime_ns;
	uint64_t runtime_ns; /* exact on-CPU time (sum_exec_runtime) */
};

/* The kernel's cputime_adjust(), as /proc/PID/stat applies it: the tick
 * samples utime:stime split the exact runtime, and neither part ever goes
 * down from PREV (updated). */
void resource_cputime_adjust(struct resource_cputime *prev,
			     const struct resource_cputime *raw,
			     struct resource_cputime *out);

/* argv as the `command` column: psutil's cmdline() split (NUL separated;
 * a single argument holding spaces is split on spaces, as psutil does for
 * processes that rewrite their argv), each argument trimmed, joined by
 * single spaces, the whole trimmed. OUT gets at most outlen-1 bytes. */
void resource_format_command(const char *raw, size_t len, char *out, size_t outlen);

/* Reads /proc/PID/cmdline into a new formatted string (*out, malloc'ed;
 * "" for kernel threads and zombies). Checks that /proc/PID still is the
 * process that started at START_BOOTTIME_NS: -ESTALE when the pid was
 * reused, another -errno when unreadable. */
int resource_read_command(uint32_t pid, uint64_t start_boottime_ns, long clk_tck,
			  char **out);

struct resource_task;

/* One process as the BPF task iterator would describe its leader, from
 * /proc/PID/stat (and schedstat, when the kernel keeps it): for the
 * sampler's /proc fallback. The exec generation is not in /proc: a hash
 * of the command name (comm) stands for it, which changes on nearly
 * every exec. Kernel threads are skipped. Returns 0, or -errno (-ESRCH
 * gone, -EPERM a kernel thread). */
int resource_procfs_task(uint32_t pid, long clk_tck, struct resource_task *out);

/* MemAvailable in bytes from /proc/meminfo. */
int resource_read_mem_available(uint64_t *bytes);

#endif
