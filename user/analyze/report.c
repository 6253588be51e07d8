// SPDX-License-Identifier: MIT
/* pmetrics analyze results: upstream's rules, its JSON, and a text table. */
#include "report.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static const char *const protected_keys[] = {
	ANALYZE_SYSTEM_KEY, "app-renderer-processes", "robot-server-uvicorn-processes",
};

static int key_is(const struct key_result *k, const char *s)
{
	return k->name_len == strlen(s) && memcmp(k->name, s, k->name_len) == 0;
}

static void interpret(struct key_result *k)
{
	const char *dir = k->r > 0 ? "positive" : "negative";
	double strength = fabs(k->r);

	if (!k->significant)
		k->interpretation = "No significant correlation found";
	else if (strength > 0.7)
		snprintf(k->interpretation_buf, sizeof(k->interpretation_buf),
			 "Strong %s correlation (>0.7)", dir);
	else if (strength > 0.3)
		snprintf(k->interpretation_buf, sizeof(k->interpretation_buf),
			 "Moderate %s correlation (>0.3 and <0.7)", dir);
	else
		snprintf(k->interpretation_buf, sizeof(k->interpretation_buf),
			 "Weak %s correlation (<=0.3)", dir);
	if (k->significant)
		k->interpretation = k->interpretation_buf;
}

/* What did not vary over the key's samples, NULL when both did. */
static const char *constant_part(const struct key_stats *s)
{
	int x = s->min_x == s->max_x, y = s->min_y == s->max_y;

	if (s->trend.n == 0 || (!x && !y))
		return NULL;
	return x && y ? "uptime and memory" : x ? "uptime" : "memory";
}

static void compute_key(struct key_result *k, const struct key_stats *s,
			const struct report_opts *o)
{
	k->stats = s;
	k->n = s->trend.n;
	k->enough = k->n >= o->min_samples;
	trend_fit(&s->trend, &k->fit);
	k->r_raw = trend_pearson(&s->trend);
	k->constant = constant_part(s);
	k->p_exact = p_value_exact(k->r_raw, k->n);
	if (!k->enough) {
		/* upstream: too few samples means r = 0, p = 1 */
		k->r = 0;
		k->p_upstream = k->p = 1;
		k->significant = 0;
		k->interpretation = "Not enough samples for analysis";
		return;
	}
	if (k->constant)
		/* calculate-correlation's sums decide here, not the data: its
		 * "NaN" or "0.0000" is redone, not the Welford r (NaN). */
		k->r_raw = js_correlation_of_constant(k->n, s->min_x == s->max_x, s->min_x,
						      s->min_y == s->max_y, s->min_y);
	/* Upstream rounds r to 4 decimals before anything else uses it. */
	k->r = js_precise_round(k->r_raw, 4);
	k->p_exact = p_value_exact(k->r_raw, k->n);
	k->p_upstream = p_value_upstream(k->r, k->n);
	k->p = o->p_method == P_UPSTREAM ? k->p_upstream : k->p_exact;
	k->significant = k->p < 0.05;
	interpret(k);
}

static int keep_after_negative_filter(const struct key_result *k)
{
	size_t i;

	if (!(k->r < 0))
		return 1;
	for (i = 0; i < sizeof(protected_keys) / sizeof(protected_keys[0]); i++)
		if (key_is(k, protected_keys[i]))
			return 1;
	return 0;
}

/* Upstream turns its Map into a plain object by assignment, one key after
 * the other: keys printed alike (a name that was the number 5 and one
 * that was the string "5") end up as one, in the place of the first and
 * with the value of the last. Returns the count left. */
static size_t merge_same_names(struct key_result *k, size_t n)
{
	size_t i, j, kept = 0;

	for (i = 0; i < n; i++) {
		for (j = 0; j < kept; j++)
			if (k[j].name_len == k[i].name_len && memcmp(k[j].name, k[i].name, k[i].name_len) == 0)
				break;
		k[j] = k[i];
		if (j == kept)
			kept++;
	}
	return kept;
}

