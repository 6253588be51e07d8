// SPDX-License-Identifier: MIT
/* JSON.parse's grammar (RFC 8259) over one line, with the rewrites that
 * make json-c read it as JavaScript does (jsparse.h). One pass; the line
 * is copied only from the first rewrite on, so a plain line costs one
 * scan and no copy. */
#include "jsparse.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "model.h"

static void buf_put(struct jsparse_buf *b, const char *s, size_t n)
{
	if (n == 0)
		return; /* b->s may still be NULL */
	if (b->len + n > b->cap) {
		b->cap = (b->len + n) * 2 + 64;
		b->s = analyze_xrealloc(b->s, b->cap);
	}
	memcpy(b->s + b->len, s, n);
	b->len += n;
}

void jsparse_buf_free(struct jsparse_buf *b)
{
	free(b->s);
	memset(b, 0, sizeof(*b));
}

/* The UTF-8 sequence at S (N bytes left): returns 1 and its length in
 * *USED when it is valid, else 0 and in *USED the bytes Node's decoder
 * turns into one U+FFFD (the lead byte and the continuation bytes that
 * were still possible). */
static int utf8_seq(const unsigned char *s, size_t n, size_t *used)
{
	unsigned char lo = 0x80, hi = 0xbf;
	size_t need, i;

	if (s[0] < 0x80) {
		*used = 1;
		return 1;
	}
	if (s[0] >= 0xc2 && s[0] <= 0xdf) {
		need = 1;
	} else if (s[0] >= 0xe0 && s[0] <= 0xef) {
		need = 2;
		lo = s[0] == 0xe0 ? 0xa0 : 0x80; /* no overlong forms */
		hi = s[0] == 0xed ? 0x9f : 0xbf; /* no surrogates */
	} else if (s[0] >= 0xf0 && s[0] <= 0xf4) {
		need = 3;
		lo = s[0] == 0xf0 ? 0x90 : 0x80;
		hi = s[0] == 0xf4 ? 0x8f : 0xbf; /* nothing above U+10FFFF */
	} else {
		*used = 1;
		return 0;
	}
	for (i = 1; i <= need; i++) {
		if (i >= n || s[i] < lo || s[i] > hi) {
			*used = i;
			return 0;
		}
		lo = 0x80;
		hi = 0xbf;
	}
	*used = need + 1;
	return 1;
}

int utf8_repair(const char *s, size_t len, struct jsparse_buf *out)
{
	size_t i = 0, copied = 0, used;
	int repaired = 0;

	while (i < len) {
		if ((unsigned char)s[i] < 0x80 || utf8_seq((const unsigned char *)s + i, len - i, &used)) {
			i += (unsigned char)s[i] < 0x80 ? 1 : used;
			continue;
		}
		if (!repaired)
			out->len = 0;
		repaired = 1;
		buf_put(out, s + copied, i - copied);
		buf_put(out, "\xef\xbf\xbd", 3);
		i += used;
		copied = i;
	}
	if (repaired)
		buf_put(out, s + copied, len - copied);
	return repaired;
}

/* ---- the grammar --------------------------------------------------------- */

struct scan {
	const char *in;
	size_t len, pos;
	size_t copied;           /* in[0..copied) is already in out */
	struct jsparse_buf *out;
	int rewritten;
	unsigned depth;
	uint8_t is_object[(JSPARSE_MAX_DEPTH + 7) / 8]; /* one bit per level */
};

/* in[from..to) becomes WITH in the line json-c reads. */
static void rewrite(struct scan *sc, size_t from, size_t to, const char *with, size_t n)
{
	if (!sc->rewritten)
		sc->out->len = 0;
	sc->rewritten = 1;
	buf_put(sc->out, sc->in + sc->copied, from - sc->copied);
	buf_put(sc->out, with, n);
	sc->copied = to;
}

static void skip_space(struct scan *sc)
{
	while (sc->pos < sc->len) {
		char c = sc->in[sc->pos];

		if (c != ' ' && c != '\t' && c != '\n' && c != '\r')
			return;
		sc->pos++;
	}
}

static int at(const struct scan *sc, size_t i)
{
	return i < sc->len ? (unsigned char)sc->in[i] : -1;
}

static int is_digit(int c)
{
	return c >= '0' && c <= '9';
}

