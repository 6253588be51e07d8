// SPDX-License-Identifier: MIT
/* The output directory and safe opens inside it; see output_dir.h. */
#include "output_dir.h"
#include "cli.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/random.h>
#include <sys/sysmacros.h>
#include <time.h>
#include <unistd.h>

/* Every open in the directory: no symlink is followed, a FIFO never
 * makes the open wait for a reader (it is then refused by its type; for
 * a regular file O_NONBLOCK changes nothing), no terminal becomes ours,
 * no fd leaks into a launched command. */
#define SAFE_FLAGS (O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC)
#define FILE_MODE 0644
#define OPEN_TRIES 8

struct output_dir {
	struct output_dir *next;
	int fd;
	int refs;
	char *path;     /* as given, trailing slashes dropped */
	char **created; /* directories this process made, outermost first */
	int n_created;
};

/* How a message names the way to write elsewhere: record's -o DIR,
 * unless the command writes through another option. */
static const char *elsewhere = "-o DIR";

void output_dir_name_option(const char *option)
{
	elsewhere = option;
}

/* Every directory this process has open: one handle per path. */
static struct output_dir *open_dirs;

const char *output_dir_path(const struct output_dir *d)
{
	return d->path;
}

void output_dir_file_path(const struct output_dir *d, const char *name, char *buf, size_t size)
{
	snprintf(buf, size, "%s%s%s", d->path, strcmp(d->path, "/") ? "/" : "", name);
}

/* Returns 0, or -1 with errno ENOMEM. */
static int remember_created(struct output_dir *d, const char *path)
{
	char **grown = realloc(d->created, (size_t)(d->n_created + 1) * sizeof(*grown));

	if (!grown)
		return -1;
	d->created = grown;
	d->created[d->n_created] = strdup(path);
	if (!d->created[d->n_created])
		return -1;
	d->n_created++;
	return 0;
}

#define MAX_SYMLINKS 40 /* the kernel's own limit for one path */
/* The walk's directories: O_PATH, so a directory we may only search
 * (mode --x) is walked through as a path lookup would. */
#define WALK_FLAGS (O_PATH | O_DIRECTORY | O_CLOEXEC)

/* May a symlink (LINK, its lstat) in the directory open at DIR be
 * followed? Only when no one but root and the directory's owner could
 * have put it there: no other user may write to the directory (its group
 * at most root's), or the directory is sticky (like /tmp) and the link is
 * root's or the directory owner's, the rule of the kernel's
 * protected_symlinks, which a walk that reads links itself must keep.
 * So /var/run -> /run is followed, and a link another user planted in a
 * 0777 share, which would send our files where that user chose, is not. */
static bool trusted_symlink(int dir, const struct stat *link)
{
	struct stat st;

	if (fstat(dir, &st) != 0)
		return false;
	if (!(st.st_mode & S_IWOTH) && (!(st.st_mode & S_IWGRP) || st.st_gid == 0))
		return true;
	return (st.st_mode & S_ISVTX) && (link->st_uid == 0 || link->st_uid == st.st_uid);
}

/* WALKED (the path walked so far, as text) with NAME after it, into OUT
 * (PATH_MAX bytes). False when that is too long a path. */
static bool walked_path(const char *walked, bool absolute, const char *name, char *out)
{
	int n = snprintf(out, PATH_MAX, "%s%s%s", walked, walked[0] || absolute ? "/" : "", name);

	return n >= 0 && n < PATH_MAX;
}

/* Opens the directory D->path one component at a time, each relative to
 * the one before with O_NOFOLLOW, making the missing ones (mkdir -p,
 * mode 0755 less the umask) and remembering them, so a failed start can
 * take them back. A symlink component is read and walked in its turn
 * only when trusted_symlink() says so; else the start fails naming it.
 * Sets D->fd; returns 0, or -1 with a one-line reason in err. */
