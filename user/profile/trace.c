// SPDX-License-Identifier: MIT
/* The timeline: Chrome's trace-event JSON ({"traceEvents": [...]}), which
 * Perfetto UI and chrome://tracing open.
 *
 * - Samples: instant events ("ph":"i", thread scope) on their own
 *   process and thread, named by the leaf frame, with the kind, weight,
 *   span states and whole stack as args.
 * - Spans: complete events ("ph":"X") on the thread that ran them, from
 *   profile_spans (record writes it beside a profile). A span that does
 *   not nest in its thread's others (coroutines interleaved on one event
 *   loop), and a robot_context_data (or robot_activity_data) row that
 *   profile_spans lacks (those rows carry no thread), go on a process of
 *   their own, "spans", one track per state; spans of one state that
 *   overlap without nesting go to a second track of it.
 * - The resource series (memory_series_data, system_resource_data) as
 *   counters ("ph":"C") on a process "resources".
 * - Process and thread names as metadata ("ph":"M").
 * Times are microseconds from the earliest event, with ns digits;
 * otherData has the wall-clock time of 0. The two pseudo processes have
 * ids above the kernel's PID limit (2^22), so no real PID meets them. */
#include "outputs.h"
#include "csv_reader.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define SPANS_PID 4194305u
#define RESOURCES_PID 4194306u
#define CMD_MAX 80 /* a command line in a counter's name is cut here */

struct span_row {
	uint32_t state; /* index into the trace's own state table */
	uint64_t start, dur;
	uint32_t pid, tid;
	bool on_thread; /* else on a track of the "spans" process */
	uint32_t lane;
};

struct timeline {
	const struct profile *p;
	const struct report_view *v;
	struct out_buf *b;
	struct intern states;
	struct span_row *spans;
	size_t n_spans;
	size_t n_threaded; /* spans on their threads: the first n_threaded */
	bool unthreaded;   /* spans that are not (the "spans" process) */
	struct intern threaded_keys; /* "state start dur" of profile_spans' rows */
	uint32_t *lanes_of; /* per state: how many tracks */
	uint64_t t0;
	bool any_time;
	bool first_event;
	uint64_t bad_rows;
};

static void see_time(struct timeline *t, uint64_t ns)
{
	if (!t->any_time || ns < t->t0)
		t->t0 = ns;
	t->any_time = true;
}

/* A time or duration field, in ns: whole digits up to INT64_MAX. */
static int parse_ns(const char *s, uint64_t *out)
{
	return profile_decimal_parse(s, strlen(s), INT64_MAX, out);
}

static const char *digits(const char *s)
{
	while (*s >= '0' && *s <= '9')
		s++;
	return s;
}

/* A number in JSON's grammar (our CSV files write Python floats, which
 * are): printed into the timeline as it is. */
static bool is_number(const char *s)
{
	const char *d;

	if (*s == '-')
		s++;
	d = digits(s);
	if (d == s || (*s == '0' && d > s + 1))
		return false;
	s = d;
	if (*s == '.') {
		d = digits(++s);
		if (d == s)
			return false;
		s = d;
	}
	if (*s == 'e' || *s == 'E') {
		s++;
		if (*s == '+' || *s == '-')
			s++;
		d = digits(s);
		if (d == s)
			return false;
		s = d;
	}
	return *s == '\0';
}

static bool span_wanted(const struct report_view *v, const char *state)
{
	if (v->n_states == 0)
		return true;
	for (size_t i = 0; i < v->n_states; i++)
		if (strcmp(v->states[i], state) == 0)
			return true;
	return false;
}

static bool pid_wanted(const struct report_view *v, uint64_t pid)
{
	if (v->n_pids == 0)
		return true;
	for (size_t i = 0; i < v->n_pids; i++)
		if (v->pids[i] == pid)
			return true;
	return false;
}

/* A span's key, by which a span file's row is found in profile_spans
 * (a state too long for BUF loses its end, never the times). */
static size_t span_key(char *buf, size_t size, const char *state, uint64_t start, uint64_t dur)
{
	int n = snprintf(buf, size, "%" PRIu64 " %" PRIu64 " %s", start, dur, state);

	return n < 0 ? 0 : (size_t)n < size ? (size_t)n : size - 1;
}

