#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# pmetrics analyze --svg rendered by a real browser: Debian's Chromium,
# headless, takes a screenshot; the PNG must show the chart's marks
# (points, orange bucket means, red trend lines) on a white page.
source "$ROOT/tests/integration/lib.sh"
GEN="$ROOT/bench/analyze_gen.py"
PNG="$ROOT/tests/integration/png_colours.py"

t_begin "svg_file: one panel per key, well-formed XML"
if ! command -v python3 >/dev/null; then
	t_skip "python3 needed to generate the input"
	exit 0
fi
python3 "$GEN" 4000 7 >"$T_TMP/export.jsonl"
"$PMETRICS" analyze --versions 8.2.0,8.1.0 --svg "$T_TMP/chart.svg" "$T_TMP/export.jsonl" \
	>"$T_TMP/report.txt" 2>"$T_TMP/err"
rc=$?
keys=$(grep -c '"correlation"' "$T_TMP/report.txt")
panels=$(grep -c 'class="title">8\.' "$T_TMP/chart.svg" 2>/dev/null)
if [ $rc -eq 0 ] && [ "$keys" -ge 3 ] && [ "$keys" = "$panels" ] &&
	python3 -c 'import sys, xml.etree.ElementTree as E; E.parse(sys.argv[1])' "$T_TMP/chart.svg" 2>"$T_TMP/xml"
then t_pass; else t_fail "rc $rc, $keys keys, $panels panels, $(head -c 200 "$T_TMP/xml" "$T_TMP/err")"; fi

t_begin "svg_replace: a symlink at --svg is replaced, not followed; a failed write keeps the old chart"
echo VICTIM >"$T_TMP/victim.txt"
ln -s "$T_TMP/victim.txt" "$T_TMP/link.svg"
"$PMETRICS" analyze --versions 8.2.0,8.1.0 --svg "$T_TMP/link.svg" "$T_TMP/export.jsonl" >/dev/null 2>"$T_TMP/err1"
rc1=$?
echo OLD >"$T_TMP/old.svg"
# A file-size limit of 64 KiB makes the chart's write fail part-way.
(trap '' XFSZ; ulimit -f 64; "$PMETRICS" analyze --svg "$T_TMP/old.svg" "$T_TMP/export.jsonl") \
	>/dev/null 2>"$T_TMP/err2"
rc2=$?
if [ $rc1 -eq 0 ] && [ ! -L "$T_TMP/link.svg" ] && [ "$(cat "$T_TMP/victim.txt")" = VICTIM ] &&
	cmp -s "$T_TMP/link.svg" "$T_TMP/chart.svg" && [ $rc2 -eq 1 ] &&
	[ "$(cat "$T_TMP/old.svg")" = OLD ] && grep -q "cannot write .*old.svg: File too large" "$T_TMP/err2" &&
	! ls "$T_TMP" | grep -q '\.tmp-'
then t_pass; else t_fail "rc $rc1/$rc2, victim $(cat "$T_TMP/victim.txt" | head -c 40), old $(head -c 40 "$T_TMP/old.svg"); $(cat "$T_TMP/err1" "$T_TMP/err2")"; fi
mkdir -p "$T_TMP/taken.svg"
expect_error "svg_taken: a directory where the chart goes is refused before the analysis" 1 \
	"--svg $T_TMP/taken.svg names a directory: give a file name" \
	-- "$PMETRICS" analyze --svg "$T_TMP/taken.svg" "$T_TMP/export.jsonl"
expect_error "svg_dir: --svg naming a directory is refused before the analysis" 1 \
	"--svg $T_TMP/ names a directory: give a file name" -- "$PMETRICS" analyze --svg "$T_TMP/" "$T_TMP/export.jsonl"

t_begin "svg_render: headless Chromium draws points, bucket means and trend lines"
CHROMIUM=$(command -v chromium || true)
if [ -z "$CHROMIUM" ]; then
	t_skip "chromium not installed (apt-get install chromium)"
	exit 0
fi
height=$(sed -n 's/.*<svg [^>]*height="\([0-9]*\)".*/\1/p' "$T_TMP/chart.svg" | head -1)
profile=$(mktemp -d "$T_TMP/chromium.XXXXXX")
timeout 90 "$CHROMIUM" --headless --no-sandbox --disable-gpu --disable-quic --no-first-run \
	--disable-background-networking --disable-component-update --disable-sync \
	--hide-scrollbars --user-data-dir="$profile" --screenshot="$T_TMP/chart.png" \
	--window-size=1120,"${height:-1000}" "file://$T_TMP/chart.svg" >"$T_TMP/chromium.log" 2>&1
# chart colours: points #1f77b4 at 35% on white = #a5c8e1, means #ff7f0e, trend #d62728
if [ ! -s "$T_TMP/chart.png" ]; then
	t_fail "no screenshot: $(tail -n 3 "$T_TMP/chromium.log")"
else
	read -r w h colours ink <<<"$(python3 "$PNG" "$T_TMP/chart.png" | head -1)"
	counts=$(python3 "$PNG" "$T_TMP/chart.png" a5c8e1 ff7f0e d62728 | tail -n 3 | awk '{ printf "%s ", $2 }')
	read -r blue orange red <<<"$counts"
	if [ "$w" = 1120 ] && [ "$colours" -ge 50 ] && awk -v i="$ink" 'BEGIN { exit !(i > 0.02) }' &&
		[ "$blue" -ge 500 ] && [ "$orange" -ge 100 ] && [ "$red" -ge 100 ]; then
		t_pass
		[ -n "${PMETRICS_KEEP_SVG_PNG:-}" ] && cp "$T_TMP/chart.png" "$PMETRICS_KEEP_SVG_PNG"
	else
		t_fail "${w}x$h, $colours colours, ink $ink, blue $blue orange $orange red $red"
	fi
fi
