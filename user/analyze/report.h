// SPDX-License-Identifier: MIT
/* Results of pmetrics analyze and their three renderings: upstream's JSON
 * (byte for byte), a compact text table, and an SVG chart. */
#ifndef PMETRICS_ANALYZE_REPORT_H
#define PMETRICS_ANALYZE_REPORT_H

#include <stdio.h>

#include "model.h"

enum p_method { P_EXACT, P_UPSTREAM };

struct key_result {
	const char *name;
	size_t name_len;
	const struct key_stats *stats;
	uint64_t n;
	int enough;           /* n >= min samples */
	double r_raw;         /* NaN when undefined (no spread) */
	const char *constant; /* "memory", "uptime" or both when they did not vary */
	double r;             /* as upstream reports it: rounded to 4 decimals */
	double p_exact, p_upstream, p;
	int significant;
	const char *interpretation;
	char interpretation_buf[64];
	struct trend_slope fit;
};

struct version_result {
	const struct version_stats *v;
	struct key_result *keys; /* output order, filters applied */
	size_t n_keys;
};

struct report_opts {
	enum p_method p_method;
	int extended;
	uint64_t min_samples;
};

/* Upstream's rules turn accumulated stats into the keys to print. */
int report_compute(const struct analysis *a, const struct report_opts *o,
		   struct version_result **out);
void report_free(struct version_result *r, size_t n);

#define REPORT_HEADER "ODD Available Memory and Processes with Increasing Memory Trend or Selectively Observed by Version (Rolling 1 Month Analysis Window):"

void report_write_json(FILE *out, const struct version_result *r, size_t n,
		       const struct report_opts *o);
void report_write_text(FILE *out, const struct version_result *r, size_t n,
		       const struct report_opts *o);
/* Returns 0 or -1 after printing why. */
int report_write_svg(const char *path, const struct version_result *r, size_t n,
		     const struct report_opts *o);

/* A p-value for people: "%.2g", "n/a" for NaN, or "<1e-300" when it underflows (the
 * tail of r = 0.99 on thousands of samples is below the smallest double). */
void report_format_p(double p, char *buf, size_t size);

/* JSON string as JSON.stringify writes it; a surrogate in WTF-8 (ED A0 80)
 * is written \ud800, and other invalid UTF-8 becomes U+FFFD the way
 * Node's decoder replaces it (the readers have repaired it already). */
void json_write_string(FILE *out, const char *s, size_t len);

#endif
