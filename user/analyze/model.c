// SPDX-License-Identifier: MIT
/* Versions, keys and their accumulators for pmetrics analyze. */
#include "model.h"

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "semver.h"

const struct uptime_bucket analyze_buckets[ANALYZE_BUCKETS] = {
	{ 0, 20, "0-20hrs" },       { 20, 40, "20-40hrs" },
	{ 40, 60, "40-60hrs" },     { 60, 80, "60-80hrs" },
	{ 80, 120, "80-120hrs" },   { 120, 240, "120-240hrs" },
	{ 240, __builtin_inf(), "240+hrs" },
};

const char *const skip_reason_text[SKIP_REASONS] = {
	[SKIP_MALFORMED] = "malformed (not parseable)",
	[SKIP_NOT_REPORT] = "not a resource monitor report",
	[SKIP_NO_VERSION] = "no appVersion string",
	[SKIP_BAD_UPTIME] = "uptime missing or not a number",
	[SKIP_INFINITE_UPTIME] = "uptime infinite (upstream's calculate-correlation throws on it)",
	[SKIP_TOO_LONG] = "line too long",
};

const char *const left_out_text[LEFT_OUT_REASONS] = {
	[LEFT_OTHER_EVENT] = "other events (not resourceMonitorReport)",
	[LEFT_NO_MODE] = "without appMode",
	[LEFT_OTHER_MODE] = "appMode not ODD",
	[LEFT_OTHER_VERSION] = "of versions not asked for with --versions",
};

/* The name cache stops growing here so a file of unique names cannot
 * make memory grow with events; later names are matched uncached. */
#define NAME_CACHE_MAX 65536

/* ---- string -> integer hash map (open addressing) ---------------------- */

struct strmap_entry {
	char *s;
	size_t len;
	uint64_t hash;
	long value;
};

struct strmap {
	struct strmap_entry *slots;
	size_t cap, used;
};

/* Eight bytes per step: process names run to 100 characters and are
 * hashed for every sample, so a byte-at-a-time hash was a quarter of the
 * run time. Multiply-xorshift mixing; quality is ample for a table that is
 * at most half full and compares full keys anyway. */
static uint64_t hash_bytes(const char *s, size_t len)
{
	const uint64_t k = 0x9e3779b97f4a7c15ULL;
	uint64_t h = len * k, w;

	for (; len >= 8; s += 8, len -= 8) {
		memcpy(&w, s, 8);
		h = (h ^ w) * k;
		h ^= h >> 29;
	}
	if (len) {
		w = 0;
		memcpy(&w, s, len);
		h = (h ^ w) * k;
		h ^= h >> 29;
	}
	h *= k;
	return h ^ (h >> 32);
}

static struct strmap *strmap_new(void)
{
	struct strmap *m = calloc(1, sizeof(*m));

	if (!m)
		return NULL;
	m->cap = 64; /* grows by doubling */
	m->slots = calloc(m->cap, sizeof(*m->slots));
	if (!m->slots) {
		free(m);
		return NULL;
	}
	return m;
}

static void strmap_free(struct strmap *m)
{
	size_t i;

	if (!m)
		return;
	for (i = 0; i < m->cap; i++)
		free(m->slots[i].s);
	free(m->slots);
	free(m);
}

static struct strmap_entry *strmap_slot(struct strmap *m, const char *s, size_t len,
					uint64_t h)
{
	size_t i = h & (m->cap - 1);

	for (;;) {
		struct strmap_entry *e = &m->slots[i];

		if (!e->s || (e->hash == h && e->len == len && memcmp(e->s, s, len) == 0))
			return e;
		i = (i + 1) & (m->cap - 1);
	}
}

static int strmap_grow(struct strmap *m)
{
	struct strmap old = *m;
	size_t i;

	m->cap *= 2;
	m->slots = calloc(m->cap, sizeof(*m->slots));
	if (!m->slots) {
		*m = old;
		return -1;
	}
	for (i = 0; i < old.cap; i++)
		if (old.slots[i].s)
			*strmap_slot(m, old.slots[i].s, old.slots[i].len, old.slots[i].hash) =
				old.slots[i];
	free(old.slots);
	return 0;
}

