#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Kernels for the emulated robot (tests/robot/run.sh) and the fragment
# test (tests/integration/test_kernel_fragment.sh). Sourced, not run.
#
# Everything downloaded, extracted or built lives in a cache outside the
# checkout, keyed by its exact inputs, and is reused on later runs:
#   $PMETRICS_KERNEL_CACHE (default /var/cache/pmetrics/kernels, or
#   ~/.cache/pmetrics/kernels when that is not writable)
#     src/linux-source-6.1_VERSION/   Debian's linux-source-6.1, unpacked
#     kernels/NAME-KEY/               one build: Image, config, ...; KEY
#                                     hashes the source version, the
#                                     compiler, pahole and the .config
#     debs/PACKAGE_VERSION/           an unpacked arm64 Debian package
#     debs/PACKAGE_VERSION_ARCH/      one of another architecture
# Builds run one at a time (a lock in the cache), at nice 19, make -j2.
#
# Functions return non-zero with the reason in $KERNEL_WHY.

KERNEL_ROBOT_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
KERNEL_WHY=""
KERNEL_JOBS=${PMETRICS_KERNEL_JOBS:-2}
if [ -n "${PMETRICS_KERNEL_CACHE:-}" ]; then
	KERNEL_CACHE=$PMETRICS_KERNEL_CACHE
elif mkdir -p /var/cache/pmetrics/kernels 2>/dev/null && [ -w /var/cache/pmetrics/kernels ]; then
	KERNEL_CACHE=/var/cache/pmetrics/kernels
else
	KERNEL_CACHE=${XDG_CACHE_HOME:-$HOME/.cache}/pmetrics/kernels
fi
# Cross-compile on anything but arm64.
if [ "$(uname -m)" = aarch64 ]; then KERNEL_CROSS=""; else KERNEL_CROSS=aarch64-linux-gnu-; fi
KERNEL_MAKE=(make -s ARCH=arm64 CROSS_COMPILE="$KERNEL_CROSS")

# kernel_log MESSAGE: progress on stderr (stdout is for results).
kernel_log() { echo "robot-kernel: $*" >&2; }

# kernel_src: sets KERNEL_SRC to an unpacked linux-source-6.1 tree.
kernel_src() {
	local ver tarball dir
	tarball=/usr/src/linux-source-6.1.tar.xz
	ver=$(dpkg-query -W -f='${Version}' linux-source-6.1 2>/dev/null)
	if [ -z "$ver" ] || [ ! -f "$tarball" ]; then
		KERNEL_WHY="Debian package linux-source-6.1 is not installed (make test-robot, as root, installs it)"
		return 1
	fi
	dir="$KERNEL_CACHE/src/linux-source-6.1_$ver"
	if [ ! -f "$dir/.pmetrics-unpacked" ]; then
		kernel_log "unpacking $tarball into $dir"
		mkdir -p "$KERNEL_CACHE/src" || { KERNEL_WHY="cannot create $KERNEL_CACHE/src"; return 1; }
		rm -rf "$dir" "$dir.tmp" && mkdir -p "$dir.tmp" &&
			tar -xf "$tarball" -C "$dir.tmp" --strip-components=1 &&
			touch "$dir.tmp/.pmetrics-unpacked" && mv "$dir.tmp" "$dir" ||
			{ KERNEL_WHY="cannot unpack $tarball into $dir"; rm -rf "$dir.tmp"; return 1; }
	fi
	KERNEL_SRC=$dir
	KERNEL_SRC_VERSION=$ver
}

# kernel_tools_missing: names the host tools a config or build needs that
# are not there (empty when all are).
kernel_tools_missing() {
	local t missing=()
	for t in make flex bison bc pahole "${KERNEL_CROSS}gcc"; do
		command -v "$t" >/dev/null || missing+=("$t")
	done
	echo "${missing[*]}"
}