static int add_span(struct timeline *t, size_t *cap, const char *state, size_t len,
		    struct span_row row)
{
	long st = intern_add(&t->states, state, len);

	if (st < 0)
		return -1;
	if (t->n_spans == *cap) {
		size_t c = *cap ? *cap * 2 : 256;
		struct span_row *s = realloc(t->spans, c * sizeof(*s));
		if (!s)
			return -1;
		t->spans = s;
		*cap = c;
	}
	row.state = (uint32_t)st;
	t->spans[t->n_spans++] = row;
	see_time(t, row.start);
	return 0;
}

/* profile_spans: time_ns,pid,tid,state,duration_ns */
static int read_thread_spans(struct timeline *t, size_t *cap, char *err, size_t errlen)
{
	struct csv_data d;
	struct csv_record r;
	char key[256];
	int rc = csv_data_load(t->v->source, PROFILE_SPANS_FILE, &d, err, errlen);

	if (rc)
		return rc < 0 ? -1 : 0;
	while (csv_data_next(&d, &r)) {
		uint64_t start, dur, pid, tid;
		if (r.n != 5 || parse_ns(r.field[0], &start) || parse_ns(r.field[4], &dur) ||
		    profile_decimal_parse(r.field[1], r.len[1], UINT32_MAX, &pid) ||
		    profile_decimal_parse(r.field[2], r.len[2], UINT32_MAX, &tid) ||
		    !profile_state_name_ok(r.field[3], r.len[3])) {
			t->bad_rows++;
			continue;
		}
		/* every row is known, so that a span file's row of a process
		 * --pid leaves out is not taken for one without a thread */
		if (intern_add(&t->threaded_keys, key,
			       span_key(key, sizeof(key), r.field[3], start, dur)) < 0 ||
		    (span_wanted(t->v, r.field[3]) && pid_wanted(t->v, pid) &&
		     add_span(t, cap, r.field[3], r.len[3],
			      (struct span_row){ .start = start, .dur = dur, .pid = (uint32_t)pid,
						 .tid = (uint32_t)tid, .on_thread = true }))) {
			csv_data_free(&d);
			snprintf(err, errlen, "out of memory reading the spans");
			return -1;
		}
	}
	csv_data_free(&d);
	return 0;
}

static int read_spans(struct timeline *t, char *err, size_t errlen)
{
	static const char *const files[] = { "robot_context_data", "robot_activity_data" };
	struct csv_data d;
	struct csv_record r;
	size_t cap = 0;
	char key[256];

	if (read_thread_spans(t, &cap, err, errlen))
		return -1;
	for (size_t f = 0; f < 2; f++) {
		int rc = csv_data_load(t->v->source, files[f], &d, err, errlen);
		if (rc < 0)
			return -1;
		if (rc == 1)
			continue;
		while (csv_data_next(&d, &r)) {
			uint64_t start, dur;
			if (r.n < 3 || parse_ns(r.field[1], &start) || parse_ns(r.field[2], &dur) ||
			    !profile_state_name_ok(r.field[0], r.len[0])) {
				t->bad_rows++;
				continue;
			}
			if (!span_wanted(t->v, r.field[0]))
				continue;
			size_t klen = span_key(key, sizeof(key), r.field[0], start, dur);
			if (intern_find(&t->threaded_keys, key, klen) >= 0)
				continue; /* on its thread already */
			t->unthreaded = true;
			if (add_span(t, &cap, r.field[0], r.len[0],
				     (struct span_row){ .start = start, .dur = dur }))
				goto oom;
		}
		csv_data_free(&d);
	}
	return 0;
oom:
	csv_data_free(&d);
	snprintf(err, errlen, "out of memory reading the spans");
	return -1;
}

static const struct timeline *sort_t;

/* Spans on threads first, by thread; then the others by state. Each
 * group by start, the longer first (an outer span before what it holds). */
