#!/usr/bin/env python3
"""Variants of recipes/h200.json for recipe A/Bs of the swap-AB kernel (launch.swap_ab with
schedule tma_ws) on the device.
  make_variant.py RECIPE both [group_m]  -> both GEMMs swap-AB at the mid-M points, block_m the
      smallest of 64/128/192 that holds 1.2 x the pairs per expert (256 with 8 warps above that
      in the first call's variant-g1.json; 192 since), the most stages that fit
  make_variant.py RECIPE gemm1 [group_m] -> GEMM1 swap-AB at the block_m of the pinned GEMM2 where
      that GEMM2 runs on the align path at block_m >= 64; GEMM2 as pinned"""
import copy, json, sys

SHAPES = {"S1": "nemotron-like-s1", "S2": "qwen3-30b-a3b-s2", "S3": "mixtral-8x7b-s3"}
POINTS = {"S1": [256, 512, 1024, 2048, 4096, 8192], "S2": [256, 512, 1024, 2048, 4096, 8192],
          "S3": [64, 128, 256, 512, 1024, 2048]}
LIMIT = 232448


def pick_bm(p, cap):
    for bm in (64, 128, 192):
        if bm >= 1.2 * p:
            return bm
    return cap


def cfg(bm, gated, is_gemm1, group_m):
    warps = 12 if bm <= 192 else 8
    wrows = warps // 4 * 64
    bn = wrows // 2 if gated else wrows
    static = 8 + bm * 4 if is_gemm1 else warps // 4 * bm * 8
    stages = 2
    for s in range(2, 7):
        if s * (bm + wrows) * 128 + 1024 + s * 20 + static <= LIMIT:
            stages = s
    return {"tile": {"block_m": bm, "block_n": bn, "block_k": 64, "group_m": group_m},
            "pipeline": {"num_warps": warps, "num_stages": stages, "split_k": 1},
            "launch": {"swap_ab": True, "schedule": "tma_ws"}}


recipe = json.load(open(sys.argv[1]))
mode = sys.argv[2]
group_m = int(sys.argv[3]) if len(sys.argv) > 3 else 1
cap = int(sys.argv[4]) if len(sys.argv) > 4 else 192
out = copy.deepcopy(recipe)
for short, name in SHAPES.items():
    shape = next(s for s in out["shapes"] if s["name"] == name)
    pr = shape["problem"]
    gated = pr["activation"] == "silu"
    for m in POINTS[short]:
        row = shape["pinned_rows"].setdefault(str(m), {})
        if mode == "both":
            bm = pick_bm(m * pr["top_k"] / pr["num_experts"], cap)
            row["config"] = {"gemm1": cfg(bm, gated, True, group_m),
                             "gemm2": cfg(bm, False, False, group_m)}
        else:
            g2 = row["config"]["gemm2"]
            bm = g2["tile"]["block_m"]
            if bm < 64 or g2.get("launch", {}).get("swap_ab"):
                continue
            row["config"]["gemm1"] = cfg(bm, gated, True, group_m)
json.dump(out, sys.stdout, indent=2)
