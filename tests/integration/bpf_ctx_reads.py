# SPDX-License-Identifier: MIT
"""Does a BPF program read 8 bytes of its context at a given offset?

usage: bpf_ctx_reads.py OBJECT PROGRAM OFFSET
Exit 0 when, on some path through PROGRAM (as llvm-objdump disassembles
OBJECT), a u64 is loaded from the context pointer (r1 at entry, and every
register or stack slot it is copied to) plus OFFSET; 1 when not.

Offsets may be printed in decimal (LLVM 14) or hex (later LLVM). The
copies are followed along the program's jumps, block by block, to a
fixed point: the compiler lays blocks out in any order and reuses
registers across them, so a straight top-to-bottom reading loses the
pointer as soon as another path's block reassigns its register.
"""
import re
import subprocess
import sys

LABEL = re.compile(r"^[0-9a-f]+ <([^>]+)>:$")
INSN = re.compile(r"^\s*\d+:\s*(.*)$")
JUMP = re.compile(r"gotol? [+-](?:0x[0-9a-f]+|\d+) <([^>]+)>$")
SPILL = re.compile(r"^\*\(u64 \*\)\(r10 - (0x[0-9a-f]+|\d+)\) = (r\d+)$")
FILL = re.compile(r"^(r\d+) = \*\(u64 \*\)\(r10 - (0x[0-9a-f]+|\d+)\)$")
LOAD = re.compile(r"^(r\d+) = \*\(u64 \*\)\((r\d+) \+ (0x[0-9a-f]+|\d+)\)$")
MOVE = re.compile(r"^(r\d+) = (r\d+)$")
WRITE = re.compile(r"^[rw](\d+) \S*= ")
STORE = re.compile(r"^(?:lock )?\*\(u(8|16|32|64) \*\)\(r10 - (0x[0-9a-f]+|\d+)\) ")


def blocks_of(text, program):
    """The program's blocks in layout order: [(label, [insn, ...])]."""
    blocks, on = [], False
    for line in text.splitlines():
        m = LABEL.match(line)
        if m:
            name = m.group(1)
            if name == program:
                on = True
            elif on and not name.startswith("LBB"):
                break
            if on:
                blocks.append((name, []))
            continue
        m = INSN.match(line)
        if on and m:
            blocks[-1][1].append(m.group(1).strip())
    return blocks


def step(insn, held, want):
    """Applies INSN to HELD (the registers and 'slotN's holding the
    context); returns whether it loads the context at WANT."""
    m = SPILL.match(insn)
    if m:
        slot = "slot%d" % int(m.group(1), 0)
        if m.group(2) in held:
            held.add(slot)
        else:
            held.discard(slot)
        return False
    m = STORE.match(insn)
    if m:
        # any other store into the stack (an immediate, a narrower
        # register, an atomic) overwrites every slot it overlaps
        width, at = int(m.group(1)) // 8, int(m.group(2), 0)
        held.difference_update(
            slot for slot in list(held)
            if slot.startswith("slot") and at - width < int(slot[4:]) and int(slot[4:]) - 8 < at)
        return False
    if insn.startswith("call "):
        held.difference_update(f"r{i}" for i in range(6))
        return False
    found = False
    m = LOAD.match(insn)
    if m and m.group(2) in held and int(m.group(3), 0) == want:
        found = True
    dst = None
    src_held = False
    for pattern in (FILL, MOVE):
        m = pattern.match(insn)
        if m:
            dst = m.group(1)
            src = m.group(2)
            src_held = ("slot%d" % int(src, 0) if pattern is FILL else src) in held
            break
    if dst is None:
        m = WRITE.match(insn)
        if m:
            dst = "r" + m.group(1)
    if dst is not None:
        if src_held:
            held.add(dst)
        else:
            held.discard(dst)
    return found


def reads(blocks, want):
    into = {blocks[0][0]: {"r1"}}
    changed = True
    while changed:
        changed = False
        for i, (name, insns) in enumerate(blocks):
            if name not in into:
                continue
            held = set(into[name])
            ends = False
            for insn in insns:
                if step(insn, held, want):
                    return True
                m = JUMP.search(insn)
                if m:
                    target = into.setdefault(m.group(1), set())
                    if not held <= target:
                        target |= held
                        changed = True
                    ends = insn.startswith(("goto ", "gotol "))
                elif insn == "exit":
                    ends = True
            if not ends and i + 1 < len(blocks):
                target = into.setdefault(blocks[i + 1][0], set())
                if not held <= target:
                    target |= held
                    changed = True
    return False


def main(argv):
    if len(argv) != 4:
        sys.exit(__doc__.strip().splitlines()[2])
    text = subprocess.run(["llvm-objdump", "-d", "--no-show-raw-insn", argv[1]],
                          check=True, capture_output=True, text=True).stdout
    blocks = blocks_of(text, argv[2])
    if not blocks:
        sys.exit(f"no program {argv[2]} in {argv[1]}")
    return 0 if reads(blocks, int(argv[3])) else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv))
