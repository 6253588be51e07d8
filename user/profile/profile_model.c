// SPDX-License-Identifier: MIT
/* A capture read into memory, cut and aggregated; see profile_model.h. */
#include "profile_model.h"
#include "csv_reader.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A count or a time in ns, which pprof stores signed. */
static int parse_i64_range(const char *s, size_t len, uint64_t *out)
{
	return profile_decimal_parse(s, len, INT64_MAX, out);
}

static int parse_u32(const char *s, size_t len, uint32_t *out)
{
	uint64_t v;

	if (profile_decimal_parse(s, len, UINT32_MAX, &v))
		return -1;
	*out = (uint32_t)v;
	return 0;
}

/* TEXT (LEN bytes) as the writer writes a frames field: a control byte
 * as '?', an empty frame as PROFILE_NO_STACK; *CHANGED says whether it
 * was not so already. NULL when out of memory. */
static char *frames_as_written(const char *text, size_t len, size_t *out_len, bool *changed)
{
	size_t fill = strlen(PROFILE_NO_STACK), frames = 1, n = 0, start = 0;
	char *out;

	for (size_t i = 0; i < len; i++)
		frames += text[i] == PROFILE_FRAME_SEP;
	out = malloc(len + frames * fill + 1);
	if (!out)
		return NULL;
	*changed = false;
	for (size_t i = 0; i <= len; i++) {
		unsigned char c = i < len ? (unsigned char)text[i] : PROFILE_FRAME_SEP;

		if (c != PROFILE_FRAME_SEP) {
			bool ok = c >= 0x20 && c != 0x7f;
			out[n++] = ok ? (char)c : '?';
			*changed |= !ok;
			continue;
		}
		if (i == start) {
			memcpy(out + n, PROFILE_NO_STACK, fill);
			n += fill;
			*changed = true;
		}
		if (i < len)
			out[n++] = PROFILE_FRAME_SEP;
		start = i + 1;
	}
	out[n] = '\0';
	*out_len = n;
	return out;
}

static int add_stack(struct profile *p, uint64_t id, const char *text, size_t len)
{
	struct profile_stack *s;
	size_t depth = 1;

	if (p->n_stacks % 256 == 0) {
		s = realloc(p->stacks, (p->n_stacks + 256) * sizeof(*s));
		if (!s)
			return -1;
		p->stacks = s;
	}
	for (size_t i = 0; i < len; i++)
		depth += text[i] == PROFILE_FRAME_SEP;
	s = &p->stacks[p->n_stacks];
	memset(s, 0, sizeof(*s));
	s->id = id;
	s->frames = malloc(depth * sizeof(*s->frames));
	long t = intern_add(&p->stack_texts, text, len);
	if (!s->frames || t < 0)
		goto fail;
	s->text = (uint32_t)t;
	for (const char *f = text, *end = text + len; f <= end; s->depth++) {
		const char *sep = memchr(f, PROFILE_FRAME_SEP, (size_t)(end - f));
		if (!sep)
			sep = end;
		long fi = intern_add(&p->frames, f, (size_t)(sep - f));
		if (fi < 0)
			goto fail;
		s->frames[s->depth] = (uint32_t)fi;
		f = sep + 1;
	}
	if (u64map_put(&p->stack_by_id, id, (uint32_t)p->n_stacks))
		goto fail;
	p->n_stacks++;
	return 0;
fail:
	free(s->frames);
	return -1;
}

/* A stack row whose id is its hash, added with its frames as the writer
 * would have written them (another writer's row, or one made by hand,
 * could hold a line break that would split a folded line). */
static int add_stack_row(struct profile *p, uint64_t id, const char *text, size_t len)
{
	bool changed;
	size_t n;
	char *clean = frames_as_written(text, len, &n, &changed);
	int rc;

	if (!clean)
		return -1;
	p->repaired_stack_rows += changed;
	rc = add_stack(p, id, clean, n);
	free(clean);
	return rc;
}

