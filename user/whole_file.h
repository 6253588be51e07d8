/* SPDX-License-Identifier: MIT */
/* Reading a whole file a target could control (its ld.so.cache, its
 * interpreter): only a regular file (a FIFO in its place would block the
 * read forever), by pread rather than mmap (a mapped file truncated under
 * us faults), at most a stated size. */
#ifndef PMETRICS_WHOLE_FILE_H
#define PMETRICS_WHOLE_FILE_H

#include <stdbool.h>
#include <stddef.h>

/* The bytes of the regular file open at FD, up to its size when it is
 * 1..MAX bytes long; *GOT says how many were read (fewer when it shrank
 * meanwhile: what was read is what there is). NULL, *GOT 0, for anything
 * else. The caller frees the buffer and closes FD. */
char *whole_file_read(int fd, size_t max, size_t *got);

/* Whether the file at PATH starts with "#!": then LINE (SIZE bytes)
 * holds the rest of that first line, its interpreter and argument,
 * trimmed, and *CR whether the line ended in a carriage return (DOS
 * line ends, which the kernel reads as part of the interpreter's name).
 * Opened so that a FIFO or a terminal there cannot block or become ours. */
bool whole_file_shebang(const char *path, char *line, size_t size, bool *cr);

#endif
