// SPDX-License-Identifier: MIT
/* Python spans, user side: version layouts, py: probe checks, what the
 * BPF matcher is given, and interpreter discovery from file names. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "python_elf.h"
#include "python_probe.h"

static char err[1024];

static void layouts_cover_3_8_to_3_13(void **state)
{
	struct pyspan_layout l;

	(void)state;
	for (int minor = 8; minor <= 13; minor++) {
		assert_int_equal(pyspan_layout_for(3, minor, &l), 0);
		assert_true(l.code_filename && l.code_name && l.unicode_data && l.code_flags);
		/* the cache key reads co_filename, co_name and the next field at once */
		assert_int_equal(l.code_name, l.code_filename + 8);
		/* functions and coroutines carry their qualified name */
		assert_true(l.func_code && l.func_qualname && l.gen_qualname);
	}
	assert_int_equal(pyspan_layout_for(3, 7, &l), -1);
	assert_int_equal(pyspan_layout_for(3, 14, &l), -1);
	assert_int_equal(pyspan_layout_for(2, 7, &l), -1);
}

/* Up to 3.10 a coroutine points to a frame object (NULL once finished)
 * whose f_lasti is -1 before the first step; from 3.11 the frame is
 * embedded and gi_frame_state says created/suspended/running/completed. */
static void coroutine_state_follows_the_interpreter(void **state)
{
	struct pyspan_layout l;

	(void)state;
	for (int minor = 8; minor <= 10; minor++) {
		pyspan_layout_for(3, minor, &l);
		assert_int_equal(l.gen_frame, 16); /* after PyObject_HEAD */
		assert_int_equal(l.gen_iframe, 0);
		assert_int_equal(l.frame_code, 32); /* after PyObject_VAR_HEAD and f_back */
		assert_true(l.frame_lasti > l.frame_code);
	}
	for (int minor = 11; minor <= 13; minor++) {
		pyspan_layout_for(3, minor, &l);
		assert_int_equal(l.gen_frame, 0);
		assert_true(l.gen_iframe > l.gen_state);
		assert_true(l.state_created < 0);
		assert_int_equal(l.frame_lasti, 0);
	}
	pyspan_layout_for(3, 11, &l);
	assert_int_equal(l.frame_code, 32);
	pyspan_layout_for(3, 12, &l);
	assert_int_equal(l.frame_code, 0); /* f_code moved to the front */
	pyspan_layout_for(3, 13, &l);
	assert_int_equal(l.state_created, -3); /* FRAME_CREATED; -2 before */
	/* 3.9 -> 3.10: func_code moved behind the new fields */
	pyspan_layout_for(3, 9, &l);
	assert_int_equal(l.func_code, 16);
	pyspan_layout_for(3, 10, &l);
	assert_int_equal(l.func_code, 48);
}

static int check(const char *module, const char *qualname)
{
	struct py_probe p = { .module = module, .qualname = qualname };

	return pyspan_probe_check(&p, err, sizeof(err));
}

static void probe_names_accepted(void **state)
{
	(void)state;
	assert_int_equal(check("robot_server.protocols.router",
			       "create_protocol.<locals>._get_cached_protocol_analysis"), 0);
	assert_int_equal(check("robot_server.protocols.protocol_analyzer", "ProtocolAnalyzer.analyze"), 0);
	assert_int_equal(check("scenario", "tiny"), 0);
	assert_int_equal(check("m", "f.<lambda>"), 0);
}

