// SPDX-License-Identifier: MIT
/* Statistics of pmetrics analyze against values known without the code:
 * hand-checkable datasets, published Student-t table values, closed forms,
 * upstream's p-value formula worked out by hand, JavaScript rounding. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analyze/stats.h"

#define assert_near(got, want, tol)                                             \
	do {                                                                    \
		double g_ = (got), w_ = (want), t_ = (tol);                     \
		if (!(fabs(g_ - w_) <= t_))                                     \
			fail_msg("%s = %.17g, want %.17g +- %g", #got, g_, w_, t_); \
	} while (0)

static struct trend_acc acc_of(const double *x, const double *y, int n)
{
	struct trend_acc t = { 0 };
	int i;

	for (i = 0; i < n; i++)
		trend_add(&t, x[i], y[i]);
	return t;
}

/* ---- Pearson r ------------------------------------------------------------ */

static void perfect_positive_line_gives_r_1(void **state)
{
	double x[30], y[30];
	struct trend_acc t;
	int i;
	(void)state;
	for (i = 0; i < 30; i++) {
		x[i] = i * 0.5;
		y[i] = 100 + 3 * x[i];
	}
	t = acc_of(x, y, 30);
	assert_int_equal(t.n, 30);
	assert_near(trend_pearson(&t), 1.0, 1e-12);
}

static void perfect_negative_line_gives_r_minus_1(void **state)
{
	double x[30], y[30];
	struct trend_acc t;
	int i;
	(void)state;
	for (i = 0; i < 30; i++) {
		x[i] = i;
		y[i] = 1000 - 2 * x[i];
	}
	t = acc_of(x, y, 30);
	assert_near(trend_pearson(&t), -1.0, 1e-12);
}

static void flat_memory_has_no_correlation(void **state)
{
	double x[30], y[30];
	struct trend_acc t;
	int i;
	(void)state;
	for (i = 0; i < 30; i++) {
		x[i] = i;
		y[i] = 42.0;
	}
	t = acc_of(x, y, 30);
	/* 0/0 in upstream's arithmetic too: undefined, never "significant" */
	assert_true(isnan(trend_pearson(&t)));
	assert_true(isnan(p_value_exact(trend_pearson(&t), 30)));
}

/* x = 1..5, y = 2,4,5,4,5: Sxx = 10, Syy = 6, Sxy = 6 (by hand). */
static void small_dataset_by_hand(void **state)
{
	static const double x[] = { 1, 2, 3, 4, 5 }, y[] = { 2, 4, 5, 4, 5 };
	struct trend_acc t = acc_of(x, y, 5);
	struct trend_slope s;
	(void)state;
	assert_near(t.mean_x, 3.0, 1e-15);
	assert_near(t.mean_y, 4.0, 1e-15);
	assert_near(t.m2x, 10.0, 1e-12);
	assert_near(t.m2y, 6.0, 1e-12);
	assert_near(t.cxy, 6.0, 1e-12);
	assert_near(trend_pearson(&t), 6.0 / sqrt(60.0), 1e-15); /* 0.7745967 */
	trend_fit(&t, &s);
	assert_true(s.ok);
	assert_near(s.slope, 0.6, 1e-12);
	assert_near(s.intercept, 2.2, 1e-12);
	/* SE = sqrt((Syy - b Sxy) / (n-2) / Sxx) = sqrt(2.4/3/10) = 0.28284;
	 * t(0.025, df 3) = 3.182 in the table: 0.6 -+ 0.90008 (table value
	 * rounded to 3 decimals: +- 0.0005 * 0.283 on each end). */
	assert_near(s.ci_low, 0.6 - 3.182 * sqrt(0.08), 2e-4);
	assert_near(s.ci_high, 0.6 + 3.182 * sqrt(0.08), 2e-4);
}

static void perfect_fit_has_zero_width_interval(void **state)
{
	static const double x[] = { 0, 10, 20, 30 }, y[] = { 5, 25, 45, 65 };
	struct trend_acc t = acc_of(x, y, 4);
	struct trend_slope s;
	(void)state;
	trend_fit(&t, &s);
	assert_near(s.slope, 2.0, 1e-12);
	assert_near(s.ci_low, 2.0, 1e-9);
	assert_near(s.ci_high, 2.0, 1e-9);
}

