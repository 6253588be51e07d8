// SPDX-License-Identifier: MIT
/* The BPF object life cycle; see bpf_loader.h. */
#include "bpf_loader.h"
#include "test_setting.h"

#include <bpf/bpf.h>
#include <bpf/btf.h>
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/utsname.h>
#include <unistd.h>

static struct bpf_object_open_opts open_opts = { .sz = sizeof(struct bpf_object_open_opts) };
static enum kernel_btf kernel_btf = KERNEL_BTF_NONE;

static int libbpf_log(enum libbpf_print_level level, const char *fmt, va_list ap)
{
	(void)level;
	return vfprintf(stderr, fmt, ap);
}

/* The size of struct NAME in BTF, or -1 when it has none. */
static long struct_size(const struct btf *btf, const char *name)
{
	int id = btf__find_by_name_kind(btf, name, BTF_KIND_STRUCT);

	return id > 0 ? (long)btf__type_by_id(btf, (__u32)id)->size : -1;
}

/* The machine a kernel's BTF is of, from the register structs each
 * architecture's kernel has: "x86_64", "aarch64", or NULL. */
static const char *btf_machine(const struct btf *btf)
{
	if (struct_size(btf, "user_pt_regs") > 0)
		return "aarch64";
	if (struct_size(btf, "pt_regs") > 0 && struct_size(btf, "fregs_state") > 0)
		return "x86_64";
	return NULL;
}

#define BANNER_WINDOW (1 << 16) /* bytes read at a time */

void vmlinux_banner_release(const char *path, char *out, size_t len)
{
	static const char tag[] = "Linux version ";
	const size_t tag_len = sizeof(tag) - 1;
	static char buf[BANNER_WINDOW + 1];
	size_t keep = 0;
	bool eof = false;
	FILE *f = fopen(path, "rb");

	out[0] = '\0';
	if (!f || fread(buf, 1, 4, f) != 4 || memcmp(buf, "\177ELF", 4) != 0) {
		if (f)
			fclose(f);
		return;
	}
	/* Each window starts with the KEEP bytes the last one could not
	 * decide on (a tag or a release cut at its end), and is
	 * NUL-terminated after its valid bytes. */
	while (!out[0] && !eof) {
		size_t n = fread(buf + keep, 1, BANNER_WINDOW - keep, f), valid = keep + n, next;

		eof = n < BANNER_WINDOW - keep;
		buf[valid] = '\0';
		/* no match: only a tag's first bytes can continue in the next window */
		next = valid > tag_len - 1 ? valid - (tag_len - 1) : 0;
		for (char *at = buf; (at = memmem(at, (size_t)(buf + valid - at), tag, tag_len)); at++) {
			const char *release = at + tag_len;
			size_t r = 0;

			while (release + r < buf + valid && r < len && release[r] != '\0' &&
			       !isspace((unsigned char)release[r]))
				r++;
			if (r == len)
				continue; /* longer than a release: not the banner */
			if (release + r == buf + valid) {
				if (!eof)
					next = (size_t)(at - buf); /* cut: decided in the next window */
				break;
			}
			if (r > 0) {
				memcpy(out, release, r);
				out[r] = '\0';
				break;
			}
		}
		keep = valid - next;
		memmove(buf, buf + next, keep);
	}
	fclose(f);
}

int btf_file_check(const char *path, const char *release, const char *machine,
		   const struct btf *own, char *err, size_t errlen)
{
	struct btf *btf;
	const char *arch;
	char banner[64];
	long size, own_size;

	struct stat st;

	if (access(path, R_OK) != 0 || stat(path, &st) != 0) {
		snprintf(err, errlen, "cannot read --btf %s: %s", path, strerror(errno));
		return -1;
	}
	if (!S_ISREG(st.st_mode)) {
		snprintf(err, errlen, "cannot use --btf %s: it is %s, not a file; give this kernel's "
			 "BTF file", path, S_ISDIR(st.st_mode) ? "a directory" : "no regular file");
		return -1;
	}
	btf = btf__parse(path, NULL);
	if (libbpf_get_error(btf)) {
		snprintf(err, errlen, "cannot use --btf %s: it is not BTF (raw, or an ELF file with "
			 "a .BTF section); give this kernel's BTF, e.g. made by "
			 "pahole --btf_encode_detached=FILE from its vmlinux", path);
		return -1;
	}
	/* a BPF object's or a module's BTF may describe task_struct too, but
	 * only a kernel's has its functions */
	size = btf__find_by_name_kind(btf, "do_exit", BTF_KIND_FUNC) > 0 ?
		       struct_size(btf, "task_struct") : -1;
	arch = btf_machine(btf);
	own_size = own ? struct_size(own, "task_struct") : -1;
	vmlinux_banner_release(path, banner, sizeof(banner));
	btf__free(btf);
	if (size < 0)
		snprintf(err, errlen, "cannot use --btf %s: it is not a kernel's BTF (no do_exit or "
			 "no struct task_struct: a module's or a BPF program's?)", path);
	else if (arch && strcmp(arch, machine) != 0)
		snprintf(err, errlen, "cannot use --btf %s: it is the BTF of an %s kernel, and this "
			 "one is %s", path, arch, machine);
	else if (banner[0] && strcmp(banner, release) != 0)
		snprintf(err, errlen, "cannot use --btf %s: it is from Linux %s, and this kernel is %s",
			 path, banner, release);
	else if (own_size > 0 && own_size != size)
		snprintf(err, errlen, "cannot use --btf %s: it is from another kernel (struct "
			 "task_struct has %ld bytes in it, %ld in this kernel's own BTF)", path, size,
			 own_size);
	else
		return 0;
	return -1;
}

