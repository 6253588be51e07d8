/* SPDX-License-Identifier: MIT */
/* The profile capture format: the contract between the sampler (which
 * writes it through profile_writer.h) and pmetrics report (which reads it
 * through profile_model.h). Four CSV files in the capture directory,
 * next to the span and resource files, each with its _headers file, in
 * the context layout (bare fields, quoted only when needed, "\n"):
 *
 *   profile_stacks   stack_id,frames
 *       One row per distinct stack. frames: the stack in folded form,
 *       root first, leaf last, joined by ';'. stack_id: 16 lowercase hex
 *       digits, the FNV-1a 64 hash of the frames field's bytes, so a
 *       stack has the same id in every capture and a reader can check a
 *       row (a row torn by a crash and ended later by another writer does
 *       not hash to its id). The same stack may appear again (another
 *       capture appended to the directory); its rows are identical.
 *   profile_samples  time_ns,pid,tid,kind,weight_ns,spans,stack_id
 *       One row per sample. time_ns: wall clock, ns since the epoch (an
 *       off-CPU sample: when the thread went off the CPU). kind: on-cpu
 *       or off-cpu. weight_ns: the time the sample stands for (on-CPU:
 *       the sampling period; off-CPU: switch-out to switch-in). spans:
 *       the span states open on that thread, outermost first, joined by
 *       '|' (a state name is letters, digits and '_'), empty outside any
 *       span. stack_id: a row of profile_stacks, always written before
 *       the first sample that uses it.
 *   profile_lost     time_ns,reason,count
 *       What was lost while sampling, as increments: a reader sums count
 *       per reason. Reasons are the PROFILE_LOSSES names below; a reader
 *       shows a reason it does not know by its name.
 *   profile_processes  time_ns,pid,command
 *       Which program a process runs from time_ns on: a row when the
 *       sampler first sees the process (the time of the first record
 *       naming it), another at each exec it sees (the exec's time).
 *       command: its command line as the resource series' command column
 *       has it (arguments joined by single spaces), or "[NAME]" (its
 *       comm) when it has none, at most PROFILE_COMMAND_MAX bytes. A
 *       process that ended before the sampler looked has no row. Captures
 *       written before this file existed lack it: a reader names such a
 *       process by its pid alone.
 *
 * Frames are text: a resolved native function as its name ("main",
 * "std::vector<int>::push_back"); an unresolved one as
 * "MODULE+0xOFFSET" (the file's base name, the offset in the file); a
 * Python frame as "QUALNAME (FILE:LINE)" (FILE as the code object has
 * it); a kernel function as "NAME_[k]", the mark flame graph tools know.
 * A frame never holds ';' or a control character: the writer turns each
 * into '?'. */
#ifndef PMETRICS_PROFILE_CAPTURE_H
#define PMETRICS_PROFILE_CAPTURE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define PROFILE_STACKS_FILE "profile_stacks"
#define PROFILE_SAMPLES_FILE "profile_samples"
#define PROFILE_LOST_FILE "profile_lost"
#define PROFILE_PROCESSES_FILE "profile_processes"
/* The spans again, with the thread that ran each (the span files have
 * no thread column): time_ns,pid,tid,state,duration_ns. Written by
 * record beside a profile, for the timeline. */
#define PROFILE_SPANS_FILE "profile_spans"
#define PROFILE_COMMAND_MAX 1024

#define PROFILE_FRAME_SEP ';'
#define PROFILE_SPAN_SEP '|'
#define PROFILE_KERNEL_MARK "_[k]"
#define PROFILE_STACK_ID_DIGITS 16
/* The frame written for a sample whose stack could not be read at all. */
#define PROFILE_NO_STACK "[unknown]"
/* The root frame of a stack cut at its root end (counted as
 * stack_truncated): deeper than the Python walk goes, or too long for a
 * row. */
#define PROFILE_TRUNCATED_FRAME "[truncated]"

enum profile_kind {
	PROFILE_ON_CPU,
	PROFILE_OFF_CPU,
	PROFILE_KINDS,
};

