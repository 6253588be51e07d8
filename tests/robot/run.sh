#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The emulated robot: boots qemu-system-aarch64 -M virt -cpu cortex-a53
# (TCG: no KVM needed) on each KERNEL with an initramfs holding busybox,
# build/robot/pmetrics (make robot), static arm64 test programs and the
# guest checks (tests/robot/guest/checks.sh); collects the PASS/FAIL/SKIP
# lines the guest prints on its serial console, naming the kernel in each.
#   bash tests/robot/run.sh [--no-total] BUILD_DIR KERNEL...
# KERNEL:
#   debian          Debian bookworm's arm64 kernel (BTF, uprobe events)
#   robot           built here from linux-source-6.1 with the robot's
#                   lines (tests/robot/robot-base.cfg: FTRACE off, reduced
#                   debug info, no BTF)
#   robot-pmetrics  the same with dist/kernel/pmetrics.cfg merged in
#   robot-nobtf     the same without BTF (tests/robot/no-btf.cfg): uprobe
#                   events and BPF tracing, but no kernel struct layout
# Environment: PMETRICS_ROBOT_TIMEOUT (seconds per boot, default 600),
# PMETRICS_ROBOT_SMP (guest CPUs, default 2), PMETRICS_KERNEL_CACHE.
# Exits 1 when a check failed. Full console logs: BUILD_DIR/robot/KERNEL.log.
set -u
total=1
if [ "${1:-}" = --no-total ]; then total=0; shift; fi
build=$(cd "${1:?usage: run.sh [--no-total] BUILD_DIR KERNEL...}" && pwd)
shift
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
source "$here/kernel-lib.sh"
robot="$build/robot"
passed=0 failed=0 skipped=0
limit=${PMETRICS_ROBOT_TIMEOUT:-600}

say() { echo "$1"; case "$1" in PASS\ *) passed=$((passed + 1)) ;; FAIL\ *) failed=$((failed + 1)) ;;
	SKIP\ *) skipped=$((skipped + 1)) ;; esac; }

# guest_prereqs: what every boot needs; sets WHY when something is missing.
guest_prereqs() {
	local p
	WHY=""
	command -v qemu-system-aarch64 >/dev/null || { WHY="no qemu-system-aarch64 (Debian package qemu-system-arm; make deps installs it)"; return 1; }
	command -v cpio >/dev/null || { WHY="no cpio (make deps installs it)"; return 1; }
	for p in pmetrics progs/spanprog progs/spanprog-nopie progs/res_burn progs/res_touch \
		progs/sample_burn progs/sample_burn-nofp; do
		[ -x "$robot/$p" ] || { WHY="no $robot/$p (make robot-guest builds it; it needs the arm64 cross toolchain: make deps)"; return 1; }
	done
	kernel_deb busybox-static || { WHY=$KERNEL_WHY; return 1; }
	BUSYBOX="$DEB_DIR/bin/busybox"
	guest_python
}

# guest_python: Debian's arm64 python3.11 and what it loads, unpacked
# together in PY_ROOT (an interpreter built as Debian builds it: static,
# LTO, stripped to .dynsym, as near the robot's stripped libpython as a
# Debian package comes). Optional: without it the guest's Python checks
# are skipped, with PY_WHY as the reason.
GUEST_PYTHON_DEBS=(python3.11-minimal libpython3.11-minimal libpython3.11-stdlib
	libc6 zlib1g libexpat1 libffi8 libssl3)
guest_python() {
	local p stamp
	PY_ROOT="$robot/python-arm64" PY_WHY=""
	stamp=$(for p in "${GUEST_PYTHON_DEBS[@]}"; do apt-cache policy "$p:arm64" 2>/dev/null |
		sed -n 's/^ *Candidate: *//p'; done | tr '\n' ' ')
	[ -n "$stamp" ] && [ "$(cat "$PY_ROOT/.debs" 2>/dev/null)" = "$stamp" ] && return 0
	rm -rf "$PY_ROOT" && mkdir -p "$PY_ROOT"
	for p in "${GUEST_PYTHON_DEBS[@]}"; do
		kernel_deb "$p" || { PY_WHY=$KERNEL_WHY; rm -rf "$PY_ROOT"; return 0; }
		cp -a "$DEB_DIR"/. "$PY_ROOT"/
	done
	rm -f "$PY_ROOT/.pmetrics-unpacked"
	echo "$stamp" >"$PY_ROOT/.debs"
}

