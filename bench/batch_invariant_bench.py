#!/usr/bin/env python3
"""Which kernel configs keep lever batch_invariant's bits, and what each costs (device script).

    PYTHONPATH=build/python python3 bench/batch_invariant_bench.py --out DIR [--shapes S1,S2,S3]
        [--ms 1,2,4,...] [--candidates NAME,...]

Per shape (S1-S3 of bench/torch_ops_bench.py), one batch of 4096 random rows runs under
batch_invariant=True; its output bits are the reference. Every M of --ms then takes the batch's
first M rows and runs them through each candidate config (a dict config, so the lever is off
and the candidate is what runs): a candidate keeps the bits at M when every row's output equals
that row's in the batch of 4096, bit for bit. Each run is also timed (CUDA graph, L2 flushed
before every replay, median of clamp(30 ms / t, 10, 200) replays), beside the lever itself
(`batch_invariant`) and what serves with the lever off (`tables`: the H200 tables, named, as
`moetune ab` compared them; `default`: the default rule). Floor = max(bytes / copy rate, flops /
matmul rate), both measured in this run.

Writes batch_invariant.csv to --out and prints, per shape and M, the lever's time, the tables',
and the fastest candidate that kept the bits.
"""

import argparse
import os
import sys

import torch

import moetune

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from torch_ops_bench import (SHAPES, capture, ceilings, floor_us, make_inputs,  # noqa: E402
                             make_weights, other_device_tables, shapes_and_ms, sm_mhz, time_graph,
                             write_csv)

ALL = 4096
MS = [1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024, 2048]
FIELDS = ["shape", "m", "system", "config", "bits_equal", "rows_differing", "median_us", "p10_us",
          "p90_us", "floor_us", "t_floor", "sm_mhz", "note"]


def kernel(bm, bn, warps, stages, schedule="tma_ws", swap=False, group=8):
    return {"tile": {"block_m": bm, "block_n": bn, "block_k": 64, "group_m": group},
            "pipeline": {"num_warps": warps, "num_stages": stages, "split_k": 1},
            "launch": {"swap_ab": swap, "schedule": schedule}}


def candidates(gated):
    """Per-GEMM wgmma kernels without split-K; a candidate runs one of them in both GEMMs. GEMM1
    of a gated layer interleaves gate and up columns, so its widths are halved where noted."""
    g1_128 = 128 if gated else 256
    swap_n1 = 64 if gated else 128  # 64 weight rows per consumer warpgroup, 32 gated
    return {
        "tw128": (kernel(128, g1_128, 8, 4), kernel(128, 256, 8, 4)),
        "tw64n128": (kernel(64, 128, 4, 5), kernel(64, 128, 4, 5)),
        "tw64n64": (kernel(64, 64, 4, 6), kernel(64, 64, 4, 6)),
        "tw64n256w8": (kernel(64, 256, 8, 4), kernel(64, 256, 8, 4)),
        "tw64n128w8": (kernel(64, 128, 8, 5), kernel(64, 128, 8, 5)),
        "co64n128": (kernel(64, 128, 4, 4, "cooperative"), kernel(64, 128, 4, 4, "cooperative")),
        "swap64": (kernel(64, swap_n1, 8, 5, swap=True, group=1),
                   kernel(64, 128, 8, 5, swap=True, group=1)),
        "swap128": (kernel(128, swap_n1, 8, 5, swap=True, group=1),
                    kernel(128, 128, 8, 5, swap=True, group=1)),
    }


def bits(t):
    return t.view(torch.int16)


def measure(fn, want, flush):
    """(rows whose bits differ from want, median, p10, p90); the eager run also compiles."""
    y = fn()
    torch.cuda.synchronize()
    differing = int((bits(y) != bits(want)).any(dim=1).sum().item())
    g, _ = capture(fn)
    med, p10, p90 = time_graph(g, flush)
    del g
    return differing, med, p10, p90