static void compute_version(const struct analysis *a, const struct report_opts *o,
			    const struct version_stats *v, struct version_result *out)
{
	size_t i, n = 0, kept = 0;
	int system_placed = 0;

	out->v = v;
	if (!v->has_reports)
		return;
	out->keys = calloc(v->n_keys + 1, sizeof(*out->keys));
	if (!out->keys) {
		fprintf(stderr, "pmetrics: out of memory in analyze\n");
		exit(2);
	}
	for (i = 0; i < v->n_keys; i++) {
		struct key_result *k = &out->keys[n];

		if (v->keys[i].trend.n < o->min_samples)
			continue;
		k->name = analysis_key_name(a, v->keys[i].key_id, &k->name_len);
		/* A process literally named like the system key keeps its place
		 * but takes the system's values, as a JS Map.set would. */
		if (key_is(k, ANALYZE_SYSTEM_KEY)) {
			compute_key(k, &v->system, o);
			system_placed = 1;
		} else {
			compute_key(k, &v->keys[i], o);
		}
		n++;
	}
	if (!system_placed) {
		out->keys[n].name = ANALYZE_SYSTEM_KEY;
		out->keys[n].name_len = strlen(ANALYZE_SYSTEM_KEY);
		compute_key(&out->keys[n++], &v->system, o);
	}
	for (i = 0; i < n; i++)
		if (keep_after_negative_filter(&out->keys[i]))
			out->keys[kept++] = out->keys[i];
	kept = merge_same_names(out->keys, kept);
	for (i = 0; i < kept; i++)
		if (!out->keys[i].significant)
			out->keys[i].interpretation = out->keys[i].enough ?
				"No significant correlation found" : "Not enough samples for analysis";
		else
			out->keys[i].interpretation = out->keys[i].interpretation_buf;
	out->n_keys = kept;
}

int report_compute(const struct analysis *a, const struct report_opts *o,
		   struct version_result **out)
{
	size_t i;

	*out = calloc(a->n_versions ? a->n_versions : 1, sizeof(**out));
	if (!*out)
		return -1;
	for (i = 0; i < a->n_versions; i++)
		compute_version(a, o, &a->versions[i], &(*out)[i]);
	return 0;
}

void report_free(struct version_result *r, size_t n)
{
	size_t i;

	if (!r)
		return;
	for (i = 0; i < n; i++)
		free(r[i].keys);
	free(r);
}

/* ---- JSON ----------------------------------------------------------------- */

static void put_escaped_cp(FILE *out, unsigned cp, const char *raw, size_t raw_len)
{
	switch (cp) {
	case '"': fputs("\\\"", out); return;
	case '\\': fputs("\\\\", out); return;
	case '\b': fputs("\\b", out); return;
	case '\f': fputs("\\f", out); return;
	case '\n': fputs("\\n", out); return;
	case '\r': fputs("\\r", out); return;
	case '\t': fputs("\\t", out); return;
	default:
		break;
	}
	if (cp < 0x20 || (cp >= 0xd800 && cp <= 0xdfff))
		fprintf(out, "\\u%04x", cp); /* a lone surrogate too, as JSON.stringify */
	else
		fwrite(raw, 1, raw_len, out);
}

static void put_replacement(FILE *out)
{
	fputs("\xef\xbf\xbd", out);
}

/* UTF-8 decoding with the WHATWG replacement rules, except that a
 * surrogate's 3 bytes (WTF-8: the readers keep a lone \ud800 escape so)
 * are that code unit. */
void json_write_string(FILE *out, const char *s, size_t len)
{
	size_t i, start = 0;
	unsigned needed = 0, seen = 0, cp = 0, lower = 0x80, upper = 0xbf;

	fputc('"', out);
	for (i = 0; i < len; i++) {
		unsigned b = (unsigned char)s[i];

		if (needed == 0) {
			start = i;
			if (b < 0x80) {
				put_escaped_cp(out, b, s + i, 1);
			} else if (b >= 0xc2 && b <= 0xdf) {
				needed = 1;
				cp = b & 0x1f;
			} else if (b >= 0xe0 && b <= 0xef) {
				lower = b == 0xe0 ? 0xa0 : 0x80;
				upper = 0xbf;
				needed = 2;
				cp = b & 0x0f;
			} else if (b >= 0xf0 && b <= 0xf4) {
				lower = b == 0xf0 ? 0x90 : 0x80;
				upper = b == 0xf4 ? 0x8f : 0xbf;
				needed = 3;
				cp = b & 0x07;
			} else {
				put_replacement(out);
			}
			continue;
		}
		if (b < lower || b > upper) {
			needed = seen = cp = 0;
			lower = 0x80;
			upper = 0xbf;
			put_replacement(out);
			i--; /* look at this byte again as a fresh start */
			continue;
		}
		lower = 0x80;
		upper = 0xbf;
		cp = (cp << 6) | (b & 0x3f);
		if (++seen == needed) {
			put_escaped_cp(out, cp, s + start, i + 1 - start);
			needed = seen = cp = 0;
		}
	}
	if (needed)
		put_replacement(out);
	fputc('"', out);
}

/* Keys that are array indices come first in a JS object, ascending. */
static int array_index(const char *s, size_t len, unsigned long long *v)
{
	size_t i;

	if (len == 0 || len > 10 || (len > 1 && s[0] == '0'))
		return 0;
	*v = 0;
	for (i = 0; i < len; i++) {
		if (s[i] < '0' || s[i] > '9')
			return 0;
		*v = *v * 10 + (unsigned long long)(s[i] - '0');
	}
	return *v <= 4294967294ULL;
}