/* A --btf file is checked before it is handed to libbpf, which would
 * only say "Unknown error 4001" about a file that is not BTF, and would
 * read wrong offsets from another kernel's. */
static int check_btf_file(const char *path)
{
	struct btf *own = btf__load_vmlinux_btf();
	struct utsname u;
	char err[1024];
	int ret;

	if (libbpf_get_error(own))
		own = NULL;
	uname(&u);
	ret = btf_file_check(path, u.release, u.machine, own, err, sizeof(err));
	btf__free(own);
	if (ret)
		fprintf(stderr, "pmetrics: %s\n", err);
	return ret;
}

const char *bpf_loader_fd_hint(int err)
{
	if (err == -ENFILE)
		return " (the whole system's file table is full: sysctl fs.file-max)";
	return err == -EMFILE ? " (raise the open-files limit: ulimit -Hn, or LimitNOFILE= "
				"for a systemd service)" : "";
}

/* The fewest descriptors pmetrics starts with: the kernel check alone
 * holds a probe object's maps, program and link at once, and a probe
 * refused for want of descriptors would read as a feature the kernel
 * lacks. A capture needs more (one per map, program, link and perf
 * event: about 100 with everything on); running out later is named
 * where it happens. */
#define FD_FLOOR 32

int bpf_loader_init(const struct bpf_loader_settings *s)
{
	struct rlimit rl;

	bpf_loader_raise_fd_limit();
	if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < FD_FLOOR) {
		fprintf(stderr, "pmetrics: the open-files limit is %llu, below the %d descriptors "
			"pmetrics needs to start%s\n", (unsigned long long)rl.rlim_cur, FD_FLOOR,
			bpf_loader_fd_hint(-EMFILE));
		return -1;
	}
	libbpf_set_print(s->verbose ? libbpf_log : NULL);
	open_opts.btf_custom_path = s->btf_path;
	if (s->btf_path && check_btf_file(s->btf_path))
		return -1;
	if (!test_setting_on("PMETRICS_TEST_NO_BTF") && access("/sys/kernel/btf/vmlinux", R_OK) == 0)
		kernel_btf = KERNEL_BTF_OWN;
	else
		kernel_btf = s->btf_path ? KERNEL_BTF_FILE : KERNEL_BTF_NONE;
	return 0;
}

enum kernel_btf bpf_loader_btf(void)
{
	return kernel_btf;
}

/* The section map holding OBJ's read-only globals. */
static struct bpf_map *rodata_map(struct bpf_object *obj)
{
	struct bpf_map *map;
	const char *name;
	size_t n;

	bpf_object__for_each_map(map, obj) {
		name = bpf_map__name(map);
		n = strlen(name);
		if (bpf_map__is_internal(map) && n >= 7 && strcmp(name + n - 7, ".rodata") == 0)
			return map;
	}
	return NULL;
}