static int span_cmp(const void *a, const void *b)
{
	const struct span_row *x = a, *y = b;

	if (x->on_thread != y->on_thread)
		return x->on_thread ? -1 : 1;
	if (x->on_thread && (x->pid != y->pid || x->tid != y->tid))
		return x->pid != y->pid ? (x->pid < y->pid ? -1 : 1) : (x->tid < y->tid ? -1 : 1);
	if (!x->on_thread) {
		int c = strcmp(sort_t->states.str[x->state], sort_t->states.str[y->state]);
		if (c)
			return c;
	}
	if (x->start != y->start)
		return x->start < y->start ? -1 : 1;
	return x->dur > y->dur ? -1 : x->dur < y->dur;
}

static void sort_spans(struct timeline *t)
{
	sort_t = t;
	if (t->n_spans)
		qsort(t->spans, t->n_spans, sizeof(*t->spans), span_cmp);
}

/* A thread's slices must nest: a span that ends after the span it
 * starts in (a coroutine's, interleaved with another on one loop) goes
 * to the "spans" tracks instead. ENDS: room for every span. */
static void keep_nested(struct timeline *t, uint64_t *ends)
{
	size_t depth = 0;

	for (size_t i = 0; i < t->n_spans && t->spans[i].on_thread; i++) {
		struct span_row *s = &t->spans[i];
		uint64_t end = s->start + s->dur;

		if (i == 0 || s->pid != s[-1].pid || s->tid != s[-1].tid)
			depth = 0;
		while (depth && ends[depth - 1] <= s->start)
			depth--;
		if (depth && end > ends[depth - 1]) {
			s->on_thread = false;
			t->unthreaded = true;
			continue;
		}
		ends[depth++] = end;
	}
}

/* Spans on their threads stay there; per state, each other span on the
 * first track where it does not overlap the last span (nesting is not
 * assumed: those rows carry no thread, or did not nest on theirs). */
static int assign_lanes(struct timeline *t)
{
	uint64_t *ends = NULL;
	size_t n_ends = 0;

	t->lanes_of = calloc(t->states.n ? t->states.n : 1, sizeof(*t->lanes_of));
	ends = malloc((t->n_spans ? t->n_spans : 1) * sizeof(*ends));
	if (!t->lanes_of || !ends) {
		free(ends);
		return -1;
	}
	sort_spans(t);
	keep_nested(t, ends);
	sort_spans(t);
	while (t->n_threaded < t->n_spans && t->spans[t->n_threaded].on_thread)
		t->n_threaded++;
	for (size_t i = t->n_threaded; i < t->n_spans; i++) {
		struct span_row *s = &t->spans[i];
		if (i == t->n_threaded || s->state != t->spans[i - 1].state)
			n_ends = 0;
		uint32_t lane = 0;
		while (lane < n_ends && ends[lane] > s->start)
			lane++;
		if (lane == n_ends)
			n_ends++;
		ends[lane] = s->start + s->dur;
		s->lane = lane;
		if (lane + 1 > t->lanes_of[s->state])
			t->lanes_of[s->state] = lane + 1;
	}
	free(ends);
	return 0;
}

static void event_start(struct timeline *t)
{
	out_str(t->b, t->first_event ? "\n" : ",\n");
	t->first_event = false;
}

static void put_ts(struct timeline *t, const char *key, uint64_t ns)
{
	out_printf(t->b, ",\"%s\":%" PRIu64 ".%03" PRIu64, key, ns / 1000, ns % 1000);
}

static void meta(struct timeline *t, const char *what, uint32_t pid, uint32_t tid,
		 const char *name)
{
	event_start(t);
	out_printf(t->b, "{\"ph\":\"M\",\"name\":\"%s\",\"pid\":%" PRIu32 ",\"tid\":%" PRIu32
		   ",\"args\":{\"name\":\"", what, pid, tid);
	out_json_str(t->b, name);
	out_str(t->b, "\"}}");
}

/* (pid, tid) pairs. */
static int pair_cmp(const void *a, const void *b)
{
	const uint32_t *x = a, *y = b;

	if (x[0] != y[0])
		return x[0] < y[0] ? -1 : 1;
	return x[1] < y[1] ? -1 : x[1] > y[1];
}

