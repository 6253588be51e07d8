// SPDX-License-Identifier: MIT
#include "whole_file.h"

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

char *whole_file_read(int fd, size_t max, size_t *got)
{
	struct stat st;
	char *buf = NULL;

	*got = 0;
	if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_size > 0 &&
	    (uint64_t)st.st_size <= max)
		buf = malloc((size_t)st.st_size);
	while (buf && *got < (size_t)st.st_size) {
		ssize_t n = pread(fd, buf + *got, (size_t)st.st_size - *got, (off_t)*got);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		*got += (size_t)n;
	}
	if (buf && !*got) {
		free(buf);
		buf = NULL;
	}
	return buf;
}
