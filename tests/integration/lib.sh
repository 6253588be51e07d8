# Helpers sourced by tests/integration/test_*.sh.
#
# run-all.sh exports PMETRICS (the binary), BUILD (build dir, absolute),
# ROOT (repository root). Each check is one `t_begin NAME` followed by
# exactly one of t_pass, t_fail MSG or t_skip REASON; the script prints one
# line per check and run-all.sh totals them.

set -u
: "${PMETRICS:?run through tests/run-all.sh}"
PROGS="$BUILD/progs"
T_NAME=""
T_TMP=$(mktemp -d /tmp/pmetrics-test.XXXXXX)
trap 'rm -rf "$T_TMP"' EXIT

t_begin() { T_NAME="$1"; }
t_pass() { echo "PASS $T_NAME"; }
t_fail() { echo "FAIL $T_NAME: $*"; }
t_skip() { echo "SKIP $T_NAME: $*"; }

# t_check NAME CONDITION-COMMAND... : pass when the command succeeds.
t_check() {
	local name="$1"; shift
	t_begin "$name"
	if "$@"; then t_pass; else t_fail "check failed: $*"; fi
}

# need_root: prints a skip for the current check and returns 1 when not root.
need_root() {
	if [ "$(id -u)" -ne 0 ]; then t_skip "needs root"; return 1; fi
	return 0
}

# fresh_dir: an empty output directory under the test's temp dir.
fresh_dir() { local d; d=$(mktemp -d "$T_TMP/out.XXXXXX"); echo "$d"; }

# rows FILE STATE: number of rows of STATE in a context-layout file.
rows() { awk -F, -v s="$2" '$1 == s { n++ } END { print n + 0 }' "$1" 2>/dev/null; }

now_ns() { date +%s%N; }