/* The code unit of \uXXXX whose hex digits start at I, -1 if malformed. */
static long hex4(const struct scan *sc, size_t i)
{
	long v = 0;
	size_t k;

	for (k = i; k < i + 4; k++) {
		int c = at(sc, k);

		if (is_digit(c))
			v = v * 16 + (c - '0');
		else if ((c | 0x20) >= 'a' && (c | 0x20) <= 'f')
			v = v * 16 + ((c | 0x20) - 'a' + 10);
		else
			return -1;
	}
	return v;
}

/* A \u escape at pos (the backslash). */
static int unicode_escape(struct scan *sc, int in_key)
{
	long cu = hex4(sc, sc->pos + 2), low;
	char wtf8[3];

	if (cu < 0)
		return -1;
	if (cu >= 0xd800 && cu <= 0xdbff && at(sc, sc->pos + 6) == '\\' && at(sc, sc->pos + 7) == 'u' &&
	    (low = hex4(sc, sc->pos + 8)) >= 0xdc00 && low <= 0xdfff) {
		sc->pos += 12; /* a pair: json-c joins it as JSON.parse does */
		return 0;
	}
	if (cu >= 0xd800 && cu <= 0xdfff) {
		wtf8[0] = (char)0xed;
		wtf8[1] = (char)(0x80 | ((cu >> 6) & 0x3f));
		wtf8[2] = (char)(0x80 | (cu & 0x3f));
		rewrite(sc, sc->pos, sc->pos + 6, wtf8, 3);
	} else if (cu == 0 && in_key) {
		rewrite(sc, sc->pos, sc->pos + 6, "\\ufffd", 6);
	}
	sc->pos += 6;
	return 0;
}

/* Printable ASCII but '"' (0x22) and '\\' (0x5c): nothing to check. */
static const uint8_t plain_byte[256] = {
	[0x20 ... 0x21] = 1, [0x23 ... 0x5b] = 1, [0x5d ... 0x7f] = 1,
};

/* Whether the 8 bytes at P are all printable ASCII other than '"' and
 * '\\'. Each test is the classic "is there a byte below N" on a 64-bit
 * word: (x - N*ones) & ~x & highs is non-zero exactly when one is. */
static int plain_word(const unsigned char *p)
{
	const uint64_t ones = 0x0101010101010101ULL, highs = 0x8080808080808080ULL;
	uint64_t w, quote, backslash;

	memcpy(&w, p, 8);
	quote = w ^ (ones * '"');
	backslash = w ^ (ones * '\\');
	return (((w - ones * 0x20) & ~w) | ((quote - ones) & ~quote) |
		((backslash - ones) & ~backslash) | w) & highs ? 0 : 1;
}

static int string(struct scan *sc, int in_key)
{
	size_t used;

	sc->pos++; /* the opening quote */
	for (;;) {
		const unsigned char *in = (const unsigned char *)sc->in;
		size_t i = sc->pos;
		int c;

		/* Printable ASCII is most of a report: no work but the scan,
		 * eight bytes at a time while none needs a look. */
		while (i + 8 <= sc->len && plain_word(in + i))
			i += 8;
		while (i < sc->len && plain_byte[in[i]])
			i++;
		sc->pos = i;
		c = at(sc, i);
		if (c == '"') {
			sc->pos++;
			return 0;
		}
		if (c < 0x20) /* the end of the line, or a raw control character */
			return -1;
		if (c == '\\') {
			c = at(sc, sc->pos + 1);
			if (c == 'u') {
				if (unicode_escape(sc, in_key))
					return -1;
				continue;
			}
			if (c <= 0 || !strchr("\"\\/bfnrt", c))
				return -1;
			sc->pos += 2;
		} else if (c < 0x80) {
			sc->pos++;
		} else if (utf8_seq((const unsigned char *)sc->in + sc->pos, sc->len - sc->pos, &used)) {
			sc->pos += used;
		} else {
			rewrite(sc, sc->pos, sc->pos + used, "\xef\xbf\xbd", 3);
			sc->pos += used;
		}
	}
}

static size_t digits(struct scan *sc)
{
	size_t start = sc->pos;

	while (is_digit(at(sc, sc->pos)))
		sc->pos++;
	return sc->pos - start;
}

