# SPDX-License-Identifier: MIT
"""Checks of a capture's profile files for tests/integration/test_sample.sh.
Reads DIR/profile_stacks and DIR/profile_samples
(user/profile/capture.h) directly, so a fault of the sampler is not hidden
by one of pmetrics report.

    sample_check.py shares DIR KIND TOL NAME=PCT...
        KIND samples' weight in stacks holding each NAME (a native frame
        NAME or a Python frame "NAME (file:line)"), as a share of the
        weight of the stacks holding any of them, within TOL points of PCT
    sample_check.py chain DIR NAME...
        some on-CPU stack holds the frames NAME... next to each other, in
        this order, outermost first
    sample_check.py spans DIR STATE INSIDE OUTSIDE
        samples in INSIDE frames carry exactly STATE, samples in OUTSIDE
        frames no state, and both kinds exist
    sample_check.py names DIR
        prints the sorted set of Python frame names (qualname and file
        base name, no line) of on-CPU samples
    sample_check.py lines DIR NAME FILE LINE...
        every Python frame NAME of FILE is at one of the LINEs
    sample_check.py pids DIR NAME
        prints how many processes have samples with frame NAME
    sample_check.py with_python DIR KIND MIN_PCT
        at least MIN_PCT % of KIND samples' weight has Python frames
    sample_check.py evaluating DIR MAX_BLIND
        at most MAX_BLIND on-CPU samples run Python code without Python
        frames (they show _PyEval_EvalFrameDefault instead)
    sample_check.py no_frame DIR KIND REGEX
        no KIND stack holds a frame matching REGEX
    sample_check.py modules DIR PREFIX MAX_UNKNOWN_PCT
        samples in the bodies of modules PREFIX*.py, which call nothing:
        every frame of those files is named <module>, and at most
        MAX_UNKNOWN_PCT % of the samples with such a frame or an
        [unknown Python frame] have the latter
    sample_check.py called_out DIR NAME REGEX MIN_PCT
        of the on-CPU samples in frame NAME, at least MIN_PCT % hold a
        frame matching REGEX further in (a native function it called)
"""
import collections
import os
import re
import sys


def load(d):
    stacks = {}
    with open(os.path.join(d, "profile_stacks")) as f:
        for line in f:
            sid, frames = line.rstrip("\n").split(",", 1)
            if frames.startswith('"'):
                frames = frames[1:-1].replace('""', '"')
            stacks[sid] = frames.split(";")
    samples = []
    with open(os.path.join(d, "profile_samples")) as f:
        for line in f:
            t, pid, tid, kind, weight, spans, sid = line.rstrip("\n").split(",")
            samples.append((int(pid), kind, int(weight), spans, stacks[sid]))
    return samples


def frame_name(frame):
    """NAME of a Python frame 'NAME (file:line)', or the native frame."""
    return frame.split(" (", 1)[0] if frame.endswith(")") and " (" in frame else frame


def has_python(stack):
    return any(f.endswith(")") and " (" in f for f in stack)


def on_cpu_stacks(d):
    return (stack for _, kind, _, _, stack in load(d) if kind == "on-cpu")


def holds(stack, name):
    return any(frame_name(f) == name for f in stack)


def shares(d, kind, tol, wants):
    want = {w.split("=")[0]: float(w.split("=")[1]) for w in wants}
    got = collections.Counter()
    for _, k, weight, _, stack in load(d):
        if k != kind:
            continue
        for name in want:
            if holds(stack, name):
                got[name] += weight
    total = sum(got.values())
    if not total:
        print("no %s samples in %s" % (kind, " ".join(want)))
        return 1
    pct = {n: 100.0 * got[n] / total for n in want}
    text = " ".join("%s=%.1f%%" % (n, pct[n]) for n in want)
    bad = [n for n in want if abs(pct[n] - want[n]) > float(tol)]
    print(("BAD " if bad else "") + text)
    return 1 if bad else 0


def chain(d, names):
    for _, kind, _, _, stack in load(d):
        py = [frame_name(f) for f in stack]
        for i in range(len(py) - len(names) + 1):
            if kind == "on-cpu" and py[i:i + len(names)] == names:
                print("found: " + ";".join(stack))
                return 0
    print("no stack holds " + " -> ".join(names))
    return 1


