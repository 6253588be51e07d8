// SPDX-License-Identifier: MIT
/* Semantic version precedence (semver.org 2.0, section 11). */
#include "semver.h"

#include <string.h>

struct semver {
	const char *core[3];   /* numeric identifiers, NULL when absent */
	size_t core_len[3];
	const char *pre;       /* pre-release identifiers, NULL when none */
	size_t pre_len;
};

static int all_digits(const char *s, size_t len)
{
	size_t i;

	if (len == 0)
		return 0;
	for (i = 0; i < len; i++)
		if (s[i] < '0' || s[i] > '9')
			return 0;
	return 1;
}

static int ident_ok(const char *s, size_t len)
{
	size_t i;

	if (len == 0)
		return 0;
	for (i = 0; i < len; i++) {
		char c = s[i];

		if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') ||
		      (c >= 'A' && c <= 'Z') || c == '-'))
			return 0;
	}
	return 1;
}

static int parse_semver(const char *s, struct semver *v)
{
	const char *end, *p;
	int part = 0;

	memset(v, 0, sizeof(*v));
	if (*s == 'v' || *s == 'V')
		s++;
	end = s + strcspn(s, "-+");
	for (p = s; part < 3; part++) {
		const char *dot = memchr(p, '.', (size_t)(end - p));
		const char *stop = dot ? dot : end;

		if (!all_digits(p, (size_t)(stop - p)))
			return -1;
		v->core[part] = p;
		v->core_len[part] = (size_t)(stop - p);
		if (!dot)
			break;
		p = dot + 1;
	}
	if (part == 3)
		return -1; /* a fourth numeric part */
	if (*end == '-') {
		const char *q = end + 1, *pre_end = q + strcspn(q, "+");

		v->pre = q;
		v->pre_len = (size_t)(pre_end - q);
		for (p = q; p <= pre_end;) {
			const char *dot = memchr(p, '.', (size_t)(pre_end - p));
			const char *stop = dot ? dot : pre_end;

			if (!ident_ok(p, (size_t)(stop - p)))
				return -1;
			p = stop + 1;
		}
	}
	return 0;
}

int version_is_semver(const char *s)
{
	struct semver v;

	return parse_semver(s, &v) == 0;
}

/* Compares two digit strings as unbounded non-negative integers. */
static int numeric_cmp(const char *a, size_t alen, const char *b, size_t blen)
{
	int c;

	while (alen > 1 && *a == '0')
		a++, alen--;
	while (blen > 1 && *b == '0')
		b++, blen--;
	if (alen != blen)
		return alen < blen ? -1 : 1;
	c = memcmp(a, b, alen);
	return (c > 0) - (c < 0);
}

static int ident_cmp(const char *a, size_t alen, const char *b, size_t blen)
{
	int an = all_digits(a, alen), bn = all_digits(b, blen), c;
	size_t n = alen < blen ? alen : blen;

	if (an && bn)
		return numeric_cmp(a, alen, b, blen);
	if (an != bn)
		return an ? -1 : 1; /* numeric identifiers sort lower */
	c = memcmp(a, b, n);
	if (c)
		return c > 0 ? 1 : -1;
	return alen == blen ? 0 : (alen < blen ? -1 : 1);
}

static int pre_cmp(const struct semver *a, const struct semver *b)
{
	const char *pa = a->pre, *pb = b->pre, *ea, *eb;

	if (!a->pre || !b->pre)
		return !a->pre && !b->pre ? 0 : (a->pre ? -1 : 1);
	/* only now: NULL + 0 is undefined behaviour (found by fuzz_jsonl) */
	ea = a->pre + a->pre_len;
	eb = b->pre + b->pre_len;
	while (pa < ea && pb < eb) {
		const char *da = memchr(pa, '.', (size_t)(ea - pa));
		const char *db = memchr(pb, '.', (size_t)(eb - pb));
		const char *sa = da ? da : ea, *sb = db ? db : eb;
		int c = ident_cmp(pa, (size_t)(sa - pa), pb, (size_t)(sb - pb));

		if (c)
			return c;
		pa = sa + 1;
		pb = sb + 1;
	}
	if (pa < ea)
		return 1; /* more identifiers: higher */
	if (pb < eb)
		return -1;
	return 0;
}

/* Ascending precedence of two parsed versions. */
static int semver_cmp(const struct semver *a, const struct semver *b)
{
	int i, c;

	for (i = 0; i < 3; i++) {
		const char *ca = a->core[i] ? a->core[i] : "0";
		const char *cb = b->core[i] ? b->core[i] : "0";
		size_t la = a->core[i] ? a->core_len[i] : 1;
		size_t lb = b->core[i] ? b->core_len[i] : 1;

		c = numeric_cmp(ca, la, cb, lb);
		if (c)
			return c;
	}
	return pre_cmp(a, b);
}

int version_cmp_newest_first(const char *a, const char *b)
{
	struct semver va, vb;
	int a_ok = parse_semver(a, &va) == 0, b_ok = parse_semver(b, &vb) == 0;
	int c;

	if (a_ok != b_ok)
		return a_ok ? -1 : 1;
	if (a_ok) {
		c = semver_cmp(&va, &vb);
		if (c)
			return -c;
	}
	c = strcmp(a, b);
	return (c > 0) - (c < 0);
}
