// SPDX-License-Identifier: MIT
/* The outputs' byte buffer and its escapes; see outputs.h. */
#include "outputs.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void out_put(struct out_buf *b, const char *s, size_t n)
{
	if (b->oom)
		return;
	if (b->len + n + 1 > b->cap) {
		size_t cap = b->cap ? b->cap : 4096;
		while (cap < b->len + n + 1)
			cap *= 2;
		char *p = realloc(b->s, cap);
		if (!p) {
			b->oom = true;
			return;
		}
		b->s = p;
		b->cap = cap;
	}
	memcpy(b->s + b->len, s, n);
	b->len += n;
	b->s[b->len] = '\0';
}

void out_str(struct out_buf *b, const char *s)
{
	out_put(b, s, strlen(s));
}

void out_printf(struct out_buf *b, const char *fmt, ...)
{
	char small[512];
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(small, sizeof(small), fmt, ap);
	va_end(ap);
	if (n < 0)
		return;
	if ((size_t)n < sizeof(small)) {
		out_put(b, small, (size_t)n);
		return;
	}
	char *big = malloc((size_t)n + 1);
	if (!big) {
		b->oom = true;
		return;
	}
	va_start(ap, fmt);
	vsnprintf(big, (size_t)n + 1, fmt, ap);
	va_end(ap);
	out_put(b, big, (size_t)n);
	free(big);
}

/* The length of the valid UTF-8 sequence at S, or 0 when it is not one
 * (an overlong form, a surrogate, a stray continuation byte...). */
static size_t utf8_seq(const unsigned char *s)
{
	size_t n;
	uint32_t cp;

	if (s[0] < 0x80)
		return 1;
	if (s[0] >= 0xc2 && s[0] <= 0xdf)
		n = 2, cp = s[0] & 0x1f;
	else if (s[0] >= 0xe0 && s[0] <= 0xef)
		n = 3, cp = s[0] & 0x0f;
	else if (s[0] >= 0xf0 && s[0] <= 0xf4)
		n = 4, cp = s[0] & 0x07;
	else
		return 0;
	for (size_t i = 1; i < n; i++) {
		if ((s[i] & 0xc0) != 0x80)
			return 0;
		cp = cp << 6 | (s[i] & 0x3f);
	}
	if ((n == 3 && cp < 0x800) || (n == 4 && (cp < 0x10000 || cp > 0x10ffff)) ||
	    (cp >= 0xd800 && cp <= 0xdfff))
		return 0;
	return n;
}

/* Whether the N-byte sequence at S is U+FFFE or U+FFFF: valid UTF-8,
 * but no XML character, and the JSON escape lands in the SVG's script. */
static bool xml_nonchar(const unsigned char *s, size_t n)
{
	return n == 3 && s[0] == 0xef && s[1] == 0xbf && (s[2] == 0xbe || s[2] == 0xbf);
}

/* Copies a multi-byte sequence or writes '?' for a byte that is no UTF-8
 * (or for a whole U+FFFE or U+FFFF); returns the bytes of S consumed. */
static size_t put_utf8(struct out_buf *b, const char *s)
{
	size_t n = utf8_seq((const unsigned char *)s);

	if (n == 0 || xml_nonchar((const unsigned char *)s, n)) {
		out_put(b, "?", 1);
		return n ? n : 1;
	}
	out_put(b, s, n);
	return n;
}

size_t out_utf8_char(const char *s)
{
	size_t n = utf8_seq((const unsigned char *)s);

	return n ? n : 1;
}

void out_json_str(struct out_buf *b, const char *s)
{
	while (*s) {
		unsigned char c = (unsigned char)*s;
		if (c >= 0x80) {
			s += put_utf8(b, s);
			continue;
		}
		if (c == '"' || c == '\\')
			out_printf(b, "\\%c", c);
		else if (c < 0x20 || c == '<' || c == '>' || c == '&' || c == 0x7f)
			out_printf(b, "\\u%04x", c);
		else
			out_put(b, s, 1);
		s++;
	}
}

void out_xml_str(struct out_buf *b, const char *s)
{
	for (; *s; s++) {
		if ((unsigned char)*s >= 0x80) {
			s += put_utf8(b, s) - 1;
			continue;
		}
		switch (*s) {
		case '&': out_str(b, "&amp;"); break;
		case '<': out_str(b, "&lt;"); break;
		case '>': out_str(b, "&gt;"); break;
		case '"': out_str(b, "&quot;"); break;
		case '\'': out_str(b, "&#39;"); break;
		default:
			/* XML 1.0 has no control characters but tab, LF, CR */
			if ((unsigned char)*s < 0x20 && *s != '\t' && *s != '\n' && *s != '\r')
				out_str(b, "?");
			else
				out_put(b, s, 1);
		}
	}
}

void out_free(struct out_buf *b)
{
	free(b->s);
	memset(b, 0, sizeof(*b));
}