static void probe_names_rejected(void **state)
{
	static const char *const modules[] = { "", ".a", "a.", "a..b", "1a", "a-b", "a/b", "a.<locals>" };
	static const char *const qualnames[] = { "", "f..g", ".f", "f.", "f.<>", "f.<lo cals>", "f(x)" };
	char longname[200];

	(void)state;
	for (size_t i = 0; i < sizeof(modules) / sizeof(modules[0]); i++) {
		assert_int_equal(check(modules[i], "f"), -EINVAL);
		assert_non_null(strstr(err, "bad module"));
	}
	for (size_t i = 0; i < sizeof(qualnames) / sizeof(qualnames[0]); i++) {
		assert_int_equal(check("m", qualnames[i]), -EINVAL);
		assert_non_null(strstr(err, "bad qualified name"));
	}
	memset(longname, 'a', sizeof(longname) - 1);
	longname[sizeof(longname) - 1] = '\0';
	assert_int_equal(check("m", longname), -ENAMETOOLONG);
	assert_int_equal(check(longname, "f"), -ENAMETOOLONG);
	/* the longest module accepted still fits whole in both suffixes */
	longname[PYSPAN_MODULE_MAX] = '\0';
	assert_int_equal(check(longname, "f"), 0);
	{
		struct py_probe p = { .module = longname, .qualname = "f" };
		struct pyspan_probe_cfg cfg;
		pyspan_probe_cfg_fill(&p, &cfg);
		assert_int_equal(cfg.pkg_len, PYSPAN_MODULE_MAX + strlen("/") + strlen("/__init__.py"));
		assert_int_equal(cfg.file_len, PYSPAN_MODULE_MAX + strlen("/") + strlen(".py"));
	}
	longname[PYSPAN_MODULE_MAX] = 'a';
	longname[PYSPAN_MODULE_MAX + 1] = '\0';
	assert_int_equal(check(longname, "f"), -ENAMETOOLONG);
}

static void matcher_config(void **state)
{
	struct py_probe p = { .probe_id = 7, .module = "robot_server.protocols.router",
			      .qualname = "create_protocol.<locals>._get_cached_protocol_analysis" };
	struct pyspan_probe_cfg cfg;

	(void)state;
	pyspan_probe_cfg_fill(&p, &cfg);
	assert_string_equal(cfg.qualname, p.qualname);
	assert_string_equal(cfg.file_suffix, "/robot_server/protocols/router.py");
	assert_string_equal(cfg.pkg_suffix, "/robot_server/protocols/router/__init__.py");
	assert_int_equal(cfg.file_len, strlen("/robot_server/protocols/router.py"));
	assert_int_equal(cfg.pkg_len, strlen("/robot_server/protocols/router/__init__.py"));
	assert_int_equal(cfg.probe_id, 7);

	p.module = "scenario";
	p.qualname = "tiny";
	pyspan_probe_cfg_fill(&p, &cfg);
	assert_string_equal(cfg.file_suffix, "/scenario.py");
}

static void version_from_file_names(void **state)
{
	static const struct { const char *name; int major, minor; bool threads; } ok[] = {
		{ "libpython3.10.so.1.0", 3, 10, false },
		{ "/root/.pyenv/versions/3.11.7/lib/libpython3.11.so.1.0", 3, 11, false },
		{ "/usr/bin/python3.11", 3, 11, false },
		{ "/usr/bin/python3.10", 3, 10, false },
		{ "libpython3.7m.so", 3, 7, false },
		{ "libpython3.13.so.1.0", 3, 13, false },
		{ "python3.13t", 3, 13, true },
		{ "/usr/lib/libpython3.13t.so.1.0", 3, 13, true },
	};
	static const char *const none[] = { "python3", "/usr/bin/python", "/opt/python3.10/bin/app",
					    "libfoo.so", "python.3" };
	int major, minor;
	bool threads;

	(void)state;
	for (size_t i = 0; i < sizeof(ok) / sizeof(ok[0]); i++) {
		assert_int_equal(python_version_from_name(ok[i].name, &major, &minor, &threads), 0);
		assert_int_equal(major, ok[i].major);
		assert_int_equal(minor, ok[i].minor);
		assert_int_equal(threads, ok[i].threads);
	}
	for (size_t i = 0; i < sizeof(none) / sizeof(none[0]); i++)
		assert_int_equal(python_version_from_name(none[i], &major, &minor, &threads), -1);
}

/* abi_tag_in LEN BYTES: the parser run on an exact-size heap copy, so
 * AddressSanitizer sees a read one byte past the end. */