/* Returns the entry for S, or NULL when absent. */
static struct strmap_entry *strmap_find(struct strmap *m, const char *s, size_t len)
{
	struct strmap_entry *e = strmap_slot(m, s, len, hash_bytes(s, len));

	return e->s ? e : NULL;
}

static int strmap_put(struct strmap *m, const char *s, size_t len, long value)
{
	uint64_t h = hash_bytes(s, len);
	struct strmap_entry *e;

	if ((m->used + 1) * 2 > m->cap && strmap_grow(m))
		return -1;
	e = strmap_slot(m, s, len, h);
	if (!e->s) {
		e->s = malloc(len + 1);
		if (!e->s)
			return -1;
		memcpy(e->s, s, len);
		e->s[len] = '\0';
		e->len = len;
		e->hash = h;
		m->used++;
	}
	e->value = value;
	return 0;
}

/* ---- analysis ----------------------------------------------------------- */

static void oom(void)
{
	fprintf(stderr, "pmetrics: out of memory in analyze; analyse fewer versions or keys at once\n");
	exit(2);
}

void *analyze_xrealloc(void *p, size_t n)
{
	p = realloc(p, n ? n : 1);
	if (!p)
		oom();
	return p;
}

static char *xstrndup(const char *s, size_t len)
{
	char *d = analyze_xrealloc(NULL, len + 1);

	memcpy(d, s, len);
	d[len] = '\0';
	return d;
}

static size_t add_version(struct analysis *a, const char *name, size_t len)
{
	struct version_stats *v;

	if (a->n_versions == a->cap_versions) {
		a->cap_versions = a->cap_versions ? a->cap_versions * 2 : 8;
		a->versions = analyze_xrealloc(a->versions, a->cap_versions * sizeof(*a->versions));
	}
	v = &a->versions[a->n_versions];
	memset(v, 0, sizeof(*v));
	v->name = xstrndup(name, len);
	return a->n_versions++;
}

struct analysis *analysis_new(const struct analyze_config *cfg)
{
	struct analysis *a = calloc(1, sizeof(*a));
	int i;

	if (!a)
		oom();
	a->cfg = cfg;
	a->rng = 0x9e3779b97f4a7c15ULL;
	a->keys = strmap_new();
	a->name_cache = strmap_new();
	if (!a->keys || !a->name_cache)
		oom();
	for (i = 0; i < cfg->n_versions; i++) {
		size_t len = strlen(cfg->versions[i]);

		if (analysis_version(a, cfg->versions[i], len) < 0)
			add_version(a, cfg->versions[i], len);
	}
	return a;
}

static void free_key(struct key_stats *k)
{
	free(k->points);
}

void analysis_free(struct analysis *a)
{
	size_t i, j;

	if (!a)
		return;
	for (i = 0; i < a->n_versions; i++) {
		struct version_stats *v = &a->versions[i];

		for (j = 0; j < v->n_keys; j++)
			free_key(&v->keys[j]);
		free_key(&v->system);
		free(v->keys);
		free(v->slot_of_key);
		free(v->name);
	}
	free(a->versions);
	for (i = 0; i < a->n_key_names; i++)
		free(a->key_names[i]);
	free(a->key_names);
	free(a->key_lens);
	strmap_free(a->keys);
	strmap_free(a->name_cache);
	free(a);
}

long analysis_version(struct analysis *a, const char *name, size_t len)
{
	size_t i;

	if (a->last_version < a->n_versions) {
		struct version_stats *v = &a->versions[a->last_version];

		if (strlen(v->name) == len && memcmp(v->name, name, len) == 0)
			return (long)a->last_version;
	}
	for (i = 0; i < a->n_versions; i++) {
		struct version_stats *v = &a->versions[i];

		if (strlen(v->name) == len && memcmp(v->name, name, len) == 0) {
			a->last_version = i;
			return (long)i;
		}
	}
	if (a->cfg->versions)
		return -1;
	if (memchr(name, '\0', len))
		return -1; /* cannot be named on a command line either */
	a->last_version = add_version(a, name, len);
	return (long)a->last_version;
}

