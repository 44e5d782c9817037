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


def load_bench_csv(path):
    """({shape: (E, K, I, top_k, act)}, {(shape, M): [gemm1, gemm2]}) from a run's CSV; a single
    default_config names both GEMMs."""
    dims, dflt = {}, {}
    with open(path) as f:
        for r in csv.DictReader(f):
            dims[r["shape"]] = (int(r["E"]), int(r["K"]), int(r["I"]), int(r["top_k"]),
                                r["act"])
            dc = r["default_config"].split("|")
            dflt[(r["shape"], int(r["M"]))] = dc * 2 if len(dc) == 1 else dc
    return dims, dflt


def is_decode(pts, pt):
    """Whether a point is a decode point of the rule: M <= 4 and p <= 0.5."""
    return pt[1] <= 4 and pts[pt]["p"] <= 0.5


def best(pts, pt):
    """The point's best GEMM1 stage time plus its best GEMM2 stage time."""
    return min(pts[pt]["gemm1"].values()) + min(pts[pt]["gemm2"].values())


def cost(pts, pt, c1, c2):
    """(t1 + t2) / best of the pair (c1, c2) at a point; None when either was not timed there."""
    t1, t2 = pts[pt]["gemm1"].get(c1), pts[pt]["gemm2"].get(c2)
    return None if t1 is None or t2 is None else (t1 + t2) / best(pts, pt)


def block_m(c):
    """A config's block_m, or "swap" for a swap-AB config."""
    return "swap" if "swap" in c else int(re.match(r"m(\d+)", c).group(1))


def compatible(c1, c2):
    """Whether a GEMM1 and a GEMM2 config can share a pass (GEMM2 may use block_m 256 after 128)."""
    a1, a2 = block_m(c1), block_m(c2)
    if "swap" in (a1, a2):
        return a1 == a2
    return a1 == a2 or (a2 == 256 and a1 == 128)


def geo(xs):
    """The geometric mean of positive numbers."""
    return math.exp(sum(math.log(x) for x in xs) / len(xs))


def top_configs(pts, reg, gemm):
    """A GEMM's 20 non-swap configs timed at every point of reg, lowest summed excess first."""
    swap = {c for pt in reg for c in pts[pt][gemm] if "swap" in c}
    score = {}
    for c in set().union(*(pts[pt][gemm] for pt in reg)) - swap:
        xs = [pts[pt][gemm].get(c) for pt in reg]
        if None not in xs:
            score[c] = sum((x - min(pts[pt][gemm].values())) / best(pts, pt)
                           for x, pt in zip(xs, reg))
    return sorted(score, key=score.get)[:20]


def print_bands(pts, outside, top):
    """Prints, per band of pairs per expert, the compatible pairs with the lowest geomean cost."""
    for lo, hi in BANDS:
        reg = [pt for pt in outside if lo < pts[pt]["p"] <= hi]
        if not reg:
            continue
        # Rank each GEMM's configs by their summed excess, then pair the best few.
        tops = [top_configs(pts, reg, gemm) for gemm in ("gemm1", "gemm2")]
        pairs = []
        for c1 in tops[0]:
            for c2 in tops[1]:
                if compatible(c1, c2):
                    rs = [cost(pts, pt, c1, c2) for pt in reg]
                    pairs.append((geo(rs), max(rs), c1, c2))
        pairs.sort()
        print(f"p in ({lo:g}, {hi:g}]: {len(reg)} points")
        for g, mx, c1, c2 in pairs[:top]:
            print(f"    {g:.3f} (worst {mx:.3f})  {c1} | {c2}")


def decode_ratios(pts, dec, gemm):
    """{config without block_m: [stage time / the point's best decode time]} over decode points."""
    ratios = {}
    for pt in dec:
        d = {c: v for c, v in pts[pt][gemm].items() if "swap" in c}
        if not d:
            continue
        for c, v in d.items():
            ratios.setdefault(re.sub(r"^m\d+", "", c), []).append(v / min(d.values()))
    return ratios


def print_decode(pts, dec, ruled, top):
    """Prints, per GEMM, the decode configs with the lowest geomean stage ratio, then the rule's."""
    for gemm, index in (("gemm1", 0), ("gemm2", 1)):
        ratios = decode_ratios(pts, dec, gemm)
        full = [(geo(v), max(v), c) for c, v in ratios.items()
                if len(v) == max(len(x) for x in ratios.values())]
        if not full:
            continue
        full.sort()
        print(f"decode {gemm}: {len(ratios[full[0][2]])} points")
        for g, mx, c in full[:top]:
            print(f"    {g:.3f} (worst {mx:.3f})  {c}")
        # The rule's decode configs without their pairs per pass (block_m: the rule derives it).
        named = {re.sub(r"^m\d+", "", ruled(pt)[index]) for pt in dec if ruled(pt)}
        for c in sorted(named):
            mine = [x for x in full if x[2] == c]
            if mine:
                print(f"    RULE {c}: {mine[0][0]:.3f} (worst {mine[0][1]:.3f})")


def report(pts, outside, name, choose):
    """Prints the geomean and worst points of the pairs `choose` picks at the non-decode points."""
    rs, worst = [], []
    for pt in outside:
        c = choose(pt)
        r = cost(pts, pt, *c) if c else None
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
    dims, dflt = load_bench_csv(a.bench_csv) if a.bench_csv else ({}, {})

    # Decode points (the rule's, M <= 4 and p <= 0.5) are fitted below; elsewhere only the
    # launches with align and combine compete (a decode pair's stage times would leave those out).
    outside = [pt for pt in pts if not is_decode(pts, pt)]
    print_bands(pts, outside, a.top)

    # Decode points (M <= 4, p <= 0.5): every candidate is a decode kernel with the same launches,
    # so each GEMM's stage time ranks them alone; configs compared without their block_m (the
    # pairs per pass, which the rule derives from M).
    dec = [pt for pt in pts if is_decode(pts, pt)]
    ruled_pairs = default_pairs(a.moetune, dims.values(), [pt[1] for pt in pts]) if dims else {}

    def ruled(pt):
        """The rule's (gemm1, gemm2) at a point of a --bench-csv shape; None elsewhere."""
        return ruled_pairs.get(dims[pt[0]] + (pt[1],)) if pt[0] in dims else None

    print_decode(pts, dec, ruled, a.top)
    if dflt:
        report(pts, outside, "the CSV's defaults", lambda pt: dflt.get(pt))
        report(pts, outside, "RULE", ruled)


if __name__ == "__main__":
    main()