static int load_stacks(const char *dir, struct profile *p, char *err, size_t errlen)
{
	struct csv_data d;
	struct csv_record r;
	uint64_t id;
	int rc = csv_data_load(dir, PROFILE_STACKS_FILE, &d, err, errlen);

	if (rc == 1)
		snprintf(err, errlen, "%s has %s but no %s: copy the capture's files together",
			 dir, PROFILE_SAMPLES_FILE, PROFILE_STACKS_FILE);
	if (rc)
		return -1;
	p->torn_rows += d.torn_bytes > 0;
	while (csv_data_next(&d, &r)) {
		if (r.n != 2 || profile_stack_id_parse(r.field[0], r.len[0], &id)) {
			p->bad_rows++;
			continue;
		}
		/* A row whose frames do not hash to its id was damaged (a torn
		 * row later ended by another writer): no sample can use it. */
		if (profile_stack_id(r.field[1], r.len[1]) != id) {
			p->bad_stack_rows++;
			continue;
		}
		if (u64map_get(&p->stack_by_id, id) >= 0)
			continue; /* the same stack from another capture */
		if (add_stack_row(p, id, r.field[1], r.len[1])) {
			csv_data_free(&d);
			snprintf(err, errlen, "out of memory reading %s", d.path);
			return -1;
		}
	}
	csv_data_free(&d);
	return 0;
}

/* The span set of a spans field, interned; -1 when malformed. */
static long span_set_of(struct profile *p, const char *s, size_t len)
{
	long idx = intern_find(&p->span_set_texts, s, len);
	struct profile_span_set *set;
	size_t n = len ? 1 : 0;

	if (idx >= 0)
		return idx;
	for (size_t i = 0; i < len; i++)
		n += s[i] == PROFILE_SPAN_SEP;
	uint32_t *states = malloc((n ? n : 1) * sizeof(*states));
	if (!states)
		return -1;
	size_t k = 0;
	for (const char *f = s, *end = s + len; len && f <= end; k++) {
		const char *sep = memchr(f, PROFILE_SPAN_SEP, (size_t)(end - f));
		if (!sep)
			sep = end;
		long st = profile_state_name_ok(f, (size_t)(sep - f)) ?
			intern_add(&p->states, f, (size_t)(sep - f)) : -1;
		if (st < 0) {
			free(states);
			return -1;
		}
		states[k] = (uint32_t)st;
		f = sep + 1;
	}
	idx = intern_add(&p->span_set_texts, s, len);
	if (idx < 0) {
		free(states);
		return -1;
	}
	set = realloc(p->span_sets, p->span_set_texts.n * sizeof(*set));
	if (!set) {
		free(states);
		return -1;
	}
	p->span_sets = set;
	set[idx] = (struct profile_span_set){ .states = states, .n = (uint32_t)n };
	return idx;
}

static int add_sample(struct profile *p, const struct profile_sample_rec *s)
{
	if (p->n_samples == p->cap_samples) {
		size_t cap = p->cap_samples ? p->cap_samples * 2 : 1024;
		struct profile_sample_rec *n = realloc(p->samples, cap * sizeof(*n));
		if (!n)
			return -1;
		p->samples = n;
		p->cap_samples = cap;
	}
	p->samples[p->n_samples++] = *s;
	return 0;
}

/* 0: taken; 1: malformed; -1: a fatal error (in err). */
static int take_sample(struct profile *p, const struct csv_data *d, const struct csv_record *r,
		       char *err, size_t errlen)
{
	struct profile_sample_rec s = { 0 };
	uint64_t id;
	long stack, set;

	if (r->n != 7 || parse_i64_range(r->field[0], r->len[0], &s.time_ns) ||
	    parse_u32(r->field[1], r->len[1], &s.pid) ||
	    parse_u32(r->field[2], r->len[2], &s.tid) ||
	    profile_kind_parse(r->field[3], r->len[3], &s.kind) ||
	    parse_i64_range(r->field[4], r->len[4], &s.weight_ns) ||
	    profile_stack_id_parse(r->field[6], r->len[6], &id))
		return 1;
	set = span_set_of(p, r->field[5], r->len[5]);
	if (set < 0)
		return 1;
	stack = u64map_get(&p->stack_by_id, id);
	if (stack < 0) {
		snprintf(err, errlen, "%s line %zu: stack id %s is not in %s: the capture is "
			 "corrupt%s", d->path, r->line, r->field[6], PROFILE_STACKS_FILE,
			 p->bad_stack_rows ? " (a row there whose frames do not match its id "
					     "was damaged)" : "");
		return -1;
	}
	s.stack = (uint32_t)stack;
	s.span_set = (uint32_t)set;
	if (add_sample(p, &s)) {
		snprintf(err, errlen, "out of memory reading %s", d->path);
		return -1;
	}
	return 0;
}

