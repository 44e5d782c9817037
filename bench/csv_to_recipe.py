#!/usr/bin/env python3
"""Turns a moetune_sm90_bench CSV (<date>-<commit>.csv, under the run's OUT) into a recipe whose
pinned rows are the measured winners, each with the measurement behind it. Then
`moetune materialize --recipe recipes/h200.json --out tables/NVIDIA_H200` writes the tables
without a GPU, and `moetune check` keeps them honest.

usage: bench/csv_to_recipe.py [--command "DEVICE COMMAND"] CSV [CSV...] > recipes/h200.json
--command: the device command that wrote the CSV, as each row's source records it (default: the
recipe re-time `bench/device.sh kernels --no-tests -- --recipe recipes/h200.json`); the
conversion is appended, naming each row's run by its id (<date>-<commit>, from the CSV's columns),
not by a file path. With several CSVs (e.g. a sweep per schedule), each point takes the fastest
row among them; re-time that recipe in one run (`bench/device.sh kernels -- --recipe`) and
convert the re-time CSV alone, so every pinned number comes from one run.
Warns on stderr (the recipe is written all the same) where the row-or-default choice rests on a low
clock: the row and the default within 2% of each other at a point whose SM clock sample is below
90% of the highest sample of its CSV (a throttled run once shipped the default at two points where
five earlier runs had the row faster). Re-time those.
"""
import csv
import json
import re
import sys

SHAPES = {  # name -> problem (hidden, intermediate, experts, top_k, activation)
    "S1": ("nemotron-like-s1", 2688, 1856, 128, 6, "relu2"),
    "S2": ("qwen3-30b-a3b-s2", 2048, 768, 128, 8, "silu"),
    "S3": ("mixtral-8x7b-s3", 4096, 14336, 8, 2, "silu"),
}
PAT = re.compile(r"m(\d+)n(\d+)k(\d+)g(\d+)w(\d+)s(\d+)(?:sk(\d+))?(swap)?(?:c(\d)x(\d))?(pp|co|tw)?(?:t(\d+))?$")


def kernel_config(short):
    m = PAT.match(short)
    if not m:
        sys.exit(f"csv_to_recipe: cannot parse config '{short}'")
    bm, bn, bk, g, w, s, sk, swap, cm, cn, sched, t = m.groups()
    cfg = {"tile": {"block_m": int(bm), "block_n": int(bn), "block_k": int(bk), "group_m": int(g)},
           "pipeline": {"num_warps": int(w), "num_stages": int(s), "split_k": int(sk or 1)}}
    launch = {}
    if swap:
        launch["swap_ab"] = True
    if cm:
        launch["cluster_m"], launch["cluster_n"] = int(cm), int(cn)
    if sched:
        launch["schedule"] = {"pp": "pingpong", "co": "cooperative", "tw": "tma_ws"}[sched]
    if t:
        launch["num_threads"] = int(t)
    if launch:
        cfg["launch"] = launch
    return cfg


def run_id(row):
    """The run a CSV row comes from: <date>-<commit>, the name the bench gives its CSV."""
    return row["date"] + "-" + row["commit"]


CLOSE = 0.02       # row and default this close (relative) ...
LOW_CLOCK = 0.90   # ... at a clock sample below this share of the CSV's highest


def low_clock_close_calls(rows, top):
    """One line per chosen row whose row-or-default choice rests on a low clock sample; top: each
    CSV's highest SM clock sample."""
    out = []
    for r in rows:
        t, d = float(r["time_us"]), float(r.get("default_us") or -1)
        clock = float(r.get("sm_clock_mhz") or 0)
        if d <= 0 or r.get("default_config") in (None, "", r["config"]) or top[r["_csv"]] <= 0:
            continue
        if abs(t - d) / min(t, d) < CLOSE and clock < LOW_CLOCK * top[r["_csv"]]:
            out.append("%s M=%s: row %.2f us vs default %.2f us (%.1f%% apart) at an SM clock sample "
                       "of %.0f MHz (< %d%% of this CSV's %.0f): the row-or-default choice rests on "
                       "a low clock; re-time this point" %
                       (r["shape"], r["M"], t, d, 100 * abs(t - d) / min(t, d), clock,
                        100 * LOW_CLOCK, top[r["_csv"]]))
    return out


