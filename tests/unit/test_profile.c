// SPDX-License-Identifier: MIT
/* The profile capture: writer -> reader round trip (a torn last row, a
 * damaged stack row, a corrupt stack id), aggregation and the span and
 * kind filters with exact counts, the folded output byte for byte, frame
 * forms, rows pmetrics does not write, the outputs' escapes, the
 * processes' rows and the root frames that name them. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "profile/outputs.h"
#include "profile/profile_model.h"
#include "profile/profile_writer.h"

static char *make_dir(void)
{
	static char dir[64];

	snprintf(dir, sizeof(dir), "/tmp/pmetrics-unit-profile.XXXXXX");
	assert_non_null(mkdtemp(dir));
	return dir;
}

static void remove_dir(const char *dir)
{
	char cmd[128];

	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	assert_int_equal(system(cmd), 0);
}

static void write_file(const char *dir, const char *name, const char *text, const char *mode)
{
	char path[256];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	f = fopen(path, mode);
	assert_non_null(f);
	fputs(text, f);
	fclose(f);
}

static char *read_file(const char *dir, const char *name)
{
	static char buf[65536];
	char path[256];
	size_t n;
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	f = fopen(path, "rb");
	assert_non_null(f);
	n = fread(buf, 1, sizeof(buf) - 1, f);
	buf[n] = '\0';
	fclose(f);
	return buf;
}

/* "ID,FRAMES\n" for a stack row written by hand. */
static void stack_row(char *buf, size_t size, const char *frames)
{
	char hex[17];

	profile_stack_id_format(profile_stack_id(frames, strlen(frames)), hex);
	snprintf(buf, size, "%s,%s\n", hex, frames);
}

static const char *id_of(const char *frames)
{
	static char hex[4][17];
	static int next;
	char *h = hex[next++ % 4];

	profile_stack_id_format(profile_stack_id(frames, strlen(frames)), h);
	return h;
}

static void add(struct profile_writer *w, uint64_t t, uint32_t tid, enum profile_kind kind,
		uint64_t weight, const char *const *spans, size_t n_spans, uint64_t id)
{
	struct profile_sample s = { .time_ns = t, .pid = 100, .tid = tid, .kind = kind,
				    .weight_ns = weight, .spans = spans, .n_spans = n_spans,
				    .stack_id = id };
	assert_int_equal(profile_writer_sample(w, &s), 0);
}

/* Three stacks, ten samples: 6 in ANALYZING (4 of them also in CACHED),
 * 1 off-CPU, 3 outside any span. */
static void write_capture(const char *dir)
{
	static const char *const a[] = { "main", "run", "analyze (robot_server/a.py:10)" };
	static const char *const b[] = { "main", "run", "schedule_[k]" };
	static const char *const c[] = { "main", "libfoo.so+0x1a2b" };
	static const char *const an[] = { "ANALYZING" }, *const both[] = { "ANALYZING", "CACHED" };
	char err[256];
	uint64_t ia, ib, ic, again;
	struct profile_writer *w = profile_writer_open(dir, err, sizeof(err));

	assert_non_null(w);
	assert_int_equal(profile_writer_stack(w, a, 3, &ia), 0);
	assert_int_equal(profile_writer_stack(w, b, 3, &ib), 0);
	assert_int_equal(profile_writer_stack(w, c, 2, &ic), 0);
	assert_int_equal(profile_writer_stack(w, a, 3, &again), 0);
	assert_true(ia == again);
	add(w, 1000, 7, PROFILE_ON_CPU, 10, an, 1, ia);
	add(w, 1010, 7, PROFILE_ON_CPU, 10, an, 1, ia);
	add(w, 1020, 7, PROFILE_ON_CPU, 10, both, 2, ia);
	add(w, 1030, 7, PROFILE_ON_CPU, 10, both, 2, ia);
	add(w, 1040, 7, PROFILE_ON_CPU, 10, both, 2, ic);
	add(w, 1005, 8, PROFILE_OFF_CPU, 5000, both, 2, ib);
	assert_int_equal(profile_writer_flush(w), 0);
	add(w, 990, 7, PROFILE_ON_CPU, 10, NULL, 0, ic);
	add(w, 2000, 7, PROFILE_ON_CPU, 10, NULL, 0, ic);
	add(w, 2010, 9, PROFILE_ON_CPU, 10, NULL, 0, ia);
	add(w, 2020, 9, PROFILE_ON_CPU, 20, NULL, 0, ia);
	profile_writer_lost(w, PROFILE_LOSS_RINGBUF_FULL, 3);
	assert_int_equal(profile_writer_flush(w), 0);
	profile_writer_lost(w, PROFILE_LOSS_RINGBUF_FULL, 2);
	assert_int_equal(profile_writer_samples_written(w), 10);
	assert_int_equal(profile_writer_stacks_written(w), 3);
	assert_int_equal(profile_writer_close(w), 0);
}