static int load_samples(struct profile *p, struct csv_data *d, char *err, size_t errlen)
{
	struct csv_record r;
	int rc;

	p->torn_rows += d->torn_bytes > 0;
	while (csv_data_next(d, &r)) {
		rc = take_sample(p, d, &r, err, errlen);
		if (rc < 0)
			return -1;
		p->bad_rows += rc;
	}
	return 0;
}

static bool reason_ok(const char *s, size_t len)
{
	if (len == 0)
		return false;
	for (size_t i = 0; i < len; i++)
		if (!((s[i] >= 'a' && s[i] <= 'z') || (s[i] >= '0' && s[i] <= '9') || s[i] == '_'))
			return false;
	return true;
}

static int add_loss(struct profile *p, const char *reason, uint64_t count)
{
	for (size_t i = 0; i < p->n_losses; i++)
		if (strcmp(p->losses[i].reason, reason) == 0) {
			p->losses[i].count = profile_add_held(p->losses[i].count, count);
			return 0;
		}
	struct profile_loss_total *l = realloc(p->losses, (p->n_losses + 1) * sizeof(*l));
	if (!l)
		return -1;
	p->losses = l;
	l[p->n_losses].reason = strdup(reason);
	l[p->n_losses].count = count;
	return l[p->n_losses++].reason ? 0 : -1;
}

static int load_losses(const char *dir, struct profile *p, char *err, size_t errlen)
{
	struct csv_data d;
	struct csv_record r;
	uint64_t t, count;
	int rc = csv_data_load(dir, PROFILE_LOST_FILE, &d, err, errlen);

	if (rc < 0)
		return -1;
	p->torn_rows += d.torn_bytes > 0;
	while (csv_data_next(&d, &r)) {
		if (r.n != 3 || parse_i64_range(r.field[0], r.len[0], &t) ||
		    !reason_ok(r.field[1], r.len[1]) || parse_i64_range(r.field[2], r.len[2], &count)) {
			p->bad_rows++;
			continue;
		}
		if (add_loss(p, r.field[1], count)) {
			csv_data_free(&d);
			snprintf(err, errlen, "out of memory reading %s", d.path);
			return -1;
		}
	}
	csv_data_free(&d);
	return 0;
}

static int process_cmp(const void *a, const void *b)
{
	const struct profile_process *x = a, *y = b;

	if (x->pid != y->pid)
		return x->pid < y->pid ? -1 : 1;
	return x->time_ns < y->time_ns ? -1 : x->time_ns > y->time_ns;
}

static int add_process(struct profile *p, const struct csv_record *r)
{
	struct profile_process pr;
	uint64_t t;
	long cmd;

	if (r->n != 3 || parse_i64_range(r->field[0], r->len[0], &t) ||
	    parse_u32(r->field[1], r->len[1], &pr.pid) || r->len[2] == 0)
		return 1;
	if (p->n_processes % 64 == 0) {
		struct profile_process *n =
			realloc(p->processes, (p->n_processes + 64) * sizeof(*n));

		if (!n)
			return -1;
		p->processes = n;
	}
	cmd = intern_add(&p->commands, r->field[2], r->len[2]);
	if (cmd < 0)
		return -1;
	pr.time_ns = t;
	pr.command = (uint32_t)cmd;
	p->processes[p->n_processes++] = pr;
	return 0;
}

/* profile_processes, when the capture has one (older ones do not); one
 * that cannot be read costs the processes' names only. */