void *bpf_loader_rodata(struct bpf_object *obj, const char *name, size_t size)
{
	struct btf *btf = bpf_object__btf(obj);
	struct bpf_map *map = rodata_map(obj);
	const struct btf_var_secinfo *var;
	const struct btf_type *sec;
	size_t data_size;
	char *data;
	int id;

	id = btf ? btf__find_by_name_kind(btf, ".rodata", BTF_KIND_DATASEC) : -1;
	/* libbpf hands out the initial values as const, but before load they
	 * are the writable image skeletons fill their rodata through */
	data = map ? (char *)bpf_map__initial_value(map, &data_size) : NULL;
	sec = id > 0 ? btf__type_by_id(btf, (__u32)id) : NULL;
	for (int i = 0; sec && data && i < btf_vlen(sec); i++) {
		var = btf_var_secinfos(sec) + i;
		if (strcmp(btf__name_by_offset(btf, btf__type_by_id(btf, var->type)->name_off), name))
			continue;
		if (var->size == size && var->offset + size <= data_size)
			return data + var->offset;
		break;
	}
	fprintf(stderr, "pmetrics: BPF object %s has no read-only %s of %zu bytes (a build "
		"mismatch)\n", bpf_object__name(obj), name, size);
	return NULL;
}

struct bpf_program *bpf_loader_program(struct bpf_object *obj, const char *name)
{
	return bpf_object__find_program_by_name(obj, name);
}

const struct bpf_object_open_opts *bpf_loader_open_opts(void)
{
	return &open_opts;
}

void *bpf_loader_opened(void *skel, const char *what)
{
	if (!skel)
		fprintf(stderr, "pmetrics: cannot open %s: %s\n", what, strerror(errno));
	return skel;
}

int bpf_loader_set_max_entries(struct bpf_map *map, __u32 entries, const char *what)
{
	int err = bpf_map__set_max_entries(map, entries);

	if (err)
		fprintf(stderr, "pmetrics: cannot size %s's map %s to %u entries: %s\n", what,
			bpf_map__name(map), entries, strerror(-err));
	return err;
}

/* What OBJ's maps ask of the kernel at load, roughly: a ring its size,
 * a preallocated table its entries (per CPU for a per-CPU one); a table
 * allocated as it fills, nothing yet. */
static uint64_t maps_at_load(const struct bpf_object *obj)
{
	long cpus = sysconf(_SC_NPROCESSORS_CONF);
	const struct bpf_map *m;
	uint64_t total = 0;

	bpf_object__for_each_map(m, obj) {
		enum bpf_map_type type = bpf_map__type(m);
		uint64_t n = bpf_map__max_entries(m);

		if (type == BPF_MAP_TYPE_RINGBUF) {
			total += n;
			continue;
		}
		if (bpf_map__map_flags(m) & BPF_F_NO_PREALLOC)
			continue;
		n *= bpf_map__key_size(m) + bpf_map__value_size(m);
		if (type == BPF_MAP_TYPE_PERCPU_ARRAY || type == BPF_MAP_TYPE_PERCPU_HASH ||
		    type == BPF_MAP_TYPE_LRU_PERCPU_HASH)
			n *= cpus > 0 ? (uint64_t)cpus : 1;
		total += n;
	}
	return total;
}

int bpf_loader_load(struct bpf_object *obj, const char *what)
{
	int err = bpf_object__load(obj);

	/* maps are charged to the loader's memory cgroup (5.11+): a
	 * service's MemoryMax= can be what refuses them */
	if (err == -ENOMEM)
		fprintf(stderr, "pmetrics: cannot load %s: the kernel refused about %.1f MiB for its "
			"BPF maps (%s): raise the memory limit of pmetrics' cgroup (systemd: "
			"MemoryMax=) or give a smaller --ringbuf-size\n", what,
			(double)maps_at_load(obj) / (1024.0 * 1024.0), strerror(-err));
	else if (err == -EMFILE || err == -ENFILE)
		fprintf(stderr, "pmetrics: cannot load %s: %s%s\n", what, strerror(-err),
			bpf_loader_fd_hint(err));
	else if (err)
		fprintf(stderr, "pmetrics: cannot load %s: %s (needs root, a kernel with BPF and "
			"BTF; run with -v for libbpf's log)\n", what, strerror(-err));
	return err;
}

int bpf_links_add(struct bpf_links *l, struct bpf_link *link, const char *what)
{
	struct bpf_link **grown;
	int err;

	if (!link) {
		err = -errno;
		fprintf(stderr, "pmetrics: cannot attach %s: %s%s\n", what, strerror(-err),
			bpf_loader_fd_hint(err));
		return err;
	}
	if (l->n == l->cap) {
		int cap = l->cap ? 2 * l->cap : 16;

		grown = realloc(l->links, (size_t)cap * sizeof(*grown));
		if (!grown) {
			bpf_link__destroy(link);
			fprintf(stderr, "pmetrics: cannot attach %s: out of memory\n", what);
			return -ENOMEM;
		}
		l->links = grown;
		l->cap = cap;
	}
	l->links[l->n++] = link;
	return 0;
}

