#!/usr/bin/env python3
"""fp8 fused MoE on one GPU: moetune.fused_moe with e4m3 weights against the fp8 floor measured
in the same run.

    PYTHONPATH=build/python python bench/fp8_bench.py --out fp8.csv [--shapes F2,F3,F4]
        [--ms 1,4,...] [--check-m 64]

Shapes (../shared/anchors/h100-fp8-vllm.md names them so): F2 Qwen3-30B-A3B-like E128 K2048 I768
top-8, F4 DeepSeek-V3-like E256 K7168 I2048 top-8 (block 128x128, activations per token per 128
channels), F3 Mixtral-like E8 K4096 I14336 top-2 (per-tensor, static input scales).
Ceilings in the same run: copy rate (bf16 copy of 2 GiB) and fp8 dense rate (torch._scaled_mm,
8192^3 e4m3, the best of the cuBLASLt kernels torch picks). Floor = max(bytes / copy rate,
flops / fp8 rate); bytes = hit experts' weights at 1 B an element plus their scales, x and the
output in bf16, the routing. Each point is one moetune call in a CUDA graph, L2 flushed before
every replay, median of the replays; the layer's default rule (no fp8 tables ship). A check at
--check-m per shape: relative L2 against a quantisation-faithful fp64 reference (the one the
tests use) on the experts that M hits. Prints a table last.
"""

import argparse
import csv
import math
import os
import statistics
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests",
                                "python"))

import moetune  # noqa: E402
from torch_ops_bench import capture, ceilings, events_ms, sm_mhz, time_graph  # noqa: E402

SHAPES = {
    "F2": dict(E=128, K=2048, I=768, top_k=8, block=True),
    "F3": dict(E=8, K=4096, I=14336, top_k=2, block=False),
    "F4": dict(E=256, K=7168, I=2048, top_k=8, block=True),
}
MS = [1, 4, 16, 64, 128, 256, 512, 1024, 2048, 4096, 8192, 16384]
FIELDS = ["shape", "quant", "m", "median_us", "p10_us", "p90_us", "floor_us", "t_floor", "bound",
          "experts_hit", "rel_l2", "config", "copy_gbs", "fp8_tflops", "sm_mhz"]


def fp8_tflops():
    n = 8192
    a = torch.randn(n, n, device="cuda").to(torch.float8_e4m3fn)
    b = torch.randn(n, n, device="cuda").to(torch.float8_e4m3fn).t()  # column-major B
    one = torch.ones((), device="cuda")
    mm = lambda: torch._scaled_mm(a, b, scale_a=one, scale_b=one, out_dtype=torch.bfloat16)
    for _ in range(10):
        mm()
    return 2 * n ** 3 / (statistics.median(events_ms(mm, 100)) * 1e-3) / 1e12


def random_fp8(shape, g):
    """Random e4m3 bytes without NaN (0x7f / 0xff), made on the GPU with no fp32 copy."""
    b = torch.randint(0, 256, shape, device="cuda", dtype=torch.uint8, generator=g)
    b[(b & 0x7F) == 0x7F] = 0x3F
    return b.view(torch.float8_e4m3fn)


