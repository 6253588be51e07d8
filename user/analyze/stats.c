// SPDX-License-Identifier: MIT
/* Statistics and JavaScript-compatible number handling for analyze. */
#include "stats.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void trend_add(struct trend_acc *t, double x, double y)
{
	double dx = x - t->mean_x;
	double dy = y - t->mean_y;

	t->n++;
	t->mean_x += dx / (double)t->n;
	t->mean_y += dy / (double)t->n;
	/* (x - old mean) * (y - new mean): the exact co-moment update. */
	t->m2x += dx * (x - t->mean_x);
	t->m2y += dy * (y - t->mean_y);
	t->cxy += dx * (y - t->mean_y);
}

double trend_pearson(const struct trend_acc *t)
{
	double r;

	if (t->n < 2 || !(t->m2x > 0) || !(t->m2y > 0))
		return NAN;
	r = t->cxy / sqrt(t->m2x * t->m2y);
	if (r > 1.0)
		r = 1.0;
	if (r < -1.0)
		r = -1.0;
	return r;
}

void trend_fit(const struct trend_acc *t, struct trend_slope *out)
{
	double resid, se, tq;

	out->slope = out->intercept = out->ci_low = out->ci_high = NAN;
	out->ok = t->n >= 2 && t->m2x > 0;
	if (!out->ok)
		return;
	out->slope = t->cxy / t->m2x;
	out->intercept = t->mean_y - out->slope * t->mean_x;
	if (t->n < 3)
		return;
	resid = t->m2y - out->slope * t->cxy;
	if (resid < 0)
		resid = 0; /* rounding on a perfect fit */
	se = sqrt(resid / (double)(t->n - 2) / t->m2x);
	tq = student_t_quantile_upper(0.025, (double)(t->n - 2));
	out->ci_low = out->slope - tq * se;
	out->ci_high = out->slope + tq * se;
}

/* Continued fraction of the incomplete beta function, evaluated with the
 * modified Lentz method; converges fast for x < (a+1)/(a+b+2). */
static double beta_continued_fraction(double x, double a, double b)
{
	const double tiny = 1e-300, eps = 1e-16;
	double c = 1.0, d, f, num, delta;
	int m;

	d = 1.0 - (a + b) * x / (a + 1.0);
	if (fabs(d) < tiny)
		d = tiny;
	d = 1.0 / d;
	f = d;
	for (m = 1; m < 200000; m++) {
		double two_m = 2.0 * m;

		num = m * (b - m) * x / ((a + two_m - 1.0) * (a + two_m));
		d = 1.0 + num * d;
		d = fabs(d) < tiny ? 1.0 / tiny : 1.0 / d;
		c = 1.0 + num / c;
		if (fabs(c) < tiny)
			c = tiny;
		f *= d * c;
		num = -(a + m) * (a + b + m) * x / ((a + two_m) * (a + two_m + 1.0));
		d = 1.0 + num * d;
		d = fabs(d) < tiny ? 1.0 / tiny : 1.0 / d;
		c = 1.0 + num / c;
		if (fabs(c) < tiny)
			c = tiny;
		delta = d * c;
		f *= delta;
		if (fabs(delta - 1.0) < eps)
			break;
	}
	return f;
}

static double incomplete_beta_front(double x, double a, double b)
{
	double log_beta = lgamma(a) + lgamma(b) - lgamma(a + b);

	return exp(a * log(x) + b * log1p(-x) - log_beta) / a;
}

double incomplete_beta(double x, double a, double b)
{
	if (isnan(x) || x <= 0.0)
		return x == 0.0 ? 0.0 : NAN;
	if (x >= 1.0)
		return x == 1.0 ? 1.0 : NAN;
	if (x < (a + 1.0) / (a + b + 2.0))
		return incomplete_beta_front(x, a, b) * beta_continued_fraction(x, a, b);
	return 1.0 - incomplete_beta_front(1.0 - x, b, a) *
		beta_continued_fraction(1.0 - x, b, a);
}

/* Tail from x = df/(df+t^2) and its complement t^2/(df+t^2), both given
 * so neither is computed as 1 - (something near 1). */