static int load_processes(const char *dir, struct profile *p, char *err, size_t errlen)
{
	struct csv_data d;
	struct csv_record r;
	int rc = csv_data_load(dir, PROFILE_PROCESSES_FILE, &d, p->processes_error,
			       sizeof(p->processes_error));

	if (rc) {
		if (rc > 0)
			p->processes_error[0] = '\0';
		return 0;
	}
	p->torn_rows += d.torn_bytes > 0;
	while (csv_data_next(&d, &r)) {
		rc = add_process(p, &r);
		if (rc < 0) {
			csv_data_free(&d);
			snprintf(err, errlen, "out of memory reading %s", d.path);
			return -1;
		}
		p->bad_rows += (uint64_t)rc;
	}
	csv_data_free(&d);
	if (p->n_processes)
		qsort(p->processes, p->n_processes, sizeof(*p->processes), process_cmp);
	return 0;
}

uint32_t profile_process_at(const struct profile *p, uint32_t pid, uint64_t time_ns)
{
	size_t lo = 0, hi = p->n_processes, at;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (p->processes[mid].pid < pid)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo == p->n_processes || p->processes[lo].pid != pid)
		return PROFILE_NO_PROCESS;
	for (at = lo; at + 1 < p->n_processes && p->processes[at + 1].pid == pid &&
		      p->processes[at + 1].time_ns <= time_ns;
	     at++)
		;
	return (uint32_t)at;
}

void profile_process_frame(const struct profile *p, uint32_t pid, uint32_t process, char *buf,
			   size_t *len)
{
	const char *cmd = process == PROFILE_NO_PROCESS ? NULL : p->commands.str[p->processes[process].command];
	size_t at;

	/* the program by its file name, as ps and top show it (not a
	 * thread's "[comm]", which may hold a '/') */
	if (cmd && cmd[0] != '[')
		for (const char *c = cmd; *c && *c != ' '; c++)
			if (*c == '/' && c[1] && c[1] != ' ')
				cmd = c + 1;
	at = (size_t)snprintf(buf, PROFILE_PROCESS_FRAME_MAX, "pid %" PRIu32 "%s", pid, cmd ? ": " : "");
	if (cmd) {
		size_t n = strlen(cmd), room = PROFILE_PROCESS_FRAME_MAX - 1 - at;
		size_t keep = profile_utf8_cut(cmd, n, n <= room ? room : room - 3);

		for (size_t i = 0; i < keep; i++) {
			unsigned char ch = (unsigned char)cmd[i];

			buf[at++] = ch == PROFILE_FRAME_SEP || ch < 0x20 || ch == 0x7f ? '?' : (char)ch;
		}
		if (keep < n) {
			memcpy(buf + at, "...", 3);
			at += 3;
		}
	}
	buf[at] = '\0';
	*len = at;
}

static int sample_cmp(const void *a, const void *b)
{
	const struct profile_sample_rec *x = a, *y = b;

	if (x->time_ns != y->time_ns)
		return x->time_ns < y->time_ns ? -1 : 1;
	if (x->pid != y->pid)
		return x->pid < y->pid ? -1 : 1;
	if (x->tid != y->tid)
		return x->tid < y->tid ? -1 : 1;
	if (x->kind != y->kind)
		return x->kind < y->kind ? -1 : 1;
	if (x->weight_ns != y->weight_ns)
		return x->weight_ns < y->weight_ns ? -1 : 1;
	if (x->stack != y->stack)
		return x->stack < y->stack ? -1 : 1;
	return x->span_set < y->span_set ? -1 : x->span_set > y->span_set;
}

static void profile_init(struct profile *p)
{
	memset(p, 0, sizeof(*p));
	intern_init(&p->frames);
	intern_init(&p->stack_texts);
	u64map_init(&p->stack_by_id);
	intern_init(&p->states);
	intern_init(&p->span_set_texts);
	intern_init(&p->commands);
	u64map_init(&p->rooted);
	u64map_init(&p->root_frames);
}

