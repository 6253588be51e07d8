#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Reads an 8-bit RGB/RGBA PNG (what Chromium's --screenshot writes) with
zlib and struct only, and prints: width height distinct_colours
non_white_fraction, then for each RGB hex given on the command line the
number of pixels within 40 per channel of it.

usage: png_colours.py FILE.png [RRGGBB...]
"""
import struct
import sys
import zlib


def read_png(path):
    data = open(path, "rb").read()
    if data[:8] != b"\x89PNG\r\n\x1a\n":
        raise SystemExit("not a PNG: " + path)
    pos, idat, width = 8, [], 0
    while pos < len(data):
        length, kind = struct.unpack(">I4s", data[pos:pos + 8])
        body = data[pos + 8:pos + 8 + length]
        if kind == b"IHDR":
            width, height, depth, ctype = struct.unpack(">IIBB", body[:10])
            if depth != 8 or ctype not in (2, 6):
                raise SystemExit("unsupported PNG: depth %d colour type %d" % (depth, ctype))
            bpp = 3 if ctype == 2 else 4
        elif kind == b"IDAT":
            idat.append(body)
        pos += 12 + length
    raw = zlib.decompress(b"".join(idat))
    stride = width * bpp
    rows, prev = [], bytearray(stride)
    for y in range(height):
        f = raw[y * (stride + 1)]
        line = bytearray(raw[y * (stride + 1) + 1:(y + 1) * (stride + 1)])
        for i in range(stride):
            a = line[i - bpp] if i >= bpp else 0
            b = prev[i]
            c = prev[i - bpp] if i >= bpp else 0
            if f == 1:
                line[i] = (line[i] + a) & 255
            elif f == 2:
                line[i] = (line[i] + b) & 255
            elif f == 3:
                line[i] = (line[i] + (a + b) // 2) & 255
            elif f == 4:
                p = a + b - c
                pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                pred = a if pa <= pb and pa <= pc else (b if pb <= pc else c)
                line[i] = (line[i] + pred) & 255
        rows.append(line)
        prev = line
    pixels = [tuple(r[i:i + 3]) for r in rows for i in range(0, stride, bpp)]
    return width, height, pixels


def main():
    width, height, pixels = read_png(sys.argv[1])
    counts = {}
    for p in pixels:
        counts[p] = counts.get(p, 0) + 1
    white = counts.get((255, 255, 255), 0)
    print(width, height, len(counts), "%.4f" % (1 - white / len(pixels)))
    for want in sys.argv[2:]:
        w = tuple(int(want[i:i + 2], 16) for i in (0, 2, 4))
        n = sum(c for p, c in counts.items() if all(abs(p[i] - w[i]) <= 40 for i in range(3)))
        print(want, n)


if __name__ == "__main__":
    main()
