/* SPDX-License-Identifier: MIT */
/* Internals of Python spans shared with the unit tests: the per-version
 * struct layouts, the BPF probe table entries, and the per-probe
 * counters. */
#ifndef PMETRICS_PYTHON_PROBE_H
#define PMETRICS_PYTHON_PROBE_H

#include <stddef.h>
#include "pyspan.h"
#include "pyspan_config.h"

/* The layout of CPython MAJOR.MINOR. Returns 0, or -1 when unsupported. */
int pyspan_layout_for(int major, int minor, struct pyspan_layout *out);
/* Checks a py:MODULE:QUALNAME probe. Returns 0, or -EINVAL /
 * -ENAMETOOLONG with a one-line reason in err. */
int pyspan_probe_check(const struct py_probe *p, char *err, size_t errlen);
/* The matcher's view of a checked probe: file suffixes, last name part. */
void pyspan_probe_cfg_fill(const struct py_probe *p, struct pyspan_probe_cfg *cfg);
/* A per-probe counter (enum pyspan_probe_counter), summed over CPUs. */
__u64 pyspan_probe_counter(const struct pyspan *p, int idx, __u32 kind);

#endif