static void no_uptime_spread_means_no_slope(void **state)
{
	static const double x[] = { 7, 7, 7 }, y[] = { 1, 2, 3 };
	struct trend_acc t = acc_of(x, y, 3);
	struct trend_slope s;
	(void)state;
	trend_fit(&t, &s);
	assert_false(s.ok);
	assert_true(isnan(s.slope));
}

/* 1e6 samples near 1e3 with a spread of about 3e-4: the textbook one-pass
 * formula (sum x^2 - n mean^2) loses every digit here. Pairs share an x
 * offset d = (i/2 mod 1000) * 1e-6 and get opposite noise +-s, so
 * cov(x, y) = var(d) exactly and r = sqrt(var d / (var d + s^2)) with
 * var d = 1e-12 (1000^2 - 1) / 12: r = 0.8219948032 for s = 2e-4. */
static void pearson_is_stable_on_a_million_samples_near_1e3(void **state)
{
	struct trend_acc t = { 0 };
	long i;
	(void)state;
	for (i = 0; i < 1000000; i++) {
		double d = (double)((i / 2) % 1000) * 1e-6;
		double e = (i % 2) ? 2e-4 : -2e-4;

		trend_add(&t, 1000.0 + d, 1000.0 + d + e);
	}
	assert_int_equal(t.n, 1000000);
	assert_near(trend_pearson(&t), 0.8219948032302093, 1e-7);
	assert_near(t.m2x / 1e6, 1e-12 * (1000.0 * 1000.0 - 1) / 12, 1e-15);
}

/* ---- exact Student-t p-values vs the published tables ------------------ */

struct t_row {
	double df, t, p; /* one-tailed P(T > t) = p, t to 3 decimals */
};

/* Critical values of Student's t, one tail, as printed in every table
 * (e.g. NIST/SEMATECH e-Handbook 1.3.6.7.2). */
static const struct t_row t_table[] = {
	{ 1, 6.314, 0.05 },   { 1, 12.706, 0.025 }, { 1, 63.657, 0.005 },
	{ 2, 2.920, 0.05 },   { 2, 9.925, 0.005 },  { 5, 2.015, 0.05 },
	{ 5, 4.032, 0.005 },  { 10, 1.812, 0.05 },  { 10, 2.228, 0.025 },
	{ 10, 2.764, 0.01 },  { 10, 3.169, 0.005 }, { 20, 1.725, 0.05 },
	{ 20, 2.528, 0.01 },  { 28, 1.701, 0.05 },  { 28, 2.048, 0.025 },
	{ 28, 2.467, 0.01 },  { 28, 2.763, 0.005 }, { 30, 1.697, 0.05 },
	{ 30, 2.750, 0.005 }, { 60, 1.671, 0.05 },  { 100, 1.660, 0.05 },
	{ 100, 2.364, 0.01 }, { 1000, 1.646, 0.05 },
};

/* Density of t, to turn the table's 3-decimal rounding of t (+-0.0005)
 * into a tolerance on p. */
static double t_density(double t, double df)
{
	return exp(lgamma((df + 1) / 2) - lgamma(df / 2) - 0.5 * log(df * M_PI) -
		   (df + 1) / 2 * log1p(t * t / df));
}

static void exact_p_matches_the_t_table(void **state)
{
	size_t i;
	(void)state;
	for (i = 0; i < sizeof(t_table) / sizeof(t_table[0]); i++) {
		const struct t_row *r = &t_table[i];
		double tol = 0.0005 * t_density(r->t, r->df) * 1.01 + 1e-12;

		assert_near(student_t_upper(r->t, r->df), r->p, tol);
		/* and back: the quantile rounds to the printed value */
		assert_near(student_t_quantile_upper(r->p, r->df), r->t, 0.0005 + 1e-9);
	}
}

static void exact_p_matches_closed_forms(void **state)
{
	double t;
	(void)state;
	for (t = 0; t <= 50; t += 0.37) {
		/* df 1 is the Cauchy distribution, df 2 has an algebraic tail */
		assert_near(student_t_upper(t, 1), 0.5 - atan(t) / M_PI, 1e-13);
		assert_near(student_t_upper(t, 2), 0.5 * (1 - t / sqrt(2 + t * t)), 1e-13);
	}
	assert_near(student_t_upper(0, 7), 0.5, 1e-15);
	assert_near(student_t_upper(-1.812, 10), 0.95, 0.0005 * t_density(1.812, 10) * 1.01);
	assert_near(student_t_upper(INFINITY, 10), 0.0, 0);
}

