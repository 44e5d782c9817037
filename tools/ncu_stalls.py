#!/usr/bin/env python3
"""Where a kernel's warps wait, from Nsight Compute's source page: per kernel, the warp stall
samples by reason and the SASS instructions that hold the most samples.

usage: tools/ncu_stalls.py FILE [--top N]
  FILE: the output of `ncu --section SourceCounters --section WarpStateStats --page source
  --print-source sass --csv ...` (plain or .gz); what ncu or the program printed before the first
  "Kernel Name" line is skipped. --top: instructions listed per kernel (8).
Per kernel it prints the total samples, the six largest stall reasons with their share, and the
top instructions as "samples  index  SASS" (index: the instruction's position in the kernel, so
loads and the uses that wait on them can be found in the same listing). A loaded value used right
after its load shows up as a long_sb stall on the instruction that uses it.
--blocks N (0): also the N execution counts that cover the most executed instructions: per count,
the instructions executed that often (a loop body's size: a k-loop's body runs once per k-tile
and warp), their share of all executed instructions and their five commonest opcodes. Needs the
page's "Instructions Executed" column (ncu's SourceCounters section).
Exit 2 when the file has no kernel in it.
"""
import argparse
import csv
import gzip
import io
import re
import sys
from collections import Counter, defaultdict

SAMPLES = "Warp Stall Sampling (All Samples)"
EXECUTED = "Instructions Executed"


def read_text(path):
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rt", errors="replace") as f:
        return f.read()


def kernels(text):
    """[(kernel name, [row dicts])] of every "Kernel Name" block."""
    blocks, name, lines = [], None, []
    for line in text.splitlines():
        if line.startswith('"Kernel Name"'):
            if name is not None:
                blocks.append((name, lines))
            name = next(csv.reader([line]))[1]
            lines = []
        elif name is not None:
            lines.append(line)
    if name is not None:
        blocks.append((name, lines))
    out = []
    for name, body in blocks:
        rows = list(csv.DictReader(io.StringIO("\n".join(body))))
        out.append((name, [r for r in rows if r.get(SAMPLES, "").strip().isdigit()]))
    return out


def summary(name, rows, top):
    total = sum(int(r[SAMPLES]) for r in rows)
    lines = ["== %s: %d samples, %d instructions" % (name, total, len(rows))]
    reasons = {}
    for key in rows[0].keys() if rows else []:
        if key.startswith("stall_") and "Not Issued" not in key:
            reasons[key[6:]] = sum(int(r[key] or 0) for r in rows)
    ranked = sorted(reasons.items(), key=lambda kv: -kv[1])[:6]
    lines.append("   " + ", ".join("%s %d%%" % (k, round(100.0 * v / max(total, 1)))
                                   for k, v in ranked))
    order = sorted(range(len(rows)), key=lambda i: -int(rows[i][SAMPLES]))[:top]
    for i in sorted(order, key=lambda i: -int(rows[i][SAMPLES])):
        lines.append("   %6s %5d  %s" % (rows[i][SAMPLES], i, rows[i]["Source"].strip()))
    return lines


def opcode(sass):
    """The opcode of a SASS line, its predicate (@P0, @!UPT, ...) dropped."""
    return re.sub(r"^@!?U?P\w+\s+", "", sass.strip()).split(" ")[0]


def blocks(rows, n):
    """Lines for the n execution counts that cover the most executed instructions."""
    if not rows or EXECUTED not in rows[0]:
        return ["   (no %r column: no execution counts)" % EXECUTED]
    by_count = defaultdict(list)
    for r in rows:
        count = int((r[EXECUTED] or "0").replace(",", ""))
        if count > 0:
            by_count[count].append(opcode(r["Source"]))
    total = sum(c * len(ops) for c, ops in by_count.items())
    ranked = sorted(by_count.items(), key=lambda kv: -kv[0] * len(kv[1]))[:n]
    lines = []
    for count, ops in ranked:
        mix = ", ".join("%s %d" % kv for kv in Counter(ops).most_common(5))
        lines.append("   x%-10d %5d instructions, %4.1f%% of executed: %s"
                     % (count, len(ops), 100.0 * count * len(ops) / max(total, 1), mix))
    return lines


def main(argv):
    ap = argparse.ArgumentParser()
    ap.add_argument("file")
    ap.add_argument("--top", type=int, default=8)
    ap.add_argument("--blocks", type=int, default=0)
    args = ap.parse_args(argv)
    found = kernels(read_text(args.file))
    if not found:
        print("ncu_stalls: %s: no \"Kernel Name\" block (was it written with --page source "
              "--csv?)" % args.file, file=sys.stderr)
        return 2
    for name, rows in found:
        print("\n".join(summary(name, rows, args.top)))
        if args.blocks > 0:
            print("\n".join(blocks(rows, args.blocks)))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
