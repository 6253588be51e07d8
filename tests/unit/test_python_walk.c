// SPDX-License-Identifier: MIT
/* The frame walk both samplers share (include/python_walk.h), run on a
 * made-up memory laid out as a 3.11+ interpreter lays out its frames: a
 * chain of frames, a shim frame of the C stack among them, code objects
 * the frames point to. What is checked: every frame's code, instruction,
 * name, file and first line; that a code object is read once per walk
 * however often it recurs; that two code objects sharing a memo slot
 * are each named right; that an unreadable code object is not
 * remembered; that a thread's cached thread state is checked and its
 * innermost frame found with one read of it, and given up once it names
 * another thread; that a stack is cut only past PY_MAX_FRAMES frames
 * with code. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

/* The target's memory: BYTES at BASE; reads of code objects counted. */
struct fake_memory {
	uint8_t bytes[0x8000];
	uint64_t base;
	uint64_t unreadable; /* an address whose reads fail, 0: none */
	int code_reads;      /* reads of code objects tried */
	int tstate_reads;    /* reads of the thread state tried */
};

#define BASE 0x10000ull
/* code objects in memo slots of their own ... */
#define CODE_AT(i) (BASE + 0x1000 + 0x110 * (uint64_t)(i))
/* ... but this one, in CODE_AT(0)'s: bits 4-6 and 9-11 alike */
#define CODE_SAME_SLOT (CODE_AT(0) + 0x1000)
#define FRAME_AT(i) (BASE + 0x40 * (uint64_t)(i))
/* a thread state, and the C frame its ->cframe points to */
#define TSTATE_AT (BASE + 0x3000)
#define CFRAME_AT (BASE + 0x3800)
/* frames of a deep stack, 32 bytes each */
#define DEEP_FRAME_AT(i) (BASE + 0x4000 + 0x20 * (uint64_t)(i))

static int fake_read(struct fake_memory *m, void *dst, size_t size, uint64_t addr)
{
	if (addr >= TSTATE_AT && addr < CFRAME_AT)
		m->tstate_reads++;
	else if (addr >= CODE_AT(0) && addr < TSTATE_AT)
		m->code_reads++;
	if (addr < m->base || addr + size > m->base + sizeof(m->bytes) || addr == m->unreadable)
		return -1;
	memcpy(dst, m->bytes + (addr - m->base), size);
	return 0;
}

#define PY_CTX struct fake_memory *
#define PY_INLINE static inline
#define PY_READ(m, dst, size, addr) fake_read((m), (dst), (size), (addr))
#include "python_walk.h"

/* Frame fields at 0 (code), 8 (previous), 16 (instruction), 24 (owner);
 * code fields at 0x40 (first line), 0x50 (file), 0x58 (name), its
 * instructions at 0x80. */
static const struct py_layout layout = {
	.model = PY_MODEL_CFRAME,
	.frame_code = 0, .frame_back = 8, .frame_instr = 16, .frame_owner = 24,
	.owner_cstack = 3, .frame_gen = PY_NO_FIELD, .gen_qualname = PY_NO_FIELD,
	.frame_read = 32,
	.code_firstlineno = 0x40, .code_filename = 0x50, .code_name = 0x58, .code_read = 0x20,
	.code_adaptive = 0x80,
};

static void put64(struct fake_memory *m, uint64_t addr, uint64_t v)
{
	memcpy(m->bytes + (addr - m->base), &v, sizeof(v));
}

/* A code object whose file and name are the made-up str addresses
 * 0xF00+ID and 0xA00+ID, first line 10*ID. */
static void code(struct fake_memory *m, uint64_t at, int id)
{
	int32_t line = 10 * id;

	memcpy(m->bytes + (at + 0x40 - m->base), &line, sizeof(line));
	put64(m, at + 0x50, 0xF00 + (uint64_t)id);
	put64(m, at + 0x58, 0xA00 + (uint64_t)id);
}

/* Frame I runs CODE at instruction unit UNIT, called from frame BACK
 * (0: the outermost); a shim frame when CODE is 0. */
static void frame(struct fake_memory *m, int i, uint64_t code_at, int unit, int back)
{
	uint64_t at = FRAME_AT(i);

	put64(m, at, code_at);
	put64(m, at + 8, back ? FRAME_AT(back) : 0);
	put64(m, at + 16, code_at ? code_at + 0x80 + 2 * (uint64_t)unit : 0);
	m->bytes[at + 24 - m->base] = code_at ? 0 : 3;
}

struct walk_result {
	struct py_frame_ref out[PY_MAX_FRAMES];
	struct py_code_memo memo[PY_CODE_MEMO];
	uint32_t n, status;
};