static double t_tail_from_x(double x, double one_minus_x, double df)
{
	double a = df / 2.0, b = 0.5;

	if (x <= 0.0)
		return 0.0;
	if (x < (a + 1.0) / (a + b + 2.0))
		return 0.5 * incomplete_beta_front(x, a, b) *
			beta_continued_fraction(x, a, b);
	return 0.5 * (1.0 - incomplete_beta_front(one_minus_x, b, a) *
		      beta_continued_fraction(one_minus_x, b, a));
}

double student_t_upper(double t, double df)
{
	double t2;

	if (isnan(t) || !(df > 0))
		return NAN;
	if (t < 0)
		return 1.0 - student_t_upper(-t, df);
	if (isinf(t))
		return 0.0;
	t2 = t * t;
	return t_tail_from_x(df / (df + t2), t2 / (df + t2), df);
}

double student_t_quantile_upper(double p, double df)
{
	double lo = 0.0, hi = 1.0;
	int i;

	if (!(p > 0.0 && p < 0.5) || !(df > 0))
		return NAN;
	while (student_t_upper(hi, df) > p && hi < 1e300)
		hi *= 2.0;
	for (i = 0; i < 200 && hi - lo > 1e-15 * hi; i++) {
		double mid = 0.5 * (lo + hi);

		if (student_t_upper(mid, df) > p)
			lo = mid;
		else
			hi = mid;
	}
	return 0.5 * (lo + hi);
}

double p_value_exact(double r, uint64_t n)
{
	double df, ar;

	if (n < 3 || isnan(r))
		return NAN;
	ar = fabs(r);
	if (ar >= 1.0)
		return 0.0;
	df = (double)(n - 2);
	/* With t = r sqrt(df/(1-r^2)): df/(df+t^2) = 1-r^2, exactly. */
	return t_tail_from_x((1.0 - ar) * (1.0 + ar), ar * ar, df);
}

double p_value_upstream(double r, uint64_t n)
{
	double df = (double)n - 2.0;
	double t = r * sqrt(df / (1.0 - r * r));
	double x = df / (df + t * t);

	return 0.5 * pow(x, df / 2.0);
}

/* calculate-correlation adds up left to right from 0: the sum of N
 * copies of C, rounded at each step as it rounds. */
static double js_sum_of_copies(double c, uint64_t n)
{
	double sum = 0;
	uint64_t i;

	for (i = 0; i < n; i++)
		sum += c;
	return sum;
}

double js_correlation_of_constant(uint64_t n, int x_const, double cx, int y_const, double cy)
{
	double dx = x_const ? cx - js_sum_of_copies(cx, n) / (double)n : NAN;
	double dy = y_const ? cy - js_sum_of_copies(cy, n) / (double)n : NAN;
	double sd_x, sd_y;

	if ((x_const && dx == 0) || (y_const && dy == 0))
		return NAN; /* every product is 0 and so is a deviation: 0/0 */
	if (!x_const || !y_const)
		/* The constant's deviation d is its mean's rounding error, the
		 * same for every sample, so the sum of products is d times the
		 * sum of the other series' deviations, itself rounding error:
		 * r is of order 1e-15, 0 once rounded to 4 decimals. */
		return 0;
	/* One point repeated, its mean off by rounding in both: every
	 * product and deviation is the same, r comes out at +-1. */
	sd_x = sqrt(js_sum_of_copies(dx * dx, n) / (double)(n - 1));
	sd_y = sqrt(js_sum_of_copies(dy * dy, n) / (double)(n - 1));
	return js_sum_of_copies(dx * dy, n) / (sd_x * sd_y) / (double)(n - 1);
}

double js_math_round(double x)
{
	double f;

	if (!isfinite(x))
		return x;
	f = floor(x);
	if (x - f >= 0.5)
		f += 1.0;
	if (f == 0.0 && (x < 0 || signbit(x)))
		return -0.0;
	return f;
}

double js_precise_round(double x, int dec)
{
	double scale = pow(10.0, dec);
	double scaled = x * scale;
	double nudged = scaled + (x >= 0 ? 1.0 : -1.0) * 0.0001;

	return js_math_round(nudged) / scale;
}

/* Number::toString for |x| >= 1e21: the shortest digits that read back,
 * in exponential form ("1e+21", "1.5e+300"). */
