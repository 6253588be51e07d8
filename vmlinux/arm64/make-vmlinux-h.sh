#!/usr/bin/env bash
# Remakes vmlinux/arm64/vmlinux.h on any machine, arm64 or not: the kernel
# types come from the BTF that Debian's arm64 kernel image carries (its
# uncompressed Image holds the .BTF section verbatim).
#   bash vmlinux/arm64/make-vmlinux-h.sh [PACKAGE-VERSION-PATH]
# The checked-in header was made from Debian bookworm's
#   pool/main/l/linux/linux-image-6.1.0-47-arm64-unsigned_6.1.170-3_arm64.deb
set -euo pipefail
deb_path=${1:-pool/main/l/linux/linux-image-6.1.0-47-arm64-unsigned_6.1.170-3_arm64.deb}
here=$(cd "$(dirname "$0")" && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

if ! curl -sSf "http://deb.debian.org/debian/$deb_path" -o "$work/kernel.deb"; then
	echo "cannot fetch $deb_path; if it has left the mirror, pass a current one, e.g. from:" >&2
	echo "  curl -s http://deb.debian.org/debian/dists/bookworm/main/binary-arm64/Packages.xz |" \
		"xz -dc | grep '^Filename: .*linux-image-.*-arm64-unsigned'" >&2
	exit 1
fi
dpkg-deb -x "$work/kernel.deb" "$work/root"
image=$(ls "$work"/root/boot/vmlinuz-*)
# A raw BTF blob starts with magic 0xeb9f, version 1, flags 0 and a
# 24-byte header; its length is the header plus the string section's end.
python3 - "$image" "$work/vmlinux.btf" <<'PY'
import struct, sys
image = open(sys.argv[1], "rb").read()
at = image.find(b"\x9f\xeb\x01\x00\x18\x00\x00\x00")
if at < 0 or image.find(b"\x9f\xeb\x01\x00\x18\x00\x00\x00", at + 1) >= 0:
    sys.exit("expected exactly one BTF header in " + sys.argv[1])
_, _, str_off, str_len = struct.unpack_from("<4I", image, at + 8)
open(sys.argv[2], "wb").write(image[at:at + 24 + str_off + str_len])
PY
bpftool btf dump file "$work/vmlinux.btf" format c >"$here/vmlinux.h"
echo "wrote $here/vmlinux.h from $(basename "$image")"