static int abi_tag_in(const char *bytes, size_t len, int *major, int *minor, bool *threads)
{
	char *copy = malloc(len);
	int rc;

	assert_non_null(copy);
	memcpy(copy, bytes, len);
	rc = python_version_from_abi_tag(copy, len, major, minor, threads);
	free(copy);
	return rc;
}

/* A copied or renamed interpreter: the version comes from the ABI tag in
 * its bytes, among NULs and decoys, never read past the end. */
static void version_from_abi_tags(void **state)
{
#define BYTES(s) s, sizeof(s) - 1
	static const struct { const char *bytes; size_t len; int minor; bool threads; } ok[] = {
		{ BYTES("\0\0x.cpython-310-x86_64-linux-gnu.so\0"), 10, false },
		{ BYTES(".cpython-313t-aarch64-linux-gnu.so"), 13, true },
		{ BYTES(".cpython-37m-x86_64-linux-gnu.so"), 7, false },
		{ BYTES(".cpython-311d-x86_64-linux-gnu.so"), 11, false },
		{ BYTES(".cpython-3x .cpython-- .cpython-39-x86_64"), 9, false },
	};
	static const struct { const char *bytes; size_t len; } none[] = {
		{ BYTES("no tag at all") }, { BYTES("cut .cpython-31") }, { BYTES(".cpython-310") },
		{ BYTES(".cpython-3-x86_64") }, { BYTES(".cpython-3100-x86_64") },
	};
#undef BYTES
	int major, minor;
	bool threads;

	(void)state;
	for (size_t i = 0; i < sizeof(ok) / sizeof(ok[0]); i++) {
		assert_int_equal(abi_tag_in(ok[i].bytes, ok[i].len, &major, &minor, &threads), 0);
		assert_int_equal(major, 3);
		assert_int_equal(minor, ok[i].minor);
		assert_int_equal(threads, ok[i].threads);
	}
	for (size_t i = 0; i < sizeof(none) / sizeof(none[0]); i++)
		assert_int_equal(abi_tag_in(none[i].bytes, none[i].len, &major, &minor, &threads), -1);
}

/* A pyenv interpreter links libpython: DT_NEEDED names it and RUNPATH
 * finds it. Skipped where pyenv's 3.10 is not installed. */
static void pyenv_interpreter_found(void **state)
{
	const char *exe = "/root/.pyenv/versions/3.10.13/bin/python3.10";
	struct python_interp interp;
	char needed[256];

	(void)state;
	if (access(exe, X_OK) != 0)
		skip();
	assert_int_equal(python_needed_libpython(exe, needed, sizeof(needed)), 0);
	assert_string_equal(needed, "libpython3.10.so.1.0");
	assert_int_equal(python_interp_of_exe(exe, &interp, err, sizeof(err)), 0);
	assert_string_equal(interp.path, "/root/.pyenv/versions/3.10.13/lib/libpython3.10.so.1.0");
	assert_int_equal(interp.major, 3);
	assert_int_equal(interp.minor, 10);
}

static void non_python_executable_rejected(void **state)
{
	struct python_interp interp;

	(void)state;
	assert_int_not_equal(python_interp_of_exe("/bin/sh", &interp, err, sizeof(err)), 0);
	assert_non_null(strstr(err, "not a CPython interpreter"));
	assert_int_not_equal(python_interp_of_exe("/nonexistent/python3.10", &interp, err, sizeof(err)), 0);
	assert_non_null(strstr(err, "No such file"));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(layouts_cover_3_8_to_3_13),
		cmocka_unit_test(coroutine_state_follows_the_interpreter),
		cmocka_unit_test(probe_names_accepted),
		cmocka_unit_test(probe_names_rejected),
		cmocka_unit_test(matcher_config),
		cmocka_unit_test(version_from_file_names),
		cmocka_unit_test(version_from_abi_tags),
		cmocka_unit_test(pyenv_interpreter_found),
		cmocka_unit_test(non_python_executable_rejected),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
