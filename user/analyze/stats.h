// SPDX-License-Identifier: MIT
/* Statistics for pmetrics analyze: a numerically stable streaming Pearson
 * accumulator, least-squares slope with its confidence interval, the exact
 * and the upstream one-tailed p-values, and the JavaScript number
 * formatting the upstream output depends on (Math.round, toFixed,
 * parseFloat). */
#ifndef PMETRICS_ANALYZE_STATS_H
#define PMETRICS_ANALYZE_STATS_H

#include <stddef.h>
#include <stdint.h>

/* Running means and co-moments (Welford): no catastrophic cancellation
 * when 1e6 samples sit near 1e3 with a tiny spread. */
struct trend_acc {
	uint64_t n;
	double mean_x, mean_y;
	double m2x, m2y; /* sums of squared deviations */
	double cxy;      /* sum of products of deviations */
};

void trend_add(struct trend_acc *t, double x, double y);
/* Sample Pearson r; NaN when either variable has no spread or n < 2. */
double trend_pearson(const struct trend_acc *t);

struct trend_slope {
	double slope;      /* y units per x unit: MB per hour */
	double intercept;
	double ci_low, ci_high; /* 95 %, NaN when n < 3 */
	int ok;            /* 0 when x has no spread */
};
void trend_fit(const struct trend_acc *t, struct trend_slope *out);

/* P(T > t) for Student's t with df degrees of freedom, t >= 0 or < 0. */
double student_t_upper(double t, double df);
/* t such that P(T > t) = p, for 0 < p < 0.5. */
double student_t_quantile_upper(double p, double df);
/* Regularized incomplete beta I_x(a, b). */
double incomplete_beta(double x, double a, double b);

/* One-tailed p-value of r in its own direction: the exact Student-t tail
 * of t = r sqrt((n-2)/(1-r^2)) with n-2 degrees of freedom. */
double p_value_exact(double r, uint64_t n);
/* Upstream's approximation (formats.md s.3): 0.5 * x^(df/2). */
double p_value_upstream(double r, uint64_t n);

/* The r calculate-correlation gives for N samples when X (value CX), Y
 * (value CY) or both do not vary: NaN when the constant's mean comes out
 * exactly (0/0), else what its rounding error makes of it (0, or +-1
 * when both are constant). Its plain sums are what decide, so they are
 * redone here the way it does them. */
double js_correlation_of_constant(uint64_t n, int x_const, double cx, int y_const, double cy);

/* JavaScript Math.round: nearest integer, halves toward +infinity. */
double js_math_round(double x);
/* Upstream's calculate-correlation rounding of r to DEC decimals. */
double js_precise_round(double x, int dec);
/* Number.prototype.toFixed(digits) into buf (>= 64 bytes for |x| < 1e21,
 * 40 bytes beyond): half-way cases of the exact binary value round up in
 * magnitude, which glibc's printf (half to even) does not do. */
void js_to_fixed(double x, int digits, char *buf, size_t size);
/* JavaScript's String() of a number: the shortest digits that read back,
 * "5", "0.1", "1e+21", "1.5e-7", "-0" as "0". BUF >= 32 bytes. */
void js_number_to_string(double x, char *buf, size_t size);
/* JavaScript parseFloat on S[0..len): the longest decimal prefix after
 * leading white space, or "Infinity"; NaN when there is none. Digits of
 * other scripts are not digits to it. */
double js_parse_float(const char *s, size_t len);
/* Bytes of JavaScript white space (String.prototype.trim's set, what
 * parseFloat skips) at the start of the UTF-8 text S[0..len). */
size_t js_space_len(const char *s, size_t len);

#endif
