// SPDX-License-Identifier: MIT
#include "percpu_counter.h"

#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <stdlib.h>

uint64_t percpu_counter_sum(int map_fd, uint32_t key)
{
	int ncpu = libbpf_num_possible_cpus();
	uint64_t *per_cpu, sum = 0;

	if (ncpu <= 0 || !(per_cpu = calloc((size_t)ncpu, sizeof(*per_cpu))))
		return 0;
	if (bpf_map_lookup_elem(map_fd, &key, per_cpu) == 0)
		for (int c = 0; c < ncpu; c++)
			sum += per_cpu[c];
	free(per_cpu);
	return sum;
}
