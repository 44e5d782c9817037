#!/usr/bin/env python3
"""Per-point table of a run.sh archive (ab.tgz: arms A, B, C, two runs each): the layer's median
over each arm's runs, B/A and C/A, and the GEMM stage times of each arm (median of its runs).
usage: summary.py ab.tgz"""
import csv
import io
import statistics
import sys
import tarfile

runs = {}  # (shape, M) -> arm -> list of rows
with tarfile.open(sys.argv[1]) as t:
    for m in t.getmembers():
        if not m.name.endswith(".csv") or m.name.endswith("winners.csv"):
            continue
        arm = m.name.split("/")[1][0]
        for r in csv.DictReader(io.StringIO(t.extractfile(m).read().decode())):
            runs.setdefault((r["shape"], int(r["M"])), {}).setdefault(arm, []).append(r)


def med(rows, col):
    return statistics.median(float(r[col]) for r in rows)


print("%-3s %6s %9s %9s %9s %6s %6s  %-25s %-25s %-25s" %
      ("sh", "M", "A us", "B us", "C us", "B/A", "C/A", "A g1/g2 us", "B g1/g2 us", "C g1/g2 us"))
for key in sorted(runs):
    arms = runs[key]
    if not all(a in arms for a in "ABC"):
        continue
    t = {a: med(arms[a], "time_us") for a in "ABC"}
    g = {a: "%.1f / %.1f" % (med(arms[a], "gemm1_us"), med(arms[a], "gemm2_us")) for a in "ABC"}
    print("%-3s %6d %9.1f %9.1f %9.1f %6.3f %6.3f  %-25s %-25s %-25s" %
          (key[0], key[1], t["A"], t["B"], t["C"], t["B"] / t["A"], t["C"] / t["A"], g["A"], g["B"],
           g["C"]))
for key in sorted(runs):
    arms = runs[key]
    digests = {a: sorted({r["digest"] for r in arms.get(a, [])}) for a in "ABC"}
    bad = [a for a in "ABC" if len(digests[a]) > 1]
    if bad:
        print("digest differs between runs of arm(s) %s at %s %d" % (",".join(bad), key[0], key[1]))