/* "on-cpu", "off-cpu". */
const char *profile_kind_name(enum profile_kind kind);
/* Parses S[0..len); -1 when it is neither. */
int profile_kind_parse(const char *s, size_t len, enum profile_kind *out);

/* What the sampler can lose, one name per reason (the profile_lost
 * file's reason column) and the words a summary shows. */
#define PROFILE_LOSSES(X)                                                              \
	X(RINGBUF_FULL, "ringbuf_full", "samples lost: the BPF ring buffer was full")   \
	X(PERF_LOST, "perf_lost", "samples lost: the perf_event ring was full")         \
	X(STACK_UNREADABLE, "stack_unreadable", "samples whose stack could not be read") \
	X(STACK_TRUNCATED, "stack_truncated", "stacks cut at their root end: deeper than the walk goes, or too long for a row") \
	X(NOT_INTERNED, "not_interned", "samples dropped: their stack could not be stored") \
	X(ROWS_NOT_WRITTEN, "rows_not_written", "sample rows not written (disk full or file size limit)") \
	X(OFF_CPU_END_UNSEEN, "off_cpu_end_unseen", "off-CPU samples dropped: their thread's return to the CPU was not seen") \
	X(OFF_CPU_UNTRACKED, "off_cpu_untracked", "off-CPU samples not taken: more threads off the CPU at once than pmetrics tracks")

#define PROFILE_LOSS_ENUM(id, name, text) PROFILE_LOSS_##id,
enum profile_loss {
	PROFILE_LOSSES(PROFILE_LOSS_ENUM)
	PROFILE_LOSS_MAX,
};
#undef PROFILE_LOSS_ENUM

const char *profile_loss_name(enum profile_loss loss);
/* The words for a reason's name, or NULL when it is not one of ours. */
const char *profile_loss_text(const char *name);

/* The stack id of a frames field (FNV-1a 64 of its bytes). */
uint64_t profile_stack_id(const char *frames, size_t len);
/* Writes ID as its 16 hex digits (buf: at least 17 bytes). */
void profile_stack_id_format(uint64_t id, char *buf);
/* Parses exactly 16 hex digits; -1 otherwise. */
int profile_stack_id_parse(const char *s, size_t len, uint64_t *id);

/* S[0..len) as a whole field of decimal digits (no sign, no blank) that
 * is at most MAX; -1 otherwise. Times and counts take INT64_MAX, which
 * pprof stores signed (292 years of ns). */
int profile_decimal_parse(const char *s, size_t len, uint64_t max, uint64_t *out);

/* How many of the first LEN bytes of S to keep to cut it at MAX bytes
 * or fewer without splitting a UTF-8 character. */
size_t profile_utf8_cut(const char *s, size_t len, size_t max);

/* Whether S[0..len) is a span state name: letters, digits and '_'. */
bool profile_state_name_ok(const char *s, size_t len);

/* Frame text in the capture's forms (the sampler's symboliser formats
 * through these, so the forms exist once). Each returns the length
 * written, cut to SIZE - 1. */
size_t profile_frame_native(char *buf, size_t size, const char *function);
size_t profile_frame_unresolved(char *buf, size_t size, const char *module, uint64_t offset);
size_t profile_frame_python(char *buf, size_t size, const char *qualname, const char *file,
			    unsigned line);
size_t profile_frame_kernel(char *buf, size_t size, const char *function);

/* A frame read back: which form, and its parts (pointers into a copy
 * the caller passes in BUF). */
enum profile_frame_form {
	FRAME_NATIVE,     /* a function name */
	FRAME_UNRESOLVED, /* module+0xoffset */
	FRAME_PYTHON,     /* qualname (file:line) */
	FRAME_KERNEL,     /* name_[k] */
};

struct profile_frame_parts {
	enum profile_frame_form form;
	const char *name;   /* function or qualname; the whole text when unresolved */
	const char *file;   /* Python: the file; else "" */
	unsigned long line; /* Python only */
};

/* Splits FRAME into BUF (at least strlen(FRAME) + 1 bytes). */
void profile_frame_parse(const char *frame, char *buf, struct profile_frame_parts *out);

#endif
