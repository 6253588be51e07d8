/* SPDX-License-Identifier: MIT */
/* The PMETRICS_TEST_* environment switches, with which the tests make
 * pmetrics act as on a machine that lacks something (no BTF, no
 * bpf_loop(), no process_vm_readv(), ...): a switch is on when set to
 * "1", off otherwise. */
#ifndef PMETRICS_TEST_SETTING_H
#define PMETRICS_TEST_SETTING_H

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

static inline bool test_setting_on(const char *name)
{
	const char *v = getenv(name);

	return v && strcmp(v, "1") == 0;
}

#endif
