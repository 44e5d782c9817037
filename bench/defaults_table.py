#!/usr/bin/env python3
"""Writes docs/defaults-h200.md from a moetune_sm90_bench CSV (columns time_us = the recipe row,
default_us = sm90_default_config at the same point, same run, same data).

usage: bench/defaults_table.py [--moetune PATH] RUN.csv [LATER.csv ...] > docs/defaults-h200.md
(RUN.csv: the CSV of a result of record, e.g. bench/results/h200-protocol-s1s3.csv)
With several CSVs, a (shape, M) point of a later CSV replaces the earlier one (a full run, then
re-times of the rows a later commit changed); each point's run is in the table. Where the
rule has changed since the run (`moetune defaults --backend cuda` of --moetune, default
$MOETUNE_BIN else build/moetune, gives another config than the CSV's default_config), the row says
so: when the rule now gives the recipe row itself, its default time is the row's; otherwise the
new default is named, not timed.
"""
import csv
import math
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from fit_defaults import default_moetune, default_pairs  # noqa: E402

RULE = """| regime | rule |
|---|---|
| M <= 4 and p <= 0.5 | the decode kernels (launch.swap_ab: no align or combine launch): block_m = M rounded up to a power of two; GEMM1 block_n 4, block_k 512, 4 warps, 1 row per warp; GEMM2 block_n 4, block_k 512, 8 warps, 1 row per warp |
| p <= 1 (other) | mma.sync, block_m 16; GEMM1 block_n 64, BK, 4 warps, 3 stages, group_m 8; GEMM2 block_n 128, BK, 4 warps, 3 stages, group_m 8 |
| p <= 4 | mma.sync, block_m 16; GEMM1 as above; GEMM2 block_n 64, BK, 4 warps, 5 stages, group_m 8 |
| p <= 12 | mma.sync, block_m 16, block_n 64, block_k 64, 4 warps, 5 stages |
| p <= 24 | mma.sync, block_m 32; GEMM1 block_n 128, BK, 8 warps, 3 stages; GEMM2 block_n 64, BK, 4 warps, 4 stages |
| p <= 48 | TMA + warp-specialised persistent wgmma (schedule tma_ws), block_m 64, block_n 128, block_k 64, one MMA warpgroup (+ a producer warpgroup), 5 stages, group_m 8 |
| p > 48 | tma_ws, block_m 128 on 8 MMA warps, GEMM1 block_n 128 (gated) or 256, GEMM2 block_n 256 (at 96 < p <= 160: GEMM2 block_m 256, block_n 128), block_k 64, 4 stages, group_m 8 |
| 96 < p <= 160, gated GEMM1, I >= 10 p | both GEMMs block_m 192 on 12 MMA warps (three warpgroups); GEMM1 swap-AB (launch.swap_ab with tma_ws: 192 pairs per tile as wgmma's N, 96 output columns), group_m 1; GEMM2 tma_ws block_n 192 where K divides it, else 128, group_m 8; block_k 64, 4 stages (before the row above) |
| 48 < p <= 104, I >= 1024, GEMM2's swap-AB tiles fill the waves | GEMM1 as for p > 48; GEMM2 swap-AB, block_m 128 pairs, block_n 192 (12 warps: three MMA warpgroups of 64 weight rows), block_k 64, 5 stages, group_m 1; taken where ceil(K / 192) x E tiles fill the 132 SMs' waves at least as well as ceil(K / 256) x E do, less 0.05 (before the rows above) |
| 136 < p <= 224, K >= 2048 | both GEMMs swap-AB, block_m 256 pairs, 8 warps (two MMA warpgroups: GEMM1 block_n 64 gated / 128, GEMM2 128), block_k 64, 4 stages, group_m 1 (after the 192-row band, before the tma_ws rows) |

BK: 128 where the GEMM's reduction size (K for GEMM1, I for GEMM2) divides it, else 64 with 5 stages.
A choice `can_implement` refuses (the shape or a lever off) falls through to the next one, ending in
mma.sync 16x64x64. Fitted to every candidate the sweep timed on S1-S3 and H1-H5, its fitting set
(`bench/fit_defaults.py` over the sweep's `--sweep-log`; none of these shapes is held out); the 192-row band from per-GEMM sweeps and
a layer A/B against the rule before, its GEMM1 on swap-AB from a two-build A/B at four points of
the band, its I bound (10 p) from pinned-row runs at p = 128 on five models; the two swap-AB bands
from A/Bs of three candidate rules against the rule before at 42 points of S1-S3 and H1-H5,
checked on four more models. The reasons for each band are in
`src/kernels/cuda/sm90_gather_defaults.cpp`.
"""


