/* SPDX-License-Identifier: MIT */
/* A profile capture in memory: frames and stacks interned, every sample
 * on a timeline, and the samples a filter keeps aggregated by stack x
 * span set x kind. Read with profile_load(), cut with profile_select();
 * every output (folded, pprof, SVG, trace) reads only this. */
#ifndef PMETRICS_PROFILE_MODEL_H
#define PMETRICS_PROFILE_MODEL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "capture.h"
#include "intern.h"

struct profile_stack {
	uint64_t id;
	uint32_t *frames; /* indices into frames, root first */
	uint32_t depth;
	uint32_t text;    /* index into stack_texts: the folded frames field */
};

struct profile_span_set {
	uint32_t *states; /* indices into states, outermost first */
	uint32_t n;
};

/* What a process ran from time_ns on (a profile_processes row). */
struct profile_process {
	uint64_t time_ns;
	uint32_t pid;
	uint32_t command; /* index into commands */
};

#define PROFILE_NO_PROCESS UINT32_MAX

struct profile_sample_rec {
	uint64_t time_ns, weight_ns;
	uint32_t pid, tid;
	uint32_t stack, span_set; /* indices */
	uint32_t process;         /* into processes, or PROFILE_NO_PROCESS */
	enum profile_kind kind;
	bool kept;                /* by the last profile_select() */
};

struct profile_agg {
	uint32_t stack, span_set;
	enum profile_kind kind;
	uint64_t count, weight_ns;
};

struct profile_loss_total {
	char *reason;
	uint64_t count;
};

struct profile {
	struct intern frames;      /* frame texts */
	struct intern stack_texts; /* folded texts of the stacks */
	struct profile_stack *stacks;
	size_t n_stacks;
	struct u64map stack_by_id;
	struct intern states;      /* span state names */
	struct intern span_set_texts; /* "A|B" as in the file */
	struct profile_span_set *span_sets;
	struct profile_sample_rec *samples; /* by time */
	size_t n_samples, cap_samples;
	struct profile_loss_total *losses;
	size_t n_losses;
	struct intern commands;
	struct profile_process *processes; /* by pid, then time */
	size_t n_processes;
	/* why profile_processes, there, could not be read ("" when it was,
	 * or is not there): processes are then named by pid alone */
	char processes_error[256];
	/* stacks made for the process roots: (root frame, stack) -> stack,
	 * and the root frame of each (pid, processes row) */
	struct u64map rooted, root_frames;
	/* rows of the files left out: malformed rows, stack rows whose id
	 * is not their hash, torn last rows; and stack rows kept with a
	 * control character or an empty frame made '?' or PROFILE_NO_STACK */
	uint64_t bad_rows, bad_stack_rows, torn_rows, repaired_stack_rows;
	/* after profile_select(): */
	struct profile_agg *aggs; /* sorted by stack text, span set text, kind */
	size_t n_aggs;
	/* the kept samples are of more than one process: each aggregate's
	 * stack is one made with a root frame naming its process
	 * (profile_process_frame()) */
	bool by_process;
	uint64_t kept, kept_count[PROFILE_KINDS], kept_weight[PROFILE_KINDS];
};

/* Reads DIR's profile_stacks, profile_samples, profile_lost and, where
 * the capture has it, profile_processes. Returns
 * 0; 1 when DIR has no profile_samples (err says so); -1 with a one-line
 * reason in err (unreadable, or a sample naming a stack id that
 * profile_stacks does not hold: a corrupt capture). Malformed rows are
 * skipped and counted in bad_rows. */
int profile_load(const char *dir, struct profile *p, char *err, size_t errlen);
void profile_free(struct profile *p);

struct profile_filter {
	const char *const *states; /* keep samples inside any of these; none: all */
	size_t n_states;
	const uint32_t *pids;      /* keep samples of these processes; none: all */
	size_t n_pids;
	int kind;                  /* a profile_kind, or -1 for both */
};

/* Marks the samples F keeps and aggregates them. Returns 0, or -1 when
 * out of memory. */
int profile_select(struct profile *p, const struct profile_filter *f);

/* The processes row of what PID ran at TIME_NS: its last row from
 * before then, else its first (the sampler writes a process's row when
 * it first sees it, which may be after its first samples were taken);
 * PROFILE_NO_PROCESS when it has none. */
uint32_t profile_process_at(const struct profile *p, uint32_t pid, uint64_t time_ns);
/* "pid PID: COMMAND" of PROCESS, the program by its file name and the
 * whole cut to PROFILE_PROCESS_FRAME_MAX - 1 bytes ending in "..." (a
 * frame: ';' and control bytes as '?'); "pid PID" for
 * PROFILE_NO_PROCESS. *LEN gets the length. */
#define PROFILE_PROCESS_FRAME_MAX 160
void profile_process_frame(const struct profile *p, uint32_t pid, uint32_t process, char *buf,
			   size_t *len);

/* A + B, held at UINT64_MAX: sums of rows, which could come from anywhere. */
static inline uint64_t profile_add_held(uint64_t a, uint64_t b)
{
	return a > UINT64_MAX - b ? UINT64_MAX : a + b;
}

/* Sum of the losses, and the total of one reason (0 when none). */
uint64_t profile_lost_total(const struct profile *p);

/* The most common weight of the kept on-CPU samples: the sampling
 * period (0 without on-CPU samples). */
uint64_t profile_period_ns(const struct profile *p);

#endif