static long intern_key(struct analysis *a, const char *name, size_t len)
{
	struct strmap_entry *e = strmap_find(a->keys, name, len);

	if (e)
		return e->value;
	if (a->n_key_names == a->cap_key_names) {
		a->cap_key_names = a->cap_key_names ? a->cap_key_names * 2 : 64;
		a->key_names = analyze_xrealloc(a->key_names, a->cap_key_names * sizeof(char *));
		a->key_lens = analyze_xrealloc(a->key_lens, a->cap_key_names * sizeof(size_t));
	}
	a->key_names[a->n_key_names] = xstrndup(name, len);
	a->key_lens[a->n_key_names] = len;
	if (strmap_put(a->keys, name, len, (long)a->n_key_names))
		oom();
	return (long)a->n_key_names++;
}

/* A typed name is interned behind this byte, which no other key holds:
 * the readers hand on UTF-8 (or WTF-8) only, and --aggregate keys must be
 * UTF-8. */
#define TYPED_TAG '\xff'

const char *analysis_key_name(const struct analysis *a, uint32_t key_id, size_t *len)
{
	const char *name = a->key_names[key_id];
	int typed = a->key_lens[key_id] > 0 && name[0] == TYPED_TAG;

	*len = a->key_lens[key_id] - (size_t)typed;
	return name + typed;
}

static int rule_matches(const struct analyze_rule *r, const char *name, size_t len)
{
	regmatch_t m[1];

	/* REG_STARTEND: the name may hold NUL bytes (from \u0000). */
	m[0].rm_so = 0;
	m[0].rm_eo = (regoff_t)len;
	return regexec(&r->re, name, 1, m, REG_STARTEND) == 0;
}

/* The rules look at TEXT; the key, unless aggregated, is KEY. */
static long resolve_uncached(struct analysis *a, const char *text, size_t len,
			     const char *key, size_t key_len)
{
	const struct analyze_config *c = a->cfg;
	int i;

	for (i = 0; i < c->n_drop; i++)
		if (rule_matches(&c->drop[i], text, len))
			return -1;
	for (i = 0; i < c->n_aggregate; i++)
		if (rule_matches(&c->aggregate[i], text, len))
			return intern_key(a, c->aggregate[i].key, strlen(c->aggregate[i].key));
	return intern_key(a, key, key_len);
}

static long resolve(struct analysis *a, const char *text, size_t len, const char *key,
		    size_t key_len)
{
	struct strmap_entry *e = strmap_find(a->name_cache, key, key_len);
	long id;

	if (e)
		return e->value;
	id = resolve_uncached(a, text, len, key, key_len);
	if (a->name_cache->used < NAME_CACHE_MAX && strmap_put(a->name_cache, key, key_len, id))
		oom();
	return id;
}

long analysis_resolve_name(struct analysis *a, const char *name, size_t len)
{
	return resolve(a, name, len, name, len);
}

long analysis_resolve_typed_name(struct analysis *a, const char *text, size_t len)
{
	char key[64];

	if (len + 1 > sizeof(key))
		len = sizeof(key) - 1; /* String() of a number is at most 25 bytes */
	key[0] = TYPED_TAG;
	memcpy(key + 1, text, len);
	return resolve(a, text, len, key, len + 1);
}

static uint64_t next_random(struct analysis *a)
{
	uint64_t x = a->rng; /* xorshift64 */

	x ^= x << 13;
	x ^= x >> 7;
	x ^= x << 17;
	a->rng = x;
	return x;
}

/* Reservoir sampling (Algorithm R): every sample is kept with the same
 * probability, in bounded memory. */