static void writer_files(void **state)
{
	char *dir = make_dir(), want[1024], row[256];
	(void)state;

	write_capture(dir);
	want[0] = '\0';
	stack_row(row, sizeof(row), "main;run;analyze (robot_server/a.py:10)");
	strcat(want, row);
	stack_row(row, sizeof(row), "main;run;schedule_[k]");
	strcat(want, row);
	stack_row(row, sizeof(row), "main;libfoo.so+0x1a2b");
	strcat(want, row);
	assert_string_equal(read_file(dir, "profile_stacks"), want);
	assert_string_equal(read_file(dir, "profile_stacks_headers"), "stack_id,frames");
	assert_string_equal(read_file(dir, "profile_samples_headers"),
			    "time_ns,pid,tid,kind,weight_ns,spans,stack_id");
	char *samples = read_file(dir, "profile_samples");
	snprintf(want, sizeof(want), "1000,100,7,on-cpu,10,ANALYZING,%s\n",
		 id_of("main;run;analyze (robot_server/a.py:10)"));
	assert_memory_equal(samples, want, strlen(want));
	snprintf(want, sizeof(want), "1005,100,8,off-cpu,5000,ANALYZING|CACHED,%s\n",
		 id_of("main;run;schedule_[k]"));
	assert_non_null(strstr(samples, want));
	snprintf(want, sizeof(want), "\n990,100,7,on-cpu,10,,%s\n", id_of("main;libfoo.so+0x1a2b"));
	assert_non_null(strstr(samples, want));
	/* losses as increments: 3 at the second flush, 2 at close */
	char *lost = read_file(dir, "profile_lost");
	assert_non_null(strstr(lost, ",ringbuf_full,3\n"));
	assert_non_null(strstr(lost, ",ringbuf_full,2\n"));
	remove_dir(dir);
}

static void round_trip(void **state)
{
	char *dir = make_dir(), err[256];
	struct profile p;
	(void)state;

	write_capture(dir);
	assert_int_equal(profile_load(dir, &p, err, sizeof(err)), 0);
	assert_int_equal(p.n_samples, 10);
	assert_int_equal(p.n_stacks, 3);
	assert_int_equal(p.frames.n, 5); /* main run analyze schedule libfoo */
	assert_int_equal(p.states.n, 2);
	assert_int_equal(p.n_losses, 1);
	assert_string_equal(p.losses[0].reason, "ringbuf_full");
	assert_int_equal(p.losses[0].count, 5);
	assert_int_equal(p.bad_rows + p.bad_stack_rows + p.torn_rows, 0);
	/* the timeline is in time order */
	assert_int_equal(p.samples[0].time_ns, 990);
	assert_int_equal(p.samples[2].time_ns, 1005);
	assert_int_equal(p.samples[2].kind, PROFILE_OFF_CPU);
	assert_int_equal(p.samples[2].weight_ns, 5000);
	assert_int_equal(p.samples[2].tid, 8);
	assert_string_equal(p.stack_texts.str[p.stacks[p.samples[2].stack].text],
			    "main;run;schedule_[k]");
	assert_string_equal(p.span_set_texts.str[p.samples[2].span_set], "ANALYZING|CACHED");
	profile_free(&p);
	remove_dir(dir);
}

static void torn_last_row(void **state)
{
	char *dir = make_dir(), err[256];
	struct profile p;
	(void)state;

	write_capture(dir);
	/* a writer killed mid-row: no line end */
	write_file(dir, "profile_samples", "3000,100,7,on-cpu,10,ANALYZ", "a");
	assert_int_equal(profile_load(dir, &p, err, sizeof(err)), 0);
	assert_int_equal(p.n_samples, 10);
	assert_int_equal(p.torn_rows, 1);
	assert_int_equal(p.bad_rows, 0);
	profile_free(&p);
	/* a writer that opens it next ends the torn line first; the reader
	 * then skips that row as malformed */
	write_capture(dir);
	assert_int_equal(profile_load(dir, &p, err, sizeof(err)), 0);
	assert_int_equal(p.n_samples, 20);
	assert_int_equal(p.bad_rows, 1);
	assert_int_equal(p.torn_rows, 0);
	assert_int_equal(p.n_stacks, 3); /* the second capture's stack rows are the same stacks */
	profile_free(&p);
	remove_dir(dir);
}

static void damaged_stack_row(void **state)
{
	char *dir = make_dir(), err[256], row[256];
	struct profile p;
	(void)state;

	write_capture(dir);
	/* a stack row cut by a crash and ended later: its id no longer fits */
	stack_row(row, sizeof(row), "main;other;deep");
	row[strlen(row) - 5] = '\n';
	row[strlen(row) - 4] = '\0';
	write_file(dir, "profile_stacks", row, "a");
	assert_int_equal(profile_load(dir, &p, err, sizeof(err)), 0);
	assert_int_equal(p.bad_stack_rows, 1);
	assert_int_equal(p.n_stacks, 3);
	profile_free(&p);
	/* a sample that needs the damaged row: the error says what happened */
	char sample[128];
	snprintf(sample, sizeof(sample), "4000,100,7,on-cpu,10,,%.16s\n", row);
	write_file(dir, "profile_samples", sample, "a");
	assert_int_equal(profile_load(dir, &p, err, sizeof(err)), -1);
	assert_non_null(strstr(err, "is not in profile_stacks: the capture is corrupt (a row there "
				    "whose frames do not match its id was damaged)"));
	profile_free(&p);
	remove_dir(dir);
}