def moe_config(short):
    """(gemm1, gemm2) kernel configs of a short string; one config without '|' names both."""
    parts = short.split("|")
    a = kernel_config(parts[0])
    return a, (kernel_config(parts[1]) if len(parts) > 1 else a)


def parse_args(args):
    """(device command, CSV paths) from the command line; exits with the usage when it is wrong."""
    command = "bench/device.sh kernels --no-tests -- --recipe recipes/h200.json"
    if args[:1] == ["--command"]:
        if len(args) < 2:
            sys.exit("csv_to_recipe: --command needs the device command")
        command, args = args[1], args[2:]
    if not args:
        sys.exit("usage: bench/csv_to_recipe.py [--command CMD] CSV [CSV...] > recipe.json")
    return command, args


def fastest_rows(paths):
    """The fastest row of each (shape, M) among the CSVs (a row counts at the faster of its time
    and its default's), sorted by shape and M, and each CSV's highest SM clock sample."""
    best = {}
    top = {}  # each CSV's highest SM clock sample
    for path in paths:
        for r in csv.DictReader(open(path)):
            r["_csv"] = path
            top[path] = max(top.get(path, 0.0), float(r.get("sm_clock_mhz") or 0))
            key = (r["shape"], int(r["M"]))
            t = float(r["time_us"])
            d = float(r.get("default_us") or -1)
            t = min(t, d) if d > 0 else t
            if key not in best or t < best[key][0]:
                best[key] = (t, r)
    return [best[k][1] for k in sorted(best, key=lambda k: (k[0], k[1]))], top


def new_shape(r):
    """A recipe shape for a row's shape, with no buckets or pinned rows yet."""
    name, k, i, e, topk, act = SHAPES[r["shape"]]
    return {
        "name": name,
        "problem": {"hidden_size": k, "intermediate_size": i, "num_experts": e, "top_k": topk,
                    "activation": act, "dtype": "bf16", "arch": "sm_90a"},
        "device": r["device"], "backend": "cuda", "family": "sm90_gather", "family_version": 1,
        "buckets": [], "routing": {"kind": "uniform", "seed": 0}, "pinned_rows": {}}


def pinned_row(r, command):
    """A row's pinned row: its config, or the default's where the row did not beat it, with the
    measurement behind it."""
    g1, g2 = moe_config(r["config"])
    time_us = float(r["time_us"])
    default_us = float(r.get("default_us") or -1)
    numbers_extra = {}
    if default_us > 0:
        numbers_extra["default_us"] = default_us
        if time_us >= default_us and r.get("default_config"):
            # The swept winner did not beat the default at this point: ship the default
            # (seed 000: a tuned row must never shadow a better default).
            g1, g2 = moe_config(r["default_config"])
            time_us = default_us
    return {
        "config": {"gemm1": g1, "gemm2": g2},
        "source": {
            "kind": "measured", "date": r["date"], "device": r["device"],
            "protocol": ("moetune_sm90_bench (bench/run_h200.sh) at commit " + r["commit"] +
                         ": the configs the command names (a per-GEMM sweep, or a recipe's "
                         "rows), each timed with CUDA graph replay with a 256 MiB L2 flush "
                         "before each replay, 3 warm-ups, median of clamp(30 ms / t, 10, 200); "
                         "uniform routing seeded by M; checked against the fp32 GPU reference"),
            "numbers": dict({"time_us": time_us, "floor_us": float(r["floor_us"]),
                             "ratio": time_us / float(r["floor_us"]),
                             "rel_err": float(r["rel_err"]),
                             "sm_clock_mhz": float(r["sm_clock_mhz"])}, **numbers_extra),
            "digest": r["digest"],
            "command": command + " (device), then bench/csv_to_recipe.py on run " + run_id(r),
        }}


def main():
    command, paths = parse_args(sys.argv[1:])
    rows, top = fastest_rows(paths)
    for r in low_clock_close_calls(rows, top):
        sys.stderr.write("csv_to_recipe: warning: " + r + "\n")
    shapes = {}
    for r in rows:
        shape = shapes.setdefault(r["shape"], new_shape(r))
        m = int(r["M"])
        shape["buckets"].append(m)
        shape["pinned_rows"][str(m)] = pinned_row(r, command)
    recipe = {"recipe_version": 1, "name": "h200-bf16", "shapes": list(shapes.values())}
    json.dump(recipe, sys.stdout, indent=2)
    sys.stdout.write("\n")


if __name__ == "__main__":
    main()