static void js_exponential_string(double x, char *buf, size_t size)
{
	int prec;

	if (isinf(x)) {
		snprintf(buf, size, "%s", x < 0 ? "-Infinity" : "Infinity");
		return;
	}
	for (prec = 0; prec < 17; prec++) {
		snprintf(buf, size, "%.*e", prec, x);
		if (strtod(buf, NULL) == x)
			break;
	}
}

static size_t put_zeros(char *out, int n)
{
	int i;

	for (i = 0; i < n; i++)
		out[i] = '0';
	return n > 0 ? (size_t)n : 0;
}

void js_number_to_string(double x, char *buf, size_t size)
{
	char digits[32], e_str[40], out[48];
	const char *p;
	size_t m = 0;
	int k = 0, n, prec;

	if (isnan(x) || isinf(x) || x == 0) {
		snprintf(buf, size, "%s", isnan(x) ? "NaN" : x == 0 ? "0" : x < 0 ? "-Infinity" : "Infinity");
		return;
	}
	/* the shortest digits that read back as x, and its decimal exponent */
	for (prec = 0; prec < 17; prec++) {
		snprintf(e_str, sizeof(e_str), "%.*e", prec, fabs(x));
		if (strtod(e_str, NULL) == fabs(x))
			break;
	}
	for (p = e_str; *p != 'e'; p++)
		if (*p != '.')
			digits[k++] = *p;
	while (k > 1 && digits[k - 1] == '0')
		k--;
	n = atoi(p + 1) + 1; /* |x| = 0.DIGITS * 10^n */
	if (x < 0)
		out[m++] = '-';
	if (k <= n && n <= 21) {         /* 120 */
		memcpy(out + m, digits, (size_t)k);
		m += (size_t)k;
		m += put_zeros(out + m, n - k);
	} else if (0 < n && n <= 21) {   /* 1.5 */
		memcpy(out + m, digits, (size_t)n);
		m += (size_t)n;
		out[m++] = '.';
		memcpy(out + m, digits + n, (size_t)(k - n));
		m += (size_t)(k - n);
	} else if (-6 < n && n <= 0) {   /* 0.0015 */
		out[m++] = '0';
		out[m++] = '.';
		m += put_zeros(out + m, -n);
		memcpy(out + m, digits, (size_t)k);
		m += (size_t)k;
	} else {                         /* 1.5e+300, 1e-7 */
		out[m++] = digits[0];
		if (k > 1)
			out[m++] = '.';
		memcpy(out + m, digits + 1, (size_t)(k - 1));
		m += (size_t)(k - 1);
		m += (size_t)snprintf(out + m, sizeof(out) - m, "e%c%d", n - 1 >= 0 ? '+' : '-', abs(n - 1));
	}
	out[m] = '\0';
	snprintf(buf, size, "%s", out);
}

void js_to_fixed(double x, int digits, char *buf, size_t size)
{
	/* The exact decimal value of a double below 1e21 has at most 22
	 * integer and 1074 fractional digits. */
	char exact[1140];
	char *dot, *p;
	size_t keep;
	int negative = x < 0;

	if (isnan(x)) {
		snprintf(buf, size, "NaN");
		return;
	}
	if (fabs(x) >= 1e21) {
		js_exponential_string(x, buf, size);
		return;
	}
	snprintf(exact, sizeof(exact), "%.1080f", fabs(x));
	dot = strchr(exact, '.');
	keep = (size_t)(dot - exact) + (digits > 0 ? (size_t)digits + 1 : 0);
	if (dot[digits + 1] >= '5') {
		/* Round the kept digits up in magnitude, carrying left. */
		for (p = exact + keep - 1; p >= exact; p--) {
			if (*p == '.')
				continue;
			if (*p != '9') {
				(*p)++;
				break;
			}
			*p = '0';
		}
		if (p < exact) {
			memmove(exact + 1, exact, keep);
			exact[0] = '1';
			keep++;
		}
	}
	exact[keep] = '\0';
	snprintf(buf, size, "%s%s", negative ? "-" : "", exact);
}

/* Length of the white space character at S (UTF-8), 0 when there is none.
 * JavaScript's set: TAB, LF, VT, FF, CR, space, U+00A0, U+1680,
 * U+2000-U+200A, U+2028, U+2029, U+202F, U+205F, U+3000 and U+FEFF; not
 * U+180E (no longer a space since Unicode 6.3) nor U+200B. */