/* The span tracks' thread id: states in name order, their lanes after. */
static uint32_t span_tid(const struct timeline *t, uint32_t state, uint32_t lane)
{
	uint32_t tid = 1;

	for (uint32_t s = 0; s < t->states.n; s++)
		if (strcmp(t->states.str[s], t->states.str[state]) < 0)
			tid += t->lanes_of[s];
	return tid + lane;
}

/* Names every thread with a kept sample or a span on it, and the span
 * tracks. */
static void thread_names(struct timeline *t)
{
	const struct profile *p = t->p;
	uint32_t *pids = malloc((p->n_samples + t->n_threaded + 1) * 2 * sizeof(*pids));
	size_t n = 0;
	char name[PROFILE_PROCESS_FRAME_MAX];

	if (!pids) {
		t->b->oom = true;
		return;
	}
	for (size_t i = 0; i < p->n_samples; i++)
		if (p->samples[i].kept) {
			pids[2 * n] = p->samples[i].pid;
			pids[2 * n + 1] = p->samples[i].tid;
			n++;
		}
	for (size_t i = 0; i < t->n_threaded; i++, n++) {
		pids[2 * n] = t->spans[i].pid;
		pids[2 * n + 1] = t->spans[i].tid;
	}
	qsort(pids, n, 2 * sizeof(*pids), pair_cmp);
	for (size_t i = 0; i < n; i++) {
		bool new_pid = i == 0 || pids[2 * i] != pids[2 * i - 2];
		if (new_pid) {
			size_t len;

			profile_process_frame(p, pids[2 * i], profile_process_at(p, pids[2 * i], UINT64_MAX),
					      name, &len);
			meta(t, "process_name", pids[2 * i], 0, name);
		}
		if (new_pid || pids[2 * i + 1] != pids[2 * i - 1]) {
			snprintf(name, sizeof(name), "tid %" PRIu32, pids[2 * i + 1]);
			meta(t, "thread_name", pids[2 * i], pids[2 * i + 1], name);
		}
	}
	free(pids);
	if (t->n_spans > t->n_threaded) {
		meta(t, "process_name", SPANS_PID, 0, "spans (one track per state)");
		for (uint32_t s = 0; s < t->states.n; s++)
			for (uint32_t l = 0; l < t->lanes_of[s]; l++) {
				if (l)
					snprintf(name, sizeof(name), "%s (%" PRIu32 ")", t->states.str[s], l + 1);
				else
					snprintf(name, sizeof(name), "%s", t->states.str[s]);
				meta(t, "thread_name", SPANS_PID, span_tid(t, s, l), name);
			}
	}
}

static void span_events(struct timeline *t)
{
	for (size_t i = 0; i < t->n_spans; i++) {
		const struct span_row *s = &t->spans[i];
		event_start(t);
		out_str(t->b, "{\"ph\":\"X\",\"cat\":\"span\",\"name\":\"");
		out_json_str(t->b, t->states.str[s->state]);
		if (s->on_thread)
			out_printf(t->b, "\",\"pid\":%" PRIu32 ",\"tid\":%" PRIu32, s->pid, s->tid);
		else
			out_printf(t->b, "\",\"pid\":%u,\"tid\":%" PRIu32, SPANS_PID,
				   span_tid(t, s->state, s->lane));
		put_ts(t, "ts", s->start - t->t0);
		put_ts(t, "dur", s->dur);
		out_str(t->b, "}");
	}
}

static void sample_events(struct timeline *t)
{
	const struct profile *p = t->p;

	for (size_t i = 0; i < p->n_samples; i++) {
		const struct profile_sample_rec *s = &p->samples[i];
		const struct profile_stack *st = &p->stacks[s->stack];
		if (!s->kept)
			continue;
		event_start(t);
		out_str(t->b, "{\"ph\":\"i\",\"s\":\"t\",\"cat\":\"");
		out_str(t->b, profile_kind_name(s->kind));
		out_str(t->b, "\",\"name\":\"");
		out_json_str(t->b, p->frames.str[st->frames[st->depth - 1]]);
		out_printf(t->b, "\",\"pid\":%" PRIu32 ",\"tid\":%" PRIu32, s->pid, s->tid);
		put_ts(t, "ts", s->time_ns - t->t0);
		out_printf(t->b, ",\"args\":{\"kind\":\"%s\",\"weight_ns\":%" PRIu64 ",\"spans\":\"",
			   profile_kind_name(s->kind), s->weight_ns);
		out_json_str(t->b, p->span_set_texts.str[s->span_set]);
		out_str(t->b, "\",\"stack\":\"");
		out_json_str(t->b, p->stack_texts.str[st->text]);
		out_str(t->b, "\"}}");
	}
}