static void keep_point(struct analysis *a, struct key_stats *k, double x, double y)
{
	unsigned cap = a->cfg->points_per_key;
	uint64_t slot;

	if (!cap)
		return;
	if (!k->points)
		k->points = analyze_xrealloc(NULL, cap * sizeof(*k->points));
	if (k->n_points < cap) {
		slot = k->n_points++;
	} else {
		slot = next_random(a) % k->trend.n;
		if (slot >= cap)
			return;
	}
	k->points[slot].x = (float)x;
	k->points[slot].y = (float)y;
}

static void add_sample(struct analysis *a, struct key_stats *k, double x, double y)
{
	int b;

	if (k->trend.n == 0) {
		k->min_x = k->max_x = x;
		k->min_y = k->max_y = y;
	}
	k->min_x = x < k->min_x ? x : k->min_x;
	k->max_x = x > k->max_x ? x : k->max_x;
	k->min_y = y < k->min_y ? y : k->min_y;
	k->max_y = y > k->max_y ? y : k->max_y;
	trend_add(&k->trend, x, y);
	for (b = 0; b < ANALYZE_BUCKETS; b++) {
		if (x >= analyze_buckets[b].min && x < analyze_buckets[b].max) {
			k->bucket_n[b]++;
			k->bucket_sum[b] += y;
			break;
		}
	}
	keep_point(a, k, x, y);
	a->samples++;
}

static struct key_stats *version_key(struct version_stats *v, uint32_t key_id)
{
	struct key_stats *k;

	if (key_id >= v->n_slots) {
		size_t n = v->n_slots ? v->n_slots : 64, i;

		while (n <= key_id)
			n *= 2;
		v->slot_of_key = analyze_xrealloc(v->slot_of_key, n * sizeof(int32_t));
		for (i = v->n_slots; i < n; i++)
			v->slot_of_key[i] = -1;
		v->n_slots = n;
	}
	if (v->slot_of_key[key_id] >= 0)
		return &v->keys[v->slot_of_key[key_id]];
	if (v->n_keys == v->cap_keys) {
		v->cap_keys = v->cap_keys ? v->cap_keys * 2 : 16;
		v->keys = analyze_xrealloc(v->keys, v->cap_keys * sizeof(*v->keys));
	}
	k = &v->keys[v->n_keys];
	memset(k, 0, sizeof(*k));
	k->key_id = key_id;
	v->slot_of_key[key_id] = (int32_t)v->n_keys++;
	return k;
}

void analysis_add_process(struct analysis *a, size_t version, long key_id,
			  double uptime_hrs, double mem_mb)
{
	add_sample(a, version_key(&a->versions[version], (uint32_t)key_id), uptime_hrs,
		   mem_mb);
}

void analysis_add_system(struct analysis *a, size_t version, double uptime_hrs,
			 double avail_mb)
{
	add_sample(a, &a->versions[version].system, uptime_hrs, avail_mb);
}

void analysis_skip_because(struct analysis *a, const char *source, uint64_t line,
			   enum skip_reason why, const char *what)
{
	a->skipped[why]++;
	if (a->cfg->verbose)
		fprintf(stderr, "pmetrics: analyze: %s:%llu: skipped: %s%s%s%s\n", source,
			(unsigned long long)line, skip_reason_text[why], what ? " (" : "",
			what ? what : "", what ? ")" : "");
}

void analysis_skip(struct analysis *a, const char *source, uint64_t line,
		   enum skip_reason why)
{
	analysis_skip_because(a, source, line, why, NULL);
}

void analysis_skip_infinite(struct analysis *a, const char *source, uint64_t line,
			    const char *field, const char *what)
{
	a->values_skipped++;
	a->values_infinite++;
	if (a->cfg->verbose)
		fprintf(stderr, "pmetrics: analyze: %s:%llu: skipped value: %s %s is infinite; the rest of the line is used\n",
			source, (unsigned long long)line, field, what);
}

static int cmp_versions(const void *pa, const void *pb)
{
	const struct version_stats *a = pa, *b = pb;

	return version_cmp_newest_first(a->name, b->name);
}

void analysis_order_versions(struct analysis *a)
{
	if (!a->cfg->versions && a->n_versions > 1)
		qsort(a->versions, a->n_versions, sizeof(*a->versions), cmp_versions);
	a->last_version = 0;
}