int profile_load(const char *dir, struct profile *p, char *err, size_t errlen)
{
	struct csv_data d;
	int rc;

	profile_init(p);
	rc = csv_data_load(dir, PROFILE_SAMPLES_FILE, &d, err, errlen);
	if (rc == 1)
		snprintf(err, errlen, "%s has no %s: no profile was recorded there (record "
			 "with --sample or --off-cpu)", dir, PROFILE_SAMPLES_FILE);
	if (rc)
		return rc;
	if (load_stacks(dir, p, err, errlen) || load_samples(p, &d, err, errlen) ||
	    load_losses(dir, p, err, errlen) || load_processes(dir, p, err, errlen)) {
		csv_data_free(&d);
		return -1;
	}
	csv_data_free(&d);
	if (p->n_samples) /* qsort() wants a real array, even of none */
		qsort(p->samples, p->n_samples, sizeof(*p->samples), sample_cmp);
	for (size_t i = 0; i < p->n_samples; i++)
		p->samples[i].process = profile_process_at(p, p->samples[i].pid, p->samples[i].time_ns);
	return 0;
}

void profile_free(struct profile *p)
{
	for (size_t i = 0; i < p->n_stacks; i++)
		free(p->stacks[i].frames);
	free(p->stacks);
	for (size_t i = 0; i < p->span_set_texts.n; i++)
		free(p->span_sets[i].states);
	free(p->span_sets);
	for (size_t i = 0; i < p->n_losses; i++)
		free(p->losses[i].reason);
	free(p->losses);
	free(p->samples);
	free(p->aggs);
	free(p->processes);
	intern_free(&p->commands);
	u64map_free(&p->rooted);
	u64map_free(&p->root_frames);
	intern_free(&p->frames);
	intern_free(&p->stack_texts);
	u64map_free(&p->stack_by_id);
	intern_free(&p->states);
	intern_free(&p->span_set_texts);
	memset(p, 0, sizeof(*p));
}

static bool in_states(const struct profile_span_set *set, const long *want, size_t n_want)
{
	for (uint32_t i = 0; i < set->n; i++)
		for (size_t j = 0; j < n_want; j++)
			if (want[j] == (long)set->states[i])
				return true;
	return false;
}

static int agg_cmp(const void *a, const void *b, void *arg)
{
	const struct profile_agg *x = a, *y = b;
	const struct profile *p = arg;
	int c = strcmp(p->stack_texts.str[p->stacks[x->stack].text],
		       p->stack_texts.str[p->stacks[y->stack].text]);

	if (c)
		return c;
	c = strcmp(p->span_set_texts.str[x->span_set], p->span_set_texts.str[y->span_set]);
	if (c)
		return c;
	return (int)x->kind - (int)y->kind;
}

/* The stack of S's process root frame and S's frames; -1 when out of
 * memory. Made once per root and stack, kept for later selections. */
/* The root frame of S's process (an index into frames): made once per
 * pid and processes row, not per sample. -1 when out of memory. */
static long root_frame(struct profile *p, const struct profile_sample_rec *s)
{
	uint64_t key = (uint64_t)s->pid << 32 | s->process;
	char root[PROFILE_PROCESS_FRAME_MAX];
	long r = u64map_get(&p->root_frames, key);
	size_t len;

	if (r >= 0)
		return r;
	profile_process_frame(p, s->pid, s->process, root, &len);
	r = intern_add(&p->frames, root, len);
	if (r >= 0 && u64map_put(&p->root_frames, key, (uint32_t)r))
		r = -1;
	return r;
}

static long rooted_stack(struct profile *p, const struct profile_sample_rec *s)
{
	size_t len, stack_len = p->stack_texts.len[p->stacks[s->stack].text];
	long r = root_frame(p, s), at;
	uint64_t key, id;
	char *text;

	if (r < 0)
		return -1;
	key = (uint64_t)r << 32 | s->stack;
	at = u64map_get(&p->rooted, key);
	if (at >= 0)
		return at;
	len = p->frames.len[r];
	text = malloc(len + 1 + stack_len + 1);
	if (!text)
		return -1;
	memcpy(text, p->frames.str[r], len);
	text[len] = PROFILE_FRAME_SEP;
	memcpy(text + len + 1, p->stack_texts.str[p->stacks[s->stack].text], stack_len);
	id = profile_stack_id(text, len + 1 + stack_len);
	at = u64map_get(&p->stack_by_id, id);
	if (at < 0) {
		at = (long)p->n_stacks;
		if (add_stack(p, id, text, len + 1 + stack_len))
			at = -1;
	}
	free(text);
	if (at >= 0 && u64map_put(&p->rooted, key, (uint32_t)at))
		at = -1;
	return at;
}