static void corrupt_stack_id(void **state)
{
	char *dir = make_dir(), err[512];
	struct profile p;
	(void)state;

	write_capture(dir);
	write_file(dir, "profile_samples", "4000,100,7,on-cpu,10,,00000000deadbeef\n", "a");
	assert_int_equal(profile_load(dir, &p, err, sizeof(err)), -1);
	assert_non_null(strstr(err, "profile_samples line 11: stack id 00000000deadbeef is not in "
				    "profile_stacks"));
	profile_free(&p);
	/* a stack id of the wrong form is a malformed row, skipped */
	remove_dir(dir);
	dir = make_dir();
	write_capture(dir);
	write_file(dir, "profile_samples", "4000,100,7,on-cpu,10,,deadbeef\n"
		   "4001,100,7,in-between,10,,00000000deadbeef\n4002,100,7,on-cpu,10,bad name,x\n", "a");
	assert_int_equal(profile_load(dir, &p, err, sizeof(err)), 0);
	assert_int_equal(p.bad_rows, 3);
	assert_int_equal(p.n_samples, 10);
	profile_free(&p);
	remove_dir(dir);
}

static void no_samples_file(void **state)
{
	char *dir = make_dir(), err[512];
	struct profile p;
	(void)state;

	assert_int_equal(profile_load(dir, &p, err, sizeof(err)), 1);
	assert_non_null(strstr(err, "has no profile_samples"));
	profile_free(&p);
	/* samples without their stacks: named, not "stack id ... corrupt" */
	write_file(dir, "profile_samples", "4000,100,7,on-cpu,10,,00000000deadbeef\n", "w");
	assert_int_equal(profile_load(dir, &p, err, sizeof(err)), -1);
	assert_non_null(strstr(err, "has profile_samples but no profile_stacks"));
	profile_free(&p);
	remove_dir(dir);
}

static uint64_t agg_count(const struct profile *p, const char *stack, const char *spans, int kind)
{
	uint64_t n = 0;

	for (size_t i = 0; i < p->n_aggs; i++) {
		const struct profile_agg *a = &p->aggs[i];
		if (strcmp(p->stack_texts.str[p->stacks[a->stack].text], stack) == 0 &&
		    (!spans || strcmp(p->span_set_texts.str[a->span_set], spans) == 0) &&
		    (kind < 0 || (int)a->kind == kind))
			n += a->count;
	}
	return n;
}

#define A_STACK "main;run;analyze (robot_server/a.py:10)"
#define B_STACK "main;run;schedule_[k]"
#define C_STACK "main;libfoo.so+0x1a2b"

static void aggregation_and_filters(void **state)
{
	char *dir = make_dir(), err[256];
	struct profile p;
	const char *analyzing[] = { "ANALYZING" }, *cached[] = { "CACHED" }, *nope[] = { "NOPE" };
	(void)state;

	write_capture(dir);
	assert_int_equal(profile_load(dir, &p, err, sizeof(err)), 0);

	assert_int_equal(profile_select(&p, &(struct profile_filter){ .kind = -1 }), 0);
	assert_int_equal(p.kept, 10);
	assert_int_equal(p.kept_count[PROFILE_ON_CPU], 9);
	assert_int_equal(p.kept_count[PROFILE_OFF_CPU], 1);
	assert_int_equal(p.kept_weight[PROFILE_ON_CPU], 100);
	assert_int_equal(p.kept_weight[PROFILE_OFF_CPU], 5000);
	/* stack x span set x kind */
	assert_int_equal(p.n_aggs, 6);
	assert_int_equal(agg_count(&p, A_STACK, "ANALYZING", PROFILE_ON_CPU), 2);
	assert_int_equal(agg_count(&p, A_STACK, "ANALYZING|CACHED", PROFILE_ON_CPU), 2);
	assert_int_equal(agg_count(&p, A_STACK, "", PROFILE_ON_CPU), 2);
	assert_int_equal(agg_count(&p, B_STACK, "ANALYZING|CACHED", PROFILE_OFF_CPU), 1);
	assert_int_equal(agg_count(&p, C_STACK, "ANALYZING|CACHED", PROFILE_ON_CPU), 1);
	assert_int_equal(agg_count(&p, C_STACK, "", PROFILE_ON_CPU), 2);
	assert_int_equal(profile_period_ns(&p), 10);

	assert_int_equal(profile_select(&p, &(struct profile_filter){ .states = analyzing,
		.n_states = 1, .kind = -1 }), 0);
	assert_int_equal(p.kept, 6);
	assert_int_equal(agg_count(&p, A_STACK, NULL, -1), 4);
	assert_int_equal(agg_count(&p, C_STACK, NULL, -1), 1);

	assert_int_equal(profile_select(&p, &(struct profile_filter){ .states = cached,
		.n_states = 1, .kind = PROFILE_ON_CPU }), 0);
	assert_int_equal(p.kept, 3);
	assert_int_equal(agg_count(&p, B_STACK, NULL, -1), 0);

	assert_int_equal(profile_select(&p, &(struct profile_filter){ .kind = PROFILE_OFF_CPU }), 0);
	assert_int_equal(p.kept, 1);
	assert_int_equal(p.kept_weight[PROFILE_OFF_CPU], 5000);

	assert_int_equal(profile_select(&p, &(struct profile_filter){ .states = nope,
		.n_states = 1, .kind = -1 }), 0);
	assert_int_equal(p.kept, 0);
	assert_int_equal(p.n_aggs, 0);
	profile_free(&p);
	remove_dir(dir);
}

