#!/usr/bin/env python3
"""The summary of an interleaved A/B of `moetune_sm90_bench --no-sweep` runs (`bench/device.sh
stage-ab`): RUNS/<arm>-<round>/*.csv for each arm and round.

Per point, the median over rounds of each arm's layer time and GEMM stage times, its ratio to the
first arm, and whether every run of every arm gave the same output digest. Two arms: one line per
point (the second arm's ratio to the first; "every": yes where each of its runs beat every run of
the first), then each round's times and the second arm's config where it differs from the
first's; more arms: a line per arm.

Usage: ab_summary.py RUNS ROUNDS DIGESTS ARM ARM [ARM...]
Exit 1 when DIGESTS is "equal" and the digests differ or a run is missing; 2 on bad usage.
"""
import csv
import glob
import os
import statistics
import sys


def load(runs, rounds, arms):
    """(shape, M) -> arm -> the rows of that arm's runs (one per round that measured the point)."""
    data = {}
    for arm in arms:
        for r in range(1, rounds + 1):
            for f in glob.glob(os.path.join(runs, "%s-%d" % (arm, r), "*.csv")):
                for row in csv.DictReader(open(f)):
                    point = (row["shape"], int(row["M"]))
                    data.setdefault(point, {}).setdefault(arm, []).append(row)
    return data


def median(rows, key):
    return statistics.median(float(x[key]) for x in rows) if rows else float("nan")


def main(argv):
    if len(argv) < 6 or argv[3] not in ("equal", "any"):
        sys.stderr.write("usage: ab_summary.py RUNS ROUNDS equal|any ARM ARM [ARM...]\n")
        return 2
    runs, rounds, digests, arms = argv[1], int(argv[2]), argv[3], argv[4:]
    data = load(runs, rounds, arms)
    base, wide = arms[0], len(arms) == 2
    if wide:
        a, b = arms
        print("%-4s %6s %10s %10s %8s %9s %9s %9s %9s %5s %7s" % (
            "shp", "M", a + " us", b + " us", "%s/%s" % (b, a), a + " gemm1", b + " gemm1",
            a + " gemm2", b + " gemm2", "every", "bits"))
    else:
        print("%-4s %6s %-10s %10s %7s %9s %9s %s" % ("shp", "M", "arm", "us", "/" + base[:6],
                                                      "gemm1", "gemm2", "bits"))
    same_all = True
    for (shape, m), by_arm in sorted(data.items()):
        digests_seen = {x["digest"] for arm in arms for x in by_arm.get(arm, [])}
        complete = all(len(by_arm.get(arm, [])) == rounds for arm in arms)
        same = len(digests_seen) == 1 and complete
        same_all &= same
        t0 = median(by_arm.get(base, []), "time_us")
        if wide:
            ra, rb = by_arm.get(a, []), by_arm.get(b, [])
            every = bool(ra and rb) and (max(float(x["time_us"]) for x in rb) <
                                         min(float(x["time_us"]) for x in ra))
            print("%-4s %6d %10.2f %10.2f %8.3f %9.2f %9.2f %9.2f %9.2f %5s %7s" % (
                shape, m, t0, median(rb, "time_us"), median(rb, "time_us") / t0,
                median(ra, "gemm1_us"), median(rb, "gemm1_us"), median(ra, "gemm2_us"),
                median(rb, "gemm2_us"), "yes" if every else "no", "same" if same else "DIFFER"))
            config_a = ra[0].get("config", "") if ra else ""
            config_b = rb[0].get("config", "") if rb else ""
            print("     per round %s: %s  %s: %s%s" % (
                a, " ".join("%.2f" % float(x["time_us"]) for x in ra),
                b, " ".join("%.2f" % float(x["time_us"]) for x in rb),
                "  %s config: %s" % (b, config_b) if config_b != config_a else ""))
            continue
        for arm in arms:
            rows = by_arm.get(arm, [])
            if not rows:
                print("%-4s %6d %-10s (no runs)" % (shape, m, arm))
                continue
            print("%-4s %6d %-10s %10.2f %7.3f %9.2f %9.2f %s" % (
                shape, m, arm, median(rows, "time_us"), median(rows, "time_us") / t0,
                median(rows, "gemm1_us"), median(rows, "gemm2_us"), "same" if same else "DIFFER"))
    if digests == "equal" and not same_all:
        print("DIGESTS DIFFER (or runs missing) where DIGESTS=equal")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
