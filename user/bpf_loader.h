/* SPDX-License-Identifier: MIT */
/* The one life cycle of every BPF object pmetrics loads (the span
 * tracers, the resource sampler): open with the session's options ->
 * set read-only data, map sizes, autoload -> load -> attach, keeping the
 * links -> destroy. libbpf's log policy and the open options (a custom
 * BTF file, the verifier log level) are decided once, at start. */
#ifndef PMETRICS_BPF_LOADER_H
#define PMETRICS_BPF_LOADER_H

#include <bpf/libbpf.h>
#include <stdbool.h>

struct bpf_loader_settings {
	const char *btf_path; /* --btf: kernel BTF for a kernel without its own */
	bool verbose;         /* -v: libbpf's own log on stderr */
};

/* Once, before any object is opened. Returns 0, or -1 after printing a
 * one-line error (a --btf file that is not BTF). */
int bpf_loader_init(const struct bpf_loader_settings *s);

/* Is the BTF file PATH usable for the kernel RELEASE on MACHINE (uname's
 * strings), whose own BTF is OWN (NULL when it has none)? It must be a
 * kernel's BTF, of this architecture, of this release when it tells
 * (an ELF vmlinux carries its banner), and lay out struct task_struct as
 * OWN does. Returns 0, or -1 with a one-line reason naming PATH. */
struct btf;
int btf_file_check(const char *path, const char *release, const char *machine,
		   const struct btf *own, char *err, size_t errlen);

/* The kernel release an ELF vmlinux at PATH names in its banner ("Linux
 * version 6.1.0-13-arm64 (...)"), into OUT (at most LEN - 1 bytes): what
 * follows the banner's tag up to a blank or a NUL. "" when PATH is not
 * ELF (raw BTF carries no version) or holds no such banner. */
void vmlinux_banner_release(const char *path, char *out, size_t len);

/* Where CO-RE can learn the kernel's struct layout: its own BTF
 * (/sys/kernel/btf/vmlinux), a --btf file, or nowhere. Objects reading
 * kernel structs need one of the first two; BTF tracepoints and
 * iterators need the kernel's own. PMETRICS_TEST_NO_BTF=1 in the
 * environment makes pmetrics act as on a kernel without BTF (tests). */
enum kernel_btf { KERNEL_BTF_NONE, KERNEL_BTF_FILE, KERNEL_BTF_OWN };
enum kernel_btf bpf_loader_btf(void);

/* The options every skeleton is opened with:
 *   skel = span_bpf__open_opts(bpf_loader_open_opts());
 * then bpf_loader_opened() reports a failure. */
const struct bpf_object_open_opts *bpf_loader_open_opts(void);
/* SKEL itself, or NULL after a one-line error naming WHAT. */
void *bpf_loader_opened(void *skel, const char *what);

/* Before load: the read-only global NAME of OBJ (SIZE bytes, checked),
 * to be filled in; NULL after a one-line error when it is not there. */
void *bpf_loader_rodata(struct bpf_object *obj, const char *name, size_t size);
/* OBJ's program NAME (a name compiled into it). */
struct bpf_program *bpf_loader_program(struct bpf_object *obj, const char *name);

/* Sizes MAP before load; one-line error naming WHAT on failure. */
int bpf_loader_set_max_entries(struct bpf_map *map, __u32 entries, const char *what);
/* Loads OBJ. Returns 0, or -errno after a one-line error naming WHAT. */
int bpf_loader_load(struct bpf_object *obj, const char *what);

/* Where a uprobe fires: at the function's entry, at its return, or both
 * as one session (Linux 6.13), whose return side runs only for the calls
 * whose entry returned 0. */
enum uprobe_kind { UPROBE_ENTRY, UPROBE_RETURN, UPROBE_SESSION };
/* "uprobe", "uretprobe", "uprobe session" (an "s" makes each plural). */
const char *uprobe_kind_name(enum uprobe_kind kind);

