#!/usr/bin/env python3
"""Fits and checks the sm90_gather default rule against a sweep log.

Input: the per-candidate log of `moetune_sm90_bench --sweep-log FILE` (.csv or .csv.gz: shape, M,
pairs_per_expert, space_block_m, gemm, config, us), and optionally that run's CSV, whose
default_config column is the rule the binary had. Per point the cost of a (GEMM1, GEMM2) pair is
(t1 + t2) / (best t1 + best t2), stage times alone (align and combine are the same for every pair
outside decode, so decode points, M <= 4 with p <= 0.5, are fitted apart and decode configs are
left out of the other points). Prints, per band of pairs
per expert p, the pairs with the lowest geomean cost; per GEMM the decode configs with the lowest
geomean stage time / the point's best decode candidate at M <= 4 and p <= 0.5, and RULE_DECODE's;
then the geomean and worst point of the CSV's defaults and of RULE below. RULE and RULE_DECODE
mirror sm90_default_config (src/kernels/cuda/sm90_gather_defaults.cpp); `--grid` prints what they
give a fixed grid of shapes and M (tests/kernels/cuda/default_rule_grid.csv), which both this
mirror (tests/bench/fit_defaults_test.py) and the C++ rule (jit_default_rule_test.cpp) must match:
change the rule in both places, then regenerate the grid with --grid.

A config named with block_k 128 stands for "128 where the GEMM's reduction size divides it, else
64 with 5 stages" (what the C++ rule does), so one rule covers shapes with K or I not a multiple
of 128.

Usage: bench/fit_defaults.py SWEEP_LOG [--bench-csv CSV] [--top N]
       bench/fit_defaults.py --grid > tests/kernels/cuda/default_rule_grid.csv
"""
import argparse
import csv
import gzip
import math
import re
import sys

BANDS = [(0, 1), (1, 4), (4, 12), (12, 24), (24, 48), (48, 96), (96, 160), (160, 320), (320, 1e12)]