static void exact_p_of_r_goes_through_t(void **state)
{
	/* r with t = 2.048 at n = 30: r = t / sqrt(df + t^2) */
	double r = 2.048 / sqrt(28 + 2.048 * 2.048);
	(void)state;
	assert_near(p_value_exact(r, 30), 0.025, 0.0005 * t_density(2.048, 28) * 1.01);
	assert_near(p_value_exact(-r, 30), 0.025, 0.0005 * t_density(2.048, 28) * 1.01);
	assert_near(p_value_exact(1.0, 30), 0.0, 0);
	assert_true(isnan(p_value_exact(0.5, 2))); /* no degree of freedom */
}

/* Far tails, against 0.5 I_x(df/2, 1/2) evaluated with mpmath at 50
 * digits: no 1 - (1 - p) rounding, relative error below 1e-10. */
static void tiny_p_values_keep_their_digits(void **state)
{
	(void)state;
	assert_near(p_value_exact(0.5, 1000) / 1.1390509647689645e-64, 1.0, 1e-10);
	assert_near(student_t_upper(40, 10) / 1.1404288715428769e-12, 1.0, 1e-10);
	assert_near(student_t_upper(2, 10), 0.036694017385370188, 1e-14);
}

static void incomplete_beta_known_values(void **state)
{
	(void)state;
	/* I_x(1, 1) = x; I_x(a, 1) = x^a; I_x(1, b) = 1 - (1-x)^b; symmetry */
	assert_near(incomplete_beta(0.3, 1, 1), 0.3, 1e-15);
	assert_near(incomplete_beta(0.3, 4, 1), 0.0081, 1e-15);
	assert_near(incomplete_beta(0.3, 1, 3), 1 - 0.343, 1e-15);
	assert_near(incomplete_beta(0.5, 7.5, 7.5), 0.5, 1e-14);
	assert_near(incomplete_beta(0.2, 2, 3) + incomplete_beta(0.8, 3, 2), 1.0, 1e-14);
	assert_near(incomplete_beta(0, 2, 3), 0.0, 0);
	assert_near(incomplete_beta(1, 2, 3), 1.0, 0);
}

/* ---- upstream's approximation, by hand from formats.md ------------------ */

static void upstream_p_by_hand(void **state)
{
	(void)state;
	/* r = 0.5, n = 12: df = 10, x = df/(df+t^2) = 1 - r^2 = 0.75,
	 * p = 0.5 * 0.75^5 = 0.11865234375 */
	assert_near(p_value_upstream(0.5, 12), 0.11865234375, 1e-15);
	/* r = 0.3, n = 32: df = 30, x = 0.91, p = 0.5 * 0.91^15 = 0.1215040877628788 */
	assert_near(p_value_upstream(0.3, 32), 0.1215040877628788, 1e-15);
	/* r = -0.3 gives the same (t^2) */
	assert_near(p_value_upstream(-0.3, 32), 0.1215040877628788, 1e-15);
	/* perfect correlation: t infinite, x = 0, p = 0 */
	assert_near(p_value_upstream(1.0, 40), 0.0, 0);
}

static void upstream_p_is_2_5x_too_large_at_t_2_df_10(void **state)
{
	/* t = 2 at df = 10: the table puts P(T > 2) at 0.0367; upstream gives
	 * 0.5 * (10/14)^5 = 0.09295... */
	double r = 2 / sqrt(14.0);
	double up = p_value_upstream(r, 12), ex = p_value_exact(r, 12);
	(void)state;
	assert_near(up, 0.5 * pow(10.0 / 14.0, 5), 1e-14);
	assert_near(ex, 0.036694017385370188, 1e-14);
	assert_true(up / ex > 2.5 && up / ex < 2.6);
}

/* ---- JavaScript number formatting ------------------------------------- */

static const char *fixed(double x, int digits)
{
	static char buf[128];

	js_to_fixed(x, digits, buf, sizeof(buf));
	return buf;
}

/* calculate-correlation(x, y, {decimals: 4}) with one series constant,
 * as node 20 prints it: NaN for 30 times 5 or 3 (an exact mean), 0 for
 * 30 times 0.1 (a mean off by rounding); 1 for one point repeated. */