def make_weights(s):
    g = torch.Generator(device="cuda").manual_seed(1234)
    n1 = 2 * s["I"]
    w1, w2 = random_fp8((s["E"], n1, s["K"]), g), random_fp8((s["E"], s["K"], s["I"]), g)
    if s["block"]:
        sh1, sh2 = (s["E"], n1 // 128, s["K"] // 128), (s["E"], s["K"] // 128, s["I"] // 128)
    else:
        sh1 = sh2 = (s["E"],)
    scale = lambda sh: (torch.rand(sh, device="cuda", generator=g) + 0.5) * 1e-3
    return w1, w2, scale(sh1), scale(sh2)


def make_inputs(s, m, seed):
    g = torch.Generator(device="cuda").manual_seed(seed)
    x = torch.randn(m, s["K"], device="cuda", generator=g).to(torch.bfloat16)
    probs = torch.softmax(torch.randn(m, s["E"], device="cuda", generator=g), dim=-1)
    tw, ids = torch.topk(probs, s["top_k"], dim=-1)
    return x, tw.float().contiguous(), ids.to(torch.int32).contiguous()


def floor_us(s, m, ids, copy_gbs, tflops):
    n1 = 2 * s["I"]
    hit = int(ids.flatten().unique().numel())
    per_expert = n1 * s["K"] + s["K"] * s["I"]
    scales = per_expert / (128 * 128) * 4 if s["block"] else 8
    nbytes = hit * (per_expert + scales) + 2 * m * s["K"] * 2 + m * s["top_k"] * 8
    flops = 2 * m * s["top_k"] * per_expert
    bw_us, mm_us = nbytes / (copy_gbs * 1e9) * 1e6, flops / (tflops * 1e12) * 1e6
    return (bw_us, "bw") if bw_us >= mm_us else (mm_us, "compute"), hit


def check(s, weights, m, a_scales):
    """Relative L2 of moetune against the tests' fp64 reference, on the experts M hits."""
    from fp8_reference import fp8_reference
    from moe_reference import rel_l2
    w1, w2, w1s, w2s = weights
    x, tw, ids = make_inputs(s, m, seed=7)
    hit, local = torch.unique(ids, return_inverse=True)
    layer = dict(x=x, w1=w1[hit], w2=w2[hit], w1_scale=w1s[hit], w2_scale=w2s[hit],
                 topk_weights=tw, topk_ids=local.int())
    out = run(s, layer["x"], layer["w1"], layer["w2"], tw, layer["topk_ids"], layer["w1_scale"],
              layer["w2_scale"], a_scales)
    kw = {} if s["block"] else dict(a1_scale=float(a_scales[0]), a2_scale=float(a_scales[1]))
    return rel_l2(out, fp8_reference(layer, block=s["block"], **kw))


def run(s, x, w1, w2, tw, ids, w1s, w2s, a_scales):
    kw = dict(block_shape=[128, 128]) if s["block"] else dict(a1_scale=a_scales[0],
                                                               a2_scale=a_scales[1])
    return moetune.fused_moe(x, w1, w2, tw, ids, w1_scale=w1s, w2_scale=w2s, **kw)


def bench_shape(name, ms, copy_gbs, tflops, flush, check_m, rows):
    s = SHAPES[name]
    weights = make_weights(s)
    # Static input scales of the per-tensor shape: x ~ N(0, 1), the intermediate of these weights.
    a_scales = (torch.tensor([5.0 / 448], device="cuda"), torch.tensor([64.0 / 448], device="cuda"))
    err = check(s, weights, check_m, a_scales) if check_m > 0 else float("nan")
    for m in ms:
        x, tw, ids = make_inputs(s, m, seed=m)
        fn = lambda: run(s, x, weights[0], weights[1], tw, ids, weights[2], weights[3], a_scales)
        g, _ = capture(fn)
        med, p10, p90 = time_graph(g, flush)
        (fl, bound), hit = floor_us(s, m, ids, copy_gbs, tflops)
        rows.append(dict(shape=name, quant="block128" if s["block"] else "tensor", m=m,
                         median_us=f"{med:.1f}", p10_us=f"{p10:.1f}", p90_us=f"{p90:.1f}",
                         floor_us=f"{fl:.1f}", t_floor=f"{med / fl:.3f}", bound=bound,
                         experts_hit=hit, rel_l2=f"{err:.2e}" if m == ms[0] else "",
                         config="default rule", copy_gbs=f"{copy_gbs:.0f}",
                         fp8_tflops=f"{tflops:.0f}", sm_mhz=sm_mhz()))
        print(f"{name} M={m}: {med:.1f} us, floor {fl:.1f} ({bound}), x{med / fl:.2f}",
              flush=True)
        del g
    del weights
    torch.cuda.empty_cache()


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", required=True, help="CSV to write")
    ap.add_argument("--shapes", default="F2,F3,F4")
    ap.add_argument("--ms", default=",".join(map(str, MS)))
    ap.add_argument("--check-m", type=int, default=4, help="M of the correctness check (0: none)")
    a = ap.parse_args()
    names = a.shapes.split(",")
    bad = [n for n in names if n not in SHAPES]
    if bad:
        ap.error(f"--shapes: unknown {bad}; expected some of {sorted(SHAPES)}")
    ms = [int(v) for v in a.ms.split(",")]
    copy_gbs, _ = ceilings()
    tflops = fp8_tflops()
    print(f"{torch.cuda.get_device_name()}: copy {copy_gbs:.0f} GB/s, fp8 {tflops:.0f} TFLOP/s")
    scratch = torch.empty(256 << 20, dtype=torch.uint8, device="cuda")
    flush = lambda: scratch.zero_()
    rows = []
    for n in names:
        bench_shape(n, ms, copy_gbs, tflops, flush, a.check_m, rows)
    with open(a.out + ".tmp", "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=FIELDS)
        w.writeheader()
        w.writerows(rows)
        f.flush()
        os.fsync(f.fileno())
    os.replace(a.out + ".tmp", a.out)
    print("\nshape  geomean t/floor  worst  (device " + torch.cuda.get_device_name() + ")")
    for n in names:
        r = [float(x["t_floor"]) for x in rows if x["shape"] == n]
        print(f"{n:5}  {math.exp(sum(map(math.log, r)) / len(r)):.3f}  {max(r):.3f}")


if __name__ == "__main__":
    main()