/* The walk from the frame at INNERMOST, as both samplers run it. */
static void walk_at(struct fake_memory *m, uint64_t innermost, struct walk_result *r)
{
	struct py_walk w = { .L = &layout, .frame = innermost, .out = r->out,
			     .memo = r->memo, .status = PY_WALK_OK };
	uint8_t buf[PY_SCRATCH_BYTES];

	memset(r->memo, 0, sizeof(r->memo));
	w.buf = buf;
	for (int i = 0; i < PY_MAX_VISITED && !py_walk_step(m, &w); i++)
		;
	if (w.frame && w.status == PY_WALK_OK)
		w.status = PY_WALK_TRUNCATED;
	r->n = w.n;
	r->status = w.status;
}

static void walk_from(struct fake_memory *m, int innermost, struct walk_result *r)
{
	walk_at(m, FRAME_AT(innermost), r);
}

static void expect_frame(const struct py_frame_ref *f, uint64_t code_at, int id, int unit)
{
	assert_int_equal(f->code, code_at);
	assert_int_equal(f->filename, 0xF00 + id);
	assert_int_equal(f->name, 0xA00 + id);
	assert_int_equal(f->firstlineno, 10 * id);
	assert_int_equal(f->instr, 2 * unit);
}

static struct fake_memory *memory(void)
{
	static struct fake_memory m;

	memset(&m, 0, sizeof(m));
	m.base = BASE;
	return &m;
}

/* outer (1) -> shim -> start (2) -> rec (3) x4 -> leaf (4, in the
 * memo slot of outer's code) */
static void build_stack(struct fake_memory *m)
{
	code(m, CODE_AT(0), 1);
	code(m, CODE_AT(1), 2);
	code(m, CODE_AT(2), 3);
	code(m, CODE_SAME_SLOT, 4);
	frame(m, 1, CODE_AT(0), 5, 0);
	frame(m, 2, 0, 0, 1);
	frame(m, 3, CODE_AT(1), 6, 2);
	for (int i = 4; i < 8; i++)
		frame(m, i, CODE_AT(2), i, i - 1);
	frame(m, 8, CODE_SAME_SLOT, 9, 7);
}

static void recursion_reads_a_code_object_once(void **state)
{
	struct fake_memory *m = memory();
	struct walk_result r;

	(void)state;
	build_stack(m);
	walk_from(m, 8, &r);
	assert_int_equal(r.status, PY_WALK_OK);
	assert_int_equal(r.n, 7); /* the shim frame is walked, not kept */
	expect_frame(&r.out[0], CODE_SAME_SLOT, 4, 9);
	for (int i = 1; i <= 4; i++)
		expect_frame(&r.out[i], CODE_AT(2), 3, 8 - i);
	expect_frame(&r.out[5], CODE_AT(1), 2, 6);
	expect_frame(&r.out[6], CODE_AT(0), 1, 5);
	/* four code objects, one read each: the recursion's three repeats
	 * came from the memo */
	assert_int_equal(m->code_reads, 4);
}

/* A shim frame at the root (3.12+), then N frames with code, the
 * innermost at DEEP_FRAME_AT(N). */
static void deep_stack(struct fake_memory *m, int n)
{
	code(m, CODE_AT(1), 2);
	put64(m, DEEP_FRAME_AT(0), 0);
	m->bytes[DEEP_FRAME_AT(0) + 24 - m->base] = 3;
	for (int i = 1; i <= n; i++) {
		put64(m, DEEP_FRAME_AT(i), CODE_AT(1));
		put64(m, DEEP_FRAME_AT(i) + 8, DEEP_FRAME_AT(i - 1));
		put64(m, DEEP_FRAME_AT(i) + 16, CODE_AT(1) + 0x80);
	}
}

/* PY_MAX_FRAMES frames with code under the root's shim frame are the
 * whole stack; one more is cut. */
static void a_stack_is_cut_only_past_the_last_slot(void **state)
{
	struct fake_memory *m = memory();
	struct walk_result r;

	(void)state;
	deep_stack(m, PY_MAX_FRAMES);
	walk_at(m, DEEP_FRAME_AT(PY_MAX_FRAMES), &r);
	assert_int_equal(r.status, PY_WALK_OK);
	assert_int_equal(r.n, PY_MAX_FRAMES);
	deep_stack(m, PY_MAX_FRAMES + 1);
	walk_at(m, DEEP_FRAME_AT(PY_MAX_FRAMES + 1), &r);
	assert_int_equal(r.status, PY_WALK_TRUNCATED);
	assert_int_equal(r.n, PY_MAX_FRAMES);
}

static void code_objects_sharing_a_slot_are_each_named(void **state)
{
	struct fake_memory *m = memory();
	struct walk_result r;

	(void)state;
	build_stack(m);
	/* leaf (4) called from outer (1) called from leaf again: the slot
	 * holds one, then the other, then the first */
	frame(m, 9, CODE_AT(0), 7, 8);
	frame(m, 10, CODE_SAME_SLOT, 3, 9);
	walk_from(m, 10, &r);
	assert_int_equal(r.n, 9);
	expect_frame(&r.out[0], CODE_SAME_SLOT, 4, 3);
	expect_frame(&r.out[1], CODE_AT(0), 1, 7);
	expect_frame(&r.out[2], CODE_SAME_SLOT, 4, 9);
	expect_frame(&r.out[8], CODE_AT(0), 1, 5);
}