static void counter(struct timeline *t, uint64_t ns, const char *name, const char *cmd,
		    const char *key, const char *value)
{
	char cut[CMD_MAX + 4];

	event_start(t);
	out_str(t->b, "{\"ph\":\"C\",\"cat\":\"resources\",\"name\":\"");
	out_json_str(t->b, name);
	if (cmd && *cmd) {
		size_t n = 0;
		while (cmd[n] && n + out_utf8_char(cmd + n) <= CMD_MAX)
			n += out_utf8_char(cmd + n);
		snprintf(cut, sizeof(cut), "%.*s%s", (int)n, cmd, cmd[n] ? "..." : "");
		out_str(t->b, ": ");
		out_json_str(t->b, cut);
	}
	out_printf(t->b, "\",\"pid\":%u,\"tid\":0", RESOURCES_PID);
	put_ts(t, "ts", ns - t->t0);
	out_printf(t->b, ",\"args\":{\"%s\":%s}}", key, value);
}

/* Loads a resource file (or none); rows are checked when written. */
static int load_series(struct timeline *t, const char *name, struct csv_data *d, char *err,
		       size_t errlen)
{
	int rc = csv_data_load(t->v->source, name, d, err, errlen);
	struct csv_record r;

	if (rc)
		return rc < 0 ? -1 : 0;
	while (csv_data_next(d, &r)) {
		uint64_t ns;
		if (r.n >= 2 && parse_ns(r.field[0], &ns) == 0)
			see_time(t, ns);
	}
	d->pos = 0;
	d->line = 1;
	/* csv_data_next splits in place: read it again from the file */
	csv_data_free(d);
	return csv_data_load(t->v->source, name, d, err, errlen) < 0 ? -1 : 0;
}

/* memory_series_data: query_time,system_uptime_hrs,system_avail_mem_mb,command,mem_rss_mb */
static void memory_counters(struct timeline *t, struct csv_data *d)
{
	struct csv_record r;

	while (csv_data_next(d, &r)) {
		uint64_t ns;
		if (r.n != 5 || parse_ns(r.field[0], &ns)) {
			t->bad_rows++;
			continue;
		}
		if (r.len[3] == 0 && is_number(r.field[2]))
			counter(t, ns, "MemAvailable MiB", NULL, "MiB", r.field[2]);
		else if (r.len[3] > 0 && is_number(r.field[4]))
			counter(t, ns, "RSS MiB", r.field[3], "MiB", r.field[4]);
	}
}

struct cpu_prev {
	struct intern keys; /* command + running_since */
	double *cpu_s;
	uint64_t *ns;
};

/* system_resource_data: query_time,command,running_since,user_cpu_time,
 * system_cpu_time,memory_percent. CPU % is the CPU time between two
 * polls of one process over the wall time between them. */
static void resource_counters(struct timeline *t, struct csv_data *d)
{
	struct cpu_prev prev = { 0 };
	struct csv_record r;
	char key[4096], pct[32];

	intern_init(&prev.keys);
	while (csv_data_next(d, &r)) {
		uint64_t ns;
		if (r.n != 6 || parse_ns(r.field[0], &ns) || !is_number(r.field[3]) ||
		    !is_number(r.field[4])) {
			t->bad_rows++;
			continue;
		}
		if (is_number(r.field[5]))
			counter(t, ns, "memory %", r.field[1], "percent", r.field[5]);
		int klen = snprintf(key, sizeof(key), "%s%c%s", r.field[1], 0, r.field[2]);
		size_t before = prev.keys.n;
		long k = intern_add(&prev.keys, key, (size_t)klen < sizeof(key) ? (size_t)klen : sizeof(key) - 1);
		if (k < 0) {
			t->b->oom = true;
			break;
		}
		double cpu = strtod(r.field[3], NULL) + strtod(r.field[4], NULL);
		if (prev.keys.n > before) {
			double *c = realloc(prev.cpu_s, prev.keys.n * sizeof(*c));
			uint64_t *n = c ? realloc(prev.ns, prev.keys.n * sizeof(*n)) : NULL;
			if (c)
				prev.cpu_s = c;
			if (!c || !n) {
				t->b->oom = true;
				break;
			}
			prev.ns = n;
		} else if (ns > prev.ns[k]) {
			snprintf(pct, sizeof(pct), "%.2f",
				 100.0 * (cpu - prev.cpu_s[k]) * 1e9 / (double)(ns - prev.ns[k]));
			counter(t, ns, "CPU %", r.field[1], "percent", pct);
		}
		prev.cpu_s[k] = cpu;
		prev.ns[k] = ns;
	}
	intern_free(&prev.keys);
	free(prev.cpu_s);
	free(prev.ns);
}

