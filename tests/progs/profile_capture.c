// SPDX-License-Identifier: MIT
/* Drives the profile capture writer (user/profile/profile_writer.h) the
 * way the sampler will, from a script on stdin, so tests can make a
 * capture directory without a kernel. One command per line, fields
 * separated by tabs:
 *
 *   stack NAME FRAME...          intern a stack (root first), known as NAME
 *   sample TIME_NS PID TID KIND WEIGHT_NS SPANS NAME
 *                                SPANS: states joined by '|', or '-' for none
 *   lost REASON COUNT            a loss counter (ringbuf_full, ...)
 *   process TIME_NS PID COMMAND  what PID runs from TIME_NS on
 *   flush
 *
 * Usage: profile_capture DIR < script. Prints "stacks N samples N" at the
 * end; exit 1 on any error. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "profile/profile_writer.h"

#define MAX_FIELDS 256
#define MAX_STACKS 1024

static struct {
	char name[64];
	uint64_t id;
} stacks[MAX_STACKS];
static int n_stacks;

static int split(char *line, char **f)
{
	int n = 0;

	line[strcspn(line, "\n")] = '\0';
	for (char *p = line; n < MAX_FIELDS; n++) {
		f[n] = p;
		p = strchr(p, '\t');
		if (!p)
			return n + 1;
		*p++ = '\0';
	}
	return n;
}

static int find_stack(const char *name, uint64_t *id)
{
	for (int i = 0; i < n_stacks; i++)
		if (strcmp(stacks[i].name, name) == 0) {
			*id = stacks[i].id;
			return 0;
		}
	return -1;
}

static int loss_of(const char *name)
{
	for (int i = 0; i < PROFILE_LOSS_MAX; i++)
		if (strcmp(profile_loss_name((enum profile_loss)i), name) == 0)
			return i;
	return -1;
}

static int command(struct profile_writer *w, char **f, int n)
{
	if (strcmp(f[0], "stack") == 0 && n >= 2 && n_stacks < MAX_STACKS) {
		snprintf(stacks[n_stacks].name, sizeof(stacks[n_stacks].name), "%s", f[1]);
		if (profile_writer_stack(w, (const char *const *)f + 2, (size_t)(n - 2),
					 &stacks[n_stacks].id))
			return -1;
		n_stacks++;
		return 0;
	}
	if (strcmp(f[0], "sample") == 0 && n == 8) {
		const char *spans[64];
		size_t n_spans = 0;
		char *save = NULL;
		struct profile_sample s = { 0 };

		if (profile_kind_parse(f[4], strlen(f[4]), &s.kind) || find_stack(f[7], &s.stack_id))
			return -1;
		if (strcmp(f[6], "-") != 0)
			for (char *t = strtok_r(f[6], "|", &save); t && n_spans < 64;
			     t = strtok_r(NULL, "|", &save))
				spans[n_spans++] = t;
		s.time_ns = strtoull(f[1], NULL, 10);
		s.pid = (uint32_t)strtoul(f[2], NULL, 10);
		s.tid = (uint32_t)strtoul(f[3], NULL, 10);
		s.weight_ns = strtoull(f[5], NULL, 10);
		s.spans = spans;
		s.n_spans = n_spans;
		return profile_writer_sample(w, &s);
	}
	if (strcmp(f[0], "lost") == 0 && n == 3 && loss_of(f[1]) >= 0) {
		profile_writer_lost(w, (enum profile_loss)loss_of(f[1]), strtoull(f[2], NULL, 10));
		return 0;
	}
	if (strcmp(f[0], "process") == 0 && n == 4) {
		profile_writer_process(w, strtoull(f[1], NULL, 10), (uint32_t)strtoul(f[2], NULL, 10),
				       f[3]);
		return 0;
	}
	if (strcmp(f[0], "flush") == 0 && n == 1)
		return profile_writer_flush(w) ? -1 : 0;
	return -1;
}

int main(int argc, char **argv)
{
	static char line[65536];
	char err[512], *f[MAX_FIELDS];
	struct profile_writer *w;
	int lineno = 0;

	if (argc != 2) {
		fprintf(stderr, "usage: profile_capture DIR < script\n");
		return 2;
	}
	w = profile_writer_open(argv[1], err, sizeof(err));
	if (!w) {
		fprintf(stderr, "profile_capture: %s\n", err);
		return 1;
	}
	while (fgets(line, sizeof(line), stdin)) {
		lineno++;
		if (line[0] == '\n' || line[0] == '#')
			continue;
		int n = split(line, f);
		if (command(w, f, n)) {
			fprintf(stderr, "profile_capture: bad line %d\n", lineno);
			profile_writer_close(w);
			return 1;
		}
	}
	if (profile_writer_flush(w)) {
		fprintf(stderr, "profile_capture: cannot write the capture\n");
		profile_writer_close(w);
		return 1;
	}
	printf("stacks %llu samples %llu\n", (unsigned long long)profile_writer_stacks_written(w),
	       (unsigned long long)profile_writer_samples_written(w));
	return profile_writer_close(w) ? 1 : 0;
}
