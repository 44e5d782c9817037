#!/usr/bin/env python3
"""Fits and checks the sm90_gather default rule against a sweep log.

Input: the per-candidate log of `moetune_sm90_bench --sweep-log FILE` (.csv or .csv.gz: shape, M,
pairs_per_expert, space_block_m, gemm, config, us), and optionally that run's CSV, whose
default_config column is the rule the binary that ran had. Per point the cost of a (GEMM1, GEMM2)
pair is (t1 + t2) / (best t1 + best t2), stage times alone (align and combine are the same for
every pair outside decode, so decode points, M <= 4 with p <= 0.5, are fitted apart and decode
configs are left out of the other points). Prints, per band of pairs per expert p, the pairs with
the lowest geomean cost; per GEMM the decode configs with the lowest geomean stage time / the
point's best decode candidate at M <= 4 and p <= 0.5, and the rule's; then the geomean and worst
point of the CSV's defaults and of RULE, the rule as `moetune defaults --backend cuda` gives it now
(the binary of --moetune: sm90_default_config itself, never a copy of it), at the shapes of
--bench-csv.

Usage: bench/fit_defaults.py SWEEP_LOG [--bench-csv CSV] [--top N] [--moetune PATH]
  --moetune: the moetune binary whose rule is priced (default: $MOETUNE_BIN, else build/moetune).
"""
import argparse
import csv
import gzip
import math
import os
import re
import subprocess
import sys

BANDS = [(0, 1), (1, 4), (4, 12), (12, 24), (24, 48), (48, 96), (96, 160), (160, 320), (320, 1e12)]


def default_moetune():
    return os.environ.get("MOETUNE_BIN") or "build/moetune"


def default_pairs(moetune, shapes, ms):
    """{(E, K, I, top_k, act, M): (gemm1, gemm2)} from `moetune defaults --backend cuda`: the config
    short strings the binary's default rule gives each shape (E, K, I, top_k, act) at each M. Exits
    with moetune's own message when the binary fails."""
    shapes = sorted(set(shapes))
    ms = sorted(set(ms))
    if not shapes or not ms:
        return {}
    cmd = [moetune, "defaults", "--backend", "cuda", "--m", ",".join(str(m) for m in ms)]
    for e, k, i, top_k, act in shapes:
        cmd += ["--problem", f"E={e},K={k},I={i},topk={top_k},act={act}"]
    try:
        out = subprocess.run(cmd, capture_output=True, text=True, check=False)
    except OSError as err:
        sys.exit(f"fit_defaults: cannot run {moetune} ({err}); build it or pass --moetune PATH")
    if out.returncode != 0:
        sys.exit(f"fit_defaults: {' '.join(cmd[:4])} exit {out.returncode}: {out.stderr.strip()}")
    pairs = {}
    for r in csv.DictReader(out.stdout.splitlines()):
        key = (int(r["E"]), int(r["K"]), int(r["I"]), int(r["top_k"]), r["act"], int(r["M"]))
        pairs[key] = (r["gemm1"], r["gemm2"])
    return pairs


