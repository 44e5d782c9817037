#!/usr/bin/env python3
"""Per-stage floors of a moetune_sm90_bench CSV: where each point's time goes against what each
stage must move or multiply, at the run's own ceilings (copy_GBps, peak_TFLOPs).

The layer floor of shared/anchors/h200-baseline.md counts the weights of the experts hit, x in and
out, and the matmul flops; a layer of separate launches also writes and reads its intermediates.
Per stage (bytes at the copy rate, flops at the matmul rate, the larger of the two):
  GEMM1   weights w1 of the experts hit (N1 x K each) + x (M x K) + h written (pairs x I)
  GEMM2   weights w2 of the experts hit (K x I each) + h read + y written (pairs x K)
  combine y read + out written (M x K)
all bf16 (2 bytes); N1 = 2I for silu (gated), else I; pairs = M x top_k. Align has no floor here (its
bytes are ids). The sum of the three is the floor of this pipeline's design ("design floor"); its
ratio to the layer floor is what the intermediates cost at the floor, and time / design floor is
what the kernels leave on top. Stage times are measured alone (graph replay after an L2 flush), so
they add up to more than the layer, whose launches overlap.

usage: tools/stage_floors.py RUN.csv [--shapes S1,S2] [--min-m M]
Prints a markdown table, one row per point. Exit 2 on a missing file or column.
"""
import argparse
import csv
import sys

NEEDED = ["shape", "K", "I", "top_k", "act", "M", "experts_hit", "time_us", "floor_us", "align_us",
          "gemm1_us", "gemm2_us", "combine_us", "copy_GBps", "peak_TFLOPs"]


def floors(r):
    """(gemm1, gemm2, combine) floors in us for one CSV row."""
    k, i, m = int(r["K"]), int(r["I"]), int(r["M"])
    pairs = m * int(r["top_k"])
    hit = int(r["experts_hit"])
    n1 = 2 * i if r["act"] == "silu" else i
    bw = float(r["copy_GBps"]) * 1e3  # bytes per us
    fl = float(r["peak_TFLOPs"]) * 1e6  # flops per us
    g1 = max((hit * n1 * k + m * k + pairs * i) * 2 / bw, 2.0 * pairs * n1 * k / fl)
    g2 = max((hit * k * i + pairs * i + pairs * k) * 2 / bw, 2.0 * pairs * k * i / fl)
    comb = (pairs * k + m * k) * 2 / bw
    return g1, g2, comb


def main(argv):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("csv")
    ap.add_argument("--shapes", default="", help="comma-separated shapes to keep (default: all)")
    ap.add_argument("--min-m", type=int, default=0, help="leave out points below this M")
    a = ap.parse_args(argv[1:])
    try:
        rows = list(csv.DictReader(open(a.csv)))
    except OSError as e:
        sys.stderr.write("stage_floors.py: cannot read %s: %s\n" % (a.csv, e.strerror))
        return 2
    missing = [c for c in NEEDED if rows and c not in rows[0]]
    if not rows or missing:
        sys.stderr.write("stage_floors.py: %s: %s\n" % (
            a.csv, "no rows" if not rows else "missing columns " + ", ".join(missing)))
        return 2
    keep = set(s for s in a.shapes.split(",") if s)
    print("| shape | M | layer us | layer floor | align us | GEMM1 us / floor | GEMM2 us / floor "
          "| combine us / floor | design floor | design / layer floor | layer / design floor |")
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    for r in rows:
        if (keep and r["shape"] not in keep) or int(r["M"]) < a.min_m:
            continue
        g1, g2, comb = floors(r)
        design = g1 + g2 + comb
        t, lf = float(r["time_us"]), float(r["floor_us"])
        print("| %s | %s | %.1f | %.1f | %.1f | %.1f / %.1f | %.1f / %.1f | %.1f / %.1f | %.1f | "
              "%.2f | %.2f |" % (r["shape"], r["M"], t, lf, float(r["align_us"]),
                                 float(r["gemm1_us"]), g1, float(r["gemm2_us"]), g2,
                                 float(r["combine_us"]), comb, design, design / lf, t / design))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
