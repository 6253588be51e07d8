// SPDX-License-Identifier: MIT
/* The accumulated state of pmetrics analyze: versions, the keys inside
 * each version, and per key a streaming trend accumulator plus the uptime
 * buckets. Memory grows with versions x keys x buckets (and a bounded
 * point sample per key for --svg), never with the number of events. */
#ifndef PMETRICS_ANALYZE_MODEL_H
#define PMETRICS_ANALYZE_MODEL_H

#include <regex.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "stats.h"

#define ANALYZE_BUCKETS 7
#define ANALYZE_SYSTEM_KEY "odd-available-memory"
#define ANALYZE_CAPTURE_VERSION "capture"

struct uptime_bucket {
	double min, max; /* hours, [min, max) */
	const char *label;
};
extern const struct uptime_bucket analyze_buckets[ANALYZE_BUCKETS];

struct analyze_rule {
	regex_t re;
	const char *pattern;
	const char *key; /* NULL for a drop rule */
};

struct analyze_config {
	const struct analyze_rule *aggregate; /* first match wins */
	int n_aggregate;
	const struct analyze_rule *drop;
	int n_drop;
	uint64_t min_samples;            /* upstream: 30 */
	const char *const *versions;     /* NULL: every version in the data */
	int n_versions;
	unsigned points_per_key;         /* sample kept for the SVG; 0: none */
	int verbose;                     /* -v: name skipped lines */
};

/* Why a line (or record) was not used. */
enum skip_reason {
	SKIP_MALFORMED,     /* not parseable JSON / CSV */
	SKIP_NOT_REPORT,    /* JSON, but not a resourceMonitorReport object */
	SKIP_NO_VERSION,    /* no appVersion string */
	SKIP_BAD_UPTIME,    /* uptime missing or not a number (NaN) */
	SKIP_INFINITE_UPTIME, /* uptime +-Infinity to parseFloat */
	SKIP_TOO_LONG,      /* longer than the line limit */
	SKIP_REASONS
};
extern const char *const skip_reason_text[SKIP_REASONS];

/* Why a well-formed line is not one that upstream's Mixpanel query
 * selects: counted, not an error. */
enum left_out_reason {
	LEFT_OTHER_EVENT,   /* event missing or not resourceMonitorReport */
	LEFT_NO_MODE,       /* no appMode */
	LEFT_OTHER_MODE,    /* appMode other than "ODD" */
	LEFT_OTHER_VERSION, /* a version --versions does not name */
	LEFT_OUT_REASONS
};
extern const char *const left_out_text[LEFT_OUT_REASONS];

struct point_sample {
	float x, y;
};

struct key_stats {
	uint32_t key_id;
	struct trend_acc trend;
	uint64_t bucket_n[ANALYZE_BUCKETS];
	/* Plain left-to-right sums in input order, exactly what upstream adds
	 * up, so bucket means agree with it to the last bit. */
	double bucket_sum[ANALYZE_BUCKETS];
	double min_x, max_x, min_y, max_y; /* ranges for the chart */
	struct point_sample *points; /* reservoir sample, points_per_key */
	uint32_t n_points;
};

struct version_stats {
	char *name;
	int has_reports;
	struct key_stats *keys; /* first-seen order */
	size_t n_keys, cap_keys;
	int32_t *slot_of_key;   /* key id -> index in keys, -1 */
	size_t n_slots;
	struct key_stats system; /* odd-available-memory */
};

struct strmap;

struct analysis {
	const struct analyze_config *cfg;
	struct version_stats *versions;
	size_t n_versions, cap_versions;
	size_t last_version;          /* lookup cache */
	struct strmap *keys;          /* key name -> key id */
	struct strmap *name_cache;    /* process name -> key id or -1 */
	char **key_names;
	size_t *key_lens;
	size_t n_key_names, cap_key_names;
	uint64_t rng;
	/* Counts for the closing summary. */
	uint64_t lines, records_used, skipped[SKIP_REASONS], left_out[LEFT_OUT_REASONS];
	uint64_t values_skipped, values_infinite, processes_dropped;
	uint64_t samples;
	int input_errors;             /* unreadable or truncated inputs */
};

struct analysis *analysis_new(const struct analyze_config *cfg);
void analysis_free(struct analysis *a);

/* Index of version NAME, created on first sight; -1 when --versions
 * leaves it out. */
long analysis_version(struct analysis *a, const char *name, size_t len);
/* Key id for a process name after the drop and aggregate rules; -1 when
 * the name is dropped. */
long analysis_resolve_name(struct analysis *a, const char *name, size_t len);
/* The same for a name that was not a string but a JSON number, null,
 * true, false or no name at all, given as TEXT, JavaScript's String() of
 * it: the rules see TEXT, but unless one aggregates it, it is a key apart
 * from the string TEXT (upstream's Map tells 5 from "5"). */
long analysis_resolve_typed_name(struct analysis *a, const char *text, size_t len);
void analysis_add_process(struct analysis *a, size_t version, long key_id,
			  double uptime_hrs, double mem_mb);
void analysis_add_system(struct analysis *a, size_t version, double uptime_hrs,
			 double avail_mb);
/* Counts (and with -v prints) a skipped line of SOURCE. */
void analysis_skip(struct analysis *a, const char *source, uint64_t line,
		   enum skip_reason why);
/* The same with the offending value, WHAT, for -v. */
void analysis_skip_because(struct analysis *a, const char *source, uint64_t line,
			   enum skip_reason why, const char *what);
/* Counts (and with -v names) an infinite value of FIELD that was left
 * out of its series; the rest of its line is used. */
void analysis_skip_infinite(struct analysis *a, const char *source, uint64_t line,
			    const char *field, const char *what);
const char *analysis_key_name(const struct analysis *a, uint32_t key_id,
			      size_t *len);
/* Sorts the versions newest first unless --versions fixed the order. */
void analysis_order_versions(struct analysis *a);
/* One line per kind of skip on OUT; nothing when nothing was skipped. */
void analysis_print_skips(const struct analysis *a, FILE *out);

/* realloc that exits with one line when memory runs out: analyze keeps
 * little state, so running out means there is nothing sensible to do. */
void *analyze_xrealloc(void *p, size_t n);

/* Default rules of upstream (formats.md s.3). */
int analyze_default_rules(struct analyze_rule **aggregate, int *n_aggregate,
			  struct analyze_rule **drop, int *n_drop);
/* Compiles PATTERN (POSIX ERE) into RULE; KEY NULL for a drop rule.
 * Returns 0 or -1 with a reason in err. */
int analyze_rule_compile(struct analyze_rule *rule, const char *pattern,
			 const char *key, char *err, size_t errlen);

#endif