int bpf_loader_empty_program(enum bpf_prog_type type, int attach_type, const char *name)
{
	const struct bpf_insn empty[] = {
		{ .code = BPF_ALU64 | BPF_MOV | BPF_K, .dst_reg = BPF_REG_0, .imm = 0 },
		{ .code = BPF_JMP | BPF_EXIT },
	};
	LIBBPF_OPTS(bpf_prog_load_opts, opts, .expected_attach_type = (enum bpf_attach_type)attach_type);

	return bpf_prog_load(type, name, "GPL", empty, 2, &opts);
}

/* Map FD's id and locked bytes, from its fdinfo; false when FD is not
 * a BPF map. */
static bool map_fdinfo(int dir, const char *fd, __u32 *id, uint64_t *memlock)
{
	char line[128];
	bool is_map = false;
	int info = openat(dir, fd, O_RDONLY | O_CLOEXEC);
	FILE *f = info >= 0 ? fdopen(info, "r") : NULL;

	if (!f) {
		if (info >= 0)
			close(info);
		return false;
	}
	*id = 0;
	*memlock = 0;
	while (fgets(line, sizeof(line), f)) {
		unsigned long long v;

		if (sscanf(line, "map_id: %llu", &v) == 1) {
			*id = (__u32)v;
			is_map = true;
		} else if (sscanf(line, "memlock: %llu", &v) == 1) {
			*memlock = v;
		}
	}
	fclose(f);
	return is_map;
}

uint64_t bpf_loader_maps_memory(void)
{
	DIR *fds = opendir("/proc/self/fdinfo");
	__u32 seen[256], id;
	size_t n_seen = 0;
	uint64_t total = 0, bytes;
	struct dirent *d;

	if (!fds)
		return 0;
	while ((d = readdir(fds))) {
		size_t i;

		if (d->d_name[0] == '.' || !map_fdinfo(dirfd(fds), d->d_name, &id, &bytes))
			continue;
		for (i = 0; i < n_seen && seen[i] != id; i++)
			;
		if (i < n_seen)
			continue; /* shared by two objects: one map */
		if (n_seen < sizeof(seen) / sizeof(seen[0]))
			seen[n_seen++] = id;
		total += bytes;
	}
	closedir(fds);
	return total;
}

/* The soft limit pmetrics was started with, for the commands it starts. */
static struct rlimit own_fd_limit;
static bool fd_limit_raised;

void bpf_loader_raise_fd_limit(void)
{
	struct rlimit rl;

	if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
		if (!fd_limit_raised)
			own_fd_limit = rl;
		fd_limit_raised = true;
		rl.rlim_cur = rl.rlim_max;
		setrlimit(RLIMIT_NOFILE, &rl);
	}
}

void bpf_loader_restore_fd_limit(void)
{
	if (fd_limit_raised)
		setrlimit(RLIMIT_NOFILE, &own_fd_limit);
}

int bpf_links_attach(struct bpf_links *l, struct bpf_program *prog, const char *what)
{
	return bpf_links_add(l, bpf_program__attach(prog), what);
}

void bpf_links_destroy(struct bpf_links *l)
{
	for (int i = l->n_fds - 1; i >= 0; i--)
		close(l->fds[i]);
	for (int i = l->n - 1; i >= 0; i--)
		bpf_link__destroy(l->links[i]);
	free(l->links);
	l->links = NULL;
	l->n = l->cap = l->n_fds = l->n_groups = 0;
}

/* ---- multi-uprobe links ------------------------------------------------------ */

/* The kernel's attach types (multi 6.6, session 6.13) and flag, newer
 * than the uapi headers and libbpf this builds with. */
#define PM_TRACE_UPROBE_MULTI 48
#define PM_TRACE_UPROBE_SESSION 57
#define PM_F_UPROBE_MULTI_RETURN 1u

/* BPF_LINK_CREATE's attributes for a multi-uprobe link, laid out as the
 * kernel's union bpf_attr lays them out. */
struct uprobe_multi_attr {
	__u32 prog_fd, target_fd, attach_type, flags;
	__u64 path, offsets, ref_ctr_offsets, cookies;
	__u32 cnt, multi_flags, pid;
};

static bool use_uprobe_multi, use_uprobe_session;

const char *uprobe_kind_name(enum uprobe_kind kind)
{
	return kind == UPROBE_RETURN ? "uretprobe" : kind == UPROBE_SESSION ? "uprobe session"
									    : "uprobe";
}