def spans(d, state, inside, outside):
    n_in = n_out = 0
    for _, _, _, sp, stack in load(d):
        if holds(stack, inside):
            n_in += 1
            if sp != state:
                print("sample in %s has spans '%s'" % (inside, sp))
                return 1
        elif holds(stack, outside):
            n_out += 1
            if sp:
                print("sample in %s has spans '%s'" % (outside, sp))
                return 1
    print("%d samples inside, %d outside" % (n_in, n_out))
    return 0 if n_in and n_out else 1


def names(d):
    found = set()
    for _, kind, _, _, stack in load(d):
        for f in stack:
            if kind == "on-cpu" and f.endswith(")") and " (" in f:
                name, where = f[:-1].split(" (", 1)
                found.add("%s (%s)" % (name, os.path.basename(where.rsplit(":", 1)[0])))
    print("\n".join(sorted(found)))
    return 0


def lines(d, name, file, want):
    seen = set()
    for _, _, _, _, stack in load(d):
        for f in stack:
            if f.startswith(name + " (") and f.endswith(")"):
                where = f[len(name) + 2:-1]
                path, line = where.rsplit(":", 1)
                if os.path.basename(path) == file:
                    seen.add(line)
    bad = seen - set(want)
    print("lines of %s: %s" % (name, " ".join(sorted(seen))))
    return 1 if bad or not seen else 0


def pids(d, name):
    print(len({pid for pid, _, _, _, stack in load(d) if holds(stack, name)}))
    return 0


def with_python(d, kind, min_pct):
    total = python = 0
    for _, k, weight, _, stack in load(d):
        if k != kind:
            continue
        total += weight
        if has_python(stack):
            python += weight
    if not total:
        print("no %s samples" % kind)
        return 1
    pct = 100.0 * python / total
    print("%s%.1f%% of the %s weight has Python frames" % ("BAD " if pct < float(min_pct) else "", pct, kind))
    return 0 if pct >= float(min_pct) else 1


def tally(d, first, second):
    """How many on-CPU stacks pass FIRST, and how many of the others
    SECOND."""
    a = b = 0
    for stack in on_cpu_stacks(d):
        if first(stack):
            a += 1
        elif second(stack):
            b += 1
    return a, b


def evaluating(d, max_blind):
    """Python frames replace the evaluation loop's native frames they
    stand for, so a stack still holding one ran Python code unseen."""
    python, blind = tally(d, has_python, lambda stack: "_PyEval_EvalFrameDefault" in stack)
    if not python + blind:
        print("no on-CPU sample running Python code")
        return 1
    bad = blind > int(max_blind)
    print("%s%d of %d on-CPU samples running Python code have no Python frames" % (
        "BAD " if bad else "", blind, python + blind))
    return 1 if bad else 0


def no_frame(d, kind, regex):
    found = collections.Counter()
    total = 0
    for _, k, _, _, stack in load(d):
        if k != kind:
            continue
        total += 1
        hit = [f for f in stack if re.search(regex, f)]
        if hit:
            found[";".join(stack[-4:])] += 1
    print("%s%d of %d %s stacks hold a frame matching %s%s" % (
        "BAD " if found else "", sum(found.values()), total, kind, regex,
        "; commonest: %s x%d" % found.most_common(1)[0] if found else ""))
    return 1 if found or not total else 0


def modules(d, prefix, max_unknown_pct):
    pattern = re.compile(r"\(.*/" + re.escape(prefix) + r"[^/]*\.py:\d+\)$")
    wrong = collections.Counter()

    def ours(stack):
        frames = [f for f in stack if pattern.search(f)]
        wrong.update(f for f in frames if frame_name(f) != "<module>")
        return bool(frames)

    named, unknown = tally(d, ours, lambda stack: "[unknown Python frame]" in stack)
    if not named + unknown:
        print("no sample in a module body")
        return 1
    pct = 100.0 * unknown / (named + unknown)
    bad = pct > float(max_unknown_pct) or wrong
    print("%s%d samples in module bodies named, %d (%.1f%%) unknown%s" % (
        "BAD " if bad else "", named, unknown, pct,
        "; wrongly named: %s" % ", ".join("%s x%d" % kv for kv in wrong.most_common(3)) if wrong else ""))
    return 1 if bad else 0


