#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# This machine's own programs under an emulated x86-64 CPU: Debian's
# amd64 kernel booted by qemu-system-x86_64 in TCG (no KVM), with this
# machine's root file system shared read-only (9p) and made writable in
# the guest by an overlay whose changes vanish with it. For what a
# virtual machine may not do but TCG emulates: hardware watchpoints (some
# accept them and never fire them). Sourced, not run; uses
# tests/robot/kernel-lib.sh's cache.
#
#   tcg_x86_run SCRIPT   runs SCRIPT (a file on this machine, by bash,
#                        as root, from /) in the guest; its output goes
#                        to stdout. Non-zero with the reason in
#                        $TCG_WHY when the guest could not run it to the
#                        end; SCRIPT's own exit status is printed as
#                        "TCG-X86-EXIT N".
#
# PMETRICS_TCG_KERNEL=BZIMAGE boots that kernel instead of Debian's: one
# with what the guest needs built in (tests/robot/x86-guest.cfg), as no
# module is loaded then. That is how another kernel version (the Flex's
# 5.15 or 6.6, from their own source) is tried with the same tests.

TCG_X86_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
source "$TCG_X86_DIR/kernel-lib.sh"
TCG_WHY=""
# What the guest loads to reach the shared root, in dependency order.
TCG_X86_MODULES=(virtio_ring virtio virtio_pci_legacy_dev virtio_pci_modern_dev virtio_pci
	netfs fscache 9pnet 9pnet_virtio 9p overlay)

