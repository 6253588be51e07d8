// SPDX-License-Identifier: MIT
/* Shared set-up of the analyze fuzz harnesses: an analysis with the
 * default rules, and a pass over everything that renders its results, so
 * fuzzed inputs also reach the statistics, JSON, text and SVG writers. */
#ifndef PMETRICS_FUZZ_COMMON_H
#define PMETRICS_FUZZ_COMMON_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analyze/model.h"
#include "analyze/readers.h"
#include "analyze/report.h"

static struct analyze_config fuzz_cfg;

static struct analysis *fuzz_analysis(unsigned points)
{
	struct analyze_rule *agg, *drop;
	int n_agg, n_drop;

	memset(&fuzz_cfg, 0, sizeof(fuzz_cfg));
	if (analyze_default_rules(&agg, &n_agg, &drop, &n_drop))
		abort();
	fuzz_cfg.aggregate = agg;
	fuzz_cfg.n_aggregate = n_agg;
	fuzz_cfg.drop = drop;
	fuzz_cfg.n_drop = n_drop;
	fuzz_cfg.min_samples = 2; /* small, so short inputs reach the statistics */
	fuzz_cfg.points_per_key = points;
	return analysis_new(&fuzz_cfg);
}

static void fuzz_render(struct analysis *a, int svg)
{
	struct report_opts o = { .p_method = P_EXACT, .extended = 1, .min_samples = 2 };
	struct version_result *res;
	FILE *null = fopen("/dev/null", "w");

	if (!null)
		abort();
	analysis_order_versions(a);
	if (report_compute(a, &o, &res))
		abort();
	report_write_json(null, res, a->n_versions, &o);
	report_write_text(null, res, a->n_versions, &o);
	o.p_method = P_UPSTREAM;
	report_write_json(null, res, a->n_versions, &o);
	if (svg && report_write_svg("/dev/null", res, a->n_versions, &o))
		abort();
	report_free(res, a->n_versions);
	fclose(null);
}

#endif