void bpf_loader_set_uprobe_multi(bool on)
{
	use_uprobe_multi = on;
}

bool bpf_loader_uprobe_multi(void)
{
	return use_uprobe_multi;
}

void bpf_loader_prepare_uprobes(struct bpf_object *obj)
{
	struct bpf_program *prog;

	if (!use_uprobe_multi)
		return;
	bpf_object__for_each_program(prog, obj)
		if (bpf_program__type(prog) == BPF_PROG_TYPE_KPROBE)
			bpf_program__set_expected_attach_type(
				prog, (enum bpf_attach_type)PM_TRACE_UPROBE_MULTI);
}

void bpf_loader_set_uprobe_session(bool on)
{
	use_uprobe_session = on;
}

bool bpf_loader_uprobe_session(void)
{
	return use_uprobe_multi && use_uprobe_session;
}

void bpf_loader_prepare_session(struct bpf_program *prog)
{
	bpf_program__set_expected_attach_type(prog, (enum bpf_attach_type)PM_TRACE_UPROBE_SESSION);
}

int bpf_uprobe_multi_link(int prog_fd, const char *path, const __u64 *offsets, int n,
			  enum uprobe_kind kind, __u32 pid)
{
	union bpf_attr attr;
	struct uprobe_multi_attr *a = (struct uprobe_multi_attr *)&attr;
	int fd;

	_Static_assert(sizeof(struct uprobe_multi_attr) <= sizeof(union bpf_attr),
		       "multi-uprobe attributes fit in union bpf_attr");
	memset(&attr, 0, sizeof(attr));
	a->prog_fd = (__u32)prog_fd;
	a->attach_type = kind == UPROBE_SESSION ? PM_TRACE_UPROBE_SESSION : PM_TRACE_UPROBE_MULTI;
	a->path = (__u64)(uintptr_t)path;
	a->offsets = (__u64)(uintptr_t)offsets;
	a->cnt = (__u32)n;
	a->multi_flags = kind == UPROBE_RETURN ? PM_F_UPROBE_MULTI_RETURN : 0;
	a->pid = pid;
	fd = (int)syscall(SYS_bpf, BPF_LINK_CREATE, &attr, sizeof(attr));
	return fd < 0 ? -errno : fd;
}

static struct uprobe_group *group_of(struct bpf_links *l, struct bpf_program *prog,
				     enum uprobe_kind kind)
{
	for (int i = 0; i < l->n_groups; i++)
		if (l->groups[i].prog == prog && l->groups[i].kind == kind)
			return &l->groups[i];
	if (l->n_groups == (int)(sizeof(l->groups) / sizeof(l->groups[0])))
		return NULL;
	l->groups[l->n_groups] = (struct uprobe_group){ .prog = prog, .kind = kind };
	return &l->groups[l->n_groups++];
}

int bpf_links_uprobe(struct bpf_links *l, struct bpf_program *prog, enum uprobe_kind kind,
		     const char *path, __u64 offset, int pid, const char *what)
{
	struct uprobe_group *g;

	if (!use_uprobe_multi)
		return bpf_links_add(l, bpf_program__attach_uprobe(prog, kind == UPROBE_RETURN, pid,
								   path, (size_t)offset),
				     what);
	g = group_of(l, prog, kind);
	if (!g || g->n == (int)(sizeof(g->offsets) / sizeof(g->offsets[0]))) {
		fprintf(stderr, "pmetrics: cannot attach %s: too many uprobes for one link\n", what);
		return -E2BIG;
	}
	g->offsets[g->n++] = offset;
	return 0;
}

int bpf_links_commit(struct bpf_links *l, const char *path, int pid, const char *what)
{
	int err = 0;

	for (int i = 0; !err && i < l->n_groups; i++) {
		struct uprobe_group *g = &l->groups[i];
		int fd = bpf_uprobe_multi_link(bpf_program__fd(g->prog), path, g->offsets, g->n,
					       g->kind, pid > 0 ? (__u32)pid : 0);

		if (fd >= 0 && l->n_fds == (int)(sizeof(l->fds) / sizeof(l->fds[0]))) {
			close(fd);
			fd = -E2BIG;
		}
		if (fd < 0) {
			err = fd;
			fprintf(stderr, "pmetrics: cannot attach %s (%d %ss of %s): %s%s\n", what, g->n,
				uprobe_kind_name(g->kind), bpf_program__name(g->prog), strerror(-err),
				bpf_loader_fd_hint(err));
		} else {
			l->fds[l->n_fds++] = fd;
		}
	}
	l->n_groups = 0;
	return err;
}