static int open_walking(struct output_dir *d, char *err, size_t errlen)
{
	char todo[PATH_MAX], walked[PATH_MAX] = "", here[PATH_MAX];
	char link[PATH_MAX], joined[2 * PATH_MAX + 2], name[NAME_MAX + 1];
	bool absolute = d->path[0] == '/';
	int cur, links = 0, tries = 0, e;
	size_t at = 0;

	snprintf(todo, sizeof(todo), "%s", d->path);
	cur = open(absolute ? "/" : ".", WALK_FLAGS);
	if (cur < 0) {
		snprintf(err, errlen, "cannot open output directory %s: %s; pick another with %s",
			 d->path, strerror(errno), elsewhere);
		return -1;
	}
	for (;;) {
		size_t start = at + strspn(todo + at, "/"), n = strcspn(todo + start, "/");
		struct stat st;
		ssize_t k;
		int next;

		if (n == 0)
			break;
		if (n > NAME_MAX) {
			snprintf(err, errlen, "output path %s has a component longer than %d bytes; "
				 "pick another with %s", d->path, NAME_MAX, elsewhere);
			goto fail;
		}
		memcpy(name, todo + start, n);
		name[n] = '\0';
		if (!walked_path(walked, absolute, name, here)) {
			snprintf(err, errlen, "output path %s is too long once its symlinks are "
				 "followed; pick another with %s", d->path, elsewhere);
			goto fail;
		}
		if (strcmp(name, ".") == 0) {
			at = start + n;
			continue;
		}
		next = openat(cur, name, WALK_FLAGS | O_NOFOLLOW);
		if (next >= 0) {
			close(cur);
			cur = next;
			at = start + n;
			tries = 0;
			memcpy(walked, here, sizeof(walked));
			continue;
		}
		e = errno;
		if (fstatat(cur, name, &st, AT_SYMLINK_NOFOLLOW) != 0) {
			if (errno != ENOENT || ++tries > OPEN_TRIES)
				goto cannot_open;
			if (mkdirat(cur, name, 0755) == 0) {
				if (remember_created(d, here) == 0)
					continue; /* and open it */
				snprintf(err, errlen, "out of memory");
				goto fail;
			}
			if (errno == EEXIST)
				continue; /* made by someone else meanwhile */
			snprintf(err, errlen, "cannot create output directory %s: %s; pick another "
				 "with %s", here, strerror(errno), elsewhere);
			goto fail;
		}
		if (S_ISLNK(st.st_mode)) {
			if (!trusted_symlink(cur, &st)) {
				snprintf(err, errlen, "refusing output directory %s: %s is a symlink in a "
					 "directory others can write to; remove it or give the real "
					 "directory with %s", d->path, here, elsewhere);
				goto fail;
			}
			k = readlinkat(cur, name, link, sizeof(link));
			if (k <= 0 || k == (ssize_t)sizeof(link) || ++links > MAX_SYMLINKS) {
				e = k < 0 ? errno : k == 0 ? ENOENT : links > MAX_SYMLINKS ? ELOOP : ENAMETOOLONG;
				goto cannot_open;
			}
			if (snprintf(joined, sizeof(joined), "%.*s/%s", (int)k, link, todo + start + n) >=
			    (int)sizeof(todo)) {
				e = ENAMETOOLONG;
				goto cannot_open;
			}
			memcpy(todo, joined, strlen(joined) + 1);
			at = 0;
			if (link[0] == '/') {
				next = open("/", WALK_FLAGS);
				e = errno;
				if (next < 0)
					goto cannot_open;
				close(cur);
				cur = next;
				walked[0] = '\0';
				absolute = true;
			}
			continue;
		}
		if (!S_ISDIR(st.st_mode)) {
			if (todo[start + n + strspn(todo + start + n, "/")])
				snprintf(err, errlen, "cannot create output directory %s: %s is not a "
					 "directory; pick another with %s", d->path, here, elsewhere);
			else
				snprintf(err, errlen, "output path %s is not a directory; pick another "
					 "with %s", here, elsewhere);
			goto fail;
		}
cannot_open:
		snprintf(err, errlen, "cannot open output directory %s: %s; pick another with %s",
			 here, strerror(e), elsewhere);
		goto fail;
	}
	/* the directory itself, open for reading as before the walk */
	d->fd = openat(cur, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	e = errno;
	close(cur);
	if (d->fd < 0) {
		snprintf(err, errlen, "cannot open output directory %s: %s; pick another with %s",
			 d->path, strerror(e), elsewhere);
		return -1;
	}
	if (faccessat(d->fd, ".", W_OK, AT_EACCESS) != 0) {
		snprintf(err, errlen, "output directory %s is not writable (%s); "
			 "pick another with %s", d->path, strerror(errno), elsewhere);
		return -1;
	}
	return 0;
fail:
	close(cur);
	return -1;
}

static struct output_dir *find_open(const char *path)
{
	for (struct output_dir *d = open_dirs; d; d = d->next)
		if (strcmp(d->path, path) == 0)
			return d;
	return NULL;
}

static void release(struct output_dir *d, bool remove_created)
{
	struct output_dir **p;

	if (!d || --d->refs > 0)
		return;
	for (p = &open_dirs; *p != d; p = &(*p)->next)
		;
	*p = d->next;
	if (d->fd >= 0)
		close(d->fd);
	for (int i = d->n_created - 1; i >= 0; i--) {
		if (remove_created)
			rmdir(d->created[i]); /* fails, as it should, when not empty */
		free(d->created[i]);
	}
	free(d->created);
	free(d->path);
	free(d);
}

void output_dir_close(struct output_dir *d)
{
	release(d, false);
}

void output_dir_discard(struct output_dir *d)
{
	release(d, true);
}

/* A new handle for PATH (already without trailing slashes), listed. */
static struct output_dir *dir_new(const char *path)
{
	struct output_dir *d = calloc(1, sizeof(*d));

	if (!d || !(d->path = strdup(path))) {
		free(d);
		return NULL;
	}
	d->fd = -1;
	d->refs = 1;
	d->next = open_dirs;
	open_dirs = d;
	return d;
}

struct output_dir *output_dir_open(const char *path, char *err, size_t errlen)
{
	char key[PATH_MAX];
	size_t len = strlen(path);
	struct output_dir *d;

	if (len == 0 || len >= sizeof(key) || cli_has_control_char(path)) {
		snprintf(err, errlen, "output directory name is empty, too long or holds a "
			 "control character; pick another with %s", elsewhere);
		return NULL;
	}
	memcpy(key, path, len + 1);
	while (len > 1 && key[len - 1] == '/')
		key[--len] = '\0';
	d = find_open(key);
	if (d) {
		d->refs++;
		return d;
	}
	d = dir_new(key);
	if (!d) {
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	if (open_walking(d, err, errlen)) {
		release(d, true);
		return NULL;
	}
	return d;
}

/* ---- files in the directory ----------------------------------------- */

static const char *file_kind(mode_t mode)
{
	if (S_ISLNK(mode))
		return "a symlink";
	if (S_ISFIFO(mode))
		return "a FIFO";
	if (S_ISDIR(mode))
		return "a directory";
	if (S_ISCHR(mode))
		return "a character device";
	if (S_ISBLK(mode))
		return "a block device";
	if (S_ISSOCK(mode))
		return "a socket";
	return "not a regular file";
}

static void refuse(char *err, size_t errlen, const struct output_dir *d, const char *name,
		   const char *why)
{
	char path[PATH_MAX + 256];

	output_dir_file_path(d, name, path, sizeof(path));
	snprintf(err, errlen, "refusing to write %s: %s; remove it or pick another "
		 "directory with %s", path, why, elsewhere);
}

/* What is wrong with the file ST describes, or NULL when it is a regular
 * file of ours with one link. WHY holds the text. */
static const char *wrong_with(const struct stat *st, char *why, size_t size)
{
	if (!S_ISREG(st->st_mode))
		snprintf(why, size, "it is %s", file_kind(st->st_mode));
	else if (st->st_uid != geteuid())
		snprintf(why, size, "it is owned by uid %u, not %u", (unsigned)st->st_uid,
			 (unsigned)geteuid());
	else if (st->st_nlink > 1)
		snprintf(why, size, "it has %lu hard links", (unsigned long)st->st_nlink);
	else
		return NULL;
	return why;
}

/* After a failed open: say what NAME is when that explains it (a
 * symlink, a FIFO without a reader, a directory), else the errno. */
static void open_failed(char *err, size_t errlen, const struct output_dir *d,
			const char *name, int saved)
{
	char why[128];
	struct stat st;

	if (fstatat(d->fd, name, &st, AT_SYMLINK_NOFOLLOW) == 0 &&
	    wrong_with(&st, why, sizeof(why)) && !S_ISREG(st.st_mode)) {
		refuse(err, errlen, d, name, why);
		return;
	}
	char path[PATH_MAX + 256];
	output_dir_file_path(d, name, path, sizeof(path));
	snprintf(err, errlen, "cannot open %s: %s", path, strerror(saved));
}

/* Opens NAME, or creates it when missing; a name that appears or goes
 * between the two tries is tried again. */
static int open_or_create(int dfd, const char *name, bool *created)
{
	const int flags = O_RDWR | O_APPEND | SAFE_FLAGS;

	for (int i = 0; i < OPEN_TRIES; i++) {
		int fd = openat(dfd, name, flags);

		*created = false;
		if (fd >= 0 || errno != ENOENT)
			return fd;
		fd = openat(dfd, name, flags | O_CREAT | O_EXCL, FILE_MODE);
		*created = true;
		if (fd >= 0 || errno != EEXIST)
			return fd;
	}
	return -1;
}

/* The PID holding the write flock on the file ST describes, from
 * /proc/locks ("1: FLOCK ADVISORY WRITE PID MAJ:MIN:INODE 0 EOF"), or 0. */
static int lock_holder(const struct stat *st)
{
	FILE *f = fopen("/proc/locks", "re");
	char line[256];
	unsigned maj, min;
	unsigned long ino;
	int pid, found = 0;

	if (!f)
		return 0;
	while (!found && fgets(line, sizeof(line), f))
		if (sscanf(line, "%*d: FLOCK %*s WRITE %d %x:%x:%lu", &pid, &maj, &min, &ino) == 4 &&
		    maj == major(st->st_dev) && min == minor(st->st_dev) && ino == st->st_ino)
			found = pid;
	fclose(f);
	return found;
}

static void locked_by_other(char *err, size_t errlen, const struct output_dir *d,
			    const char *name, const struct stat *st)
{
	char path[PATH_MAX + 256], who[32] = "";
	int pid = lock_holder(st);

	if (pid > 0)
		snprintf(who, sizeof(who), " (PID %d)", pid);
	output_dir_file_path(d, name, path, sizeof(path));
	snprintf(err, errlen, "%s is being written by another pmetrics%s; stop it, or give "
		 "this capture another directory with %s", path, who, elsewhere);
}

/* What is wrong with the open file FD, in WHY, or false when nothing. */
static bool fd_is_wrong(int fd, struct stat *st, char *why, size_t size)
{
	if (fstat(fd, st) != 0) {
		snprintf(why, size, "cannot fstat it: %s", strerror(errno));
		return true;
	}
	return wrong_with(st, why, size) != NULL;
}

/* One attempt: 0 and the fd in *out, 1 to try again (the file was
 * unlinked by its creator between our open and our lock), -1 on error. */
static int open_append_once(struct output_dir *d, const char *name, bool *created,
			    int *out, char *err, size_t errlen)
{
	char why[128];
	struct stat st;
	int fd = open_or_create(d->fd, name, created);

	if (fd < 0) {
		open_failed(err, errlen, d, name, errno);
		return -1;
	}
	if (fd_is_wrong(fd, &st, why, sizeof(why))) {
		refuse(err, errlen, d, name, why);
		close(fd);
		return -1;
	}
	/* Other errors (a file system without locks) leave it unlocked. */
	if (flock(fd, LOCK_EX | LOCK_NB) != 0 && errno == EWOULDBLOCK) {
		locked_by_other(err, errlen, d, name, &st);
		close(fd);
		return -1;
	}
	if (fstat(fd, &st) != 0 || st.st_nlink == 0) {
		close(fd);
		return 1;
	}
	*out = fd;
	return 0;
}

int output_dir_open_append(struct output_dir *d, const char *name, bool *created,
			   char *err, size_t errlen)
{
	int fd = -1, ret = 1;

	for (int i = 0; i < OPEN_TRIES && ret == 1; i++)
		ret = open_append_once(d, name, created, &fd, err, errlen);
	if (ret == 1)
		refuse(err, errlen, d, name, "it keeps being removed and made again");
	return ret == 0 ? fd : -1;
}

/* NAME.tmp-XXXXXXXX with a random suffix, created exclusively: two
 * instances never share a temporary file, and none can be planted. */
static int create_temp(int dfd, const char *name, char *tmp, size_t size)
{
	static const char chars[] = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";

	for (int i = 0; i < 100; i++) {
		unsigned char r[8];
		char suffix[sizeof(r) + 1];
		int fd;

		if (getrandom(r, sizeof(r), GRND_NONBLOCK) != (ssize_t)sizeof(r)) {
			uint64_t x = (uint64_t)getpid() * 0x9e3779b97f4a7c15ull ^
				     (uint64_t)clock() ^ (uint64_t)time(NULL) << 20 ^ (uint64_t)i;
			memcpy(r, &x, sizeof(r));
		}
		for (size_t j = 0; j < sizeof(r); j++)
			suffix[j] = chars[r[j] % (sizeof(chars) - 1)];
		suffix[sizeof(r)] = '\0';
		snprintf(tmp, size, "%s.tmp-%s", name, suffix);
		fd = openat(dfd, tmp, O_WRONLY | O_CREAT | O_EXCL | SAFE_FLAGS, FILE_MODE);
		if (fd >= 0 || errno != EEXIST)
			return fd;
	}
	errno = EEXIST;
	return -1;
}

static int write_all(int fd, const void *buf, size_t len)
{
	const char *p = buf;

	while (len > 0) {
		ssize_t n = write(fd, p, len);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			if (n == 0)
				errno = EIO;
			return -1;
		}
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

/* Renames TMP over NAME; *was_new when NAME did not exist. */
static int rename_over(int dfd, const char *tmp, const char *name, bool *was_new)
{
	*was_new = renameat2(dfd, tmp, dfd, name, RENAME_NOREPLACE) == 0;
	if (*was_new)
		return 0;
	if (errno != EEXIST && errno != EINVAL) /* EINVAL: no NOREPLACE on this fs */
		return -1;
	return renameat(dfd, tmp, dfd, name);
}

/* Writes BUF into the temporary file FD, makes it durable and closes it. */
static int fill_temp(int fd, const void *buf, size_t len, struct stat *id)
{
	int ret = write_all(fd, buf, len) == 0 && fsync(fd) == 0 && fstat(fd, id) == 0 ? 0 : -1;
	int saved = errno;

	if (close(fd) != 0 && ret == 0)
		return -1;
	errno = saved;
	return ret;
}

int output_dir_stage(struct output_dir *d, const char *name, const void *buf, size_t len,
		     struct stat *id, char *tmp, size_t tmplen, char *err, size_t errlen)
{
	char path[PATH_MAX + 256];
	struct stat st;
	int fd, saved;

	/* rename() cannot put a file over a directory: say so before any
	 * file of a set is replaced. */
	if (fstatat(d->fd, name, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISDIR(st.st_mode)) {
		refuse(err, errlen, d, name, "it is a directory");
		return -1;
	}
	fd = create_temp(d->fd, name, tmp, tmplen);
	if (fd >= 0) {
		if (fill_temp(fd, buf, len, id) == 0)
			return 0;
		saved = errno;
		unlinkat(d->fd, tmp, 0);
		errno = saved;
	}
	output_dir_file_path(d, name, path, sizeof(path));
	snprintf(err, errlen, "cannot write %s: %s", path, strerror(errno));
	return -1;
}

int output_dir_commit(struct output_dir *d, const char *tmp, const char *name, bool *was_new,
		      char *err, size_t errlen)
{
	char path[PATH_MAX + 256];

	if (rename_over(d->fd, tmp, name, was_new) == 0)
		return 0;
	output_dir_file_path(d, name, path, sizeof(path));
	snprintf(err, errlen, "cannot write %s: %s", path, strerror(errno));
	output_dir_unstage(d, tmp);
	return -1;
}

void output_dir_unstage(struct output_dir *d, const char *tmp)
{
	int saved = errno;

	unlinkat(d->fd, tmp, 0);
	errno = saved;
}

int output_dir_replace(struct output_dir *d, const char *name, const void *buf, size_t len,
		       bool *was_new, struct stat *id, char *err, size_t errlen)
{
	char tmp[PATH_MAX];

	*was_new = false;
	if (output_dir_stage(d, name, buf, len, id, tmp, sizeof(tmp), err, errlen))
		return -1;
	return output_dir_commit(d, tmp, name, was_new, err, errlen);
}

void output_dir_remove(struct output_dir *d, const char *name, const struct stat *id)
{
	struct stat st;

	if (fstatat(d->fd, name, &st, AT_SYMLINK_NOFOLLOW) == 0 &&
	    st.st_dev == id->st_dev && st.st_ino == id->st_ino)
		unlinkat(d->fd, name, 0);
}
