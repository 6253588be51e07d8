/* SPDX-License-Identifier: MIT */
/* Interning for the profile wing: a table of distinct byte strings, each
 * known by its index in order of first sight, and a map from 64-bit keys
 * (stack ids) to indices. Open addressing, grown at half full. */
#ifndef PMETRICS_PROFILE_INTERN_H
#define PMETRICS_PROFILE_INTERN_H

#include <stddef.h>
#include <stdint.h>

/* FNV-1a, 64 bits: stack ids in the capture are this hash of the stack's
 * folded text, so the tables use it too. */
uint64_t fnv1a64(const void *data, size_t len);

struct intern {
	char **str;      /* by index, NUL-terminated copies */
	size_t *len;
	size_t n, cap;
	uint32_t *slots; /* index + 1, 0 = empty */
	size_t n_slots;
};

void intern_init(struct intern *t);
void intern_free(struct intern *t);
/* The index of S[0..len), added when new; -1 when out of memory. */
long intern_add(struct intern *t, const char *s, size_t len);
/* The index of S[0..len), or -1 when it is not in the table. */
long intern_find(const struct intern *t, const char *s, size_t len);

struct u64map {
	uint64_t *keys;
	uint32_t *vals; /* value + 1, 0 = empty */
	size_t n, n_slots;
};

void u64map_init(struct u64map *m);
void u64map_free(struct u64map *m);
/* Sets KEY to VAL (replacing); -1 when out of memory. */
int u64map_put(struct u64map *m, uint64_t key, uint32_t val);
/* The value of KEY, or -1. */
long u64map_get(const struct u64map *m, uint64_t key);

#endif
