// SPDX-License-Identifier: MIT
/* String interning and a u64 -> index map; see intern.h. */
#include "intern.h"

#include <stdlib.h>
#include <string.h>

uint64_t fnv1a64(const void *data, size_t len)
{
	const unsigned char *p = data;
	uint64_t h = 0xcbf29ce484222325ull;

	for (size_t i = 0; i < len; i++) {
		h ^= p[i];
		h *= 0x100000001b3ull;
	}
	return h;
}

void intern_init(struct intern *t)
{
	memset(t, 0, sizeof(*t));
}

void intern_free(struct intern *t)
{
	for (size_t i = 0; i < t->n; i++)
		free(t->str[i]);
	free(t->str);
	free(t->len);
	free(t->slots);
	memset(t, 0, sizeof(*t));
}

static size_t slot_of(const struct intern *t, const char *s, size_t len, uint64_t h)
{
	size_t mask = t->n_slots - 1, i = (size_t)h & mask;

	for (;; i = (i + 1) & mask) {
		uint32_t v = t->slots[i];
		if (v == 0)
			return i;
		if (t->len[v - 1] == len && memcmp(t->str[v - 1], s, len) == 0)
			return i;
	}
}

static int intern_grow(struct intern *t)
{
	size_t n_slots = t->n_slots ? t->n_slots * 2 : 64;
	uint32_t *slots = calloc(n_slots, sizeof(*slots)), *old = t->slots;

	if (!slots)
		return -1;
	t->slots = slots;
	t->n_slots = n_slots;
	for (size_t i = 0; i < t->n; i++)
		slots[slot_of(t, t->str[i], t->len[i], fnv1a64(t->str[i], t->len[i]))] = (uint32_t)i + 1;
	free(old);
	return 0;
}

long intern_find(const struct intern *t, const char *s, size_t len)
{
	if (t->n_slots == 0)
		return -1;
	uint32_t v = t->slots[slot_of(t, s, len, fnv1a64(s, len))];
	return v ? (long)v - 1 : -1;
}

long intern_add(struct intern *t, const char *s, size_t len)
{
	long found = intern_find(t, s, len);
	char *copy;

	if (found >= 0)
		return found;
	if ((t->n + 1) * 2 > t->n_slots && intern_grow(t))
		return -1;
	if (t->n == t->cap) {
		size_t cap = t->cap ? t->cap * 2 : 64;
		char **str = realloc(t->str, cap * sizeof(*str));
		if (!str)
			return -1;
		t->str = str;
		size_t *lens = realloc(t->len, cap * sizeof(*lens));
		if (!lens)
			return -1;
		t->len = lens;
		t->cap = cap;
	}
	copy = malloc(len + 1);
	if (!copy)
		return -1;
	memcpy(copy, s, len);
	copy[len] = '\0';
	t->str[t->n] = copy;
	t->len[t->n] = len;
	t->slots[slot_of(t, s, len, fnv1a64(s, len))] = (uint32_t)t->n + 1;
	return (long)t->n++;
}

void u64map_init(struct u64map *m)
{
	memset(m, 0, sizeof(*m));
}

void u64map_free(struct u64map *m)
{
	free(m->keys);
	free(m->vals);
	memset(m, 0, sizeof(*m));
}

/* Keys are hashes already (stack ids) or small numbers: mix them anyway
 * so sequential keys do not cluster. */
static size_t u64_slot(const struct u64map *m, uint64_t key)
{
	size_t mask = m->n_slots - 1;
	size_t i = (size_t)((key * 0x9e3779b97f4a7c15ull) >> 17) & mask;

	while (m->vals[i] && m->keys[i] != key)
		i = (i + 1) & mask;
	return i;
}

static int u64map_grow(struct u64map *m)
{
	struct u64map old = *m;

	m->n_slots = old.n_slots ? old.n_slots * 2 : 64;
	m->keys = calloc(m->n_slots, sizeof(*m->keys));
	m->vals = calloc(m->n_slots, sizeof(*m->vals));
	if (!m->keys || !m->vals) {
		free(m->keys);
		free(m->vals);
		*m = old;
		return -1;
	}
	for (size_t i = 0; i < old.n_slots; i++)
		if (old.vals[i]) {
			size_t s = u64_slot(m, old.keys[i]);
			m->keys[s] = old.keys[i];
			m->vals[s] = old.vals[i];
		}
	free(old.keys);
	free(old.vals);
	return 0;
}

int u64map_put(struct u64map *m, uint64_t key, uint32_t val)
{
	if ((m->n + 1) * 2 > m->n_slots && u64map_grow(m))
		return -1;
	size_t s = u64_slot(m, key);
	if (!m->vals[s])
		m->n++;
	m->keys[s] = key;
	m->vals[s] = val + 1;
	return 0;
}

long u64map_get(const struct u64map *m, uint64_t key)
{
	if (m->n_slots == 0)
		return -1;
	size_t s = u64_slot(m, key);
	return m->vals[s] ? (long)m->vals[s] - 1 : -1;
}