static size_t js_space_char(const unsigned char *s, size_t len)
{
	if (s[0] == ' ' || (s[0] >= '\t' && s[0] <= '\r'))
		return 1;
	if (s[0] == 0xc2)
		return len >= 2 && s[1] == 0xa0 ? 2 : 0;
	if (len < 3)
		return 0;
	if (s[0] == 0xe1)
		return s[1] == 0x9a && s[2] == 0x80 ? 3 : 0;
	if (s[0] == 0xe2 && s[1] == 0x80)
		return (s[2] >= 0x80 && s[2] <= 0x8a) || s[2] == 0xa8 || s[2] == 0xa9 || s[2] == 0xaf ? 3 : 0;
	if (s[0] == 0xe2)
		return s[1] == 0x81 && s[2] == 0x9f ? 3 : 0;
	if (s[0] == 0xe3)
		return s[1] == 0x80 && s[2] == 0x80 ? 3 : 0;
	if (s[0] == 0xef)
		return s[1] == 0xbb && s[2] == 0xbf ? 3 : 0;
	return 0;
}

size_t js_space_len(const char *s, size_t len)
{
	size_t i = 0, n;

	while (i < len && (n = js_space_char((const unsigned char *)s + i, len - i)) != 0)
		i += n;
	return i;
}

static size_t scan_digits(const char *s, size_t i, size_t len)
{
	while (i < len && s[i] >= '0' && s[i] <= '9')
		i++;
	return i;
}

/* Clinger's fast path: with at most 15 digits the digits form an integer
 * below 2^53 and 10^k (k <= 15) is exact too, so one correctly rounded
 * IEEE division gives exactly what strtod would, at a tenth of its cost.
 * S is [sign] digits [. digits], already scanned. NaN: not this shape. */
static double exact_short_decimal(const char *s, size_t len)
{
	static const double pow10[] = { 1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7,
					1e8, 1e9, 1e10, 1e11, 1e12, 1e13, 1e14, 1e15 };
	uint64_t mant = 0;
	int digits = 0, frac = -1, negative = 0;
	size_t i = 0;
	double v;

	if (s[0] == '+' || s[0] == '-')
		negative = s[i++] == '-';
	for (; i < len; i++) {
		if (s[i] == '.') {
			frac = 0;
			continue;
		}
		if (++digits > 15)
			return NAN;
		mant = mant * 10 + (uint64_t)(s[i] - '0');
		if (frac >= 0)
			frac++;
	}
	v = (double)mant / pow10[frac > 0 ? frac : 0];
	return negative ? -v : v;
}

double js_parse_float(const char *s, size_t len)
{
	/* most values start with their digit: no space to look for */
	size_t start = len && (unsigned char)s[0] > ' ' && (unsigned char)s[0] < 0x80 ? 0 : js_space_len(s, len);
	size_t i = start, int_end, frac_end;
	char small[128], *copy;
	double v;
	int negative = 0;

	if (i < len && (s[i] == '+' || s[i] == '-'))
		negative = s[i++] == '-';
	if (len - i >= 8 && memcmp(s + i, "Infinity", 8) == 0)
		return negative ? -INFINITY : INFINITY;
	int_end = scan_digits(s, i, len);
	frac_end = int_end;
	if (int_end < len && s[int_end] == '.')
		frac_end = scan_digits(s, int_end + 1, len);
	if (int_end == i && frac_end <= int_end + 1)
		return NAN; /* no digit at all */
	i = frac_end;
	if (i < len && (s[i] == 'e' || s[i] == 'E')) {
		size_t e = i + 1, e_end;

		if (e < len && (s[e] == '+' || s[e] == '-'))
			e++;
		e_end = scan_digits(s, e, len);
		if (e_end > e)
			i = e_end;
	}
	if (i == frac_end && frac_end - start <= 17) {
		v = exact_short_decimal(s + start, frac_end - start);
		if (!isnan(v))
			return v;
	}
	copy = i - start < sizeof(small) ? small : malloc(i - start + 1);
	if (!copy)
		return NAN;
	memcpy(copy, s + start, i - start);
	copy[i - start] = '\0';
	v = strtod(copy, NULL);
	if (copy != small)
		free(copy);
	return v;
}
