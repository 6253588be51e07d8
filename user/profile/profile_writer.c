// SPDX-License-Identifier: MIT
/* The profile capture writer; see profile_writer.h and capture.h. */
#include "profile_writer.h"
#include "csv_writer.h"
#include "intern.h"
#include "wall_clock.h"

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define AUTO_FLUSH_SAMPLES 4096

static const char *const stacks_header[] = { "stack_id", "frames" };
static const char *const samples_header[] = {
	"time_ns", "pid", "tid", "kind", "weight_ns", "spans", "stack_id",
};
static const char *const lost_header[] = { "time_ns", "reason", "count" };
static const char *const processes_header[] = { "time_ns", "pid", "command" };

/* A sample waiting for the next flush: its stack row must reach the
 * disk first. */
struct pending {
	uint64_t time_ns, weight_ns, stack_id;
	uint32_t pid, tid, spans;
	enum profile_kind kind;
};

struct profile_writer {
	struct csv_file *stacks, *samples, *lost, *processes;
	struct u64map known;    /* stack ids already queued or written */
	struct intern span_sets; /* "A|B" texts of the pending samples */
	struct pending *pend;
	size_t n_pend, cap_pend;
	uint64_t losses[PROFILE_LOSS_MAX], losses_written[PROFILE_LOSS_MAX];
	uint64_t samples_dropped_seen; /* csv_file_dropped(samples) counted */
	uint64_t stacks_queued;
	char text[CSV_ROW_MAX];
	struct csv_row row;
};

struct profile_writer *profile_writer_open(const char *dir, char *err, size_t errlen)
{
	struct profile_writer *w = calloc(1, sizeof(*w));