static void an_unreadable_code_object_is_not_remembered(void **state)
{
	struct fake_memory *m = memory();
	struct walk_result r;

	(void)state;
	build_stack(m);
	m->unreadable = CODE_AT(2) + layout.code_firstlineno;
	walk_from(m, 8, &r);
	assert_int_equal(r.status, PY_WALK_OK);
	assert_int_equal(r.n, 7);
	for (int i = 1; i <= 4; i++) {
		assert_int_equal(r.out[i].code, CODE_AT(2));
		assert_int_equal(r.out[i].firstlineno, -1);
		assert_int_equal(r.out[i].filename, 0);
		assert_int_equal(r.out[i].name, 0);
	}
	expect_frame(&r.out[5], CODE_AT(1), 2, 6);
	/* the three others once, the failed one at each of its four frames */
	assert_int_equal(m->code_reads, 3 + 4);
}

/* A 3.12-like thread state of thread TID: ->cframe at 56, native
 * thread id at 160; its C frame's current_frame at 8 is frame 8. */
static const struct py_layout thread_layout = {
	.model = PY_MODEL_CFRAME, .tstate_frame = 56, .cframe_current = 8,
	.tstate_native_tid = 160, .tstate_thread_id = 152,
};

static void thread_state(struct fake_memory *m, uint64_t tid)
{
	put64(m, TSTATE_AT + 56, CFRAME_AT);
	put64(m, TSTATE_AT + 160, tid);
	put64(m, CFRAME_AT + 8, FRAME_AT(8));
}

/* Thread 4242's state, as a search finds it: cached with its key. */
struct found_thread {
	struct fake_memory *m;
	struct py_thread_cache c;
	uint8_t buf[PY_SCRATCH_BYTES];
	__u64 frame;
};

static int thread_found(void **state)
{
	static struct found_thread t;

	memset(&t, 0, sizeof(t));
	t.m = memory();
	thread_state(t.m, 4242);
	assert_int_equal(py_cache_found(t.m, &thread_layout, &t.c, TSTATE_AT, t.buf, &t.frame), 0);
	assert_int_equal(t.c.tstate, TSTATE_AT);
	assert_int_equal(t.c.key, 4242);
	assert_int_equal(t.frame, FRAME_AT(8));
	t.frame = 0;
	*state = &t;
	return 0;
}

static void a_cached_thread_state_costs_one_read(void **state)
{
	struct found_thread *t = *state;

	t->m->tstate_reads = 0;
	assert_int_equal(py_cached_frame(t->m, &thread_layout, &t->c, t->buf, &t->frame), 0);
	assert_int_equal(t->frame, FRAME_AT(8));
	assert_int_equal(t->m->tstate_reads, 1);
}

static void a_thread_state_naming_another_thread_is_given_up(void **state)
{
	struct found_thread *t = *state;

	put64(t->m, TSTATE_AT + 160, 4243);
	assert_int_not_equal(py_cached_frame(t->m, &thread_layout, &t->c, t->buf, &t->frame), 0);
	assert_int_equal(t->c.tstate, 0);
	/* an empty cache holds nothing; a search that found none neither */
	assert_int_not_equal(py_cached_frame(t->m, &thread_layout, &t->c, t->buf, &t->frame), 0);
	assert_int_not_equal(py_cache_found(t->m, &thread_layout, &t->c, 0, t->buf, &t->frame), 0);
}

static void fields_far_apart_are_read_one_by_one(void **state)
{
	struct fake_memory *m = memory();
	struct py_layout far = thread_layout;
	struct py_thread_cache c = { 0 };
	uint8_t buf[PY_SCRATCH_BYTES];
	__u64 frame = 0;

	(void)state;
	far.tstate_native_tid = 56 + PY_SCRATCH_BYTES;
	thread_state(m, 0);
	put64(m, TSTATE_AT + far.tstate_native_tid, 4242);
	assert_int_equal(py_cache_found(m, &far, &c, TSTATE_AT, buf, &frame), 0);
	assert_int_equal(c.key, 4242);
	assert_int_equal(frame, FRAME_AT(8));
	assert_int_equal(m->tstate_reads, 2);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(recursion_reads_a_code_object_once),
		cmocka_unit_test(code_objects_sharing_a_slot_are_each_named),
		cmocka_unit_test(an_unreadable_code_object_is_not_remembered),
		cmocka_unit_test_setup(a_cached_thread_state_costs_one_read, thread_found),
		cmocka_unit_test_setup(a_thread_state_naming_another_thread_is_given_up, thread_found),
		cmocka_unit_test(fields_far_apart_are_read_one_by_one),
		cmocka_unit_test(a_stack_is_cut_only_past_the_last_slot),
	};

	return cmocka_run_group_tests(tests, 0, NULL);
}