def run_id(row):
    """The run a CSV row comes from: <date>-<commit>, the name the bench gives its CSV."""
    return (row.get("date") or "undated") + "-" + row["commit"]


def run_cell(row, several):
    """The point's run id (<date>-<commit>) as a last cell, where the table has several runs."""
    return f" {run_id(row)} |" if several else ""


def shape_of(row):
    return (int(row["E"]), int(row["K"]), int(row["I"]), int(row["top_k"]), row["act"])


def main(argv=None):
    args = list(sys.argv[1:] if argv is None else argv)
    moetune = default_moetune()
    if args[:1] == ["--moetune"] and len(args) > 1:
        moetune, args = args[1], args[2:]
    paths = args
    path = " ".join(paths)
    points = {}
    for p in paths:
        for r in csv.DictReader(open(p)):
            points[(r["shape"], int(r["M"]))] = r
    rule_now = default_pairs(moetune, [shape_of(r) for r in points.values()],
                             [m for _, m in points])
    order = {"S1": 0, "S2": 1, "S3": 2}
    rows = [points[k] for k in sorted(points, key=lambda k: (order.get(k[0], 9), k[1]))]
    runs = sorted({run_id(r) for r in rows})
    several = len(runs) > 1  # then each point names its run
    out = ["# Default configs of the cuda backend, measured against tuned rows (H200)", "",
           "Generated by `bench/defaults_table.py " + path + "`; do not edit by hand.", "",
           "The default rule (`sm90_default_config` in `src/kernels/cuda/sm90_gather_defaults.cpp`, "
           "used when no", "table row and no cache entry serves a bucket), by pairs per expert "
           "p = M * top_k / E:", "", RULE,
           "Distance from the recipe rows, measured on the device, each point in one run (`" + path + "`,",
           ("runs " if several else "run ") + ", ".join(runs) + "; columns `time_us` = the recipe "
           "row and `default_us` = this rule, same", "protocol, same data). Where the default wins, "
           "`recipes/h200.json` ships the default (`bench/csv_to_recipe.py`).", "",
           "| shape | M | tuned us | default us | default / tuned | default config |" +
           (" run |" if several else ""),
           "|---|---|---|---|---|---|" + ("---|" if several else "")]
    stats = {}
    for r in rows:
        t, d = float(r["time_us"]), float(r["default_us"])
        g1, g2 = rule_now[shape_of(r) + (int(r["M"]),)]
        now = g1 if g1 == g2 else g1 + "|" + g2
        if now != r["default_config"]:
            if now == r["config"]:
                d = t
                r["default_config"] = now + " (the rule since this run: the row itself; was " + \
                    r["default_config"] + ", " + r["default_us"] + " us)"
            else:
                r["default_config"] += " (the rule since this run gives " + now + ", not timed)"
        if d <= 0:
            out.append(f"| {r['shape']} | {r['M']} | {t:.1f} | failed its check | - | "
                       f"{r['default_config']} |" + run_cell(r, several))
            continue
        ratio = d / t
        s = stats.setdefault(r["shape"], [0.0, 0, 0.0, 0])
        s[0] += math.log(ratio)
        s[1] += 1
        s[2] = max(s[2], ratio)
        s[3] += ratio < 1.0
        out.append(f"| {r['shape']} | {r['M']} | {t:.1f} | {d:.1f} | {ratio:.3f} | "
                   f"{r['default_config'].replace('|', chr(92) + '|')} |" + run_cell(r, several))
    out.append("")
    for shape, (lg, n, worst, wins) in stats.items():
        out.append(f"- {shape}: geomean default/tuned {math.exp(lg / n):.3f}, worst {worst:.3f}; "
                   f"the default is faster at {wins}/{n} points")
    print("\n".join(out))


if __name__ == "__main__":
    main()