static void other_data(struct timeline *t)
{
	const struct profile *p = t->p;

	out_str(t->b, "\n],\n\"displayTimeUnit\":\"ns\",\n\"otherData\":{\"source\":\"");
	out_json_str(t->b, t->v->source);
	out_str(t->b, "\",\"filter\":\"");
	out_json_str(t->b, t->v->filter);
	out_printf(t->b, "\",\"wall_clock_ns_at_ts_0\":\"%" PRIu64 "\",\"samples\":\"%" PRIu64 "\"",
		   t->t0, p->kept);
	if (t->n_threaded || t->unthreaded) {
		out_str(t->b, ",\"spans\":\"");
		if (t->n_threaded)
			out_printf(t->b, "%zu on their threads (from %s)%s", t->n_threaded,
				   PROFILE_SPANS_FILE, t->unthreaded ? "; " : "");
		if (t->unthreaded)
			out_printf(t->b, "%zu in process 'spans', one track per state (%s)",
				   t->n_spans - t->n_threaded,
				   t->n_threaded ? "not nested on their thread, or a row of the span file "
						   "only, which has no thread column"
						 : "the span file has no thread column");
		out_str(t->b, "\"");
	}
	for (size_t i = 0; i < p->n_losses; i++) {
		out_str(t->b, ",\"lost_");
		out_json_str(t->b, p->losses[i].reason);
		out_printf(t->b, "\":\"%" PRIu64 "\"", p->losses[i].count);
	}
	if (t->bad_rows)
		out_printf(t->b, ",\"rows_skipped\":\"%" PRIu64 "\"", t->bad_rows);
	out_str(t->b, "}}\n");
}

int profile_trace(const struct profile *p, const struct report_view *v, struct out_buf *b,
		  uint64_t *rows_skipped, char *err, size_t errlen)
{
	struct timeline t = { .p = p, .v = v, .b = b, .first_event = true };
	struct csv_data mem = { 0 }, res = { 0 };
	int rc = -1;

	intern_init(&t.states);
	intern_init(&t.threaded_keys);
	for (size_t i = 0; i < p->n_samples; i++)
		if (p->samples[i].kept)
			see_time(&t, p->samples[i].time_ns);
	if (read_spans(&t, err, errlen) || load_series(&t, "memory_series_data", &mem, err, errlen) ||
	    load_series(&t, "system_resource_data", &res, err, errlen))
		goto out;
	if (assign_lanes(&t)) {
		snprintf(err, errlen, "out of memory");
		goto out;
	}
	out_str(b, "{\"traceEvents\":[");
	thread_names(&t);
	if (mem.len || res.len)
		meta(&t, "process_name", RESOURCES_PID, 0, "resources");
	span_events(&t);
	sample_events(&t);
	memory_counters(&t, &mem);
	resource_counters(&t, &res);
	other_data(&t);
	*rows_skipped = t.bad_rows;
	rc = 0;
	if (b->oom) {
		snprintf(err, errlen, "out of memory writing the timeline");
		rc = -1;
	}
out:
	csv_data_free(&mem);
	csv_data_free(&res);
	intern_free(&t.states);
	intern_free(&t.threaded_keys);
	free(t.spans);
	free(t.lanes_of);
	return rc;
}