/* Uprobes of one program waiting to be attached as one multi-uprobe link. */
struct uprobe_group {
	struct bpf_program *prog;
	enum uprobe_kind kind;
	int n;
	__u64 offsets[8];
};

/* The links of one object, destroyed together (newest first); multi-uprobe
 * links are raw fds (libbpf 1.1 has no API for them). */
struct bpf_links {
	struct bpf_link **links;
	int n, cap;
	int fds[8];
	int n_fds;
	struct uprobe_group groups[8];
	int n_groups;
};

/* Keeps LINK, the result of a bpf_program__attach*() call: 0, or -errno
 * after a one-line error saying what could not be attached (WHAT). */
int bpf_links_add(struct bpf_links *l, struct bpf_link *link, const char *what);
/* Attaches PROG where its SEC() says (tracepoints, iterators). */
int bpf_links_attach(struct bpf_links *l, struct bpf_program *prog, const char *what);
void bpf_links_destroy(struct bpf_links *l);
/* Loads a BPF program of TYPE (and expected ATTACH_TYPE, 0 for none)
 * that returns 0 and does nothing else, named NAME (NULL: none): what
 * pmetrics asks the kernel with when it tests what it allows. Its fd, or
 * -errno. */
int bpf_loader_empty_program(enum bpf_prog_type type, int attach_type, const char *name);
/* Perf events and links hold a descriptor each, per CPU or per thread of
 * a target with many: the soft limit raised to the hard one. */
void bpf_loader_raise_fd_limit(void);
/* Puts back the soft limit pmetrics started with: for a command it
 * starts, between fork and exec, so the command runs as it would
 * without pmetrics. */
void bpf_loader_restore_fd_limit(void);
/* For an error message, what to do about running out of descriptors:
 * for -EMFILE how to raise the open-files limit, for -ENFILE the
 * system's file table (" (...)"); "" for any other ERR. */
const char *bpf_loader_fd_hint(int err);
/* The kernel memory the BPF maps this process holds lock (their
 * "memlock" in /proc/self/fdinfo, each map once however many fds name
 * it), in bytes: what a capture costs the machine's RAM beyond its own
 * pages. 0 when /proc does not say. */
uint64_t bpf_loader_maps_memory(void);

/* Multi-uprobe links (Linux 6.6): every offset of one program in one
 * link, taken down with one wait for the kernel's grace periods where
 * single uprobes wait once each (about 0.1 s apiece here). Whether this
 * kernel has them is probed by kernel_check and set here; an object whose
 * uprobes are attached by bpf_links_uprobe() is prepared for it before
 * load. */
void bpf_loader_set_uprobe_multi(bool on);
bool bpf_loader_uprobe_multi(void);
void bpf_loader_prepare_uprobes(struct bpf_object *obj);
/* Uprobe sessions (multi-uprobe links of a newer kind): an untimed call
 * traps once instead of twice. Probed by kernel_check like the links;
 * a session program is marked before load. */
void bpf_loader_set_uprobe_session(bool on);
bool bpf_loader_uprobe_session(void);
void bpf_loader_prepare_session(struct bpf_program *prog);
/* BPF_LINK_CREATE of a multi-uprobe link of KIND for process PID (0:
 * every process): an fd, or -errno. */
int bpf_uprobe_multi_link(int prog_fd, const char *path, const __u64 *offsets, int n,
			  enum uprobe_kind kind, __u32 pid);
/* A uprobe of KIND (UPROBE_SESSION only where sessions are on) of PROG
 * at OFFSET in PATH, for PID (-1: every process): attached now, or with
 * multi-uprobe links queued until bpf_links_commit(), which attaches
 * each program's queue as one link. 0, or -errno after a one-line error
 * naming WHAT. */
int bpf_links_uprobe(struct bpf_links *l, struct bpf_program *prog, enum uprobe_kind kind,
		     const char *path, __u64 offset, int pid, const char *what);
int bpf_links_commit(struct bpf_links *l, const char *path, int pid, const char *what);

#endif
