// SPDX-License-Identifier: MIT
/* The output directory: what a user who can write to it may plant under
 * a name pmetrics opens (symlink, hard link, FIFO, directory, someone
 * else's file) is refused, never followed, never blocks; a symlink such
 * a user could plant as the directory or on the way to it is refused;
 * new files are ours alone; a failed start takes back only what it
 * made. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "output_dir.h"

struct fixture {
	char dir[64];          /* the output directory, made by the test */
	char victim[96];       /* a file outside it that must stay untouched */
	struct output_dir *d;
	char err[512];
};

static int setup(void **state)
{
	struct fixture *f = calloc(1, sizeof(*f));
	FILE *v;

	snprintf(f->dir, sizeof(f->dir), "/tmp/pm-outdir-XXXXXX");
	if (!mkdtemp(f->dir))
		return -1;
	snprintf(f->victim, sizeof(f->victim), "%s.victim", f->dir);
	v = fopen(f->victim, "w");
	fputs("precious\n", v);
	fclose(v);
	f->d = output_dir_open(f->dir, f->err, sizeof(f->err));
	*state = f;
	return f->d ? 0 : -1;
}

static int teardown(void **state)
{
	struct fixture *f = *state;
	char cmd[256];

	output_dir_close(f->d);
	snprintf(cmd, sizeof(cmd), "rm -rf '%s' '%s'", f->dir, f->victim);
	if (system(cmd) != 0)
		return -1;
	free(f);
	return 0;
}

static void at(const struct fixture *f, const char *name, char *buf, size_t size)
{
	snprintf(buf, size, "%s/%s", f->dir, name);
}

static void victim_is_untouched(const struct fixture *f)
{
	char buf[64] = "";
	FILE *v = fopen(f->victim, "r");

	assert_non_null(v);
	assert_non_null(fgets(buf, sizeof(buf), v));
	assert_null(fgets(buf + strlen(buf), (int)(sizeof(buf) - strlen(buf)), v));
	fclose(v);
	assert_string_equal(buf, "precious\n");
}

/* Opening NAME for appending fails with one line holding WANT. */
static void refused(struct fixture *f, const char *name, const char *want)
{
	bool created = true;

	assert_int_equal(output_dir_open_append(f->d, name, &created, f->err, sizeof(f->err)), -1);
	assert_non_null(strstr(f->err, want));
	assert_non_null(strstr(f->err, name));
	assert_null(strchr(f->err, '\n'));
}

static void symlink_is_refused_not_followed(void **state)
{
	struct fixture *f = *state;
	char path[128];

	at(f, "robot_context_data", path, sizeof(path));
	assert_int_equal(symlink(f->victim, path), 0);
	refused(f, "robot_context_data", "it is a symlink");
	victim_is_untouched(f);
	/* a dangling one too: O_EXCL creation does not follow it either */
	at(f, "system_resource_data", path, sizeof(path));
	assert_int_equal(symlink("/tmp/pm-outdir-nothing-here", path), 0);
	refused(f, "system_resource_data", "it is a symlink");
	assert_int_not_equal(access("/tmp/pm-outdir-nothing-here", F_OK), 0);
}

static void on_alarm(int sig)
{
	(void)sig;
	fail_msg("opening a FIFO blocked");
}

static void fifo_is_refused_without_blocking(void **state)
{
	struct fixture *f = *state;
	char path[128];

	at(f, "robot_context_data", path, sizeof(path));
	assert_int_equal(mkfifo(path, 0666), 0);
	signal(SIGALRM, on_alarm);
	alarm(5);
	refused(f, "robot_context_data", "it is a FIFO");
	alarm(0);
}

static void directory_is_refused(void **state)
{
	struct fixture *f = *state;
	char path[128];

	at(f, "memory_series_data", path, sizeof(path));
	assert_int_equal(mkdir(path, 0755), 0);
	refused(f, "memory_series_data", "it is a directory");
}

static void hard_link_is_refused(void **state)
{
	struct fixture *f = *state;
	char path[128];

	at(f, "robot_context_data", path, sizeof(path));
	assert_int_equal(link(f->victim, path), 0);
	refused(f, "robot_context_data", "it has 2 hard links");
	victim_is_untouched(f);
}