static void constant_series_r_like_calculate_correlation(void **state)
{
	(void)state;
	assert_true(isnan(js_correlation_of_constant(30, 0, 0, 1, 5)));
	assert_true(isnan(js_correlation_of_constant(30, 1, 3, 0, 0)));
	assert_true(isnan(js_correlation_of_constant(30, 0, 0, 1, 0)));
	assert_true(isnan(js_correlation_of_constant(30, 0, 0, 1, -0.0)));
	assert_true(js_correlation_of_constant(30, 0, 0, 1, 0.1) == 0);
	assert_true(js_correlation_of_constant(30, 1, 26.1, 0, 0) == 0);
	assert_true(js_precise_round(js_correlation_of_constant(30, 1, 0.1, 1, 0.1), 4) == 1);
	/* exact in one of the two: still 0/0 */
	assert_true(isnan(js_correlation_of_constant(30, 1, 0.1, 1, 5)));
	assert_true(isnan(js_correlation_of_constant(1, 1, 0.1, 1, 0.1)));
}

/* String(x) in node 20 for each. */
static void number_to_string_like_javascript(void **state)
{
	static const struct { double x; const char *want; } cases[] = {
		{ 5, "5" }, { -0.0, "0" }, { 0.1, "0.1" }, { -1.5, "-1.5" }, { 120, "120" },
		{ 1e21, "1e+21" }, { 123456789012345678901.0, "123456789012345680000" },
		{ 1.5e300, "1.5e+300" }, { 1e-7, "1e-7" }, { 1.5e-7, "1.5e-7" }, { 0.000001, "0.000001" },
		{ 0.0015, "0.0015" }, { 5e-324, "5e-324" }, { 1.7976931348623157e308, "1.7976931348623157e+308" },
		{ 0.30000000000000004, "0.30000000000000004" }, { 2e-6, "0.000002" }, { 1e20, "100000000000000000000" },
		{ __builtin_inf(), "Infinity" }, { -__builtin_inf(), "-Infinity" },
	};
	char buf[32];
	size_t i;
	(void)state;
	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		js_number_to_string(cases[i].x, buf, sizeof(buf));
		assert_string_equal(buf, cases[i].want);
	}
}

static void to_fixed_like_javascript(void **state)
{
	(void)state;
	assert_string_equal(fixed(198.24, 2), "198.24");
	assert_string_equal(fixed(0.125, 2), "0.13");  /* exact tie: up, not to even */
	assert_string_equal(fixed(-0.125, 2), "-0.13");
	assert_string_equal(fixed(1.005, 2), "1.00");  /* 1.00499999999999989... */
	assert_string_equal(fixed(0.1196, 4), "0.1196");
	assert_string_equal(fixed(-1, 4), "-1.0000");
	assert_string_equal(fixed(0, 4), "0.0000");
	assert_string_equal(fixed(9.995, 2), "9.99"); /* 9.9949999... */
	assert_string_equal(fixed(99.995, 2), "100.00"); /* 99.99500000000000455 */
	assert_string_equal(fixed(1e21, 2), "1e+21");
	assert_string_equal(fixed(NAN, 4), "NaN");
}

static void precise_round_like_calculate_correlation(void **state)
{
	(void)state;
	assert_near(js_precise_round(0.12345, 4), 0.1235, 1e-15);
	assert_near(js_precise_round(-0.12345, 4), -0.1235, 1e-15);
	assert_near(js_precise_round(0.77459666, 4), 0.7746, 1e-15);
	assert_near(js_math_round(2.5), 3, 0);
	assert_near(js_math_round(-2.5), -2, 0);
	assert_true(signbit(js_math_round(-0.4)));
}

static void parse_float_like_javascript(void **state)
{
	(void)state;
	assert_near(js_parse_float("201.55", 6), 201.55, 0);
	assert_near(js_parse_float("  26.00hrs", 10), 26.0, 0);
	assert_near(js_parse_float("-.5e1x", 6), -5.0, 0);
	assert_near(js_parse_float("1e", 2), 1.0, 0);
	assert_true(isinf(js_parse_float("Infinity", 8)));
	assert_true(isnan(js_parse_float("abc", 3)));
	assert_true(isnan(js_parse_float(".", 1)));
	assert_true(isnan(js_parse_float("", 0)));
	/* length-bounded: the digits after len are not read */
	assert_near(js_parse_float("12345", 2), 12.0, 0);
}

/* The short-decimal fast path must give strtod's double to the bit. */
/* parseFloat skips JavaScript's white space, all of it and only it, and
 * reads ASCII digits only (node 20: parseFloat("\u3000 7") is 7,
 * parseFloat("\u200b9") and parseFloat("\u0661") are NaN). */
