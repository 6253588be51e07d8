/* SPDX-License-Identifier: MIT */
/* The output directory (-o DIR) and the files pmetrics writes in it.
 *
 * pmetrics runs as root and is often told to write into a directory that
 * others can write to (a 1777 /tmp, a 0777 share). Whoever can write
 * there can plant a symlink, a hard link, a FIFO or a directory under any
 * name pmetrics will open. So the directory is opened once and every file
 * is opened relative to it, never following a symlink, never blocking on
 * a FIFO, and kept only when it is a regular file owned by us with one
 * link; anything else is refused with one line naming the file.
 *
 * A process opens each directory once: output_dir_open() of a path that
 * is already open returns the same handle with one more reference, so
 * the span writer, the resource sampler and the record session share one
 * directory fd and one list of directories this process created. */
#ifndef PMETRICS_OUTPUT_DIR_H
#define PMETRICS_OUTPUT_DIR_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/stat.h>

struct output_dir;

/* mkdir -p PATH (mode 0755 less the umask), remembering the directories
 * it made, then opens it; walked one component at a time, a symlink on
 * the way followed only when no other user could have planted it (see
 * trusted_symlink() in output_dir.c). Returns the handle, or NULL with a
 * one-line reason in err. */
struct output_dir *output_dir_open(const char *path, char *err, size_t errlen);
/* Drops one reference; the last one closes the directory. */
void output_dir_close(struct output_dir *d);
/* Drops one reference after a failed start; the last one also removes
 * the directories this process created, when they are empty. */
void output_dir_discard(struct output_dir *d);
const char *output_dir_path(const struct output_dir *d);
/* The option messages name as the way to write elsewhere: "-o DIR"
 * unless a command that writes through another says so first. */
void output_dir_name_option(const char *option);
/* DIR/NAME, for messages. */
void output_dir_file_path(const struct output_dir *d, const char *name, char *buf, size_t size);

/* Opens NAME in D for appending, created (O_EXCL, 0644 less the umask)
 * when missing, with an exclusive lock so no second pmetrics appends to
 * it. The fd is open for reading too (to look at the file's last line).
 * Refuses a symlink, a FIFO, a device, a directory, a file owned by
 * another user or one with more than one link. Returns the fd with
 * *created telling whether this call made the file, or -1 with a
 * one-line reason in err. */
int output_dir_open_append(struct output_dir *d, const char *name, bool *created,
			   char *err, size_t errlen);
/* Replaces NAME in D by a file holding BUF: written under a fresh
 * temporary name, fsync'd and renamed over NAME, so readers see the old
 * file or the new one, and a symlink planted as NAME is replaced, never
 * followed. *was_new: NAME did not exist before; *id: the new file, for
 * output_dir_remove(). Returns 0, or -1 with a one-line reason in err. */
int output_dir_replace(struct output_dir *d, const char *name, const void *buf, size_t len,
		       bool *was_new, struct stat *id, char *err, size_t errlen);
/* output_dir_replace() in two steps, for files that must be replaced
 * together: stage each (refused when NAME is a directory; written and
 * fsync'd under the temporary name left in tmp), then rename each with
 * output_dir_commit(), or drop the staged ones with output_dir_unstage().
 * Both return 0, or -1 with a one-line reason in err. */
int output_dir_stage(struct output_dir *d, const char *name, const void *buf, size_t len,
		     struct stat *id, char *tmp, size_t tmplen, char *err, size_t errlen);
int output_dir_commit(struct output_dir *d, const char *tmp, const char *name, bool *was_new,
		      char *err, size_t errlen);
void output_dir_unstage(struct output_dir *d, const char *tmp);
/* Unlinks NAME when it still is the file ID (st_dev, st_ino) describes:
 * a failed start takes back only what it made. */
void output_dir_remove(struct output_dir *d, const char *name, const struct stat *id);

#endif