/* A capture written by hand, as another tool would: the folded output's
 * exact bytes, sorted by stack, totals equal to the samples. */
static void folded_bytes(void **state)
{
	char *dir = make_dir(), err[256], rows[1024] = "", row[256], samples[2048] = "";
	static const char *const stacks[] = {
		"main;b", "main;a;x (m.py:3)", "main", "main;a;sched_[k]",
	};
	static const int counts[] = { 3, 5, 1, 2 };
	struct out_buf b = { 0 };
	struct profile p;
	(void)state;

	for (int s = 0; s < 4; s++) {
		stack_row(row, sizeof(row), stacks[s]);
		strcat(rows, row);
		for (int i = 0; i < counts[s]; i++) {
			snprintf(row, sizeof(row), "%d,1,1,%s,10,%s,%s\n", 100 + 10 * s + i,
				 s == 3 ? "off-cpu" : "on-cpu", i % 2 ? "X" : "", id_of(stacks[s]));
			strcat(samples, row);
		}
	}
	write_file(dir, "profile_stacks", rows, "w");
	write_file(dir, "profile_samples", samples, "w");
	assert_int_equal(profile_load(dir, &p, err, sizeof(err)), 0);
	assert_int_equal(profile_select(&p, &(struct profile_filter){ .kind = -1 }), 0);
	assert_int_equal(profile_folded(&p, &(struct report_view){ 0 }, &b), 0);
	assert_string_equal(b.s, "main 1\nmain;a;sched_[k] 2\nmain;a;x (m.py:3) 5\nmain;b 3\n");
	out_free(&b);
	const char *x[] = { "X" };
	assert_int_equal(profile_select(&p, &(struct profile_filter){ .states = x, .n_states = 1,
		.kind = -1 }), 0);
	assert_int_equal(profile_folded(&p, &(struct report_view){ 0 }, &b), 0);
	assert_string_equal(b.s, "main;a;sched_[k] 1\nmain;a;x (m.py:3) 2\nmain;b 1\n");
	out_free(&b);
	profile_free(&p);
	remove_dir(dir);
}

/* DIR's profile_stacks holding STACKS[0..N) */
static void write_stacks(const char *dir, const char *const *stacks, int n)
{
	char rows[1024] = "", row[256];

	for (int s = 0; s < n; s++) {
		stack_row(row, sizeof(row), stacks[s]);
		strcat(rows, row);
	}
	write_file(dir, "profile_stacks", rows, "w");
}

/* DIR's profile, every sample kept. */
static void load_all(const char *dir, struct profile *p)
{
	char err[256];

	assert_int_equal(profile_load(dir, p, err, sizeof(err)), 0);
	assert_int_equal(profile_select(p, &(struct profile_filter){ .kind = -1 }), 0);
}

/* Weighed by time, a stack's count is its nanoseconds in microseconds,
 * rounded once per stack (not per sample), half up; on- and off-CPU
 * samples of one stack add up. */
static void folded_by_time(void **state)
{
	char *dir = make_dir(), rows[1024], burn[17], wait[17];
	static const char *const stacks[] = { "main;burn", "main;wait_[k]" };
	struct report_view by_time = { .weight = PROFILE_WEIGHT_TIME };
	struct out_buf b = { 0 };
	struct profile p;
	(void)state;

	write_stacks(dir, stacks, 2);
	/* burn: 3 x 10101010 ns = 30303.03 us; wait: 1499 + 1 ns on-CPU
	 * (1.5 us, up to 2) and 2 s + 499 ns off-CPU */
	snprintf(burn, sizeof(burn), "%s", id_of(stacks[0]));
	snprintf(wait, sizeof(wait), "%s", id_of(stacks[1]));
	snprintf(rows, sizeof(rows),
		 "100,1,1,on-cpu,10101010,,%s\n110,1,1,on-cpu,10101010,,%s\n"
		 "120,1,1,on-cpu,10101010,,%s\n130,1,2,off-cpu,1499,,%s\n"
		 "140,1,2,on-cpu,1,,%s\n150,1,2,off-cpu,2000000499,,%s\n",
		 burn, burn, burn, wait, wait, wait);
	write_file(dir, "profile_samples", rows, "w");
	load_all(dir, &p);
	assert_int_equal(profile_folded(&p, &by_time, &b), 0);
	assert_string_equal(b.s, "main;burn 30303\nmain;wait_[k] 2000002\n");
	out_free(&b);
	assert_int_equal(profile_select(&p, &(struct profile_filter){ .kind = PROFILE_ON_CPU }), 0);
	assert_int_equal(profile_folded(&p, &by_time, &b), 0);
	assert_string_equal(b.s, "main;burn 30303\nmain;wait_[k] 0\n");
	out_free(&b);
	assert_int_equal(profile_folded(&p, &(struct report_view){ .weight = PROFILE_WEIGHT_SAMPLES },
					&b), 0);
	assert_string_equal(b.s, "main;burn 3\nmain;wait_[k] 1\n");
	out_free(&b);
	profile_free(&p);
	remove_dir(dir);
}

