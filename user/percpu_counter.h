/* SPDX-License-Identifier: MIT */
/* Counters kept in BPF per-CPU arrays, summed for the summaries. */
#ifndef PMETRICS_PERCPU_COUNTER_H
#define PMETRICS_PERCPU_COUNTER_H

#include <stdint.h>

/* Sum over all possible CPUs of entry KEY of the per-CPU array MAP_FD
 * (values are __u64). 0 when the map cannot be read. */
uint64_t percpu_counter_sum(int map_fd, uint32_t key);

#endif