static void someone_elses_file_is_refused(void **state)
{
	struct fixture *f = *state;
	char path[128];
	int fd;

	if (geteuid() != 0)
		skip(); /* only root can make a file of another owner */
	at(f, "robot_context_data", path, sizeof(path));
	fd = open(path, O_WRONLY | O_CREAT, 0644);
	assert_true(fd >= 0);
	assert_int_equal(fchown(fd, 65534, 65534), 0);
	close(fd);
	refused(f, "robot_context_data", "it is owned by uid 65534, not 0");
}

static void new_file_is_created_0644_within_the_umask(void **state)
{
	struct fixture *f = *state;
	bool created = false;
	struct stat st;
	mode_t old = umask(077);
	int fd = output_dir_open_append(f->d, "robot_context_data", &created, f->err,
					sizeof(f->err));

	umask(old);
	assert_true(fd >= 0);
	assert_true(created);
	assert_int_equal(fstat(fd, &st), 0);
	assert_int_equal(st.st_mode & 07777, 0600); /* never wider than asked */
	close(fd);
	fd = output_dir_open_append(f->d, "robot_context_data", &created, f->err, sizeof(f->err));
	assert_true(fd >= 0);
	assert_false(created); /* it was there: not ours to remove */
	close(fd);
}

static void second_writer_of_a_file_is_refused(void **state)
{
	struct fixture *f = *state;
	char want[64];
	bool created;
	int fd = output_dir_open_append(f->d, "robot_context_data", &created, f->err,
					sizeof(f->err));

	assert_true(fd >= 0);
	snprintf(want, sizeof(want), "another pmetrics (PID %d)", (int)getpid());
	refused(f, "robot_context_data", want);
	/* another file in the same directory is fine */
	int other = output_dir_open_append(f->d, "system_resource_data", &created, f->err,
					   sizeof(f->err));
	assert_true(other >= 0);
	close(other);
	close(fd);
}

/* Files in the directory, sorted by name, joined by spaces. */
static const char *listing(const struct fixture *f)
{
	static char buf[512];
	struct dirent **names;
	int n = scandir(f->dir, &names, NULL, alphasort);

	buf[0] = '\0';
	for (int i = 0; i < n; i++) {
		if (names[i]->d_name[0] != '.')
			snprintf(buf + strlen(buf), sizeof(buf) - strlen(buf), "%s%s",
				 buf[0] ? " " : "", names[i]->d_name);
		free(names[i]);
	}
	free(names);
	return buf;
}

static void replace_swaps_a_planted_symlink_for_a_file(void **state)
{
	struct fixture *f = *state;
	char path[128], buf[64] = "";
	struct stat st, id;
	bool was_new = true;
	FILE *in;

	at(f, "robot_context_data_headers", path, sizeof(path));
	assert_int_equal(symlink(f->victim, path), 0);
	assert_int_equal(output_dir_replace(f->d, "robot_context_data_headers", "a,b", 3,
					    &was_new, &id, f->err, sizeof(f->err)), 0);
	assert_false(was_new);
	victim_is_untouched(f);
	assert_int_equal(lstat(path, &st), 0);
	assert_true(S_ISREG(st.st_mode));
	in = fopen(path, "r");
	assert_non_null(fgets(buf, sizeof(buf), in));
	fclose(in);
	assert_string_equal(buf, "a,b");
	/* no temporary file is left behind */
	assert_string_equal(listing(f), "robot_context_data_headers");
}

static void replace_never_uses_a_planted_temporary_name(void **state)
{
	struct fixture *f = *state;
	char path[128];
	struct stat id;
	bool was_new;

	/* the fixed name an older pmetrics used, planted */
	at(f, "robot_context_data_headers.tmp", path, sizeof(path));
	assert_int_equal(symlink(f->victim, path), 0);
	assert_int_equal(output_dir_replace(f->d, "robot_context_data_headers", "h", 1,
					    &was_new, &id, f->err, sizeof(f->err)), 0);
	assert_true(was_new);
	victim_is_untouched(f);
	assert_string_equal(listing(f), "robot_context_data_headers robot_context_data_headers.tmp");
}