/* The flame graph's own texts round a half up, as its script does
 * (printf alone would write 1.125 s as "1.12 s"): 1125 and 875 samples
 * of 1 ms, and 1 sample of 32 (3.125 %). */
/* PATH: N on-CPU samples of 1 ms, the first FIRST of them on stack
 * id A, the others on B; then the profile of DIR, every sample kept. */
static void one_ms_samples(const char *dir, const char *path, int n, int first, const char *a,
			   const char *b, struct profile *p)
{
	FILE *f = fopen(path, "w");

	assert_non_null(f);
	for (int i = 0; i < n; i++)
		fprintf(f, "%d,1,1,on-cpu,1000000,,%s\n", 100 + i, i < first ? a : b);
	fclose(f);
	load_all(dir, p);
}

static void svg_rounds_halves_up(void **state)
{
	char *dir = make_dir(), path[256], foo[17], bar[17];
	static const char *const stacks[] = { "main;foo", "main;bar" };
	struct out_buf b = { 0 };
	struct profile p;
	(void)state;

	write_stacks(dir, stacks, 2);
	snprintf(foo, sizeof(foo), "%s", id_of(stacks[0]));
	snprintf(bar, sizeof(bar), "%s", id_of(stacks[1]));
	snprintf(path, sizeof(path), "%s/profile_samples", dir);
	one_ms_samples(dir, path, 2000, 1125, foo, bar, &p);
	assert_int_equal(profile_svg(&p, &(struct report_view){ .source = dir, .filter = "",
				     .weight = PROFILE_WEIGHT_TIME }, &b), 0);
	assert_non_null(strstr(b.s, "<title>foo (1.13 s, 56.25%)</title>"));
	assert_non_null(strstr(b.s, "<title>bar (875.00 ms, 43.75%)</title>"));
	assert_non_null(strstr(b.s, ">2.00 s of on-CPU time<"));
	out_free(&b);
	profile_free(&p);

	one_ms_samples(dir, path, 32, 1, foo, bar, &p);
	assert_int_equal(profile_svg(&p, &(struct report_view){ .source = dir, .filter = "" }, &b), 0);
	assert_non_null(strstr(b.s, "<title>foo (1 sample, 3.13%)</title>"));
	assert_non_null(strstr(b.s, "<title>bar (31 samples, 96.88%)</title>"));
	out_free(&b);
	profile_free(&p);
	remove_dir(dir);
}

static void frames_kept_whole(void **state)
{
	char *dir = make_dir(), err[256], big[200];
	const char *odd[] = { "a;b", "tab\there", "" };
	const char *deep[500];
	uint64_t id;
	struct profile_writer *w = profile_writer_open(dir, err, sizeof(err));
	struct profile p;
	(void)state;

	assert_non_null(w);
	assert_int_equal(profile_writer_stack(w, odd, 3, &id), 0);
	assert_true(id == profile_stack_id("a?b;tab?here;[unknown]", 22));
	assert_int_equal(profile_writer_stack(w, NULL, 0, &id), 0);
	assert_true(id == profile_stack_id("[unknown]", 9));
	/* 500 frames of 199 bytes do not fit in a row: the root end goes */
	memset(big, 'f', sizeof(big) - 1);
	big[sizeof(big) - 1] = '\0';
	for (int i = 0; i < 500; i++)
		deep[i] = big;
	assert_int_equal(profile_writer_stack(w, deep, 500, &id), 0);
	assert_int_equal(profile_writer_lost_count(w, PROFILE_LOSS_STACK_TRUNCATED), 1);
	add(w, 1, 1, PROFILE_ON_CPU, 1, NULL, 0, id);
	/* a stack the walk cut already is one loss, not two */
	uint64_t id2;
	deep[0] = PROFILE_TRUNCATED_FRAME;
	assert_int_equal(profile_writer_stack(w, deep, 499, &id2), 0);
	assert_int_equal(profile_writer_lost_count(w, PROFILE_LOSS_STACK_TRUNCATED), 1);
	assert_int_equal(profile_writer_close(w), 0);
	assert_int_equal(profile_load(dir, &p, err, sizeof(err)), 0);
	assert_int_equal(p.n_stacks, 3);
	const struct profile_stack *s = &p.stacks[p.samples[0].stack];
	assert_string_equal(p.frames.str[s->frames[0]], "[truncated]");
	assert_string_equal(p.frames.str[s->frames[s->depth - 1]], big);
	assert_true(s->depth > 300 && s->depth < 500);
	assert_int_equal(p.n_losses, 1);
	assert_string_equal(p.losses[0].reason, "stack_truncated");
	profile_free(&p);
	remove_dir(dir);
}

