#!/usr/bin/env python3
"""Writes a variant of a recipe whose rows take, per point, the fastest GEMM1 and GEMM2 that one
block_m space of a sweep log timed (moetune_sm90_bench --sweep-log: "shape,M,pairs_per_expert,
space_block_m,gemm,config,us"), so a space the sweep's whole-layer pick passed over (e.g. the 192-row
tiles against the shipped pingpong GEMM2) can be A/B'd in the protocol against the pinned rows.
Rows of other points stay; every changed row keeps its old numbers, so re-time the variant before
quoting it (as bench/recipe_variant.py).

usage: bench/sweep_log_variant.py RECIPE SWEEP_LOG --block-m BM [--points S2:2048,S3:512]
                                  [--list-changed] > variant.json
  SWEEP_LOG may be gzipped (.gz). --points: only these points (default: every point the space has
  both GEMMs timed at). Shapes S1-S3 map to the recipe's shape names; other shapes in the
  log are skipped. --list-changed: print the changed points as "SHAPES MS" (e.g. "S2,S3 512,2048")
  for `bench/device.sh stage-ab`'s --shapes and --m, or "none".
Exit 2 on bad arguments, an unreadable file or a config that does not parse; nothing is written
then.
"""
import argparse
import csv
import gzip
import io
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from csv_to_recipe import PAT, kernel_config  # noqa: E402
from recipe_variant import BENCH_NAMES  # noqa: E402


def die(msg):
    print("sweep_log_variant: " + msg, file=sys.stderr)
    sys.exit(2)


def best_of_space(path, block_m):
    """{(shape, M): {"gemm1": (us, config), "gemm2": (us, config)}} of one space's timed rows."""
    try:
        raw = gzip.open(path, "rt") if path.endswith(".gz") else open(path)
        text = raw.read()
    except OSError as e:
        die("cannot read %s: %s" % (path, e))
    best = {}
    for r in csv.DictReader(io.StringIO(text)):
        if r.get("space_block_m") != str(block_m) or not r.get("us"):
            continue
        if not PAT.match(r["config"]):
            die("%s: cannot parse config '%s'" % (path, r["config"]))
        d = best.setdefault((r["shape"], int(r["M"])), {})
        us = float(r["us"])
        if r["gemm"] not in d or us < d[r["gemm"]][0]:
            d[r["gemm"]] = (us, r["config"])
    return {k: v for k, v in best.items() if "gemm1" in v and "gemm2" in v}


def main(argv):
    ap = argparse.ArgumentParser(add_help=True)
    ap.add_argument("recipe")
    ap.add_argument("sweep_log")
    ap.add_argument("--block-m", type=int, required=True)
    ap.add_argument("--points", default="")
    ap.add_argument("--list-changed", action="store_true")
    a = ap.parse_args(argv)
    only = set()
    for p in filter(None, a.points.split(",")):
        shape, _, m = p.partition(":")
        if not m.isdigit():
            die("--points %s: expected SHAPE:M, e.g. S2:2048" % p)
        only.add((shape, int(m)))
    try:
        recipe = json.load(open(a.recipe))
    except (OSError, ValueError) as e:
        die("cannot read recipe %s: %s" % (a.recipe, e))
    by_name = {s["name"]: s for s in recipe.get("shapes", [])}
    changed = []
    for (shape, m), d in sorted(best_of_space(a.sweep_log, a.block_m).items()):
        s = by_name.get(BENCH_NAMES.get(shape, shape))
        if s is None or (only and (shape, m) not in only):
            continue
        row = s["pinned_rows"].setdefault(str(m), {})
        row["config"] = {"gemm1": kernel_config(d["gemm1"][1]),
                         "gemm2": kernel_config(d["gemm2"][1])}
        changed.append((shape, m))
    if a.list_changed:
        if not changed:
            print("none")
        else:
            print(",".join(sorted({s for s, _ in changed})) + " " +
                  ",".join(str(m) for m in sorted({m for _, m in changed})))
        return
    json.dump(recipe, sys.stdout, indent=1)
    print()


if __name__ == "__main__":
    main(sys.argv[1:])
