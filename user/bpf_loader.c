// SPDX-License-Identifier: MIT
/* The BPF object life cycle; see bpf_loader.h. */
#include "bpf_loader.h"

#include <bpf/btf.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static struct bpf_object_open_opts open_opts = { .sz = sizeof(struct bpf_object_open_opts) };

static int libbpf_log(enum libbpf_print_level level, const char *fmt, va_list ap)
{
	(void)level;
	return vfprintf(stderr, fmt, ap);
}

/* A --btf file is checked before it is handed to libbpf, which would
 * only say "Unknown error 4001" about a file that is not BTF. */
static int check_btf_file(const char *path)
{
	struct btf *btf;

	if (access(path, R_OK) != 0) {
		fprintf(stderr, "pmetrics: cannot read --btf %s: %s\n", path, strerror(errno));
		return -1;
	}
	btf = btf__parse(path, NULL);
	if (!libbpf_get_error(btf)) {
		btf__free(btf);
		return 0;
	}
	fprintf(stderr, "pmetrics: cannot use --btf %s: it is not BTF (raw, or an ELF file "
		"with a .BTF section); give this kernel's BTF, e.g. made by "
		"pahole --btf_encode_detached=FILE from its vmlinux\n", path);
	return -1;
}

int bpf_loader_init(const struct bpf_loader_settings *s)
{
	libbpf_set_print(s->verbose ? libbpf_log : NULL);
	open_opts.btf_custom_path = s->btf_path;
	if (s->btf_path && check_btf_file(s->btf_path))
		return -1;
	return 0;
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

int bpf_loader_load(struct bpf_object *obj, const char *what)
{
	int err = bpf_object__load(obj);

	if (err)
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
		fprintf(stderr, "pmetrics: cannot attach %s: %s\n", what, strerror(-err));
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

int bpf_links_attach(struct bpf_links *l, struct bpf_program *prog, const char *what)
{
	return bpf_links_add(l, bpf_program__attach(prog), what);
}

void bpf_links_destroy(struct bpf_links *l)
{
	for (int i = l->n - 1; i >= 0; i--)
		bpf_link__destroy(l->links[i]);
	free(l->links);
	l->links = NULL;
	l->n = l->cap = 0;
}