# kernel_config OUT [FRAGMENT...]: OUT/.config for arm64 from
# `allnoconfig` + tests/robot/robot-base.cfg (the robot's lines, booting on
# qemu virt), then each FRAGMENT merged by the kernel's own
# scripts/kconfig/merge_config.sh, then `olddefconfig`, as a Yocto kernel
# build does it. Messages go to OUT/config.log.
kernel_config() {
	local out="$1" missing; shift
	kernel_src || return 1
	missing=$(kernel_tools_missing)
	if [ -n "$missing" ]; then KERNEL_WHY="missing host tools: $missing"; return 1; fi
	mkdir -p "$out" && rm -f "$out/.config"
	{
		"${KERNEL_MAKE[@]}" -C "$KERNEL_SRC" O="$out" allnoconfig &&
			(cd "$out" && "$KERNEL_SRC/scripts/kconfig/merge_config.sh" -m .config \
				"$KERNEL_ROBOT_DIR/robot-base.cfg" "$@") &&
			"${KERNEL_MAKE[@]}" -C "$KERNEL_SRC" O="$out" olddefconfig
	} >"$out/config.log" 2>&1 || { KERNEL_WHY="config failed: $(tail -n 3 "$out/config.log" | tr '\n' ' ')"; return 1; }
}

# kernel_config_lost FRAGMENT CONFIG: prints every line of FRAGMENT whose
# value CONFIG does not have: "CONFIG_X=v" must be there verbatim; "#
# CONFIG_X is not set" means neither =y nor =m (absent is fine).
kernel_config_lost() {
	local line sym
	while IFS= read -r line; do
		case "$line" in
		CONFIG_*=*)
			grep -qxF -- "$line" "$2" ||
				echo "$line (got: $(grep -E "^(# )?${line%%=*}[= ]" "$2" || echo absent))" ;;
		"# CONFIG_"*" is not set")
			sym=${line#\# }; sym=${sym%% *}
			grep -qE "^$sym=" "$2" && echo "$line (got: $(grep -E "^$sym=" "$2"))" ;;
		esac
	done <"$1"
}

# kernel_build NAME [FRAGMENT...]: builds (or finds in the cache) an arm64
# Image from kernel_config plus CONFIG_LOCALVERSION="-NAME"; sets
# KERNEL_DIR to the directory holding Image, config, build-seconds and,
# for a kernel without BTF, vmlinux.btf (what pahole makes of its reduced
# debug info: a stand-in for a BTF file made for the robot's kernel).
kernel_build() {
	local name="$1" cfgdir key dir obj t0 frag; shift
	cfgdir=$(mktemp -d /tmp/pmetrics-kcfg.XXXXXX)
	frag="$cfgdir/localversion.cfg"
	printf 'CONFIG_LOCALVERSION="-%s"\n' "$name" >"$frag"
	if ! kernel_config "$cfgdir/out" "$@" "$frag"; then rm -rf "$cfgdir"; return 1; fi
	key=$({
		echo "$KERNEL_SRC_VERSION"
		"${KERNEL_CROSS}gcc" --version | head -n 1
		pahole --version
		grep -v '^#' "$cfgdir/out/.config" | grep .
	} | sha256sum | cut -c1-16)
	dir="$KERNEL_CACHE/kernels/$name-$key"
	cp "$cfgdir/out/.config" "$cfgdir/config"
	rm -rf "$cfgdir/out"
	mkdir -p "$KERNEL_CACHE/kernels"
	# One build at a time, on this machine, across runs (a finished entry
	# is only ever renamed into place, so a cached one needs no lock).
	exec {lockfd}>"$KERNEL_CACHE/kernels/.lock"
	if [ ! -f "$dir/Image" ] && ! flock -n "$lockfd"; then
		kernel_log "$name: another kernel build is running here; waiting for it"
		flock "$lockfd"
	fi
	if [ -f "$dir/Image" ]; then
		kernel_log "$name: cached $dir (built in $(cat "$dir/build-seconds") s)"
	else
		obj="$KERNEL_CACHE/kernels/.obj-$name-$key"
		rm -rf "$obj" && mkdir -p "$obj" && cp "$cfgdir/config" "$obj/.config"
		kernel_log "$name: building $KERNEL_SRC_VERSION into $obj (nice 19, -j$KERNEL_JOBS; minutes)"
		t0=$(date +%s)
		if ! nice -n 19 make -C "$KERNEL_SRC" O="$obj" ARCH=arm64 CROSS_COMPILE="$KERNEL_CROSS" \
			KBUILD_BUILD_USER=pmetrics KBUILD_BUILD_HOST=robot-test -j"$KERNEL_JOBS" Image \
			>"$obj/build.log" 2>&1; then
			KERNEL_WHY="kernel build failed: see $obj/build.log: $(grep -m1 -i 'error' "$obj/build.log")"
			exec {lockfd}>&-; rm -rf "$cfgdir"; return 1
		fi
		mkdir -p "$dir.tmp"
		cp "$obj/arch/arm64/boot/Image" "$obj/System.map" "$dir.tmp/" &&
			cp "$obj/.config" "$dir.tmp/config" &&
			echo $(($(date +%s) - t0)) >"$dir.tmp/build-seconds" || {
			KERNEL_WHY="cannot store the build in $dir"; exec {lockfd}>&-; rm -rf "$cfgdir"; return 1; }
		if ! grep -q '^CONFIG_DEBUG_INFO_BTF=y' "$obj/.config"; then
			pahole --btf_encode_detached="$dir.tmp/vmlinux.btf" "$obj/vmlinux" >"$dir.tmp/pahole.log" 2>&1 ||
				rm -f "$dir.tmp/vmlinux.btf"
		fi
		rm -rf "$dir" && mv "$dir.tmp" "$dir" && rm -rf "$obj"
		kernel_log "$name: built in $(cat "$dir/build-seconds") s: $dir"
	fi
	exec {lockfd}>&-
	rm -rf "$cfgdir"
	KERNEL_DIR=$dir
}