static void remove_takes_only_the_same_file(void **state)
{
	struct fixture *f = *state;
	char path[128], moved[160];
	struct stat id;
	bool was_new;

	assert_int_equal(output_dir_replace(f->d, "x_headers", "h", 1, &was_new, &id,
					    f->err, sizeof(f->err)), 0);
	at(f, "x_headers", path, sizeof(path));
	snprintf(moved, sizeof(moved), "%s.moved", path);
	assert_int_equal(rename(path, moved), 0);
	assert_int_equal(symlink(f->victim, path), 0); /* someone else's now */
	output_dir_remove(f->d, "x_headers", &id);
	assert_int_equal(access(path, F_OK), 0);
	unlink(path);
	assert_int_equal(rename(moved, path), 0);
	output_dir_remove(f->d, "x_headers", &id);
	assert_int_not_equal(access(path, F_OK), 0);
}

static void one_handle_per_directory(void **state)
{
	struct fixture *f = *state;
	char slash[80];
	struct output_dir *again;

	snprintf(slash, sizeof(slash), "%s//", f->dir);
	again = output_dir_open(slash, f->err, sizeof(f->err));
	assert_ptr_equal(again, f->d);
	output_dir_close(again);
	assert_string_equal(output_dir_path(f->d), f->dir);
}

static void discard_removes_only_the_directories_it_made(void **state)
{
	struct fixture *f = *state;
	char deep[128], err[256];
	struct output_dir *d;

	snprintf(deep, sizeof(deep), "%s/a/b/c", f->dir);
	d = output_dir_open(deep, err, sizeof(err));
	assert_non_null(d);
	assert_int_equal(access(deep, W_OK), 0);
	output_dir_discard(d);
	assert_string_equal(listing(f), ""); /* a, b and c gone, f->dir kept */
	assert_int_equal(access(f->dir, W_OK), 0);
}

static void control_characters_in_the_path_are_refused(void **state)
{
	struct fixture *f = *state;
	char bad[96];

	snprintf(bad, sizeof(bad), "%s/new\nline", f->dir);
	assert_null(output_dir_open(bad, f->err, sizeof(f->err)));
	assert_non_null(strstr(f->err, "control character"));
	assert_null(strchr(f->err, '\n'));
	assert_string_equal(listing(f), "");
	/* the way to write elsewhere is record's -o DIR, or as a command says */
	assert_non_null(strstr(f->err, "pick another with -o DIR"));
	output_dir_name_option("--svg FILE");
	assert_null(output_dir_open(bad, f->err, sizeof(f->err)));
	output_dir_name_option("-o DIR");
	assert_non_null(strstr(f->err, "pick another with --svg FILE"));
}

/* F->dir/NAME made as a directory of exactly MODE (no umask). */
static void dir_at(const struct fixture *f, const char *name, mode_t mode, char *buf, size_t size)
{
	at(f, name, buf, size);
	assert_int_equal(mkdir(buf, 0700), 0);
	assert_int_equal(chmod(buf, mode), 0);
}

/* Whether F->dir/NAME is an empty directory. */
static bool empty_dir(const struct fixture *f, const char *name)
{
	char path[128];
	struct dirent *de;
	int entries = 0;
	DIR *d;

	at(f, name, path, sizeof(path));
	d = opendir(path);
	assert_non_null(d);
	while ((de = readdir(d)))
		entries += strcmp(de->d_name, ".") != 0 && strcmp(de->d_name, "..") != 0;
	closedir(d);
	return entries == 0;
}

/* Another user could have planted a symlink as -o DIR, or as a directory
 * on the way to it, in a directory anyone may write to: following it
 * would put our files where that user chose. */
static void a_symlink_others_could_plant_is_refused(void **state)
{
	struct fixture *f = *state;
	char share[96], there[96], out[128];

	dir_at(f, "share", 0777, share, sizeof(share));
	dir_at(f, "elsewhere", 0755, there, sizeof(there));
	snprintf(out, sizeof(out), "%s/pm", share);
	assert_int_equal(symlink(there, out), 0);
	assert_null(output_dir_open(out, f->err, sizeof(f->err)));
	assert_non_null(strstr(f->err, "refusing output directory"));
	assert_non_null(strstr(f->err, out));
	assert_non_null(strstr(f->err, "is a symlink in a directory others can write to"));
	assert_null(strchr(f->err, '\n'));
	snprintf(out, sizeof(out), "%s/pm/deeper", share);
	assert_null(output_dir_open(out, f->err, sizeof(f->err)));
	assert_non_null(strstr(f->err, "is a symlink in a directory others can write to"));
	assert_true(empty_dir(f, "elsewhere"));
}

