#!/usr/bin/env python3
"""Finds wgmma groups that ptxas closed with an empty HGMMA, in the SASS of compiled kernels.

A warpgroup MMA main loop keeps one k-tile's wgmma group in flight while it waits for the one
before (wgmma.wait_group 1). Where the wgmma of a k-tile sit in branches (a width chosen at run
time inside the k loop), ptxas may close the group at the merge with an empty HGMMA
(`HGMMA.64x8x16.F16 RZ, gdesc[URZ], RZ, !UPT, gsb0`); `WARPGROUP.DEPBAR.LE gsb0, 0x1` then waits for
the k-tile just issued, so the tensor pipe drains every k-tile. ptxas prints no warning for it.
Found in the swap-AB kernel on the H200 (full tiles 1.5-1.8x slower than they are with the width
chosen per tile).

usage: tools/sass_wgmma_groups.py [--cuobjdump PATH] INPUT [INPUT...]
  INPUT: a cubin cache folder (MOETUNE_CACHE_DIR or its cubin/ folder: every MOETUNE-CUBIN file in
  it is disassembled), one such file, or a text file of `cuobjdump -sass` output.
  --cuobjdump: the disassembler (default: `cuobjdump` on PATH; CUDA's toolkit has it, and PyPI's
  nvidia-cuda-cuobjdump wheel ships it under nvidia/cu13/bin).
Prints one line per kernel with wgmma: its HGMMA count, empty groups and verdict.
Exit 0: no empty groups; 1: some kernel has them; 2: bad input (nothing to read, no disassembler).
"""
import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile

FUNCTION = re.compile(r"^\s*Function\s*:\s*(\S+)")
HGMMA = re.compile(r"\bHGMMA\.\S+")
# The group-closing no-op: no accumulator, no descriptor, predicate false.
EMPTY = re.compile(r"\bHGMMA\.\S+\s+RZ\s*,\s*gdesc\[URZ\]\s*,\s*RZ\s*,\s*!UPT")


def functions(sass):
    """[(name, [lines])] of every `Function : name` block of cuobjdump -sass output."""
    out, name, lines = [], None, []
    for line in sass.splitlines():
        m = FUNCTION.match(line)
        if m:
            if name is not None:
                out.append((name, lines))
            name, lines = m.group(1), []
        elif name is not None:
            lines.append(line)
    if name is not None:
        out.append((name, lines))
    return out


def scan(sass):
    """[(function, HGMMA count, empty groups)] of the functions that issue wgmma."""
    rows = []
    for name, lines in functions(sass):
        total = sum(1 for l in lines if HGMMA.search(l))
        if total == 0:
            continue
        empty = sum(1 for l in lines if EMPTY.search(l))
        rows.append((name, total - empty, empty))
    return rows


def elf_of_cache_file(path):
    """The ELF image inside a MOETUNE-CUBIN cache file (or the file itself when it is an ELF)."""
    with open(path, "rb") as f:
        data = f.read()
    i = data.find(b"\x7fELF")
    return data[i:] if i >= 0 else None


def disassemble(cuobjdump, path):
    elf = elf_of_cache_file(path)
    if elf is None:
        return None
    with tempfile.NamedTemporaryFile(suffix=".cubin") as tmp:
        tmp.write(elf)
        tmp.flush()
        r = subprocess.run([cuobjdump, "-sass", tmp.name], capture_output=True, text=True)
    return r.stdout if r.returncode == 0 else None


def inputs(paths):
    """(kind, path) for every file to read: 'sass' text or a 'cubin' to disassemble."""
    for p in paths:
        if os.path.isdir(p):
            sub = os.path.join(p, "cubin")
            d = sub if os.path.isdir(sub) else p
            for f in sorted(os.listdir(d)):
                yield "cubin", os.path.join(d, f)
        elif p.endswith(".cubin"):
            yield "cubin", p
        else:
            yield "sass", p


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--cuobjdump", default="cuobjdump")
    ap.add_argument("inputs", nargs="+")
    args = ap.parse_args(argv)
    todo = list(inputs(args.inputs))
    if not todo:
        print("sass_wgmma_groups: nothing to read in " + " ".join(args.inputs), file=sys.stderr)
        return 2
    tool = None
    if any(kind == "cubin" for kind, _ in todo):
        tool = shutil.which(args.cuobjdump) or (args.cuobjdump if os.access(args.cuobjdump, os.X_OK)
                                               else None)
        if tool is None:
            print("sass_wgmma_groups: no disassembler '%s'; pass --cuobjdump PATH (CUDA's toolkit, "
                  "or pip's nvidia-cuda-cuobjdump wheel: nvidia/cu13/bin/cuobjdump)" % args.cuobjdump,
                  file=sys.stderr)
            return 2
    rows = []
    for kind, path in todo:
        if kind == "cubin":
            sass = disassemble(tool, path)
            if sass is None:
                print("sass_wgmma_groups: %s: not a cubin cuobjdump can read; skipped" % path,
                      file=sys.stderr)
                continue
        else:
            with open(path, errors="replace") as f:
                sass = f.read()
        rows += scan(sass)
    if not rows:
        print("sass_wgmma_groups: no kernel with wgmma in " + " ".join(args.inputs),
              file=sys.stderr)
        return 2
    bad = 0
    for name, hgmma, empty in sorted(rows):
        verdict = "ok" if empty == 0 else "EMPTY GROUPS: wait_group 1 drains every group"
        bad += empty > 0
        print("%5d hgmma %4d empty  %-45s %s" % (hgmma, empty, verdict, name))
    print("%d of %d kernels with wgmma close groups with an empty HGMMA" % (bad, len(rows)))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
