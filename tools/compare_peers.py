#!/usr/bin/env python3
"""Compares a moetune_sm90_bench CSV with the peer numbers of shared/anchors/h200-baseline.md
(vLLM Triton fused_moe and torch._grouped_mm on the same H200 model, same protocol) and the
issue's targets. Prints a markdown table and per-shape summary.

usage: tools/compare_peers.py RUN.csv [LATER.csv ...]   (RUN.csv: <OUT>/<date>-<commit>.csv)
With several CSVs, a (shape, M) point of a later CSV replaces the earlier one (e.g. a full run,
then a re-time of the rows a later commit changed); the table names each point's commit.
Each point's time is what the recipe made from the CSV ships (bench/csv_to_recipe.py): the row's
time, or the default config's where the default, timed in the same run, was as fast or faster
(marked "default").
"""
import csv
import math
import sys

# (shape, M) -> (vLLM Triton us, torch._grouped_mm us), from the baseline file (2026-11-29).
PEERS = {
    "S1": [(1, 55.0, 107.8), (4, 144.2, 220.1), (16, 340.0, 507.3), (64, 611.0, 916.3),
           (128, 630.8, 942.6), (256, 962.3, 958.7), (512, 1041.5, 971.4), (1024, 1147.9, 1043.2),
           (2048, 1373.4, 1131.2), (4096, 2285.5, 1571.7), (8192, 4075.7, 2933.6),
           (16384, 7568.4, 5252.0)],
    "S2": [(1, 36.0, 86.6), (4, 82.4, 163.8), (16, 183.3, 314.1), (64, 299.5, 480.8),
           (128, 307.5, 484.6), (256, 324.8, 502.4), (512, 329.1, 533.4), (1024, 380.1, 651.6),
           (2048, 467.6, 951.9), (4096, 729.8, 1308.9), (8192, 1275.5, 2199.5),
           (16384, 2398.2, 4108.9)],
    "S3": [(1, 187.1, 342.2), (4, 495.8, 884.2), (16, 655.7, 1075.6), (64, 665.8, 1095.4),
           (128, 681.1, 1017.0), (256, 740.9, 1031.8), (512, 951.8, 1651.1), (1024, 1460.7, 1952.1),
           (2048, 2414.1, 2838.6), (4096, 4823.1, 5237.5), (8192, 9370.3, 10054.8),
           (16384, 18594.6, 20796.9)],
}
TARGETS = {"S1": (1.12, 1.30), "S2": (1.12, 1.30), "S3": (1.08, 1.25)}  # geomean, max point


def main():
    points = {}
    for path in sys.argv[1:]:
        for r in csv.DictReader(open(path)):
            points[(r["shape"], int(r["M"]))] = r
    order = {"S1": 0, "S2": 1, "S3": 2}
    rows = [points[k] for k in sorted(points, key=lambda k: (order.get(k[0], 9), k[1]))]
    print("| shape | M | moetune us | floor us | t/floor | vLLM us | grouped_mm us | vs better peer | point target | met | commit | shipped |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|")
    summary = {}
    for r in rows:
        s, m = r["shape"], int(r["M"])
        peer = {mm: (a, b) for mm, a, b in PEERS[s]}.get(m)
        t, fl = float(r["time_us"]), float(r["floor_us"])
        d = float(r.get("default_us") or -1)
        shipped = "row"
        if r.get("config") == r.get("default_config"):
            shipped = "row = default"
        elif 0 < d <= t and r.get("default_config"):  # csv_to_recipe.py ships the default here
            t, shipped = d, "default"
        best = min(peer) if peer else float("nan")
        target = max(1.02 * fl, 0.90 * best)
        ok = t <= target
        summary.setdefault(s, []).append((t / fl, ok, t / best))
        print(f"| {s} | {m} | {t:.1f} | {fl:.1f} | {t / fl:.3f} | {peer[0]:.1f} | {peer[1]:.1f} | "
              f"{t / best:.2f}x | {target:.1f} | {'yes' if ok else 'no'} | {r['commit'][:7]} | {shipped} |")
    print()
    for s, vals in summary.items():
        geo = math.exp(sum(math.log(v[0]) for v in vals) / len(vals))
        worst = max(v[0] for v in vals)
        met = sum(v[1] for v in vals)
        faster = sum(v[2] < 1 for v in vals)
        g_t, w_t = TARGETS[s]
        print(f"- {s}: geomean t/floor {geo:.3f} (target <= {g_t}), worst point {worst:.2f} "
              f"(target <= {w_t}); per-point target met at {met}/{len(vals)} points; faster than "
              f"the better peer at {faster}/{len(vals)} points")


if __name__ == "__main__":
    main()