# initramfs NAME: the guest's initramfs for kernel NAME (in $KERNEL_DIR).
initramfs() {
	local name="$1" stage="$robot/guest-$1" rel
	rm -rf "$stage" && mkdir -p "$stage"/{bin,sbin,usr/bin,usr/sbin,proc,sys,dev,tmp,root,boot,robot/progs}
	cp "$BUSYBOX" "$stage/bin/busybox"
	cp "$here/guest/init" "$stage/init"
	cp "$here/guest/lib.sh" "$here/guest/checks.sh" "$robot/pmetrics" "$stage/robot/"
	cp "$robot"/progs/{spanprog,spanprog-nopie,res_burn,res_touch,sample_burn,sample_burn-nofp} "$stage/robot/progs/"
	if [ -d "$PY_ROOT" ]; then
		(cd "$PY_ROOT" && tar -c --exclude=./bin --exclude=./sbin --exclude=./usr/share --exclude=./.debs .) | tar -x -C "$stage"
		mkdir -p "$stage/robot/py" "$stage/dev/shm"
		cp -r "$root/tests/progs/py/pmtest" "$root/tests/progs/py/robot_server" "$root/tests/progs/py/scenario.py" \
			"$root/tests/integration/span_refs.py" "$stage/robot/py/"
	else
		echo "$PY_WHY" >"$stage/robot/python.why"
	fi
	chmod 755 "$stage/init" "$stage/bin/busybox"
	# Debian's kernel has no /proc/config.gz: its config goes where a
	# Debian system keeps it.
	if [ -f "$KERNEL_DIR/config" ] && ! grep -q '^CONFIG_IKCONFIG_PROC=y' "$KERNEL_DIR/config"; then
		rel=$(basename "$(readlink -f "$KERNEL_DIR/config")"); rel=${rel#config-}
		cp "$KERNEL_DIR/config" "$stage/boot/config-$rel"
	fi
	if [ -f "$KERNEL_DIR/vmlinux.btf" ]; then
		cp "$KERNEL_DIR/vmlinux.btf" "$stage/robot/kernel.btf"
	elif [ -s "$KERNEL_DIR/pahole.log" ]; then
		echo "  [$name] no /robot/kernel.btf: pahole --btf_encode_detached on its vmlinux failed: $(tr '\n' ' ' <"$KERNEL_DIR/pahole.log")"
	fi
	(cd "$stage" && find . | LC_ALL=C sort | cpio -o -H newc -R 0:0 --quiet) >"$robot/initramfs-$name.cpio"
}

# boot NAME LABEL: boots $KERNEL_DIR/Image with the initramfs, reports.
boot() {
	local name="$1" label="$2" log="$robot/$1.log" t0 secs rc line
	initramfs "$name" || { say "FAIL [$label] guest: cannot make the initramfs"; return; }
	echo "== robot $label: booting $(basename "$(readlink -f "$KERNEL_DIR/Image")") (qemu TCG, limit $limit s)"
	t0=$(date +%s)
	timeout -k 10 "$limit" qemu-system-aarch64 -M virt -cpu cortex-a53 -m 1G \
		-smp "${PMETRICS_ROBOT_SMP:-2}" -nographic -no-reboot -nic none \
		-kernel "$KERNEL_DIR/Image" -initrd "$robot/initramfs-$name.cpio" \
		-append "console=ttyAMA0 panic=-1 quiet" </dev/null >"$log.raw" 2>&1
	rc=$?
	secs=$(($(date +%s) - t0))
	tr -d '\r' <"$log.raw" >"$log" && rm -f "$log.raw"
	while IFS= read -r line; do
		case "$line" in
		PASS\ *|FAIL\ *|SKIP\ *) say "${line%% *} [$label] ${line#* }" ;;
		INFO\ *) echo "  [$label] ${line#INFO }" ;;
		esac
	done <"$log"
	if ! grep -q '^ROBOT-GUEST-DONE' "$log"; then
		if [ $rc -eq 124 ]; then say "FAIL [$label] guest: no end after $limit s (killed); log $log"
		else say "FAIL [$label] guest: ended without finishing its checks (qemu exit $rc): $(grep -v '^$' "$log" | tail -n 3 | tr '\n' ' ')"; fi
	fi
	echo "  [$label] qemu ran $secs s; kernel reached init at $(sed -n 's/^ROBOT-GUEST-START uptime \([0-9.]*\).*/\1/p' "$log") s of guest uptime; log $log"
}

mkdir -p "$robot"
if ! guest_prereqs; then
	for k in "$@"; do say "SKIP [$k] robot guest: $WHY"; done
else
	for k in "$@"; do
		case "$k" in
		debian) kernel_debian && label="debian $(basename "$(readlink -f "$KERNEL_DIR/Image")" | sed 's/^vmlinuz-//')" ;;
		robot) kernel_build robot && label="robot 6.1, no FTRACE/BTF" ;;
		robot-pmetrics) kernel_build robot-pmetrics "$root/dist/kernel/pmetrics.cfg" && label="robot 6.1 + pmetrics.cfg" ;;
		robot-nobtf) kernel_build robot-nobtf "$root/dist/kernel/pmetrics.cfg" "$root/tests/robot/no-btf.cfg" &&
			label="robot 6.1 + pmetrics.cfg without BTF" ;;
		*) echo "run.sh: unknown kernel $k (debian, robot, robot-pmetrics, robot-nobtf)" >&2; exit 2 ;;
		esac
		if [ $? -ne 0 ]; then
			# A kernel that cannot be had for want of a package or a tool is
			# skipped; one that fails to build is a failure.
			case "$KERNEL_WHY" in
			"kernel build failed"*) say "FAIL [$k] kernel: $KERNEL_WHY" ;;
			*) say "SKIP [$k] kernel: $KERNEL_WHY" ;;
			esac
			continue
		fi
		boot "$k" "$label"
	done
fi
if [ $total -eq 1 ]; then
	echo
	echo "$passed passed, $failed failed, $skipped skipped"
fi
[ "$failed" -eq 0 ]