/* -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)? */
static int number(struct scan *sc)
{
	size_t int_digits;
	int plain = 1;

	if (at(sc, sc->pos) == '-')
		sc->pos++;
	if (at(sc, sc->pos) == '0') {
		sc->pos++;
		int_digits = 1;
	} else if ((int_digits = digits(sc)) == 0) {
		return -1;
	}
	if (at(sc, sc->pos) == '.') {
		sc->pos++;
		if (digits(sc) == 0)
			return -1;
		plain = 0;
	}
	if ((at(sc, sc->pos) | 0x20) == 'e') {
		sc->pos++;
		if (at(sc, sc->pos) == '+' || at(sc, sc->pos) == '-')
			sc->pos++;
		if (digits(sc) == 0)
			return -1;
		plain = 0;
	}
	/* int64 ends at 19 digits: json-c would clamp beyond it. */
	if (plain && int_digits >= 19)
		rewrite(sc, sc->pos, sc->pos, ".0", 2);
	return 0;
}

static int literal(struct scan *sc)
{
	static const char *const words[] = { "true", "false", "null" };
	size_t i, n;

	for (i = 0; i < 3; i++) {
		n = strlen(words[i]);
		if (sc->len - sc->pos >= n && memcmp(sc->in + sc->pos, words[i], n) == 0) {
			sc->pos += n;
			return 0;
		}
	}
	return -1;
}

/* A scalar value, or the opening of a container (then *OPENED is set). */
static int value(struct scan *sc, int *opened)
{
	int c = at(sc, sc->pos);

	*opened = 0;
	if (c == '{' || c == '[') {
		if (sc->depth == JSPARSE_MAX_DEPTH)
			return -1;
		if (c == '{')
			sc->is_object[sc->depth / 8] |= (uint8_t)(1u << (sc->depth % 8));
		else
			sc->is_object[sc->depth / 8] &= (uint8_t)~(1u << (sc->depth % 8));
		sc->depth++;
		sc->pos++;
		*opened = 1;
		return 0;
	}
	if (c == '"')
		return string(sc, 0);
	if (c == '-' || is_digit(c))
		return number(sc);
	return literal(sc);
}

static int in_object(const struct scan *sc)
{
	unsigned d = sc->depth - 1;

	return (sc->is_object[d / 8] >> (d % 8)) & 1;
}

/* A key and its colon. */
static int key(struct scan *sc)
{
	skip_space(sc);
	if (at(sc, sc->pos) != '"' || string(sc, 1))
		return -1;
	skip_space(sc);
	if (at(sc, sc->pos) != ':')
		return -1;
	sc->pos++;
	return 0;
}

/* After a container opened: its end right away, or its first member. */
static int first_member(struct scan *sc)
{
	int obj = in_object(sc);

	skip_space(sc);
	if (at(sc, sc->pos) == (obj ? '}' : ']')) {
		sc->pos++;
		sc->depth--;
		return 0; /* empty: a complete value */
	}
	return obj && key(sc) ? -1 : 1;
}

/* After a complete value: a comma and the next member, or the ends of
 * containers. Returns 1 when a value is expected next, 0 at the end of
 * the line, -1 when malformed. */
static int after_value(struct scan *sc)
{
	for (;;) {
		int c;

		skip_space(sc);
		if (sc->depth == 0)
			return sc->pos == sc->len ? 0 : -1;
		c = at(sc, sc->pos);
		if (c == ',') {
			sc->pos++;
			return in_object(sc) && key(sc) ? -1 : 1;
		}
		if (c != (in_object(sc) ? '}' : ']'))
			return -1;
		sc->pos++;
		sc->depth--;
	}
}

static int scan_line(struct scan *sc)
{
	int opened, next;

	for (;;) {
		skip_space(sc);
		if (value(sc, &opened))
			return -1;
		next = opened ? first_member(sc) : 0;
		if (next < 0)
			return -1;
		if (next == 1)
			continue; /* the container's first value */
		next = after_value(sc);
		if (next <= 0)
			return next;
	}
}

enum jsparse_verdict jsparse_prepare(const char *line, size_t len, struct jsparse_buf *out)
{
	struct scan sc;

	memset(&sc, 0, sizeof(sc));
	sc.in = line;
	sc.len = len;
	sc.out = out;
	if (scan_line(&sc))
		return JSPARSE_MALFORMED;
	if (!sc.rewritten)
		return JSPARSE_AS_IS;
	buf_put(out, line + sc.copied, len - sc.copied);
	return JSPARSE_REWRITTEN;
}