/* Whether F keeps the samples of process PID. */
static bool of_pids(const struct profile_filter *f, uint32_t pid)
{
	for (size_t i = 0; i < f->n_pids; i++)
		if (f->pids[i] == pid)
			return true;
	return f->n_pids == 0;
}

/* Marks the samples F keeps, counts them; whether they are of more
 * than one process. */
static bool mark_kept(struct profile *p, const struct profile_filter *f, const long *want,
		      size_t n_want)
{
	bool first = true, several = false;
	uint32_t pid = 0;

	for (size_t i = 0; i < p->n_samples; i++) {
		struct profile_sample_rec *s = &p->samples[i];

		s->kept = (f->kind < 0 || (int)s->kind == f->kind) && of_pids(f, s->pid) &&
			  (n_want == 0 || in_states(&p->span_sets[s->span_set], want, n_want));
		if (!s->kept)
			continue;
		p->kept++;
		p->kept_count[s->kind]++;
		p->kept_weight[s->kind] = profile_add_held(p->kept_weight[s->kind], s->weight_ns);
		several |= !first && s->pid != pid;
		pid = s->pid;
		first = false;
	}
	return several;
}

int profile_select(struct profile *p, const struct profile_filter *f)
{
	long want[64];
	size_t n_want = f->n_states < 64 ? f->n_states : 64;
	struct u64map at;
	int rc = -1;

	for (size_t i = 0; i < n_want; i++)
		want[i] = intern_find(&p->states, f->states[i], strlen(f->states[i]));
	free(p->aggs);
	p->aggs = NULL;
	p->n_aggs = 0;
	p->kept = 0;
	memset(p->kept_count, 0, sizeof(p->kept_count));
	memset(p->kept_weight, 0, sizeof(p->kept_weight));
	u64map_init(&at);
	p->aggs = malloc((p->n_samples ? p->n_samples : 1) * sizeof(*p->aggs));
	if (!p->aggs)
		goto out;
	p->by_process = mark_kept(p, f, want, n_want);
	for (size_t i = 0; i < p->n_samples; i++) {
		struct profile_sample_rec *s = &p->samples[i];
		long stack = s->kept && p->by_process ? rooted_stack(p, s) : (long)s->stack;

		if (!s->kept)
			continue;
		if (stack < 0)
			goto out;
		uint64_t key = (uint64_t)stack << 32 | (uint64_t)s->span_set << 1 | s->kind;
		long a = u64map_get(&at, key);
		if (a < 0) {
			a = (long)p->n_aggs++;
			p->aggs[a] = (struct profile_agg){ .stack = (uint32_t)stack,
							   .span_set = s->span_set, .kind = s->kind };
			if (u64map_put(&at, key, (uint32_t)a))
				goto out;
		}
		p->aggs[a].count++;
		p->aggs[a].weight_ns = profile_add_held(p->aggs[a].weight_ns, s->weight_ns);
	}
	qsort_r(p->aggs, p->n_aggs, sizeof(*p->aggs), agg_cmp, p);
	rc = 0;
out:
	u64map_free(&at);
	return rc;
}

uint64_t profile_lost_total(const struct profile *p)
{
	uint64_t n = 0;

	for (size_t i = 0; i < p->n_losses; i++)
		n = profile_add_held(n, p->losses[i].count);
	return n;
}

static int u64_cmp(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

uint64_t profile_period_ns(const struct profile *p)
{
	uint64_t best = 0, best_n = 0, *w = malloc((p->n_samples ? p->n_samples : 1) * sizeof(*w));
	size_t n = 0;

	if (!w)
		return 0;
	for (size_t i = 0; i < p->n_samples; i++)
		if (p->samples[i].kept && p->samples[i].kind == PROFILE_ON_CPU)
			w[n++] = p->samples[i].weight_ns;
	qsort(w, n, sizeof(*w), u64_cmp);
	/* The most common value; of equally common ones the smallest. */
	for (size_t i = 0, j; i < n; i = j) {
		for (j = i; j < n && w[j] == w[i]; j++)
			;
		if (j - i > best_n) {
			best_n = j - i;
			best = w[i];
		}
	}
	free(w);
	return best;
}
