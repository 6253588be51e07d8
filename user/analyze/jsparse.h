// SPDX-License-Identifier: MIT
/* A line of JSON as upstream's JavaScript reads it, for json-c to read
 * the same. Upstream decodes the whole export as UTF-8 (Node's
 * Buffer.toString: every invalid sequence becomes U+FFFD) and gives each
 * line to JSON.parse, which is strict. json-c is lenient where
 * JSON.parse throws (NaN, Infinity, -01, "1.", single quotes, raw
 * control characters) and reads some valid JSON differently: it clamps
 * integers beyond 64 bits, turns a lone surrogate escape into U+FFFD and
 * cuts an object key at an escaped NUL. jsparse_prepare() checks the
 * line against JSON.parse's grammar and rewrites what json-c would read
 * differently. */
#ifndef PMETRICS_ANALYZE_JSPARSE_H
#define PMETRICS_ANALYZE_JSPARSE_H

#include <stddef.h>

/* Deepest nesting of objects and arrays taken: simdjson's limit, and
 * json-c's with a tokener of depth JSPARSE_MAX_DEPTH + 1. JSON.parse has
 * none; a deeper line is malformed to both readers. */
#define JSPARSE_MAX_DEPTH 1023

struct jsparse_buf {
	char *s;
	size_t len, cap;
};

enum jsparse_verdict {
	JSPARSE_MALFORMED = -1, /* JSON.parse throws on it, or too deep */
	JSPARSE_AS_IS = 0,      /* json-c reads the line as it is */
	JSPARSE_REWRITTEN = 1,  /* json-c must read OUT instead */
};

/* Checks LINE and, when json-c would read it otherwise than JSON.parse
 * after Node's decoding, writes into OUT the line it must read:
 *  - an invalid UTF-8 sequence in a string becomes U+FFFD (the maximal
 *    subpart rule of Node and the WHATWG decoder);
 *  - a lone surrogate escape (\ud800 not followed by a low one) becomes
 *    its 3 bytes of WTF-8, ED A0 80, so it stays a code unit of its own,
 *    as in a JavaScript string; json_write_string() writes it back as
 *    \ud800, like JSON.stringify;
 *  - \u0000 in an object key becomes \ufffd (json-c keeps keys as C
 *    strings; such a key can match none of the fields read anyway);
 *  - an integer of 19 or more digits gets ".0", so json-c reads it with
 *    strtod, rounded to the nearest double like JSON.parse, instead of
 *    clamping it to 64 bits. */
enum jsparse_verdict jsparse_prepare(const char *line, size_t len, struct jsparse_buf *out);

/* Copies S into OUT with every invalid UTF-8 sequence replaced by U+FFFD
 * as Node decodes it. Returns 0 (OUT untouched) when S is valid UTF-8,
 * 1 when OUT holds the repaired text. */
int utf8_repair(const char *s, size_t len, struct jsparse_buf *out);

void jsparse_buf_free(struct jsparse_buf *b);

#endif
