#!/usr/bin/env python3
"""Recipe variants for the second call: recipes/h200.json with chosen GEMMs replaced by swap-AB
(or other) configs named as the bench prints them, e.g. m128n192k64g1w12s5swap (swap-AB, schedule
tma_ws) or m128n232k64g8w8s4tw (tma_ws).
  make_mixed.py RECIPE OUT S1:2048:G1NAME:G2NAME [...]   (G1NAME or G2NAME '-': as pinned)"""
import json, re, sys

SHAPES = {"S1": "nemotron-like-s1", "S2": "qwen3-30b-a3b-s2", "S3": "mixtral-8x7b-s3"}


def parse(name):
    m = re.fullmatch(r"m(\d+)n(\d+)k(\d+)g(\d+)w(\d+)s(\d+)(swap|tw)", name)
    if not m:
        sys.exit("make_mixed.py: cannot read config name %r (want e.g. m128n192k64g1w12s5swap)" % name)
    bm, bn, bk, gm, w, s, kind = m.groups()
    launch = {"schedule": "tma_ws"}
    if kind == "swap":
        launch["swap_ab"] = True
    return {"tile": {"block_m": int(bm), "block_n": int(bn), "block_k": int(bk), "group_m": int(gm)},
            "pipeline": {"num_warps": int(w), "num_stages": int(s), "split_k": 1}, "launch": launch}


recipe = json.load(open(sys.argv[1]))
for spec in sys.argv[3:]:
    shape, m, g1, g2 = spec.split(":")
    s = next(x for x in recipe["shapes"] if x["name"] == SHAPES[shape])
    row = s["pinned_rows"][m]
    for key, name in (("gemm1", g1), ("gemm2", g2)):
        if name != "-":
            row["config"][key] = parse(name)
json.dump(recipe, open(sys.argv[2], "w"), indent=2)
