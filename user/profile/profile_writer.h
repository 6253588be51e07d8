/* SPDX-License-Identifier: MIT */
/* The sampler's side of the profile capture (the format is in
 * capture.h): interned stacks, one row per sample, loss counters.
 *
 *   w = profile_writer_open(dir, err, sizeof(err));
 *   per sample:  profile_writer_stack(w, frames, n, &id)  (root first)
 *                profile_writer_sample(w, &sample)
 *   losses:      profile_writer_lost(w, PROFILE_LOSS_RINGBUF_FULL, n)
 *   a process first seen, or after its exec:
 *                profile_writer_process(w, time, pid, command)
 *   about once a second: profile_writer_flush(w)
 *   at the end:  profile_writer_close(w)   (after a failed start:
 *                profile_writer_discard(w))
 *
 * Rows go through csv_writer.h (whole rows only, a torn tail cut back,
 * files opened safely and locked against a second writer). A flush
 * writes new stacks first and samples after them, so every sample row on
 * disk names a stack row on disk; when the stacks cannot be written,
 * the samples that wait on them are counted as rows_not_written instead.
 * Losses are appended to profile_lost as increments at every flush. Not
 * thread-safe: one thread (the sampler's poll loop) calls it. */
#ifndef PMETRICS_PROFILE_WRITER_H
#define PMETRICS_PROFILE_WRITER_H

#include <stddef.h>
#include <stdint.h>

#include "capture.h"

struct profile_writer;

struct profile_sample {
	uint64_t time_ns;   /* wall clock, ns since the epoch */
	uint32_t pid, tid;  /* as pmetrics sees them */
	enum profile_kind kind;
	uint64_t weight_ns; /* the period (on-CPU) or the blocked time (off-CPU) */
	const char *const *spans; /* open span states, outermost first */
	size_t n_spans;
	uint64_t stack_id;  /* from profile_writer_stack() */
};

/* Opens (creating when missing) DIR/profile_stacks, profile_samples,
 * profile_lost and profile_processes for appending, with their header files. NULL with a
 * one-line reason in err; what it created is removed again. */
struct profile_writer *profile_writer_open(const char *dir, char *err, size_t errlen);

/* Interns the stack FRAMES[0] (root) .. FRAMES[n - 1] (leaf) and sets
 * *id. A new stack's row is queued for the next flush. A frame's ';' and
 * control characters become '?'; an empty stack is "[unknown]"; a stack
 * too long for one row (8 KiB) loses frames at its root end, replaced by
 * "[truncated]", and counts as stack_truncated. Returns 0, or -1 (out of
 * memory, or two stacks with one 64-bit id): the sample is then counted
 * as not_interned and must not be added. */
int profile_writer_stack(struct profile_writer *w, const char *const *frames, size_t n,
			 uint64_t *id);
/* Queues one sample. A span name holding anything but letters, digits
 * and '_' has those bytes written as '_'. Returns 0, or -1 when out of
 * memory (counted as rows_not_written). Flushes by itself every 4096
 * samples. */
int profile_writer_sample(struct profile_writer *w, const struct profile_sample *s);
/* Queues a profile_processes row: PID runs COMMAND from TIME_NS on. A
 * control character becomes '?'; the command is cut at
 * PROFILE_COMMAND_MAX bytes. */
void profile_writer_process(struct profile_writer *w, uint64_t time_ns, uint32_t pid,
			    const char *command);
/* Adds N to a loss counter (written at the next flush). */
void profile_writer_lost(struct profile_writer *w, enum profile_loss reason, uint64_t n);
/* Writes what is queued. Returns 0 or -errno (the first write error; rows
 * after it are counted, not written). */
int profile_writer_flush(struct profile_writer *w);

uint64_t profile_writer_samples_written(const struct profile_writer *w);
uint64_t profile_writer_stacks_written(const struct profile_writer *w);
/* The loss counter's total so far (including rows_not_written). */
uint64_t profile_writer_lost_count(const struct profile_writer *w, enum profile_loss reason);

/* Flushes, closes, frees; returns the flush result. */
int profile_writer_close(struct profile_writer *w);
/* After a failed start: closes and removes the files it created that
 * hold no row. */
void profile_writer_discard(struct profile_writer *w);

#endif