def wave_fill(tiles, sms=132):
    """sm90_gather_defaults.cpp's wave_fill: the share of a persistent GEMM's wave slots that hold
    one of its tiles, on the H200's 132 SMs."""
    waves = -(-tiles // sms)
    return tiles / (waves * sms) if waves else 1.0


def rule(gated, p, k=0, i=0, e=0):
    """sm90_default_config outside decode, as config short strings (block_k 128 = BK); k, i, e: the
    shape's K, I and E (the conditions of the 192-row and swap-AB bands)."""
    if p <= 1:
        return "m16n64k128g8w4s3", "m16n128k128g8w4s3"
    if p <= 4:
        return "m16n64k128g8w4s3", "m16n64k128g8w4s5"
    if p <= 12:
        return "m16n64k64g1w4s5", "m16n64k64g1w4s5"
    if p <= 24:
        return "m32n128k128g1w8s3", "m32n64k128g1w4s4"
    if p <= 48:
        return "m64n128k64g8w4s5tw", "m64n128k64g8w4s5tw"
    g1 = "m128n128k64g8w8s4tw" if gated else "m128n256k64g8w8s4tw"
    if p <= 104 and i >= 1024 and (wave_fill(-(-k // 192) * e) >=
                                   wave_fill(-(-k // 256) * e) - 0.05):
        return g1, "m128n192k64g1w12s5swaptw"
    if 96 < p <= 160 and gated and i >= 10 * p:
        return "m192n96k64g1w12s4swaptw", "m192n%dk64g8w12s4tw" % (192 if k % 192 == 0 else 128)
    if 136 < p <= 224 and k >= 2048:
        return "m256n%dk64g1w8s4swaptw" % (64 if gated else 128), "m256n128k64g1w8s4swaptw"
    if 96 < p <= 160:
        return g1, "m256n128k64g8w8s4tw"
    return g1, "m128n256k64g8w8s4tw"


# sm90_default_config's decode kernels (M <= 4 and p <= 0.5), without the m<pairs per pass> prefix.
RULE_DECODE = ("n4k512g1w4s1swap", "n4k512g1w8s1swap")


def default_pair(gated, e, k, i, top_k, m):
    """The (gemm1, gemm2) short strings sm90_default_config gives a shape at M tokens, from RULE and
    RULE_DECODE with block_k resolved as the C++ rule resolves it (halved with 5 stages until it
    divides the GEMM's reduction size: K for GEMM1, I for GEMM2). tests/kernels/cuda/
    default_rule_grid.csv holds this for a grid of shapes; the C++ rule is checked against the same
    file (jit_default_rule_test.cpp), so the two cannot drift apart unnoticed. Shapes where the
    first choice is refused (narrow outputs, the wgmma lever off) are not mirrored here."""
    p = m * top_k / e
    if m <= 4 and p <= 0.5:
        bm = 1
        while bm < 8 and bm < m:
            bm *= 2
        return tuple("m%d%s" % (bm, c) for c in RULE_DECODE)

    def resolve(cfg, kd):
        mt = re.match(r"(m\d+n\d+k)(\d+)(g\d+w\d+s)(\d+)(.*)$", cfg)
        head, bk, mid, stages, tail = mt.groups()
        bk = int(bk)
        while bk > 32 and kd % bk:
            bk //= 2
            stages = "5"
        return "%s%d%s%s%s" % (head, bk, mid, stages, tail)

    g1, g2 = rule(gated, p, k, i, e)
    return resolve(g1, k), resolve(g2, i)


# The grid's shapes (name, E, K, I, top_k, activation): S1-S3, an E = 40 gelu_tanh shape whose K is
# not a multiple of 128, and two 192-row candidates (DeepSeek-V3-like, Mixtral-8x22B); M from decode
# through every band of pairs per expert.
GRID_SHAPES = [("S1", 128, 2688, 1856, 6, "relu2"), ("S2", 128, 2048, 768, 8, "silu"),
               ("S3", 8, 4096, 14336, 2, "silu"), ("gelu40", 40, 2752, 1408, 4, "gelu_tanh"),
               ("dsv3", 256, 7168, 2048, 8, "silu"), ("mix22b", 8, 6144, 16384, 2, "silu")]
GRID_M = [1, 2, 3, 4, 8, 16, 32, 64, 96, 128, 256, 384, 512, 768, 1024, 1536, 2048, 2560, 3072,
          4096, 8192, 16384]


def grid_lines():
    yield "E,K,I,top_k,act,M,gemm1,gemm2"
    for _, e, k, i, top_k, act in GRID_SHAPES:
        for m in GRID_M:
            g1, g2 = default_pair(act == "silu", e, k, i, top_k, m)
            yield f"{e},{k},{i},{top_k},{act},{m},{g1},{g2}"


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
    ap.add_argument("sweep_log", nargs="?")
    ap.add_argument("--grid", action="store_true",
                    help="print default_pair() over the fixed grid (default_rule_grid.csv)")
    ap.add_argument("--bench-csv", help="the run's CSV: its E, K, I, act and default_config")
    ap.add_argument("--top", type=int, default=3)
    a = ap.parse_args(argv)
    if a.grid:
        print("\n".join(grid_lines()))
        return
    if not a.sweep_log:
        ap.error("name a sweep log (or --grid)")
    pts = load(a.sweep_log)
    if not pts:
        sys.exit(f"fit_defaults: {a.sweep_log} holds no timed candidate")
    dims, dflt = {}, {}
    if a.bench_csv:
        with open(a.bench_csv) as f:
            for r in csv.DictReader(f):
                dims[r["shape"]] = (int(r["K"]), int(r["I"]), r["act"] == "silu", int(r["E"]))
                dc = r["default_config"].split("|")
                dflt[(r["shape"], int(r["M"]))] = dc * 2 if len(dc) == 1 else dc

    def best(pt):
        return min(pts[pt]["gemm1"].values()) + min(pts[pt]["gemm2"].values())

    def t(pt, gemm, cfg):
        d = pts[pt][gemm]
        if cfg in d or "k128" not in cfg or pt[0] not in dims:
            return d.get(cfg)
        kd = dims[pt[0]][0] if gemm == "gemm1" else dims[pt[0]][1]
        return d.get(re.sub(r"s\d$", "s5", cfg.replace("k128", "k64"))) if kd % 128 else None

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
    for gemm, ruled in zip(("gemm1", "gemm2"), RULE_DECODE):
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
        mine = [x for x in full if x[2] == ruled]
        if mine:
            print(f"    RULE {ruled}: {mine[0][0]:.3f} (worst {mine[0][1]:.3f})")

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
        worst.sort(reverse=True)
        w = ", ".join(f"{s} M={m} {r:.3f}" for r, (s, m) in worst[:4])
        print(f"{name}: geomean {geo(rs):.3f} over {len(rs)} points; worst {w}")

    if dflt:
        report("the CSV's defaults", lambda pt: dflt.get(pt))
        report("RULE", lambda pt: rule(dims[pt[0]][2], pts[pt]["p"], dims[pt[0]][0],
                                       dims[pt[0]][1], dims[pt[0]][3]) if pt[0] in dims else None)


if __name__ == "__main__":
    main()
