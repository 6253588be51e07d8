#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Hardware watchpoints on one timed async function (bench/watchpoints/):
# how many times each fires per call, by kind of call (return, raise,
# cancelled task, gather), against untimed awaits and plain calls in the
# same run, which should trap 0 times. The premise of a Python hook whose
# cost falls only on timed calls. The pyenv CPythons 3.11-3.13 run here
# when this machine's watchpoints fire, else on an emulated x86 CPU with
# this machine's files (tests/robot/tcg-x86.sh: many virtual machines
# accept watchpoints and never fire them); and always on the emulated
# robot: Debian's arm64 python3.11 (LTO, stripped, as Debian ships it)
# under qemu-system-aarch64 -cpu cortex-a53 with Debian's arm64 kernel
# (tests/robot/kernel-lib.sh).
# Counts, not times: TCG's times say nothing of the robot's.
set -u
build=${1:-build}
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/.." && pwd)
calls=${BENCH_WATCH_CALLS:-100}
out=$(mktemp -d /tmp/pmetrics-bench-watch.XXXXXX)
trap 'rm -rf "$out"' EXIT
source "$here/lib.sh"
source "$root/tests/robot/kernel-lib.sh"

# table: the probe's PHASE lines on stdin as accesses per call.
table() {
	awk '/^VERSION/ { v = $2 } /^PHASE/ && $3 > 0 {
		printf "  %-12s %-16s %7d %14.2f %13.2f %13.2f %13.2f\n", v, $2, $3,
			$4 / $3, $5 / $3, $6 / $3, $7 / $3 }'
}

echo "Hardware watchpoints on one timed async function: accesses per call seen by each"
printf '  %-12s %-16s %7s %14s %13s %13s %13s\n' python calls n "code refcount" "first RESUME" \
	"first RETURN" "func refcount"

gcc -O2 -o "$out/watcher" "$here/watchpoints/watcher.c" || exit 1
# probe_all WATCHER: the probe under each pyenv CPython 3.11+ found here.
probe_all() {
	local v py
	for v in 3.11 3.12 3.13; do
		py=$(interpreter $v)
		[ -n "$py" ] && echo "$py $here/watchpoints/probe.py $1 $calls"
	done
}
fired=$("$out/watcher" --self-test 2>/dev/null || echo 0)
if [ "${fired:-0}" -gt 0 ]; then
	probe_all "$out/watcher" | bash | table
else
	# the same programs on an emulated x86 CPU, this machine's files shared
	echo "  (here watchpoints open but never fire: ${fired:-0} of 1000 writes seen; x86 rows from qemu TCG)"
	bash "$root/.ci/install-deps" qemu-system-x86 cpio >/dev/null 2>&1 || true
	source "$root/tests/robot/tcg-x86.sh"
	{ echo "echo SELFTEST \$($out/watcher --self-test)"; probe_all "$out/watcher"; } >"$out/x86.sh"
	if tcg_x86_run "$out/x86.sh" >"$out/x86.log"; then
		table <"$out/x86.log"
		echo "  (emulated x86: Debian's amd64 kernel $(basename "$TCG_KERNEL" | sed 's/^vmlinuz-//'), qemu TCG;" \
			"watchpoint self-test $(sed -n 's/^SELFTEST //p' "$out/x86.log") of 1000)"
	else
		echo "  emulated x86: skipped: $TCG_WHY"
	fi
fi

# The emulated robot: one boot, the probe as the guest's init.
guest_why=""
command -v qemu-system-aarch64 >/dev/null || guest_why="no qemu-system-aarch64 (make deps)"
command -v aarch64-linux-gnu-gcc >/dev/null || guest_why="no arm64 cross compiler (make deps)"
stage=$out/guest
if [ -z "$guest_why" ]; then
	mkdir -p "$stage"/{bin,proc,sys,dev,tmp,probe}
	for p in busybox-static python3.11-minimal libpython3.11-minimal libpython3.11-stdlib \
		libc6 zlib1g libexpat1 libffi8 libssl3; do
		kernel_deb "$p" || { guest_why=$KERNEL_WHY; break; }
		cp -a "$DEB_DIR"/. "$stage"/
	done
fi
[ -n "$guest_why" ] || kernel_debian || guest_why=$KERNEL_WHY
if [ -n "$guest_why" ]; then
	echo "  emulated robot: skipped: $guest_why"
	exit 0
fi
mv "$stage/bin/busybox" "$stage/busybox" 2>/dev/null || true
rm -rf "$stage/bin" && mkdir "$stage/bin" && mv "$stage/busybox" "$stage/bin/busybox"
aarch64-linux-gnu-gcc -static -O2 -o "$stage/probe/watcher" "$here/watchpoints/watcher.c" || exit 1
cp "$here/watchpoints/probe.py" "$stage/probe/"
cat >"$stage/init" <<INIT
#!/bin/busybox sh
/bin/busybox mount -t proc proc /proc
/bin/busybox mount -t sysfs sys /sys
/bin/busybox mount -t devtmpfs dev /dev
echo "SELFTEST \$(/probe/watcher --self-test)"
/usr/bin/python3.11 /probe/probe.py /probe/watcher $calls 2>&1
echo WATCH-GUEST-DONE
/bin/busybox poweroff -f
INIT
chmod 755 "$stage/init" "$stage/bin/busybox"
(cd "$stage" && find . | LC_ALL=C sort | cpio -o -H newc -R 0:0 --quiet) >"$out/guest.cpio" || exit 1
timeout -k 10 600 qemu-system-aarch64 -M virt -cpu cortex-a53 -m 1G -smp 2 -nographic -no-reboot \
	-nic none -kernel "$KERNEL_DIR/Image" -initrd "$out/guest.cpio" \
	-append "console=ttyAMA0 panic=-1 quiet" </dev/null 2>&1 | tr -d '\r' >"$out/guest.log"
if ! grep -q '^WATCH-GUEST-DONE' "$out/guest.log"; then
	echo "  emulated robot: the guest did not finish: $(grep -v '^$' "$out/guest.log" | tail -n 3 | tr '\n' ' ')"
	exit 1
fi
sed 's/^VERSION \(.*\)/VERSION \1-arm64/' "$out/guest.log" | table
echo "  (emulated robot: Debian's arm64 python3.11 on $(basename "$(readlink -f "$KERNEL_DIR/Image")"), qemu TCG cortex-a53;" \
	"watchpoint self-test $(sed -n 's/^SELFTEST //p' "$out/guest.log") of 1000)"