struct order_item {
	size_t pos;
	int is_index;
	unsigned long long index;
};

static int cmp_order(const void *pa, const void *pb)
{
	const struct order_item *a = pa, *b = pb;

	if (a->is_index != b->is_index)
		return a->is_index ? -1 : 1;
	if (a->is_index && a->index != b->index)
		return a->index < b->index ? -1 : 1;
	return a->pos < b->pos ? -1 : (a->pos > b->pos);
}

/* The order JSON.stringify visits N keys given in insertion order. */
static size_t *js_key_order(const char *const *names, const size_t *lens, size_t n)
{
	struct order_item *items = calloc(n ? n : 1, sizeof(*items));
	size_t *order = calloc(n ? n : 1, sizeof(*order)), i;

	if (!items || !order) {
		fprintf(stderr, "pmetrics: out of memory in analyze\n");
		exit(2);
	}
	for (i = 0; i < n; i++) {
		items[i].pos = i;
		items[i].is_index = array_index(names[i], lens[i], &items[i].index);
	}
	qsort(items, n, sizeof(*items), cmp_order);
	for (i = 0; i < n; i++)
		order[i] = items[i].pos;
	free(items);
	return order;
}

static void put_fixed(FILE *out, double v, int digits)
{
	char buf[128];

	js_to_fixed(v, digits, buf, sizeof(buf));
	json_write_string(out, buf, strlen(buf));
}

static void put_number(FILE *out, double v)
{
	if (isfinite(v))
		fprintf(out, "%.6g", v);
	else
		fputs("null", out);
}

static void write_extended(FILE *out, const struct key_result *k, const struct report_opts *o)
{
	fputs(",\n      \"pValue\": ", out);
	put_number(out, k->p);
	fprintf(out, ",\n      \"pValueMethod\": \"%s\"", o->p_method == P_EXACT ? "exact" : "upstream");
	fputs(",\n      \"slopeMbPerHour\": ", out);
	put_number(out, k->fit.slope);
	fputs(",\n      \"slopeCi95MbPerHour\": [\n        ", out);
	put_number(out, k->fit.ci_low);
	fputs(",\n        ", out);
	put_number(out, k->fit.ci_high);
	fputs("\n      ]", out);
}

static void write_key(FILE *out, const struct key_result *k, const struct report_opts *o)
{
	int b;

	fputs("    ", out);
	json_write_string(out, k->name, k->name_len);
	fputs(": {\n      \"correlation\": ", out);
	put_fixed(out, k->r, 4);
	fprintf(out, ",\n      \"sampleSize\": %llu,\n      \"interpretation\": ",
		(unsigned long long)k->n);
	json_write_string(out, k->interpretation, strlen(k->interpretation));
	fputs(",\n      \"averageMemoryMbByUptime\": {", out);
	for (b = 0; b < ANALYZE_BUCKETS; b++) {
		uint64_t n = k->stats->bucket_n[b];

		fprintf(out, "%s\n        \"%s\": ", b ? "," : "", analyze_buckets[b].label);
		if (n == 0 || n < o->min_samples)
			fputs("\"N/A - Not enough data available.\"", out);
		else
			put_fixed(out, k->stats->bucket_sum[b] / (double)n, 2);
	}
	fputs("\n      }", out);
	if (o->extended)
		write_extended(out, k, o);
	fputs("\n    }", out);
}

/* analysis["__proto__"] = result sets the prototype of upstream's
 * object instead of adding a key, and JSON.stringify leaves it out. */
static int is_proto(const struct key_result *k)
{
	return key_is(k, "__proto__");
}

static void write_version(FILE *out, const struct version_result *v, const struct report_opts *o)
{
	const char **names;
	size_t *lens, *order, *shown, i, n = 0;

	json_write_string(out, v->v->name, strlen(v->v->name));
	if (!v->v->has_reports) {
		fputs(": \"N/A - No data available\"", out);
		return;
	}
	names = calloc(v->n_keys + 1, sizeof(*names));
	lens = calloc(v->n_keys + 1, sizeof(*lens));
	shown = calloc(v->n_keys + 1, sizeof(*shown));
	if (!names || !lens || !shown) {
		fprintf(stderr, "pmetrics: out of memory in analyze\n");
		exit(2);
	}
	for (i = 0; i < v->n_keys; i++) {
		if (is_proto(&v->keys[i]))
			continue;
		shown[n] = i;
		names[n] = v->keys[i].name;
		lens[n++] = v->keys[i].name_len;
	}
	if (n == 0) {
		fputs(": {}", out);
	} else {
		order = js_key_order(names, lens, n);
		fputs(": {\n", out);
		for (i = 0; i < n; i++) {
			write_key(out, &v->keys[shown[order[i]]], o);
			fputs(i + 1 < n ? ",\n" : "\n", out);
		}
		fputs("  }", out);
		free(order);
	}
	free(shown);
	free(names);
	free(lens);
}

