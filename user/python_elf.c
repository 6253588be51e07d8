/* Interpreter discovery for Python spans: which file holds the frame
 * evaluation function, and which CPython version it is. */
#include "python_elf.h"
#include "elf_symbols.h"

#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <glob.h>
#include <libelf.h>
#include <libgen.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

int python_version_from_name(const char *path, int *major, int *minor, bool *free_threaded)
{
	const char *base = strrchr(path, '/');
	const char *p;

	base = base ? base + 1 : path;
	for (p = strstr(base, "python"); p; p = strstr(p + 1, "python")) {
		int ma, mi, used = 0;
		if (sscanf(p, "python%d.%d%n", &ma, &mi, &used) == 2 && used > 0 && ma >= 2) {
			*major = ma;
			*minor = mi;
			*free_threaded = p[used] == 't';
			return 0;
		}
	}
	return -1;
}

int python_version_from_abi_tag(const char *bytes, size_t len, int *major, int *minor,
				bool *free_threaded)
{
	static const char tag[] = ".cpython-3"; /* then the minor: 1 or 2 digits */
	const char *end = bytes + len, *p = bytes;

	while ((p = memmem(p, (size_t)(end - p), tag, sizeof(tag) - 1))) {
		const char *d = p + sizeof(tag) - 1;
		int mi = 0, digits = 0;
		bool threads = false;

		for (; d < end && digits < 2 && *d >= '0' && *d <= '9'; d++, digits++)
			mi = mi * 10 + (*d - '0');
		/* The digits end at '-' or ABI flags: 't' free-threaded,
		 * 'd' debug, 'm' pymalloc (3.7 and older). */
		for (; d < end && (*d == 't' || *d == 'd' || *d == 'm'); d++)
			threads |= *d == 't';
		if (digits > 0 && d < end && *d == '-') {
			*major = 3;
			*minor = mi;
			*free_threaded = threads;
			return 0;
		}
		p++;
	}
	return -1;
}

int python_version_from_file(const char *path, int *major, int *minor, bool *free_threaded)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC), rc = -1;
	struct stat st;
	void *map;

	if (fd < 0)
		return -1;
	if (fstat(fd, &st) == 0 && st.st_size > 0) {
		map = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
		if (map != MAP_FAILED) {
			rc = python_version_from_abi_tag(map, (size_t)st.st_size, major, minor,
							 free_threaded);
			munmap(map, (size_t)st.st_size);
		}
	}
	close(fd);
	return rc;
}

int python_needed_libpython(const char *path, char *out, size_t len)
{
	Elf_Scn *scn = NULL;
	int fd, ret = -1;
	Elf *elf;

	if (elf_version(EV_CURRENT) == EV_NONE)
		return -1;
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	elf = elf_begin(fd, ELF_C_READ, NULL);
	while (elf && ret != 0 && (scn = elf_nextscn(elf, scn))) {
		GElf_Shdr sh;
		Elf_Data *data;
		if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_DYNAMIC || !sh.sh_entsize)
			continue;
		data = elf_getdata(scn, NULL);
		for (size_t i = 0; data && i < sh.sh_size / sh.sh_entsize; i++) {
			GElf_Dyn dyn;
			const char *s;
			if (!gelf_getdyn(data, (int)i, &dyn) || dyn.d_tag != DT_NEEDED)
				continue;
			s = elf_strptr(elf, sh.sh_link, dyn.d_un.d_val);
			if (s && strncmp(s, "libpython", 9) == 0) {
				snprintf(out, len, "%s", s);
				ret = 0;
				break;
			}
		}
	}
	if (elf)
		elf_end(elf);
	close(fd);
	return ret;
}

/* Tries DIR/NAME for each ':'-separated DIR of list; $ORIGIN -> origin. */
static int search_dirs(const char *list, const char *origin, const char *name,
		       char *out, size_t len)
{
	char buf[4096];
	char *save = NULL, *dir;

	if (!list || !*list)
		return -1;
	snprintf(buf, sizeof(buf), "%s", list);
	for (dir = strtok_r(buf, ":", &save); dir; dir = strtok_r(NULL, ":", &save)) {
		const char *rest = dir;
		char cand[PATH_MAX];
		if (strncmp(dir, "$ORIGIN", 7) == 0 || strncmp(dir, "${ORIGIN}", 9) == 0) {
			rest = dir + (dir[1] == '{' ? 9 : 7);
			snprintf(cand, sizeof(cand), "%s%s/%s", origin, rest, name);
		} else {
			snprintf(cand, sizeof(cand), "%s/%s", dir, name);
		}
		if (access(cand, R_OK) == 0 && realpath(cand, out) && strlen(out) < len)
			return 0;
	}
	return -1;
}

/* Library directories from /etc/ld.so.conf.d, joined with ':'. */
static void system_lib_dirs(char *out, size_t len)
{
	static const char *fixed = "/lib/x86_64-linux-gnu:/usr/lib/x86_64-linux-gnu:"
				   "/lib/aarch64-linux-gnu:/usr/lib/aarch64-linux-gnu:"
				   "/usr/local/lib:/lib64:/usr/lib64:/lib:/usr/lib";
	char line[1024];
	glob_t g;

	snprintf(out, len, "%s", fixed);
	if (glob("/etc/ld.so.conf.d/*.conf", 0, NULL, &g) != 0)
		return;
	for (size_t i = 0; i < g.gl_pathc; i++) {
		FILE *f = fopen(g.gl_pathv[i], "r");
		while (f && fgets(line, sizeof(line), f)) {
			size_t used = strlen(out);
			line[strcspn(line, "\r\n#")] = '\0';
			if (line[0] == '/')
				snprintf(out + used, len - used, ":%s", line);
		}
		if (f)
			fclose(f);
	}
	globfree(&g);
}