	if (!w) {
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	u64map_init(&w->known);
	intern_init(&w->span_sets);
	w->stacks = csv_file_open(dir, PROFILE_STACKS_FILE, stacks_header, 2,
				  CSV_LAYOUT_CONTEXT, err, errlen);
	if (w->stacks)
		w->samples = csv_file_open(dir, PROFILE_SAMPLES_FILE, samples_header, 7,
					   CSV_LAYOUT_CONTEXT, err, errlen);
	if (w->samples)
		w->lost = csv_file_open(dir, PROFILE_LOST_FILE, lost_header, 3,
					CSV_LAYOUT_CONTEXT, err, errlen);
	if (w->lost)
		w->processes = csv_file_open(dir, PROFILE_PROCESSES_FILE, processes_header, 3,
					     CSV_LAYOUT_CONTEXT, err, errlen);
	if (!w->processes) {
		profile_writer_discard(w);
		return NULL;
	}
	return w;
}

static bool frame_byte_ok(unsigned char c)
{
	return c != PROFILE_FRAME_SEP && c >= 0x20 && c != 0x7f;
}

/* What one frame costs in the row: its bytes, the '"' the CSV quoting
 * doubles, and its separator. */
static size_t frame_cost(const char *f)
{
	size_t n = 1;

	for (; *f; f++)
		n += 1 + (*f == '"');
	return n;
}

static size_t put_frame(char *out, const char *f)
{
	size_t n = 0;

	if (!*f)
		f = PROFILE_NO_STACK;
	for (; *f; f++)
		out[n++] = frame_byte_ok((unsigned char)*f) ? *f : '?';
	return n;
}

/* The frames field of FRAMES, root first, cut at the root end so that
 * its row fits in a csv_row; returns its length. */
static size_t folded_text(struct profile_writer *w, const char *const *frames, size_t n)
{
	/* the id, a comma, two quotes, the line end, room for the mark */
	size_t budget = CSV_ROW_MAX - (PROFILE_STACK_ID_DIGITS + 8) -
			frame_cost(PROFILE_TRUNCATED_FRAME), used = 0, first = n, len = 0;

	if (n == 0)
		return put_frame(w->text, PROFILE_NO_STACK);
	while (first > 0) {
		size_t c = frame_cost(frames[first - 1][0] ? frames[first - 1] : PROFILE_NO_STACK);
		if (used + c > budget)
			break;
		used += c;
		first--;
	}
	if (first > 0) {
		len = put_frame(w->text, PROFILE_TRUNCATED_FRAME);
		/* once per sample: a stack may come cut already */
		if (strcmp(frames[0], PROFILE_TRUNCATED_FRAME) != 0)
			w->losses[PROFILE_LOSS_STACK_TRUNCATED]++;
	}
	for (size_t i = first; i < n; i++) {
		if (len > 0)
			w->text[len++] = PROFILE_FRAME_SEP;
		len += put_frame(w->text + len, frames[i]);
	}
	return len;
}

int profile_writer_stack(struct profile_writer *w, const char *const *frames, size_t n,
			 uint64_t *id)
{
	char hex[PROFILE_STACK_ID_DIGITS + 1];
	size_t len = folded_text(w, frames, n);

	w->text[len] = '\0';
	*id = profile_stack_id(w->text, len);
	if (u64map_get(&w->known, *id) >= 0)
		return 0;
	if (u64map_put(&w->known, *id, 0)) {
		w->losses[PROFILE_LOSS_NOT_INTERNED]++;
		return -1;
	}
	profile_stack_id_format(*id, hex);
	csv_row_begin(&w->row, CSV_LAYOUT_CONTEXT);
	csv_row_str(&w->row, hex);
	csv_row_str(&w->row, w->text);
	csv_row_end(&w->row);
	w->stacks_queued++;
	/* An implicit flush of a full queue writes stacks early: harmless,
	 * samples wait in w->pend until profile_writer_flush(). */
	csv_file_append(w->stacks, &w->row);
	return 0;
}

/* "A|B" of the sample's spans, interned; -1 when out of memory. */
static long span_set(struct profile_writer *w, const struct profile_sample *s)
{
	size_t len = 0;

	for (size_t i = 0; i < s->n_spans; i++) {
		const char *name = s->spans[i];
		if (i > 0 && len < sizeof(w->text) - 1)
			w->text[len++] = PROFILE_SPAN_SEP;
		for (; *name && len < sizeof(w->text) - 1; name++) {
			unsigned char c = (unsigned char)*name;
			w->text[len++] = profile_state_name_ok(name, 1) ? (char)c : '_';
		}
	}
	return intern_add(&w->span_sets, w->text, len);
}

int profile_writer_sample(struct profile_writer *w, const struct profile_sample *s)
{
	long spans = span_set(w, s);

	if (spans < 0) {
		w->losses[PROFILE_LOSS_ROWS_NOT_WRITTEN]++;
		return -1;
	}
	if (w->n_pend == w->cap_pend) {
		size_t cap = w->cap_pend ? w->cap_pend * 2 : 256;
		struct pending *p = realloc(w->pend, cap * sizeof(*p));
		if (!p) {
			w->losses[PROFILE_LOSS_ROWS_NOT_WRITTEN]++;
			return -1;
		}
		w->pend = p;
		w->cap_pend = cap;
	}
	w->pend[w->n_pend++] = (struct pending){
		.time_ns = s->time_ns, .weight_ns = s->weight_ns, .stack_id = s->stack_id,
		.pid = s->pid, .tid = s->tid, .spans = (uint32_t)spans, .kind = s->kind,
	};
	if (w->n_pend >= AUTO_FLUSH_SAMPLES)
		profile_writer_flush(w);
	return 0;
}

void profile_writer_lost(struct profile_writer *w, enum profile_loss reason, uint64_t n)
{
	if (reason < PROFILE_LOSS_MAX)
		w->losses[reason] += n;
}

void profile_writer_process(struct profile_writer *w, uint64_t time_ns, uint32_t pid,
			    const char *command)
{
	size_t len = profile_utf8_cut(command, strlen(command), PROFILE_COMMAND_MAX);

	for (size_t i = 0; i < len; i++)
		w->text[i] = (unsigned char)command[i] < 0x20 || command[i] == 0x7f ? '?' : command[i];
	w->text[len] = '\0';
	csv_row_begin(&w->row, CSV_LAYOUT_CONTEXT);
	csv_row_u64(&w->row, time_ns);
	csv_row_u64(&w->row, pid);
	csv_row_str(&w->row, w->text);
	csv_row_end(&w->row);
	csv_file_append(w->processes, &w->row);
}

static void sample_row(struct profile_writer *w, const struct pending *p)
{
	char hex[PROFILE_STACK_ID_DIGITS + 1];

	profile_stack_id_format(p->stack_id, hex);
	csv_row_begin(&w->row, CSV_LAYOUT_CONTEXT);
	csv_row_u64(&w->row, p->time_ns);
	csv_row_u64(&w->row, p->pid);
	csv_row_u64(&w->row, p->tid);
	csv_row_str(&w->row, profile_kind_name(p->kind));
	csv_row_u64(&w->row, p->weight_ns);
	csv_row_str(&w->row, w->span_sets.str[p->spans]);
	csv_row_str(&w->row, hex);
	csv_row_end(&w->row);
}

/* Samples first: their stacks must be on disk, else they are counted. */
static int flush_samples(struct profile_writer *w)
{
	int ret = csv_file_flush(w->stacks);

	if (ret) {
		w->losses[PROFILE_LOSS_ROWS_NOT_WRITTEN] += w->n_pend;
	} else {
		for (size_t i = 0; i < w->n_pend; i++) {
			sample_row(w, &w->pend[i]);
			csv_file_append(w->samples, &w->row);
		}
		ret = csv_file_flush(w->samples);
	}
	uint64_t dropped = csv_file_dropped(w->samples);
	w->losses[PROFILE_LOSS_ROWS_NOT_WRITTEN] += dropped - w->samples_dropped_seen;
	w->samples_dropped_seen = dropped;
	w->n_pend = 0;
	/* The span texts were only for the pending rows. */
	intern_free(&w->span_sets);
	intern_init(&w->span_sets);
	return ret;
}

static int flush_losses(struct profile_writer *w)
{
	uint64_t now = realtime_ns(), rows_before = csv_file_rows_written(w->lost);
	int ret;

	for (int i = 0; i < PROFILE_LOSS_MAX; i++) {
		if (w->losses[i] == w->losses_written[i])
			continue;
		csv_row_begin(&w->row, CSV_LAYOUT_CONTEXT);
		csv_row_u64(&w->row, now);
		csv_row_str(&w->row, profile_loss_name((enum profile_loss)i));
		csv_row_u64(&w->row, w->losses[i] - w->losses_written[i]);
		csv_row_end(&w->row);
		csv_file_append(w->lost, &w->row);
	}
	ret = csv_file_flush(w->lost);
	if (ret == 0 || csv_file_rows_written(w->lost) > rows_before)
		for (int i = 0; i < PROFILE_LOSS_MAX; i++)
			w->losses_written[i] = w->losses[i];
	return ret;
}

int profile_writer_flush(struct profile_writer *w)
{
	int ret = flush_samples(w), r = flush_losses(w), q = csv_file_flush(w->processes);

	ret = ret ? ret : r;
	return ret ? ret : q;
}

uint64_t profile_writer_samples_written(const struct profile_writer *w)
{
	return csv_file_rows_written(w->samples);
}

uint64_t profile_writer_stacks_written(const struct profile_writer *w)
{
	return csv_file_rows_written(w->stacks);
}

uint64_t profile_writer_lost_count(const struct profile_writer *w, enum profile_loss reason)
{
	return reason < PROFILE_LOSS_MAX ? w->losses[reason] : 0;
}

static void writer_free(struct profile_writer *w)
{
	u64map_free(&w->known);
	intern_free(&w->span_sets);
	free(w->pend);
	free(w);
}

int profile_writer_close(struct profile_writer *w)
{
	int ret, r;

	if (!w)
		return 0;
	ret = profile_writer_flush(w);
	r = csv_file_close(w->stacks);
	ret = ret ? ret : r;
	r = csv_file_close(w->samples);
	ret = ret ? ret : r;
	r = csv_file_close(w->lost);
	ret = ret ? ret : r;
	r = csv_file_close(w->processes);
	ret = ret ? ret : r;
	writer_free(w);
	return ret;
}

void profile_writer_discard(struct profile_writer *w)
{
	if (!w)
		return;
	csv_file_discard(w->processes);
	csv_file_discard(w->lost);
	csv_file_discard(w->samples);
	csv_file_discard(w->stacks);
	writer_free(w);
}