void report_write_json(FILE *out, const struct version_result *r, size_t n,
		       const struct report_opts *o)
{
	const char **names = calloc(n ? n : 1, sizeof(*names));
	size_t *lens = calloc(n ? n : 1, sizeof(*lens)), *order, i;

	if (!names || !lens) {
		fprintf(stderr, "pmetrics: out of memory in analyze\n");
		exit(2);
	}
	for (i = 0; i < n; i++) {
		names[i] = r[i].v->name;
		lens[i] = strlen(names[i]);
	}
	order = js_key_order(names, lens, n);
	fputs(REPORT_HEADER "\n", out);
	if (n == 0) {
		fputs("{}\n", out);
	} else {
		fputs("{\n", out);
		for (i = 0; i < n; i++) {
			fputs("  ", out);
			write_version(out, &r[order[i]], o);
			fputs(i + 1 < n ? ",\n" : "\n", out);
		}
		fputs("}\n", out);
	}
	free(order);
	free(names);
	free(lens);
}

/* ---- text ----------------------------------------------------------------- */

static void text_name(FILE *out, const char *s, size_t len, int width)
{
	size_t i, shown = len > (size_t)width ? (size_t)width - 3 : len;

	for (i = 0; i < shown; i++)
		fputc((unsigned char)s[i] < 0x20 ? '?' : s[i], out);
	if (shown < len)
		fputs("...", out);
	for (i = shown + (shown < len ? 3 : 0); i < (size_t)width; i++)
		fputc(' ', out);
}

void report_format_p(double p, char *buf, size_t size)
{
	if (isnan(p))
		snprintf(buf, size, "n/a"); /* no spread in uptime or memory */
	else if (p >= 0 && p < 1e-300)
		snprintf(buf, size, "<1e-300");
	else
		snprintf(buf, size, "%.2g", p);
}

static void text_key(FILE *out, const struct key_result *k, const struct report_opts *o)
{
	char r[64], buf[64];
	int b;

	js_to_fixed(k->r, 4, r, sizeof(r));
	fputs("  ", out);
	text_name(out, k->name, k->name_len, 40);
	report_format_p(k->p, buf, sizeof(buf));
	fprintf(out, " %8llu %8s %9s", (unsigned long long)k->n, r, buf);
	if (k->fit.ok && isfinite(k->fit.ci_low))
		fprintf(out, " %+10.4f [%+.4f, %+.4f]", k->fit.slope, k->fit.ci_low, k->fit.ci_high);
	else if (k->fit.ok)
		fprintf(out, " %+10.4f %-20s", k->fit.slope, "");
	else
		fprintf(out, " %10s %-20s", "-", "");
	fprintf(out, "  %s", k->interpretation);
	if (k->constant) /* r says little then: upstream's NaN or 0 */
		fprintf(out, " [constant %s]", k->constant);
	fputs("\n      mean MB by uptime:", out);
	for (b = 0; b < ANALYZE_BUCKETS; b++) {
		uint64_t n = k->stats->bucket_n[b];

		if (n == 0 || n < o->min_samples)
			snprintf(buf, sizeof(buf), "-");
		else
			js_to_fixed(k->stats->bucket_sum[b] / (double)n, 2, buf, sizeof(buf));
		fprintf(out, " %s %s", analyze_buckets[b].label, buf);
	}
	fputc('\n', out);
}

void report_write_text(FILE *out, const struct version_result *r, size_t n,
		       const struct report_opts *o)
{
	size_t i, j;

	fprintf(out, "Memory vs uptime, by version (p-value: %s one-tailed; buckets need %llu "
		"sample%s)\n", o->p_method == P_EXACT ? "exact Student-t" : "upstream approximation",
		(unsigned long long)o->min_samples, o->min_samples == 1 ? "" : "s");
	for (i = 0; i < n; i++) {
		fprintf(out, "\n%s", r[i].v->name);
		if (!r[i].v->has_reports) {
			fputs(": no data\n", out);
			continue;
		}
		fputc('\n', out);
		fprintf(out, "  %-40s %8s %8s %9s %10s %-20s  %s\n", "key", "n", "r", "p",
			"MB/hour", "[95% CI]", "interpretation");
		for (j = 0; j < r[i].n_keys; j++)
			text_key(out, &r[i].keys[j], o);
	}
}
