// SPDX-License-Identifier: MIT
/* libFuzzer harness: the JSON lines reader. Input fed in chunks whose
 * size comes from the first byte; with the simdjson fast path built in,
 * the same input also goes through json-c alone and every counter and
 * accumulator must agree (a differential oracle, abort on mismatch).
 * Inputs starting with the gzip magic go through the file reader
 * (analyze_read_input on a memfd), which is where zlib is used. */
#include <stdint.h>
#include <sys/mman.h>
#include <unistd.h>

#include "fuzz_common.h"

static struct analysis *read_lines(const uint8_t *data, size_t size, size_t chunk, int json_c_only)
{
	struct analysis *a = fuzz_analysis(4);
	struct jsonl_reader r;
	size_t off;

	if (jsonl_reader_init(&r, a, "fuzz"))
		abort();
	if (json_c_only)
		jsonl_reader_json_c_only(&r);
	for (off = 0; off < size; off += chunk)
		jsonl_feed(&r, (const char *)data + off, size - off < chunk ? size - off : chunk);
	jsonl_finish(&r);
	jsonl_reader_destroy(&r);
	return a;
}

#define SAME(f) do { if (x->f != y->f) { fprintf(stderr, "differs: %s\n", #f); abort(); } } while (0)

static void same_analysis(const struct analysis *x, const struct analysis *y)
{
	size_t i, j;
	int k;

	SAME(lines); SAME(records_used); SAME(values_skipped); SAME(values_infinite);
	SAME(processes_dropped); SAME(samples); SAME(n_versions);
	for (k = 0; k < SKIP_REASONS; k++)
		SAME(skipped[k]);
	for (k = 0; k < LEFT_OUT_REASONS; k++)
		SAME(left_out[k]);
	for (i = 0; i < x->n_versions; i++) {
		const struct version_stats *vx = &x->versions[i], *vy = &y->versions[i];

		if (strcmp(vx->name, vy->name) || vx->n_keys != vy->n_keys ||
		    vx->has_reports != vy->has_reports ||
		    memcmp(&vx->system.trend, &vy->system.trend, sizeof(vx->system.trend)))
			abort();
		for (j = 0; j < vx->n_keys; j++)
			if (memcmp(&vx->keys[j].trend, &vy->keys[j].trend, sizeof(vx->keys[j].trend)))
				abort();
	}
}

static void read_gzip_file(const uint8_t *data, size_t size)
{
	struct analysis *a = fuzz_analysis(0);
	char path[64];
	int fd = memfd_create("fuzz.jsonl.gz", 0);

	if (fd < 0 || write(fd, data, size) != (ssize_t)size)
		abort();
	snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
	analyze_read_input(a, path);
	fuzz_render(a, 0);
	analysis_free(a);
	close(fd);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct analysis *a, *b;
	size_t chunk;

	if (size >= 2 && data[0] == 0x1f && data[1] == 0x8b) {
		read_gzip_file(data, size);
		return 0;
	}
	chunk = size ? (size_t)data[0] % 64 + 1 : 1;
	a = read_lines(data, size, chunk, 0);
	b = read_lines(data, size, 1 << 20, 1);
	same_analysis(a, b);
	fuzz_render(a, 1);
	analysis_free(a);
	analysis_free(b);
	return 0;
}
