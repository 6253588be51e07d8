#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Downloads Debian's arm64 libpython3.11 and its debug file (apt-get
# download, ~38 MB once: nothing is installed) for tests/unit/test_python_hooks.c,
# which checks the aarch64 paths of user/python_hooks.c on them: the
# R_AARCH64_RELATIVE opcode table, the type slots, bl decoding.
# Usage: tests/unit/fetch-arm64-python.sh DIR
# Leaves DIR/libpython3.11.so.1.0 and DIR/libpython3.11.debug, or
# DIR/skipped saying why not (no arm64 in dpkg, no network, ...).
set -u
dir=$1
[ -e "$dir/libpython3.11.so.1.0" ] && [ -e "$dir/libpython3.11.debug" ] && exit 0
mkdir -p "$dir" && cd "$dir" || exit 1
rm -rf skipped debs root
skip() { echo "$*" >skipped; exit 0; }
command -v apt-get >/dev/null || skip "no apt-get to download Debian's arm64 libpython3.11"
mkdir debs && cd debs || exit 1
# the debug file of libpython3.11.so.1.0 is in python3.11-dbg
if ! apt-get download libpython3.11:arm64 python3.11-dbg:arm64 >../download.log 2>&1; then
	skip "apt-get download libpython3.11:arm64 python3.11-dbg:arm64 failed: $(grep -m1 '^E:' ../download.log)"
fi
cd .. || exit 1
dpkg-deb -x debs/libpython3.11_*_arm64.deb root || skip "cannot unpack libpython3.11:arm64"
lib=root/usr/lib/aarch64-linux-gnu/libpython3.11.so.1.0
id=$(readelf -n "$lib" 2>/dev/null | sed -n 's/^ *Build ID: *//p')
debug=usr/lib/debug/.build-id/${id:0:2}/${id:2}.debug
[ -n "$id" ] || skip "$lib has no build id"
dpkg-deb --fsys-tarfile debs/python3.11-dbg_*_arm64.deb | tar -x -C root "./$debug" 2>/dev/null ||
	skip "python3.11-dbg:arm64 has no $debug (another version than libpython3.11:arm64?)"
rm -rf debs
ln -sf "root/$debug" libpython3.11.debug
ln -sf "$lib" libpython3.11.so.1.0