/* Times and counts: whole digits, up to the limit given, no further. */
static void decimal_fields(void **state)
{
	uint64_t v = 7;

	(void)state;
	assert_int_equal(profile_decimal_parse("9223372036854775807", 19, INT64_MAX, &v), 0);
	assert_true(v == INT64_MAX);
	assert_int_equal(profile_decimal_parse("9223372036854775808", 19, INT64_MAX, &v), -1);
	assert_int_equal(profile_decimal_parse("18446744073709551615", 20, INT64_MAX, &v), -1);
	assert_int_equal(profile_decimal_parse("99999999999999999999999", 23, INT64_MAX, &v), -1);
	assert_int_equal(profile_decimal_parse("4294967295", 10, UINT32_MAX, &v), 0);
	assert_true(v == UINT32_MAX);
	assert_int_equal(profile_decimal_parse("4294967296", 10, UINT32_MAX, &v), -1);
	assert_int_equal(profile_decimal_parse("00012", 5, UINT32_MAX, &v), 0);
	assert_true(v == 12);
	assert_int_equal(profile_decimal_parse("", 0, INT64_MAX, &v), -1);
	assert_int_equal(profile_decimal_parse("-1", 2, INT64_MAX, &v), -1);
	assert_int_equal(profile_decimal_parse("1 ", 2, INT64_MAX, &v), -1);
	assert_int_equal(profile_decimal_parse("12x", 2, INT64_MAX, &v), 0); /* only LEN bytes */
	assert_true(v == 12);
}

static void frame_forms(void **state)
{
	char buf[128], copy[128];
	struct profile_frame_parts parts;
	(void)state;

	profile_frame_python(buf, sizeof(buf), "Analyzer.run", "robot_server/a.py", 42);
	assert_string_equal(buf, "Analyzer.run (robot_server/a.py:42)");
	profile_frame_parse(buf, copy, &parts);
	assert_int_equal(parts.form, FRAME_PYTHON);
	assert_string_equal(parts.name, "Analyzer.run");
	assert_string_equal(parts.file, "robot_server/a.py");
	assert_int_equal(parts.line, 42);
	profile_frame_unresolved(buf, sizeof(buf), "/usr/lib/libfoo.so.1", 0x1a2b);
	assert_string_equal(buf, "libfoo.so.1+0x1a2b");
	profile_frame_parse(buf, copy, &parts);
	assert_int_equal(parts.form, FRAME_UNRESOLVED);
	profile_frame_kernel(buf, sizeof(buf), "schedule");
	assert_string_equal(buf, "schedule_[k]");
	profile_frame_parse(buf, copy, &parts);
	assert_int_equal(parts.form, FRAME_KERNEL);
	assert_string_equal(parts.name, "schedule");
	profile_frame_parse("operator() (int)", copy, &parts);
	assert_int_equal(parts.form, FRAME_NATIVE);
	assert_string_equal(parts.name, "operator() (int)");
	profile_frame_parse("f (a (b).py:7)", copy, &parts);
	assert_int_equal(parts.form, FRAME_PYTHON);
	assert_string_equal(parts.name, "f");
	assert_string_equal(parts.file, "a (b).py");
}

/* Rows another writer (or a hand) could make: frames with a line break
 * or an empty frame are kept as pmetrics writes them, a time beyond
 * pprof's signed 64 bits is malformed, sums are held at their maximum. */
static void foreign_rows(void **state)
{
	char *dir = make_dir(), err[256], rows[1024], samples[1024], nl[17], empty_frame[17],
		none[17];
	static const char big[] = "9223372036854775807"; /* INT64_MAX */
	struct out_buf b = { 0 };
	struct profile p;
	(void)state;

	strcpy(nl, id_of("main;a\nb"));
	strcpy(empty_frame, id_of("a;;b"));
	strcpy(none, id_of(""));
	snprintf(rows, sizeof(rows), "%s,\"main;a\nb\"\n%s,a;;b\n%s,\n", nl, empty_frame, none);
	write_file(dir, "profile_stacks", rows, "w");
	snprintf(samples, sizeof(samples),
		 "1,1,1,on-cpu,%s,,%s\n2,1,1,on-cpu,%s,,%s\n3,1,1,on-cpu,%s,,%s\n"
		 "4,1,1,on-cpu,10,,%s\n5,1,1,on-cpu,10,,%s\n6,1,1,on-cpu,9223372036854775808,,%s\n"
		 "9223372036854775808,1,1,on-cpu,10,,%s\n",
		 big, nl, big, nl, big, nl, empty_frame, none, none, none);
	write_file(dir, "profile_samples", samples, "w");
	snprintf(samples, sizeof(samples), "1,ringbuf_full,%s\n2,ringbuf_full,%s\n"
		 "3,ringbuf_full,5\n4,ringbuf_full,18446744073709551615\n", big, big);
	write_file(dir, "profile_lost", samples, "w");
	assert_int_equal(profile_load(dir, &p, err, sizeof(err)), 0);
	assert_int_equal(p.repaired_stack_rows, 3);
	assert_int_equal(p.bad_stack_rows, 0);
	assert_int_equal(p.bad_rows, 3); /* the weight, the time and the count past INT64_MAX */
	assert_int_equal(p.n_samples, 5);
	assert_true(p.losses[0].count == UINT64_MAX);
	assert_true(profile_lost_total(&p) == UINT64_MAX);
	assert_int_equal(profile_select(&p, &(struct profile_filter){ .kind = -1 }), 0);
	assert_true(p.kept_weight[PROFILE_ON_CPU] == UINT64_MAX);
	assert_int_equal(profile_folded(&p, &(struct report_view){ 0 }, &b), 0);
	assert_string_equal(b.s, "[unknown] 1\na;[unknown];b 1\nmain;a?b 3\n");
	out_free(&b);
	profile_free(&p);
	remove_dir(dir);
}

