// SPDX-License-Identifier: MIT
#include "whole_file.h"

#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
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

bool whole_file_shebang(const char *path, char *line, size_t size, bool *cr)
{
	char head[256];
	ssize_t n;
	int fd = open(path, O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);

	if (fd < 0)
		return false;
	n = read(fd, head, sizeof(head) - 1);
	close(fd);
	if (n < 2 || head[0] != '#' || head[1] != '!')
		return false;
	head[n] = '\0';
	head[strcspn(head, "\n")] = '\0';
	*cr = strchr(head, '\r') != NULL;
	head[strcspn(head, "\r")] = '\0';
	snprintf(line, size, "%s", head + 2 + strspn(head + 2, " \t"));
	return true;
}