int python_resolve_library(const char *exe, const char *needed, char *out, size_t len)
{
	char runpath[4096], origin[PATH_MAX], sysdirs[8192], real[PATH_MAX];

	if (!realpath(exe, real))
		return -1;
	snprintf(origin, sizeof(origin), "%s", real);
	dirname(origin);
	if (elf_runpath(real, runpath, sizeof(runpath)) == 0 &&
	    search_dirs(runpath, origin, needed, out, len) == 0)
		return 0;
	if (search_dirs(getenv("LD_LIBRARY_PATH"), origin, needed, out, len) == 0)
		return 0;
	system_lib_dirs(sysdirs, sizeof(sysdirs));
	return search_dirs(sysdirs, origin, needed, out, len);
}

static bool is_script(const char *file)
{
	char head[2] = "";
	int fd = open(file, O_RDONLY | O_CLOEXEC);

	if (fd < 0)
		return false;
	if (read(fd, head, sizeof(head)) != (ssize_t)sizeof(head))
		head[0] = '\0';
	close(fd);
	return head[0] == '#' && head[1] == '!';
}

/* Is FILE an interpreter we can hook: does it define the frame evaluation? */
static int check_cpython(const char *file, char *err, size_t errlen)
{
	char suggest[8], why[512];
	uint64_t off;
	int rc;

	if (is_script(file)) {
		snprintf(err, errlen, "%s is a script, not a CPython binary: launch the interpreter "
			 "itself (e.g. the path `pyenv which python3` prints, or /usr/bin/python3.10)", file);
		return -ENOEXEC;
	}
	rc = elf_symbol_offset(file, "_PyEval_EvalFrameDefault", &off, suggest, sizeof(suggest),
			       why, sizeof(why));
	if (rc == -ENOENT)
		snprintf(err, errlen, "%s is not a CPython interpreter (no _PyEval_EvalFrameDefault "
			 "symbol): py: probes need a CPython process", file);
	else if (rc)
		snprintf(err, errlen, "%s", why);
	return rc;
}

/* Fills out->path/version for FILE, the file holding the interpreter;
 * NAME_HINT is another file name that may carry the version. */
static int interp_from_file(const char *file, const char *name_hint,
			    struct python_interp *out, char *err, size_t errlen)
{
	int rc;

	if (strlen(file) >= sizeof(out->path)) {
		snprintf(err, errlen, "path too long: %s", file);
		return -ENAMETOOLONG;
	}
	if ((rc = check_cpython(file, err, errlen)))
		return rc;
	snprintf(out->path, sizeof(out->path), "%s", file);
	if (python_version_from_name(file, &out->major, &out->minor, &out->free_threaded) == 0)
		return 0;
	if (name_hint &&
	    python_version_from_name(name_hint, &out->major, &out->minor, &out->free_threaded) == 0)
		return 0;
	/* A renamed or copied interpreter: its own ABI tag says. */
	if (python_version_from_file(file, &out->major, &out->minor, &out->free_threaded) == 0)
		return 0;
	snprintf(err, errlen, "cannot tell the CPython version of %s: its name has no "
		 "pythonX.Y and it holds no .cpython-XY- ABI tag; is it CPython 3?", file);
	return -ENOEXEC;
}

int python_interp_of_exe(const char *exe, struct python_interp *out, char *err, size_t errlen)
{
	char needed[256], lib[PATH_MAX], real[PATH_MAX];

	if (!realpath(exe, real)) {
		snprintf(err, errlen, "%s: %s", exe, strerror(errno));
		return -errno;
	}
	if (python_needed_libpython(real, needed, sizeof(needed)) == 0) {
		if (python_resolve_library(real, needed, lib, sizeof(lib)) != 0) {
			snprintf(err, errlen, "%s needs %s, which is not in its RUNPATH, "
				 "LD_LIBRARY_PATH or the system library directories", exe, needed);
			return -ENOENT;
		}
		return interp_from_file(lib, needed, out, err, errlen);
	}
	return interp_from_file(real, exe, out, err, errlen);
}

int python_interp_of_pid(pid_t pid, struct python_interp *out, char *err, size_t errlen)
{
	char maps[64], line[4096 + 128], exe[PATH_MAX], link[64];
	FILE *f;
	ssize_t n;

	snprintf(maps, sizeof(maps), "/proc/%d/maps", (int)pid);
	f = fopen(maps, "r");
	if (!f) {
		snprintf(err, errlen, "cannot read %s: %s", maps, strerror(errno));
		return -errno;
	}
	while (fgets(line, sizeof(line), f)) {
		char *path = strchr(line, '/');
		if (!path || !strstr(path, "/libpython"))
			continue;
		path[strcspn(path, "\n")] = '\0';
		fclose(f);
		return interp_from_file(path, NULL, out, err, errlen);
	}
	fclose(f);
	snprintf(link, sizeof(link), "/proc/%d/exe", (int)pid);
	n = readlink(link, exe, sizeof(exe) - 1);
	if (n < 0) {
		snprintf(err, errlen, "cannot read %s: %s", link, strerror(errno));
		return -errno;
	}
	exe[n] = '\0';
	return interp_from_file(exe, NULL, out, err, errlen);
}