def bench_shape(shape, ms, names, ceil, flush, rows):
    s = SHAPES[shape]
    w1, w2 = make_weights(shape)
    x, tw, ids = make_inputs(shape, ALL, seed=4321)
    act = s["act"]
    full = moetune.fused_moe(x, w1, w2, tw, ids, activation=act, batch_invariant=True)
    tables = other_device_tables()
    cands = {k: v for k, v in candidates(act == "silu").items() if k in names}
    for m in ms:
        xm, twm, idm = x[:m], tw[:m], ids[:m]
        (fl, _), _ = floor_us(shape, m, idm, *ceil)
        systems = {"batch_invariant": (dict(batch_invariant=True), "lever on"),
                   "default": ({}, "default rule")}
        if tables:
            systems["tables"] = (dict(config=tables), "H200 tables")
        for name, (g1, g2) in cands.items():
            systems[name] = (dict(config={"gemm1": g1, "gemm2": g2}), "")
        for name, (kw, note) in systems.items():
            row = dict(shape=shape, m=m, system=name, floor_us=fl, sm_mhz=sm_mhz(), note=note)
            fn = lambda kw=kw: moetune.fused_moe(xm, w1, w2, twm, idm, activation=act, **kw)
            try:
                row["config"] = moetune.explain(xm, w1, w2, twm, idm, activation=act,
                                                **kw)["config"]
                differing, med, p10, p90 = measure(fn, full[:m], flush)
            except (ValueError, RuntimeError) as e:  # a refused candidate: the row says why
                row["note"] = f"refused: {e}"[:300]
                rows.append(row)
                continue
            row.update(bits_equal=int(differing == 0), rows_differing=differing, median_us=med,
                       p10_us=p10, p90_us=p90, t_floor=med / fl)
            rows.append(row)
        print(f"{shape} M={m}: " + ", ".join(
            f"{r['system']} {r['median_us']:.1f}{'' if r['bits_equal'] else '!'}"
            for r in rows if r["shape"] == shape and r["m"] == m and "median_us" in r),
            flush=True)
    del w1, w2, x, full
    torch.cuda.empty_cache()


def summary(rows):
    out = ["shape M: lever | tables | default | fastest bit-keeping candidate (us)"]
    points = sorted({(r["shape"], r["m"]) for r in rows}, key=lambda p: (p[0], p[1]))
    for shape, m in points:
        at = {r["system"]: r for r in rows if (r["shape"], r["m"]) == (shape, m) and
              "median_us" in r}
        keep = [r for k, r in at.items() if r["bits_equal"] and k not in ("tables", "default")]
        best = min(keep, key=lambda r: r["median_us"]) if keep else None
        t = lambda k: f"{at[k]['median_us']:.1f}" if k in at else "-"
        out.append(f"{shape} {m}: {t('batch_invariant')} | {t('tables')} | {t('default')} | " +
                   (f"{best['system']} {best['median_us']:.1f}" if best else "none"))
    eq = {}
    for r in rows:
        if "bits_equal" in r:
            eq.setdefault(r["system"], []).append(r["bits_equal"])
    out.append("bits kept at every M: " + ", ".join(
        f"{k} {sum(v)}/{len(v)}" for k, v in eq.items()))
    return "\n".join(out)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", required=True, help="directory for batch_invariant.csv")
    ap.add_argument("--shapes", default="S1,S2,S3")
    ap.add_argument("--ms", default=",".join(map(str, MS)))
    ap.add_argument("--candidates", default=",".join(candidates(True)))
    a = ap.parse_args()
    shapes, ms = shapes_and_ms(ap, a)
    if any(m < 1 or m > ALL for m in ms):
        ap.error(f"--ms: each M must lie in 1..{ALL} (subsets of the batch of {ALL}); saw {ms}")
    names = [n for n in a.candidates.split(",") if n]
    unknown = [n for n in names if n not in candidates(True)]
    if unknown:
        ap.error(f"--candidates: unknown {unknown}; expected some of {', '.join(candidates(True))}")
    os.makedirs(a.out, exist_ok=True)
    ceil = ceilings()
    flush_buf = torch.empty(256 << 20, dtype=torch.uint8, device="cuda")
    flush = lambda: flush_buf.sum()
    rows, path = [], os.path.join(a.out, "batch_invariant.csv")
    print(f"copy {ceil[0]:.0f} GB/s, matmul {ceil[1]:.0f} TFLOP/s, "
          f"{torch.cuda.get_device_name()}", flush=True)
    for shape in shapes:
        bench_shape(shape, ms, names, ceil, flush, rows)
        write_csv(path, rows, FIELDS)
    print(summary(rows))


if __name__ == "__main__":
    main()
