#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Reference for the analyze benchmark: the computation of
`pmetrics analyze --p-value upstream` (formats.md section 3) written the
plain way in Debian's python3 with the json module, as the upstream Node
script does it: every sample kept in lists, statistics at the end.

usage: analyze_ref.py EXPORT.jsonl[.gz] > report.txt
"""
import gzip
import json
import math
import re
import sys

HEADER = ("ODD Available Memory and Processes with Increasing Memory Trend or "
          "Selectively Observed by Version (Rolling 1 Month Analysis Window):")
AGGREGATE = [
    (re.compile(r"^/opt/opentrons-app/opentrons --type=renderer"), "app-renderer-processes"),
    (re.compile(r"^/opt/opentrons-app/opentrons --type=zygote"), "app-zygote-processes"),
    (re.compile(r"^python3 -m uvicorn"), "robot-server-uvicorn-processes"),
    (re.compile(r"^/opt/opentrons-app/opentrons --type=utility"), "app-utility-processes"),
]
DROP = [re.compile(r"^nmcli"), re.compile(r"^/usr/bin/python3")]
SYSTEM = "odd-available-memory"
KEEP_NEGATIVE = {SYSTEM, "app-renderer-processes", "robot-server-uvicorn-processes"}
BUCKETS = [("0-20hrs", 0, 20), ("20-40hrs", 20, 40), ("40-60hrs", 40, 60),
           ("60-80hrs", 60, 80), ("80-120hrs", 80, 120), ("120-240hrs", 120, 240),
           ("240+hrs", 240, math.inf)]
MIN_SAMPLES = 30
NA = "N/A - Not enough data available."


def number(v):
    """parseFloat of a string or a JSON number; None when unusable."""
    if isinstance(v, bool):
        return None
    if isinstance(v, (int, float)):
        x = float(v)
    elif isinstance(v, str):
        try:
            x = float(v)
        except ValueError:  # parseFloat takes the longest numeric prefix
            m = re.match(r"\s*[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?", v)
            if not m:
                return None
            x = float(m.group(0))
    else:
        return None
    return x if math.isfinite(x) else None


def key_of(name):
    for rx in DROP:
        if rx.search(name):
            return None
    for rx, key in AGGREGATE:
        if rx.search(name):
            return key
    return name


def read(path, versions, system):
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rt", encoding="utf-8", errors="replace") as f:
        for line in f:
            if not line.strip():
                continue
            try:
                ev = json.loads(line)
            except ValueError:
                continue
            props = ev.get("properties") if isinstance(ev, dict) else None
            if ev.get("event") != "resourceMonitorReport" \
                    or not isinstance(props, dict) or props.get("appMode") != "ODD":
                continue
            version = props.get("appVersion")
            if not isinstance(version, str):
                continue
            series = versions.setdefault(version, {})
            uptime = number(props.get("systemUptimeHrs"))
            if uptime is None:
                continue
            avail = number(props.get("systemAvailMemMb"))
            for p in props.get("processesDetails") or []:
                if not isinstance(p, dict) or not isinstance(p.get("name"), str):
                    continue
                key = key_of(p["name"])
                mb = number(p.get("memRssMb"))
                if key is None or mb is None:
                    continue
                xs, ys = series.setdefault(key, ([], []))
                xs.append(uptime)
                ys.append(mb)
            if avail is not None:
                xs, ys = system.setdefault(version, ([], []))
                xs.append(uptime)
                ys.append(avail)


def pearson(xs, ys):
    n = len(xs)
    mx = sum(xs) / n
    my = sum(ys) / n
    sxy = sum((x - mx) * (y - my) for x, y in zip(xs, ys))
    sxx = sum((x - mx) ** 2 for x in xs)
    syy = sum((y - my) ** 2 for y in ys)
    if sxx == 0 or syy == 0:
        return math.nan
    return max(-1.0, min(1.0, sxy / math.sqrt(sxx * syy)))


def js_round(x, dec):
    scaled = x * 10 ** dec + (0.0001 if x >= 0 else -0.0001)
    return math.floor(scaled + 0.5) / 10 ** dec


def analyse_key(xs, ys):
    n = len(xs)
    if n < MIN_SAMPLES:  # upstream: r = 0, p = 1 for the system key
        r, interp = 0.0, "Not enough samples for analysis"
        return {"correlation": "%.4f" % r, "sampleSize": n, "interpretation": interp,
                "averageMemoryMbByUptime": buckets_of(xs, ys)}, r
    r = js_round(pearson(xs, ys), 4)
    df = n - 2
    if abs(r) >= 1:
        p = 0.0
    else:
        t = r * math.sqrt(df / (1 - r * r))
        p = 0.5 * (df / (df + t * t)) ** (df / 2)
    strength = abs(r)
    direction = "positive" if r > 0 else "negative"
    if not p < 0.05:
        interp = "No significant correlation found"
    elif strength > 0.7:
        interp = "Strong %s correlation (>0.7)" % direction
    elif strength > 0.3:
        interp = "Moderate %s correlation (>0.3 and <0.7)" % direction
    else:
        interp = "Weak %s correlation (<=0.3)" % direction
    return {"correlation": "%.4f" % r, "sampleSize": n, "interpretation": interp,
            "averageMemoryMbByUptime": buckets_of(xs, ys)}, r


def buckets_of(xs, ys):
    buckets = {}
    for label, lo, hi in BUCKETS:
        vals = [y for x, y in zip(xs, ys) if lo <= x < hi]
        buckets[label] = "%.2f" % (sum(vals) / len(vals)) if len(vals) >= MIN_SAMPLES else NA
    return buckets


def version_key(v):
    """Sort key, newest first: release > pre-release, numeric identifiers numerically."""
    core, _, pre = v.partition("-")
    nums = tuple(int(x) for x in core.split("."))
    if not pre:
        return (nums, 1, ())
    return (nums, 0, tuple((0, int(i), "") if i.isdigit() else (1, 0, i) for i in pre.split(".")))


def main():
    versions, system = {}, {}
    for path in sys.argv[1:]:
        read(path, versions, system)
    out = {}
    for v in sorted(versions, key=version_key, reverse=True):
        keys = {}
        series = versions[v]
        for k in list(series) + [SYSTEM]:
            xs, ys = system.get(v, ([], [])) if k == SYSTEM else series[k]
            if k != SYSTEM and len(xs) < MIN_SAMPLES:
                continue
            result, r = analyse_key(xs, ys)
            if r < 0 and k not in KEEP_NEGATIVE:
                continue
            keys[k] = result
        out[v] = keys
    print(HEADER)
    print(json.dumps(out, indent=2, ensure_ascii=False))


if __name__ == "__main__":
    main()