/* In a sticky directory (like /tmp) only a link of root's or of the
 * directory's owner is followed: another user's could be planted. */
static void a_sticky_directory_trusts_only_its_owners_and_roots_links(void **state)
{
	struct fixture *f = *state;
	char tmp[96], there[96], out[128];
	struct output_dir *d;

	dir_at(f, "tmp", 01777, tmp, sizeof(tmp));
	dir_at(f, "elsewhere", 0755, there, sizeof(there));
	snprintf(out, sizeof(out), "%s/pm", tmp);
	assert_int_equal(symlink(there, out), 0);
	d = output_dir_open(out, f->err, sizeof(f->err));
	assert_non_null(d);
	output_dir_close(d);
	if (geteuid() != 0) {
		skip(); /* only root can make a link of another owner */
		return;
	}
	assert_int_equal(lchown(out, 65534, 65534), 0);
	assert_null(output_dir_open(out, f->err, sizeof(f->err)));
	assert_non_null(strstr(f->err, "is a symlink in a directory others can write to"));
}

/* A link only root or the directory's owner could have made (/var/run ->
 * /run), absolute or relative, last or on the way, is followed, and the
 * directories missing behind it are made there. */
static void a_symlink_only_the_owner_could_make_is_followed(void **state)
{
	struct fixture *f = *state;
	char own[96], there[96], out[160], made[160];
	struct output_dir *d;

	dir_at(f, "own", 0755, own, sizeof(own));
	dir_at(f, "elsewhere", 0755, there, sizeof(there));
	snprintf(out, sizeof(out), "%s/abs", own);
	assert_int_equal(symlink(there, out), 0);
	snprintf(out, sizeof(out), "%s/rel", own);
	assert_int_equal(symlink("../elsewhere", out), 0);
	snprintf(out, sizeof(out), "%s/abs/a/b", own);
	d = output_dir_open(out, f->err, sizeof(f->err));
	assert_non_null(d);
	output_dir_close(d);
	snprintf(made, sizeof(made), "%s/a/b", there);
	assert_int_equal(access(made, W_OK), 0);
	snprintf(out, sizeof(out), "%s/rel", own);
	d = output_dir_open(out, f->err, sizeof(f->err));
	assert_non_null(d);
	output_dir_close(d);
}

static void many_missing_directories_are_made(void **state)
{
	struct fixture *f = *state;
	char deep[160];
	struct output_dir *d;

	snprintf(deep, sizeof(deep), "%s/1/2/3/4/5/6/7/8/9/10/11/12", f->dir);
	d = output_dir_open(deep, f->err, sizeof(f->err));
	assert_non_null(d);
	assert_int_equal(access(deep, W_OK), 0);
	output_dir_close(d);
}

#define T(name) cmocka_unit_test_setup_teardown(name, setup, teardown)

int main(void)
{
	const struct CMUnitTest tests[] = {
		T(symlink_is_refused_not_followed),
		T(fifo_is_refused_without_blocking),
		T(directory_is_refused),
		T(hard_link_is_refused),
		T(someone_elses_file_is_refused),
		T(new_file_is_created_0644_within_the_umask),
		T(second_writer_of_a_file_is_refused),
		T(replace_swaps_a_planted_symlink_for_a_file),
		T(replace_never_uses_a_planted_temporary_name),
		T(remove_takes_only_the_same_file),
		T(one_handle_per_directory),
		T(discard_removes_only_the_directories_it_made),
		T(control_characters_in_the_path_are_refused),
		T(a_symlink_others_could_plant_is_refused),
		T(a_sticky_directory_trusts_only_its_owners_and_roots_links),
		T(a_symlink_only_the_owner_could_make_is_followed),
		T(many_missing_directories_are_made),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