# tcg_x86_kernel: Debian's amd64 kernel (or PMETRICS_TCG_KERNEL) and
# busybox-static; sets TCG_KERNEL, TCG_MODULES (its module tree),
# TCG_LOAD (the modules the guest loads: none for a kernel of one's own)
# and TCG_BUSYBOX.
tcg_x86_kernel() {
	local meta
	TCG_LOAD=("${TCG_X86_MODULES[@]}")
	if [ -n "${PMETRICS_TCG_KERNEL:-}" ]; then
		[ -f "$PMETRICS_TCG_KERNEL" ] ||
			{ TCG_WHY="PMETRICS_TCG_KERNEL: no file $PMETRICS_TCG_KERNEL"; return 1; }
		TCG_KERNEL=$PMETRICS_TCG_KERNEL TCG_MODULES="" TCG_LOAD=()
		tcg_x86_busybox
		return
	fi
	meta=$(apt-cache depends linux-image-amd64:amd64 2>/dev/null |
		sed -n 's/^ *Depends: \(linux-image-[0-9.]*-[0-9]*-amd64\).*/\1/p' | head -n 1)
	[ -n "$meta" ] || { TCG_WHY="apt knows no linux-image-amd64"; return 1; }
	KERNEL_DEB_ARCH=amd64 kernel_deb "$meta-unsigned" ./boot ./lib/modules ||
		{ TCG_WHY=$KERNEL_WHY; return 1; }
	TCG_KERNEL=$(ls "$DEB_DIR"/boot/vmlinuz-* 2>/dev/null | head -n 1)
	TCG_MODULES=$(ls -d "$DEB_DIR"/lib/modules/* 2>/dev/null | head -n 1)
	[ -n "$TCG_KERNEL" ] && [ -n "$TCG_MODULES" ] || { TCG_WHY="no kernel image in $meta"; return 1; }
	tcg_x86_busybox
}

tcg_x86_busybox() {
	KERNEL_DEB_ARCH=amd64 kernel_deb busybox-static || { TCG_WHY=$KERNEL_WHY; return 1; }
	TCG_BUSYBOX=$DEB_DIR/bin/busybox
}

# tcg_x86_initramfs STAGE SCRIPT: the guest's initramfs in STAGE.
tcg_x86_initramfs() {
	local stage=$1 script=$2 m f
	mkdir -p "$stage"/{bin,proc,sys,dev,host,upper,root,modules} || return 1
	cp "$TCG_BUSYBOX" "$stage/bin/busybox"
	for m in "${TCG_LOAD[@]}"; do
		f=$(find "$TCG_MODULES" -name "$m.ko" | head -n 1)
		[ -n "$f" ] || { TCG_WHY="the amd64 kernel has no $m.ko"; return 1; }
		cp "$f" "$stage/modules/"
	done
	cat >"$stage/init" <<INIT
#!/bin/busybox sh
B=/bin/busybox
\$B mount -t proc proc /proc
\$B mount -t devtmpfs dev /dev
for m in ${TCG_LOAD[*]}; do \$B insmod /modules/\$m.ko || echo "TCG-X86-FAIL insmod \$m"; done
\$B mount -t 9p -o trans=virtio,version=9p2000.L,ro,msize=262144 host /host || echo "TCG-X86-FAIL 9p"
\$B mount -t tmpfs upper /upper && \$B mkdir -p /upper/data /upper/work
\$B mount -t overlay -o lowerdir=/host,upperdir=/upper/data,workdir=/upper/work root /root ||
	echo "TCG-X86-FAIL overlay"
for d in proc sys dev; do \$B mkdir -p /root/\$d; done
\$B mount -t proc proc /root/proc
\$B mount -t sysfs sys /root/sys
\$B mount -t devtmpfs dev /root/dev
\$B mount -t tracefs tracefs /root/sys/kernel/tracing 2>/dev/null
\$B mount -t debugfs debugfs /root/sys/kernel/debug 2>/dev/null
\$B mount -t bpf bpf /root/sys/fs/bpf 2>/dev/null
echo TCG-X86-START
\$B chroot /root /usr/bin/env -i HOME=/root TERM=dumb \\
	PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \\
	/bin/bash -c 'cd / && bash "\$0"' "$script"
echo "TCG-X86-EXIT \$?"
\$B poweroff -f
INIT
	chmod 755 "$stage/init" "$stage/bin/busybox"
	(cd "$stage" && find . | LC_ALL=C sort | cpio -o -H newc -R 0:0 --quiet) >"$stage.cpio"
}

tcg_x86_run() {
	local script=$1 stage log rc
	TCG_WHY=""
	command -v qemu-system-x86_64 >/dev/null ||
		{ TCG_WHY="no qemu-system-x86_64 (Debian package qemu-system-x86)"; return 1; }
	command -v cpio >/dev/null || { TCG_WHY="no cpio"; return 1; }
	tcg_x86_kernel || return 1
	stage=$(mktemp -d /tmp/pmetrics-tcg-x86.XXXXXX)
	log=$stage.log
	if ! tcg_x86_initramfs "$stage/fs" "$script"; then
		rm -rf "$stage"; return 1
	fi
	timeout -k 10 "${PMETRICS_TCG_TIMEOUT:-1200}" qemu-system-x86_64 -machine q35 -cpu max -m 2G \
		-smp 2 -nographic -no-reboot -nic none -kernel "$TCG_KERNEL" -initrd "$stage/fs.cpio" \
		-virtfs local,path=/,mount_tag=host,security_model=none,readonly=on \
		-append "console=ttyS0 panic=-1 quiet" </dev/null 2>&1 | tr -d '\r' >"$log"
	rc=${PIPESTATUS[0]}
	sed -n '/^TCG-X86-START/,/^TCG-X86-EXIT/{/^TCG-X86-START/d;p}' "$log"
	if grep -q '^TCG-X86-FAIL' "$log"; then
		TCG_WHY="the guest could not reach this machine's files: $(grep '^TCG-X86-FAIL' "$log" | head -n 3 | tr '\n' ' ')"
	elif ! grep -q '^TCG-X86-EXIT' "$log"; then
		TCG_WHY="the guest did not finish (qemu exit $rc): $(grep -v '^$' "$log" | tail -n 3 | tr '\n' ' ')"
	fi
	rm -rf "$stage" "$log"
	[ -z "$TCG_WHY" ]
}