static void parse_float_skips_unicode_spaces_only(void **state)
{
	static const char *const spaces[] = {
		"\xc2\xa0", "\xe1\x9a\x80", "\xe2\x80\x80", "\xe2\x80\x83", "\xe2\x80\x8a",
		"\xe2\x80\xa8", "\xe2\x80\xa9", "\xe2\x80\xaf", "\xe2\x81\x9f", "\xe3\x80\x80",
		"\xef\xbb\xbf", "\v", "\f",
	};
	static const char *const not_spaces[] = {
		"\xe1\xa0\x8e", "\xe2\x80\x8b", "\x1c", "\xe2\x80\x41", "\xc2", "\xd9\xa1",
		"\xef\xbc\x91",
	};
	char buf[32];
	size_t i;
	(void)state;
	for (i = 0; i < sizeof(spaces) / sizeof(spaces[0]); i++) {
		snprintf(buf, sizeof(buf), "%s 7", spaces[i]);
		assert_near(js_parse_float(buf, strlen(buf)), 7.0, 0);
		assert_int_equal(js_space_len(buf, strlen(buf)), strlen(spaces[i]) + 1);
	}
	for (i = 0; i < sizeof(not_spaces) / sizeof(not_spaces[0]); i++) {
		snprintf(buf, sizeof(buf), "%s7", not_spaces[i]);
		assert_true(isnan(js_parse_float(buf, strlen(buf))));
		assert_int_equal(js_space_len(buf, strlen(buf)), 0);
	}
	/* a space cut short at the end of the text is not a space */
	assert_int_equal(js_space_len("\xe3\x80", 2), 0);
}

static void parse_float_fast_path_is_exact(void **state)
{
	uint64_t x = 88172645463325252ULL;
	char buf[64];
	int i;
	(void)state;
	for (i = 0; i < 300000; i++) {
		int n, dot;
		double want, got;

		x ^= x << 13; /* xorshift64 */
		x ^= x >> 7;
		x ^= x << 17;
		n = snprintf(buf, sizeof(buf), "%s%llu", (x & 1) ? "-" : "",
			     (unsigned long long)(x >> 11) % 1000000000000000ULL);
		dot = (int)((x >> 3) % 17);
		if (dot < n - 1 && buf[dot] != '-') { /* move the tail right, put a '.' */
			memmove(buf + dot + 1, buf + dot, (size_t)(n - dot + 1));
			buf[dot] = '.';
			n++;
		}
		want = strtod(buf, NULL);
		got = js_parse_float(buf, (size_t)n);
		if (memcmp(&want, &got, sizeof(want)) != 0)
			fail_msg("%s: strtod %.17g, js_parse_float %.17g", buf, want, got);
	}
	assert_true(signbit(js_parse_float("-0.0", 4)));
	assert_near(js_parse_float("0.1", 3), 0.1, 0);
	assert_near(js_parse_float("123456789012345.6", 17), 123456789012345.6, 0); /* 16 digits: strtod */
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(perfect_positive_line_gives_r_1),
		cmocka_unit_test(perfect_negative_line_gives_r_minus_1),
		cmocka_unit_test(flat_memory_has_no_correlation),
		cmocka_unit_test(small_dataset_by_hand),
		cmocka_unit_test(perfect_fit_has_zero_width_interval),
		cmocka_unit_test(no_uptime_spread_means_no_slope),
		cmocka_unit_test(pearson_is_stable_on_a_million_samples_near_1e3),
		cmocka_unit_test(exact_p_matches_the_t_table),
		cmocka_unit_test(exact_p_matches_closed_forms),
		cmocka_unit_test(exact_p_of_r_goes_through_t),
		cmocka_unit_test(tiny_p_values_keep_their_digits),
		cmocka_unit_test(incomplete_beta_known_values),
		cmocka_unit_test(upstream_p_by_hand),
		cmocka_unit_test(upstream_p_is_2_5x_too_large_at_t_2_df_10),
		cmocka_unit_test(constant_series_r_like_calculate_correlation),
		cmocka_unit_test(number_to_string_like_javascript),
		cmocka_unit_test(to_fixed_like_javascript),
		cmocka_unit_test(precise_round_like_calculate_correlation),
		cmocka_unit_test(parse_float_like_javascript),
		cmocka_unit_test(parse_float_skips_unicode_spaces_only),
		cmocka_unit_test(parse_float_fast_path_is_exact),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