/* One line: the well-formed lines upstream's query would not return. */
static void print_left_out(const struct analysis *a, FILE *out)
{
	const char *sep = ":";
	uint64_t total = 0;
	int i;

	for (i = 0; i < LEFT_OUT_REASONS; i++)
		total += a->left_out[i];
	if (!total)
		return;
	fprintf(out, "pmetrics: analyze: left out %llu lines that upstream's query does not select",
		(unsigned long long)total);
	for (i = 0; i < LEFT_OUT_REASONS; i++) {
		if (!a->left_out[i])
			continue;
		fprintf(out, "%s %llu %s", sep, (unsigned long long)a->left_out[i], left_out_text[i]);
		sep = ";";
	}
	fputc('\n', out);
}

void analysis_print_skips(const struct analysis *a, FILE *out)
{
	uint64_t total = 0;
	int i;

	for (i = 0; i < SKIP_REASONS; i++)
		total += a->skipped[i];
	if (total) {
		const char *sep = ":";

		fprintf(out, "pmetrics: analyze: skipped %llu of %llu line%s",
			(unsigned long long)total, (unsigned long long)a->lines,
			a->lines == 1 ? "" : "s");
		for (i = 0; i < SKIP_REASONS; i++)
			if (a->skipped[i]) {
				fprintf(out, "%s %llu %s", sep, (unsigned long long)a->skipped[i],
					skip_reason_text[i]);
				sep = ";";
			}
		fprintf(out, "%s\n", a->cfg->verbose ? "" : "; -v names each line");
	}
	if (a->values_skipped) {
		bool one = a->values_skipped == 1;

		fprintf(out, "pmetrics: analyze: skipped %llu %s", (unsigned long long)a->values_skipped,
			one ? "value that was not a finite number" : "values that were not finite numbers");
		if (a->values_infinite) /* upstream would add these, then throw */
			fprintf(out, ", %llu of them infinite", (unsigned long long)a->values_infinite);
		fprintf(out, " (the rest of %s was used)\n", one ? "its line" : "their lines");
	}
	print_left_out(a, out);
}

/* ---- rules --------------------------------------------------------------- */

int analyze_rule_compile(struct analyze_rule *rule, const char *pattern,
			 const char *key, char *err, size_t errlen)
{
	int rc = regcomp(&rule->re, pattern, REG_EXTENDED | REG_NOSUB);

	if (rc) {
		char why[128];

		regerror(rc, &rule->re, why, sizeof(why));
		snprintf(err, errlen, "bad regular expression '%s': %s", pattern, why);
		return -1;
	}
	rule->pattern = pattern;
	rule->key = key;
	return 0;
}

int analyze_default_rules(struct analyze_rule **aggregate, int *n_aggregate,
			  struct analyze_rule **drop, int *n_drop)
{
	static const char *const agg[][2] = {
		{ "^/opt/opentrons-app/opentrons --type=renderer", "app-renderer-processes" },
		{ "^/opt/opentrons-app/opentrons --type=zygote", "app-zygote-processes" },
		{ "^python3 -m uvicorn", "robot-server-uvicorn-processes" },
		{ "^/opt/opentrons-app/opentrons --type=utility", "app-utility-processes" },
	};
	static const char *const dropped[] = { "^nmcli", "^/usr/bin/python3" };
	static struct analyze_rule agg_rules[4], drop_rules[2];
	static int compiled;
	char err[256];
	int i;

	if (!compiled) {
		for (i = 0; i < 4; i++)
			if (analyze_rule_compile(&agg_rules[i], agg[i][0], agg[i][1], err, sizeof(err)))
				return -1;
		for (i = 0; i < 2; i++)
			if (analyze_rule_compile(&drop_rules[i], dropped[i], NULL, err, sizeof(err)))
				return -1;
		compiled = 1;
	}
	*aggregate = agg_rules;
	*n_aggregate = 4;
	*drop = drop_rules;
	*n_drop = 2;
	return 0;
}