def load(path):
    opener = gzip.open if path.endswith(".gz") else open
    pts = {}
    with opener(path, "rt") as f:
        for r in csv.DictReader(f):
            if not r["us"]:
                continue
            key = (r["shape"], int(r["M"]))
            pt = pts.setdefault(key, {"p": float(r["pairs_per_expert"]), "gemm1": {}, "gemm2": {}})
            d = pt[r["gemm"]]
            d[r["config"]] = min(float(r["us"]), d.get(r["config"], 1e30))
    return pts


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("sweep_log")
    ap.add_argument("--bench-csv", help="the run's CSV: its E, K, I, act and default_config")
    ap.add_argument("--top", type=int, default=3)
    ap.add_argument("--moetune", default=default_moetune(),
                    help="the moetune binary whose default rule is priced")
    a = ap.parse_args(argv)
    pts = load(a.sweep_log)
    if not pts:
        sys.exit(f"fit_defaults: {a.sweep_log} holds no timed candidate")
    dims, dflt = {}, {}
    if a.bench_csv:
        with open(a.bench_csv) as f:
            for r in csv.DictReader(f):
                dims[r["shape"]] = (int(r["E"]), int(r["K"]), int(r["I"]), int(r["top_k"]),
                                    r["act"])
                dc = r["default_config"].split("|")
                dflt[(r["shape"], int(r["M"]))] = dc * 2 if len(dc) == 1 else dc

    def best(pt):
        return min(pts[pt]["gemm1"].values()) + min(pts[pt]["gemm2"].values())

    def t(pt, gemm, cfg):
        return pts[pt][gemm].get(cfg)

    def cost(pt, c1, c2):
        t1, t2 = t(pt, "gemm1", c1), t(pt, "gemm2", c2)
        return None if t1 is None or t2 is None else (t1 + t2) / best(pt)

    def bm(c):
        return "swap" if "swap" in c else int(re.match(r"m(\d+)", c).group(1))

    def compat(c1, c2):
        a1, a2 = bm(c1), bm(c2)
        if "swap" in (a1, a2):
            return a1 == a2
        return a1 == a2 or (a2 == 256 and a1 == 128)

    def swap_configs(reg, gemm):
        return {c for pt in reg for c in pts[pt][gemm] if "swap" in c}

    def geo(xs):
        return math.exp(sum(math.log(x) for x in xs) / len(xs))

    # Decode points (the rule's, M <= 4 and p <= 0.5) are fitted below; elsewhere only the
    # launches with align and combine compete (a decode pair's stage times would leave those out).
    outside = [pt for pt in pts if not (pt[1] <= 4 and pts[pt]["p"] <= 0.5)]
    for lo, hi in BANDS:
        reg = [pt for pt in outside if lo < pts[pt]["p"] <= hi]
        if not reg:
            continue
        # Rank each GEMM's configs by their summed excess, then pair the best few.
        tops = []
        for gemm in ("gemm1", "gemm2"):
            score = {}
            for c in set().union(*(pts[pt][gemm] for pt in reg)) - swap_configs(reg, gemm):
                xs = [t(pt, gemm, c) for pt in reg]
                if None not in xs:
                    score[c] = sum((x - min(pts[pt][gemm].values())) / best(pt)
                                   for x, pt in zip(xs, reg))
            tops.append(sorted(score, key=score.get)[:20])
        pairs = []
        for c1 in tops[0]:
            for c2 in tops[1]:
                if compat(c1, c2):
                    rs = [cost(pt, c1, c2) for pt in reg]
                    pairs.append((geo(rs), max(rs), c1, c2))
        pairs.sort()
        print(f"p in ({lo:g}, {hi:g}]: {len(reg)} points")
        for g, mx, c1, c2 in pairs[: a.top]:
            print(f"    {g:.3f} (worst {mx:.3f})  {c1} | {c2}")

    # Decode points (M <= 4, p <= 0.5): every candidate is a decode kernel with the same launches,
    # so each GEMM's stage time ranks them alone; configs compared without their block_m (the
    # pairs per pass, which the rule derives from M).
    dec = [pt for pt in pts if pt[1] <= 4 and pts[pt]["p"] <= 0.5]
    ruled_pairs = default_pairs(a.moetune, dims.values(), [pt[1] for pt in pts]) if dims else {}

    def ruled(pt):
        """The rule's (gemm1, gemm2) at a point of a --bench-csv shape; None elsewhere."""
        return ruled_pairs.get(dims[pt[0]] + (pt[1],)) if pt[0] in dims else None

    for gemm, index in (("gemm1", 0), ("gemm2", 1)):
        ratios = {}
        for pt in dec:
            d = {c: v for c, v in pts[pt][gemm].items() if "swap" in c}
            if not d:
                continue
            for c, v in d.items():
                ratios.setdefault(re.sub(r"^m\d+", "", c), []).append(v / min(d.values()))
        full = [(geo(v), max(v), c) for c, v in ratios.items()
                if len(v) == max(len(x) for x in ratios.values())]
        if not full:
            continue
        full.sort()
        print(f"decode {gemm}: {len(ratios[full[0][2]])} points")
        for g, mx, c in full[: a.top]:
            print(f"    {g:.3f} (worst {mx:.3f})  {c}")
        # The rule's decode configs without their pairs per pass (block_m: the rule derives it).
        named = {re.sub(r"^m\d+", "", ruled(pt)[index]) for pt in dec if ruled(pt)}
        for c in sorted(named):
            mine = [x for x in full if x[2] == c]
            if mine:
                print(f"    RULE {c}: {mine[0][0]:.3f} (worst {mine[0][1]:.3f})")

    def report(name, choose):
        rs, worst = [], []
        for pt in outside:
            c = choose(pt)
            r = cost(pt, *c) if c else None
            if r is None:
                print(f"{name}: {pt[0]} M={pt[1]}: no timing for {c}")
                continue
            rs.append(r)
            worst.append((r, pt))
        if not rs:
            return  # every point of the CSV is a decode point, priced above
        worst.sort(reverse=True)
        w = ", ".join(f"{s} M={m} {r:.3f}" for r, (s, m) in worst[:4])
        print(f"{name}: geomean {geo(rs):.3f} over {len(rs)} points; worst {w}")

    if dflt:
        report("the CSV's defaults", lambda pt: dflt.get(pt))
        report("RULE", ruled)


if __name__ == "__main__":
    main()