# kernel_deb PACKAGE [MEMBER...]: downloads (apt-get download) and unpacks
# a Debian package of architecture $KERNEL_DEB_ARCH (default arm64; only
# MEMBERs, e.g. ./boot, when given) into the cache; sets DEB_DIR. The
# version is apt's current candidate, so a new point release is a new
# cache entry.
kernel_deb() {
	local pkg="$1" arch=${KERNEL_DEB_ARCH:-arm64} ver dir tmp; shift
	ver=$(apt-cache policy "$pkg:$arch" 2>/dev/null | sed -n 's/^ *Candidate: *//p')
	if [ -z "$ver" ] || [ "$ver" = "(none)" ]; then
		KERNEL_WHY="apt knows no $pkg:$arch (needs the $arch architecture in dpkg and apt-get update: make deps)"
		return 1
	fi
	dir="$KERNEL_CACHE/debs/${pkg}_${ver//:/%3a}"
	[ "$arch" = arm64 ] || dir+="_$arch"
	if [ ! -f "$dir/.pmetrics-unpacked" ]; then
		tmp=$(mktemp -d /tmp/pmetrics-deb.XXXXXX)
		kernel_log "downloading $pkg:$arch $ver"
		if ! (cd "$tmp" && apt-get download -qq "$pkg:$arch=$ver" >/dev/null 2>"$tmp/err") ||
			! mkdir "$tmp/root" ||
			! dpkg-deb --fsys-tarfile "$tmp"/*.deb | tar -x -C "$tmp/root" "$@"; then
			KERNEL_WHY="cannot download $pkg:$arch $ver: $(head -c 200 "$tmp/err")"
			rm -rf "$tmp"; return 1
		fi
		mkdir -p "$(dirname "$dir")" && rm -rf "$dir" && touch "$tmp/root/.pmetrics-unpacked" &&
			mv "$tmp/root" "$dir"
		rm -rf "$tmp"
	fi
	DEB_DIR=$dir
}

# kernel_debian: Debian bookworm's arm64 kernel (linux-image-arm64's
# current dependency, the -unsigned flavour: the same Image without the
# EFI signature). Sets KERNEL_DIR (Image, config) like kernel_build.
kernel_debian() {
	local meta pkg
	meta=$(apt-cache depends linux-image-arm64:arm64 2>/dev/null |
		sed -n 's/^ *Depends: \(linux-image-[0-9.]*-[0-9]*-arm64\).*/\1/p' | head -n 1)
	if [ -z "$meta" ]; then
		KERNEL_WHY="apt knows no linux-image-arm64:arm64 (needs the arm64 architecture in dpkg and apt-get update: make deps)"
		return 1
	fi
	pkg="$meta-unsigned"
	kernel_deb "$pkg" ./boot || return 1
	if [ ! -f "$DEB_DIR/Image" ]; then
		ln -sf "$(cd "$DEB_DIR" && ls boot/vmlinuz-* | head -n 1)" "$DEB_DIR/Image"
		ln -sf "$(cd "$DEB_DIR" && ls boot/config-* | head -n 1)" "$DEB_DIR/config"
	fi
	KERNEL_DIR=$DEB_DIR
}
