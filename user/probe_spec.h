/* SPDX-License-Identifier: MIT */
/* --probe STATE=TARGET specifications. */
#ifndef PMETRICS_PROBE_SPEC_H
#define PMETRICS_PROBE_SPEC_H

#include <stddef.h>
#include <stdbool.h>
#include <stdint.h>

enum probe_kind {
	PROBE_NATIVE, /* BINARY:SYMBOL, BINARY empty = main executable */
	PROBE_PYTHON, /* py:MODULE:QUALNAME */
};

#define PROBE_STATE_MAX 64
#define PROBE_NAME_MAX 512

struct probe_spec {
	char state[PROBE_STATE_MAX];
	enum probe_kind kind;
	char binary[PROBE_NAME_MAX];   /* native; python: module */
	char symbol[PROBE_NAME_MAX];   /* native; python: qualname */
	char target[PROBE_NAME_MAX * 2 + 8]; /* TARGET as given, for messages */
	bool known_async;              /* python: known to be async def (a preset's) */
};

/* Parses "STATE=TARGET". Returns 0, or -1 with a one-line reason. */
int probe_spec_parse(const char *arg, struct probe_spec *out, char *err, size_t errlen);

/* Parses "500ms", "30s", "1.5m", "2h", "250us" into nanoseconds.
 * Returns 0 or -1. */
int duration_parse(const char *arg, uint64_t *ns);

/* --duration: at least 1 ms (the capture loop wakes every 100 ms, so a
 * shorter value is a mistaken unit, 250us meant as 250ms) and at most a
 * year (more is a typo such as 1e9h, not a plan). */
#define DURATION_MIN_NS 1000000ull
#define DURATION_MAX_NS (8760ull * 3600 * 1000000000)
/* duration_parse() within [DURATION_MIN_NS, DURATION_MAX_NS]. Returns 0,
 * or -1 with a one-line reason naming the range in err. */
int duration_option_parse(const char *arg, uint64_t *ns, char *err, size_t errlen);

#endif
