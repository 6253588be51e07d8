// SPDX-License-Identifier: MIT
/* The capture format's small rules (names, ids, frame forms); see
 * capture.h. */
#include "capture.h"
#include "intern.h"

#include <ctype.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const kind_names[PROFILE_KINDS] = { "on-cpu", "off-cpu" };

const char *profile_kind_name(enum profile_kind kind)
{
	return kind < PROFILE_KINDS ? kind_names[kind] : "?";
}

int profile_kind_parse(const char *s, size_t len, enum profile_kind *out)
{
	for (int k = 0; k < PROFILE_KINDS; k++)
		if (strlen(kind_names[k]) == len && memcmp(s, kind_names[k], len) == 0) {
			*out = (enum profile_kind)k;
			return 0;
		}
	return -1;
}

#define LOSS_NAME(id, name, text) name,
#define LOSS_TEXT(id, name, text) text,
static const char *const loss_names[PROFILE_LOSS_MAX] = { PROFILE_LOSSES(LOSS_NAME) };
static const char *const loss_texts[PROFILE_LOSS_MAX] = { PROFILE_LOSSES(LOSS_TEXT) };
#undef LOSS_NAME
#undef LOSS_TEXT

const char *profile_loss_name(enum profile_loss loss)
{
	return loss < PROFILE_LOSS_MAX ? loss_names[loss] : "?";
}

const char *profile_loss_text(const char *name)
{
	for (int i = 0; i < PROFILE_LOSS_MAX; i++)
		if (strcmp(name, loss_names[i]) == 0)
			return loss_texts[i];
	return NULL;
}

uint64_t profile_stack_id(const char *frames, size_t len)
{
	return fnv1a64(frames, len);
}

void profile_stack_id_format(uint64_t id, char *buf)
{
	snprintf(buf, PROFILE_STACK_ID_DIGITS + 1, "%016" PRIx64, id);
}

int profile_stack_id_parse(const char *s, size_t len, uint64_t *id)
{
	uint64_t v = 0;

	if (len != PROFILE_STACK_ID_DIGITS)
		return -1;
	for (size_t i = 0; i < len; i++) {
		char c = s[i];
		int d = c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
		if (d < 0)
			return -1;
		v = v << 4 | (uint64_t)d;
	}
	*id = v;
	return 0;
}

int profile_decimal_parse(const char *s, size_t len, uint64_t max, uint64_t *out)
{
	uint64_t v = 0;

	if (len == 0 || len > 20)
		return -1;
	for (size_t i = 0; i < len; i++) {
		if (s[i] < '0' || s[i] > '9')
			return -1;
		uint64_t d = (uint64_t)(s[i] - '0');
		if (d > max || v > (max - d) / 10) /* v * 10 + d > max */
			return -1;
		v = v * 10 + d;
	}
	*out = v;
	return 0;
}

bool profile_state_name_ok(const char *s, size_t len)
{
	if (len == 0)
		return false;
	for (size_t i = 0; i < len; i++)
		if (!isalnum((unsigned char)s[i]) && s[i] != '_')
			return false;
	return true;
}

static size_t cut(int n, size_t size)
{
	if (n < 0)
		return 0;
	return (size_t)n < size ? (size_t)n : size - 1;
}

size_t profile_frame_native(char *buf, size_t size, const char *function)
{
	return cut(snprintf(buf, size, "%s", function), size);
}

size_t profile_frame_unresolved(char *buf, size_t size, const char *module, uint64_t offset)
{
	const char *base = strrchr(module, '/');

	return cut(snprintf(buf, size, "%s+0x%" PRIx64, base ? base + 1 : module, offset), size);
}

size_t profile_frame_python(char *buf, size_t size, const char *qualname, const char *file,
			    unsigned line)
{
	return cut(snprintf(buf, size, "%s (%s:%u)", qualname, file, line), size);
}

size_t profile_frame_kernel(char *buf, size_t size, const char *function)
{
	return cut(snprintf(buf, size, "%s" PROFILE_KERNEL_MARK, function), size);
}

/* "qualname (file:line)": a qualified name holds no " (" (a file name
 * may), so the first one starts the place. */
static bool split_python(char *buf, struct profile_frame_parts *out)
{
	size_t len = strlen(buf);
	char *open, *colon, *end;

	if (len < 6 || buf[len - 1] != ')')
		return false;
	buf[len - 1] = '\0';
	colon = strrchr(buf, ':');
	open = strstr(buf, " (");
	if (!open || !colon || colon < open + 2 || !isdigit((unsigned char)colon[1])) {
		buf[len - 1] = ')';
		return false;
	}
	unsigned long line = strtoul(colon + 1, &end, 10);
	if (*end != '\0') {
		buf[len - 1] = ')';
		return false;
	}
	*open = '\0';
	*colon = '\0';
	out->form = FRAME_PYTHON;
	out->name = buf;
	out->file = open + 2;
	out->line = line;
	return true;
}

/* "module+0xhex" with nothing after the hex digits. */
static bool is_unresolved(const char *s)
{
	const char *plus = strstr(s, "+0x");

	if (!plus || plus == s)
		return false;
	for (plus += 3; *plus; plus++)
		if (!isxdigit((unsigned char)*plus))
			return false;
	return plus[-1] != 'x';
}

void profile_frame_parse(const char *frame, char *buf, struct profile_frame_parts *out)
{
	size_t len = strlen(frame), mark = strlen(PROFILE_KERNEL_MARK);

	memcpy(buf, frame, len + 1);
	out->name = buf;
	out->file = "";
	out->line = 0;
	out->form = FRAME_NATIVE;
	if (len > mark && strcmp(buf + len - mark, PROFILE_KERNEL_MARK) == 0) {
		buf[len - mark] = '\0';
		out->form = FRAME_KERNEL;
	} else if (split_python(buf, out)) {
		return;
	} else if (is_unresolved(buf)) {
		out->form = FRAME_UNRESOLVED;
	}
}

size_t profile_utf8_cut(const char *s, size_t len, size_t max)
{
	if (len <= max)
		return len;
	/* back over continuation bytes (10xxxxxx) to a character's start */
	while (max > 0 && ((unsigned char)s[max] & 0xc0) == 0x80)
		max--;
	return max;
}