def on_cpu_in(d, name):
    """The on-CPU stacks holding a frame named NAME, each with where its
    first such frame is."""
    for _, kind, _, _, stack in load(d):
        names = [frame_name(f) for f in stack]
        if kind == "on-cpu" and name in names:
            yield stack, names, names.index(name)


def share_in(d, name, test, min_pct, what):
    """Of the on-CPU samples in NAME, the share TEST(stack, names, at)
    passes: it gives whether the sample passes and, when not, the part of
    the stack to show. A failure names the commonest such part."""
    inside = passed = 0
    failed = collections.Counter()
    for stack, names, at in on_cpu_in(d, name):
        inside += 1
        ok, shown = test(stack, names, at)
        if ok:
            passed += 1
        else:
            failed[shown] += 1
    if not inside:
        print("no on-CPU sample in " + name)
        return 1
    pct = 100.0 * passed / inside
    bad = pct < float(min_pct)
    print("%s%d of %d samples in %s (%.1f%%) %s%s" % (
        "BAD " if bad else "", passed, inside, name, pct, what,
        "; commonest that did not: %s x%d" % failed.most_common(1)[0] if bad and failed else ""))
    return 1 if bad else 0


def called_out(d, name, regex, min_pct):
    """Of the on-CPU samples in NAME, the share with a frame matching
    REGEX below it (what NAME called out to)."""
    return share_in(d, name, lambda stack, names, at: (
        any(re.search(regex, f) for f in stack[at + 1:]), ";".join(stack[at:])),
        min_pct, "hold " + regex)


def above(d, name, root, min_pct):
    """Of the on-CPU samples in NAME, the share whose stack reaches ROOT
    above it: how often unwinding got from NAME back to ROOT."""
    return share_in(d, name, lambda stack, names, at: (
        root in names[:at], ";".join(stack[:at + 1])), min_pct, "reach " + root)


def timeline_spans(d, trace, state):
    """The timeline (TRACE, from pmetrics report) shows each STATE span of
    the capture D as a slice on the thread that ran it: one per
    robot_context_data row, all on the program's main thread (its pid),
    and every sample labelled STATE on that thread inside one of them
    (1 ms either side: two clocks' conversions)."""
    import json
    ev = json.load(open(trace))["traceEvents"]
    rows = sum(1 for line in open(os.path.join(d, "robot_context_data"))
               if line.startswith(state + ","))
    pids = {pid for pid, _, _, _, _ in load(d)}
    slices = [e for e in ev if e["ph"] == "X" and e["name"] == state]
    on_main = [e for e in slices if e["pid"] in pids and e["tid"] == e["pid"]]
    inside = [e for e in ev if e["ph"] == "i" and state in e["args"]["spans"].split("|")]
    outside = [e for e in inside if not any(
        s["tid"] == e["tid"] and s["ts"] - 1000 <= e["ts"] <= s["ts"] + s["dur"] + 1000
        for s in on_main)]
    print("%d rows, %d slices, %d on the main thread; %d of %d samples in %s outside them"
          % (rows, len(slices), len(on_main), len(outside), len(inside), state))
    return 0 if rows > 0 and len(slices) == rows == len(on_main) and inside and not outside else 1


def main():
    cmd, d = sys.argv[1], sys.argv[2]
    args = sys.argv[3:]
    if cmd == "shares":
        return shares(d, args[0], args[1], args[2:])
    if cmd == "chain":
        return chain(d, args)
    if cmd == "spans":
        return spans(d, *args)
    if cmd == "names":
        return names(d)
    if cmd == "lines":
        return lines(d, args[0], args[1], args[2:])
    if cmd == "pids":
        return pids(d, args[0])
    if cmd == "with_python":
        return with_python(d, *args)
    if cmd == "no_frame":
        return no_frame(d, *args)
    if cmd == "modules":
        return modules(d, *args)
    if cmd == "evaluating":
        return evaluating(d, *args)
    if cmd == "called_out":
        return called_out(d, *args)
    if cmd == "above":
        return above(d, *args)
    if cmd == "timeline_spans":
        return timeline_spans(d, *args)
    print("unknown check " + cmd)
    return 2


if __name__ == "__main__":
    sys.exit(main())