/* U+FFFE and U+FFFF are valid UTF-8 but no XML characters; the JSON
 * escape goes into the SVG's script too. */
static void escapes_drop_xml_nonchars(void **state)
{
	struct out_buf b = { 0 };
	(void)state;

	out_xml_str(&b, "x\xef\xbf\xbey\xef\xbf\xbfz\xef\xbf\xbd");
	assert_string_equal(b.s, "x?y?z\xef\xbf\xbd");
	out_free(&b);
	out_json_str(&b, "\xef\xbf\xbe<");
	assert_string_equal(b.s, "?\\u003c");
	out_free(&b);
}

/* The writer's process rows: control bytes as '?', cut at
 * PROFILE_COMMAND_MAX; the reader takes a sample's process as its pid's
 * last row from before the sample, else its first. */
static void process_rows(void **state)
{
	char *dir = make_dir(), err[256], long_cmd[PROFILE_COMMAND_MAX + 50], frame[PROFILE_PROCESS_FRAME_MAX];
	static const char *const st[] = { "main" };
	struct profile_writer *w = profile_writer_open(dir, err, sizeof(err));
	struct profile p;
	uint64_t id;
	size_t len;
	(void)state;

	assert_non_null(w);
	memset(long_cmd, 'x', sizeof(long_cmd) - 1);
	long_cmd[sizeof(long_cmd) - 1] = '\0';
	profile_writer_process(w, 500, 100, "/bin/sh -c run\tthis");
	profile_writer_process(w, 1500, 100, "/usr/bin/python3 -m server; x");
	profile_writer_process(w, 700, 200, long_cmd);
	/* 'x' then 600 two-byte characters: cut where a character ends */
	char utf8[1 + 1200 + 1] = "x";
	for (int i = 0; i < 600; i++)
		memcpy(utf8 + 1 + 2 * i, "\xc3\xa9", 3);
	profile_writer_process(w, 900, 400, utf8);
	assert_int_equal(profile_writer_stack(w, st, 1, &id), 0);
	for (uint64_t t = 1000; t <= 2000; t += 500) {
		struct profile_sample s = { .time_ns = t, .pid = 100, .tid = 100, .stack_id = id };

		assert_int_equal(profile_writer_sample(w, &s), 0);
	}
	struct profile_sample early = { .time_ns = 100, .pid = 200, .tid = 200, .stack_id = id };
	struct profile_sample other = { .time_ns = 100, .pid = 300, .tid = 300, .stack_id = id };
	assert_int_equal(profile_writer_sample(w, &early), 0);
	assert_int_equal(profile_writer_sample(w, &other), 0);
	assert_int_equal(profile_writer_close(w), 0);
	assert_string_equal(read_file(dir, "profile_processes_headers"), "time_ns,pid,command");
	char *rows = read_file(dir, "profile_processes");
	assert_memory_equal(rows, "500,100,/bin/sh -c run?this\n1500,100,/usr/bin/python3 -m server; x\n",
			    strlen("500,100,/bin/sh -c run?this\n1500,100,/usr/bin/python3 -m server; x\n"));
	char *row400 = strstr(rows, "900,400,");
	assert_non_null(row400);
	assert_int_equal(strcspn(row400 + 8, "\n"), PROFILE_COMMAND_MAX - 1); /* 'x' + 511 x 2 */
	assert_non_null(strstr(rows, "700,200,"));
	assert_int_equal(strcspn(strstr(rows, "700,200,") + 8, "\n"), PROFILE_COMMAND_MAX);

	assert_int_equal(profile_load(dir, &p, err, sizeof(err)), 0);
	assert_int_equal(p.n_processes, 4);
	/* by time: 100 (pid 200), 100 (pid 300), 1000, 1500, 2000 (pid 100) */
	assert_int_equal(p.samples[0].pid, 200);
	assert_int_not_equal(p.samples[0].process, PROFILE_NO_PROCESS); /* its only row, from later */
	assert_int_equal(p.samples[1].process, PROFILE_NO_PROCESS);
	profile_process_frame(&p, 100, p.samples[2].process, frame, &len);
	assert_string_equal(frame, "pid 100: sh -c run?this");
	assert_int_equal(len, strlen(frame));
	profile_process_frame(&p, 100, p.samples[3].process, frame, &len);
	assert_string_equal(frame, "pid 100: python3 -m server? x");
	profile_process_frame(&p, 100, p.samples[4].process, frame, &len);
	assert_string_equal(frame, "pid 100: python3 -m server? x");
	profile_process_frame(&p, 300, p.samples[1].process, frame, &len);
	assert_string_equal(frame, "pid 300");
	profile_process_frame(&p, 200, p.samples[0].process, frame, &len);
	assert_int_equal(len, PROFILE_PROCESS_FRAME_MAX - 1);
	assert_string_equal(frame + len - 6, "xxx...");
	profile_process_frame(&p, 400, profile_process_at(&p, 400, UINT64_MAX), frame, &len);
	assert_memory_equal(frame, "pid 400: x\xc3\xa9", 12);
	assert_string_equal(frame + len - 5, "\xc3\xa9...");
	profile_free(&p);
	remove_dir(dir);
}

