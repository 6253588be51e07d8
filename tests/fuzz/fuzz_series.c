// SPDX-License-Identifier: MIT
/* libFuzzer harness: the memory-series CSV reader. When the input holds a
 * NUL byte, what comes before it is the _headers line, the rest the data
 * (fed in chunks sized by the first byte), then everything is rendered. */
#include <stdint.h>

#include "fuzz_common.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct analysis *a = fuzz_analysis(4);
	struct series_reader r;
	const uint8_t *nul = memchr(data, 0, size);
	size_t off = 0, chunk;

	if (series_reader_init(&r, a, "fuzz"))
		abort();
	if (nul) {
		series_set_header(&r, (const char *)data, (size_t)(nul - data));
		off = (size_t)(nul - data) + 1;
	}
	chunk = size ? (size_t)data[0] % 32 + 1 : 1;
	for (; off < size; off += chunk)
		series_feed(&r, (const char *)data + off, size - off < chunk ? size - off : chunk);
	series_finish(&r);
	series_reader_destroy(&r);
	fuzz_render(a, 1);
	analysis_free(a);
	return 0;
}