/* Samples of more than one process get a root frame naming theirs, in
 * every output; the samples of one process keep their stacks as they
 * are, also when a filter keeps one process's samples only. */
static void process_roots(void **state)
{
	char *dir = make_dir(), err[256], rows[512] = "", samples[1024] = "", row[256];
	struct out_buf b = { 0 };
	struct profile p;
	(void)state;

	stack_row(row, sizeof(row), "main;work");
	strcat(rows, row);
	stack_row(row, sizeof(row), "main;wait_[k]");
	strcat(rows, row);
	for (int i = 0; i < 3; i++) {
		snprintf(row, sizeof(row), "%d,10,10,on-cpu,10,,%s\n", 100 + i, id_of("main;work"));
		strcat(samples, row);
	}
	snprintf(row, sizeof(row), "200,20,21,on-cpu,10,IN,%s\n", id_of("main;work"));
	strcat(samples, row);
	snprintf(row, sizeof(row), "210,20,21,off-cpu,500,IN,%s\n", id_of("main;wait_[k]"));
	strcat(samples, row);
	write_file(dir, "profile_stacks", rows, "w");
	write_file(dir, "profile_samples", samples, "w");
	write_file(dir, "profile_processes", "50,10,/opt/srv/bin/server --port 1\n"
					      "150,20,[kworker/0:1]\n", "w");
	assert_int_equal(profile_load(dir, &p, err, sizeof(err)), 0);
	assert_int_equal(profile_select(&p, &(struct profile_filter){ .kind = -1 }), 0);
	assert_true(p.by_process);
	assert_int_equal(profile_folded(&p, &(struct report_view){ 0 }, &b), 0);
	assert_string_equal(b.s, "pid 10: server --port 1;main;work 3\n"
				 "pid 20: [kworker/0:1];main;wait_[k] 1\n"
				 "pid 20: [kworker/0:1];main;work 1\n");
	out_free(&b);
	/* again: the same made stacks, none made twice */
	size_t stacks = p.n_stacks;
	assert_int_equal(profile_select(&p, &(struct profile_filter){ .kind = -1 }), 0);
	assert_int_equal(p.n_stacks, stacks);
	const char *in[] = { "IN" };
	assert_int_equal(profile_select(&p, &(struct profile_filter){ .states = in, .n_states = 1,
		.kind = -1 }), 0);
	assert_false(p.by_process);
	assert_int_equal(profile_folded(&p, &(struct report_view){ 0 }, &b), 0);
	assert_string_equal(b.s, "main;wait_[k] 1\nmain;work 1\n");
	out_free(&b);
	/* --pid 10: its 3 samples, as captured */
	static const uint32_t ten[] = { 10 };
	assert_int_equal(profile_select(&p, &(struct profile_filter){ .pids = ten, .n_pids = 1,
		.kind = -1 }), 0);
	assert_false(p.by_process);
	assert_int_equal(p.kept, 3);
	assert_int_equal(profile_folded(&p, &(struct report_view){ 0 }, &b), 0);
	assert_string_equal(b.s, "main;work 3\n");
	out_free(&b);
	profile_free(&p);
	remove_dir(dir);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(writer_files),
		cmocka_unit_test(round_trip),
		cmocka_unit_test(torn_last_row),
		cmocka_unit_test(damaged_stack_row),
		cmocka_unit_test(corrupt_stack_id),
		cmocka_unit_test(no_samples_file),
		cmocka_unit_test(aggregation_and_filters),
		cmocka_unit_test(folded_bytes),
		cmocka_unit_test(folded_by_time),
		cmocka_unit_test(svg_rounds_halves_up),
		cmocka_unit_test(frames_kept_whole),
		cmocka_unit_test(frame_forms),
		cmocka_unit_test(decimal_fields),
		cmocka_unit_test(foreign_rows),
		cmocka_unit_test(escapes_drop_xml_nonchars),
		cmocka_unit_test(process_rows),
		cmocka_unit_test(process_roots),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
