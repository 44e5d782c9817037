#!/usr/bin/env python3
"""fp8 fused MoE on one GPU: moetune.fused_moe and vLLM's Triton fp8 path against the fp8 floor.

moetune.fused_moe with e4m3 weights, and vLLM's Triton fp8 path as its peer, against the fp8
floor measured in the same run.

    PYTHONPATH=build/python python bench/fp8_bench.py --out fp8.csv [--shapes F2,F3,F4]
        [--ms 1,4,...] [--check-m 64] [--no-vllm] [--config LABEL=JSON ...] [--kernels]

Shapes (../shared/anchors/h100-fp8-vllm.md names them so): F2 Qwen3-30B-A3B-like E128 K2048 I768
top-8, F4 DeepSeek-V3-like E256 K7168 I2048 top-8 (block 128x128, activations per token per 128
channels), F3 Mixtral-like E8 K4096 I14336 top-2 (per-tensor, static input scales).
Ceilings in the same run: copy rate (bf16 copy of 2 GiB) and fp8 dense rate (torch._scaled_mm,
8192^3 e4m3, the best of the cuBLASLt kernels torch picks). Floor = max(bytes / copy rate,
flops / fp8 rate); bytes = hit experts' weights at 1 B an element plus their scales, x and the
output in bf16, the routing. Each point is one call in a CUDA graph, L2 flushed before every
replay, median of the replays. A check at --check-m per shape and system: relative L2 against a
quantisation-faithful fp64 reference (the one the tests use) on the experts that M hits.

Systems (column `system`), same weights, inputs and protocol, interleaved per point:
  moetune      moetune.fused_moe as it serves: the shipped table for this device and shape where
               one exists (F2, F3 on an H100 80GB HBM3; MOETUNE_TABLES names another root),
               else the default rule (column `config` says which).
  moetune:L    moetune.fused_moe with the explicit config of --config L=JSON (its `config`).
  vllm_triton  vLLM 0.33.0's fused_moe_kernel on its use_fp8_w8a8 path (moetune.engines.
               vllm_triton, from .engines/ or an installed vllm): vLLM's launch and its config
               lookup for dtype fp8_w8a8 (and block_shape): its shipped fp8 table for this device
               and shape where there is one, else its default rule (column `config` says which).
               Its expert assignment (align) is computed once per point outside the graph, in
               vLLM's favour, as bench/torch_ops_bench.py does. Its two activation quantisations
               run inside the graph as torch stand-ins for vLLM's CUDA ops (several small kernels
               where vLLM launches one), which overstates vLLM's time at small M: `standin_us` is
               their time alone, in a graph of their own; vLLM runs one kernel for each instead.
               vLLM's rel_l2 runs ~1-2% from the reference: it rounds the intermediate to bf16
               three times before re-quantising to e4m3 (tests/python/test_vllm_fp8_peer.py).
--kernels adds, per moetune point, each kernel's median time from torch.profiler (CUPTI) over
eager calls with L2 flushed before each (column `kernels`: name=us;... in launch order), and
prints the GEMMs' share of the fp8 rate: which stage holds the time at large M.
If the harness fails to load (no .engines/, a mismatched vLLM) or a point fails, a vllm_triton
row carries the reason in `note` and the run goes on. Prints a table last: per shape and system
the geomean and worst t/floor, and for moetune how many points beat vllm_triton.
"""

import argparse
import csv
import json
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
FIELDS = ["shape", "quant", "m", "system", "median_us", "p10_us", "p90_us", "floor_us", "t_floor",
          "bound", "experts_hit", "rel_l2", "config", "standin_us", "copy_gbs", "fp8_tflops",
          "sm_mhz", "kernels", "note"]
SYSTEMS = ("moetune", "vllm_triton")


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


def check(s, weights, m, a_scales, runner):
    """Relative L2 of runner(layer) against the tests' fp64 reference, on the experts M hits."""
    from fp8_reference import fp8_reference
    from moe_reference import rel_l2
    w1, w2, w1s, w2s = weights
    x, tw, ids = make_inputs(s, m, seed=7)
    hit, local = torch.unique(ids, return_inverse=True)
    layer = dict(x=x, w1=w1[hit], w2=w2[hit], w1_scale=w1s[hit], w2_scale=w2s[hit],
                 topk_weights=tw, topk_ids=local.int())
    out = runner(layer)
    kw = {} if s["block"] else dict(a1_scale=float(a_scales[0]), a2_scale=float(a_scales[1]))
    return rel_l2(out, fp8_reference(layer, block=s["block"], **kw))


def run(s, x, w1, w2, tw, ids, w1s, w2s, a_scales, config=None):
    kw = dict(block_shape=[128, 128]) if s["block"] else dict(a1_scale=a_scales[0],
                                                               a2_scale=a_scales[1])
    return moetune.fused_moe(x, w1, w2, tw, ids, w1_scale=w1s, w2_scale=w2s, config=config, **kw)


def served_by(s, x, w1, w2, tw, ids, w1s, w2s, a_scales):
    """Which rule fused_moe takes for this call (moetune.explain): 'default rule', or the rule
    and the table file that serves it (a shipped table for this device and shape, or one under
    MOETUNE_TABLES)."""
    kw = dict(block_shape=[128, 128]) if s["block"] else dict(a1_scale=a_scales[0],
                                                               a2_scale=a_scales[1])
    info = moetune.explain(x, w1, w2, tw, ids, w1_scale=w1s, w2_scale=w2s, **kw)
    if info["rule"] == "default":
        return "default rule"
    return f"{info['rule']} {os.path.basename(info['table'])}"


def run_layer(s, layer, a_scales):
    return run(s, layer["x"], layer["w1"], layer["w2"], layer["topk_weights"],
               layer["topk_ids"], layer["w1_scale"], layer["w2_scale"], a_scales)


def vllm_layer(s, w1, w2, w1s, w2s, a_scales):
    """vLLM's fp8 path on these weights (moetune.engines.vllm_triton); raises if it cannot load."""
    from moetune.engines import vllm_triton

    kw = dict(block_shape=[128, 128]) if s["block"] else dict(a1_scale=a_scales[0],
                                                               a2_scale=a_scales[1])
    return vllm_triton.VllmTritonMoe(w1, w2, s["top_k"], "silu", engine=vllm_triton.load(),
                                     w1_scale=w1s, w2_scale=w2s, **kw)


def run_vllm_layer(s, layer, a_scales):
    v = vllm_layer(s, layer["w1"], layer["w2"], layer["w1_scale"], layer["w2_scale"], a_scales)
    ids = layer["topk_ids"]
    return v.run(layer["x"], layer["topk_weights"], ids, v.prepare(ids))


def vllm_config_text(choice):
    c = choice.config
    return (f"{choice.source} BM{c['BLOCK_SIZE_M']} BN{c['BLOCK_SIZE_N']} BK{c['BLOCK_SIZE_K']} "
            f"G{c['GROUP_SIZE_M']} w{c['num_warps']} s{c['num_stages']}")


def standin_us(v, s, x, flush):
    """The two activation quantisations of vLLM's path alone (the torch stand-ins), in a graph."""
    h = torch.randn(x.size(0) * s["top_k"], s["I"], device="cuda").to(torch.bfloat16)
    g, _ = capture(lambda: (v.quantize(x, v.a1_scale), v.quantize(h, v.a2_scale)))
    med = time_graph(g, flush)[0]
    del g, h
    return med


def kernel_times(fn, flush, reps=5):
    """[(kernel, median us)] of one call of fn in launch order, from torch.profiler's CUDA
    kernel events over `reps` eager calls (L2 flushed before each); moetune's kernels only."""
    from torch.autograd import DeviceType
    from torch.profiler import ProfilerActivity, profile
    fn()
    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        for _ in range(reps):
            flush()
            fn()
        torch.cuda.synchronize()
    spans = {}
    for e in sorted((e for e in prof.events() if e.device_type == DeviceType.CUDA
                     and "moe_" in e.name), key=lambda e: e.time_range.start):
        name = e.name.replace("void ", "").replace("moetune_dev::", "").split("(")[0]
        spans.setdefault(name, []).append(e.time_range.elapsed_us())
    return [(n, statistics.median(t) * len(t) / reps) for n, t in spans.items()]


def kernels_note(s, m, times, tflops):
    """`name=us` per kernel, and each GEMM's share of the fp8 rate (GEMM1 then GEMM2 by order)."""
    pairs, n1 = m * s["top_k"], 2 * s["I"]
    flops = [2 * pairs * n1 * s["K"], 2 * pairs * s["K"] * s["I"]]
    text, gemm = [], 0
    for name, us in times:
        share = ""
        if ("gemm" in name or "_ws_kernel" in name) and gemm < 2 and us > 0:
            share = f"({flops[gemm] / (us * 1e-6) / (tflops * 1e12):.0%} of fp8 rate)"
            gemm += 1
        text.append(f"{name}={us:.1f}{share}")
    return ";".join(text)


def point_row(name, s, m, system, timing, fl, bound, hit, err, config, copy_gbs, tflops):
    med, p10, p90 = timing
    return dict(shape=name, quant="block128" if s["block"] else "tensor", m=m, system=system,
                median_us=f"{med:.1f}", p10_us=f"{p10:.1f}", p90_us=f"{p90:.1f}",
                floor_us=f"{fl:.1f}", t_floor=f"{med / fl:.3f}", bound=bound, experts_hit=hit,
                rel_l2=err, config=config, copy_gbs=f"{copy_gbs:.0f}",
                fp8_tflops=f"{tflops:.0f}", sm_mhz=sm_mhz())


def note_row(name, s, m, system, why):
    return dict(shape=name, quant="block128" if s["block"] else "tensor", m=m, system=system,
                note=f"not run: {why}"[:300])


def _why(e):
    return f"{type(e).__name__}: {e}".replace("\n", " ")


def vllm_setup(name, s, weights, a_scales, check_m, errs):
    """(vLLM's layer, None), its check error in errs; or (None, why it cannot run)."""
    try:
        v = vllm_layer(s, *weights, a_scales)
        errs["vllm_triton"] = check(s, weights, check_m, a_scales,
                                    lambda l: run_vllm_layer(s, l, a_scales)) \
            if check_m > 0 else float("nan")
        return v, None
    except Exception as e:  # recorded, not hidden: the rows say why vLLM is missing
        print(f"{name}: vllm_triton not run: {_why(e)}", flush=True)
        return None, _why(e)


def bench_shape(name, ms, copy_gbs, tflops, flush, check_m, use_vllm, rows, extra=(),
                kernels=False):
    s = SHAPES[name]
    weights = make_weights(s)
    # Static input scales of the per-tensor shape: x ~ N(0, 1), the intermediate of these weights.
    a_scales = (torch.tensor([5.0 / 448], device="cuda"), torch.tensor([64.0 / 448], device="cuda"))
    errs = {"moetune": check(s, weights, check_m, a_scales, lambda l: run_layer(s, l, a_scales))
            if check_m > 0 else float("nan")}
    v, vllm_note = None, None
    if use_vllm:
        v, vllm_note = vllm_setup(name, s, weights, a_scales, check_m, errs)
    for m in ms:
        x, tw, ids = make_inputs(s, m, seed=m)
        (fl, bound), hit = floor_us(s, m, ids, copy_gbs, tflops)
        first = m == ms[0]
        systems = {"moetune": (lambda: run(s, x, weights[0], weights[1], tw, ids, weights[2],
                                           weights[3], a_scales),
                               served_by(s, x, weights[0], weights[1], tw, ids, weights[2],
                                         weights[3], a_scales))}
        for label, cfg in extra:  # explicit configs, timed beside the default (--config)
            systems["moetune:" + label] = (
                lambda c=cfg: run(s, x, weights[0], weights[1], tw, ids, weights[2], weights[3],
                                  a_scales, config=c), json.dumps(cfg, separators=(",", ":")))
        if v is not None:
            try:
                prepared = v.prepare(ids)  # outside the graph: align is not timed
                systems["vllm_triton"] = (lambda: v.run(x, tw, ids, prepared),
                                          vllm_config_text(v.config_for(m)))
            except Exception as e:
                rows.append(note_row(name, s, m, "vllm_triton", _why(e)))
        elif vllm_note is not None:
            rows.append(note_row(name, s, m, "vllm_triton", vllm_note))
        said = []
        for system, (fn, config) in systems.items():
            try:
                g, _ = capture(fn)
                timing = time_graph(g, flush)
                del g
                err = f"{errs[system]:.2e}" if first and system in errs else ""
                row = point_row(name, s, m, system, timing, fl, bound, hit, err, config,
                                copy_gbs, tflops)
                if system == "vllm_triton":
                    row["standin_us"] = f"{standin_us(v, s, x, flush):.1f}"
                elif kernels:
                    row["kernels"] = kernels_note(s, m, kernel_times(fn, flush), tflops)
                    print(f"  {system} kernels: {row['kernels']}", flush=True)
                rows.append(row)
                said.append(f"{system} {timing[0]:.1f} us x{timing[0] / fl:.2f}")
            except Exception as e:
                if system == "moetune":
                    raise
                torch.cuda.empty_cache()
                rows.append(note_row(name, s, m, system, _why(e)))
                said.append(f"{system} not run")
        print(f"{name} M={m}: floor {fl:.1f} ({bound}); " + ", ".join(said), flush=True)
    del weights, v
    torch.cuda.empty_cache()


def geomean(values):
    return math.exp(sum(map(math.log, values)) / len(values))


def summary(names, rows):
    """Per shape and system: geomean and worst t/floor; for moetune, the points (M) where it beats
    vllm_triton and the geomean of their time ratio."""
    timed = [r for r in rows if r.get("t_floor")]
    lines = [f"device {torch.cuda.get_device_name()}",
             "shape  system       points  geomean t/floor  worst  vs vllm_triton"]
    for n in names:
        extras = sorted({r["system"] for r in timed} - set(SYSTEMS))
        for system in SYSTEMS[:1] + tuple(extras) + SYSTEMS[1:]:
            mine = {r["m"]: r for r in timed if r["shape"] == n and r["system"] == system}
            if not mine:
                continue
            t = [float(r["t_floor"]) for r in mine.values()]
            versus = ""
            if system.startswith("moetune"):
                peer = {r["m"]: float(r["median_us"]) for r in timed
                        if r["shape"] == n and r["system"] == "vllm_triton"}
                both = [m for m in mine if m in peer]
                if both:
                    wins = sum(float(mine[m]["median_us"]) < peer[m] for m in both)
                    ratio = geomean([float(mine[m]["median_us"]) / peer[m] for m in both])
                    versus = f"faster at {wins}/{len(both)}, time ratio geomean {ratio:.3f}"
            lines.append(f"{n:5}  {system:11}  {len(t):6}  {geomean(t):15.3f}  {max(t):5.3f}  "
                         f"{versus}".rstrip())
    notes = sorted({(r["shape"], r["note"]) for r in rows if r.get("note")})
    lines += [f"note {shape}: {note}" for shape, note in notes]
    return "\n".join(lines)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", required=True, help="CSV to write")
    ap.add_argument("--shapes", default="F2,F3,F4")
    ap.add_argument("--ms", default=",".join(map(str, MS)))
    ap.add_argument("--check-m", type=int, default=4, help="M of the correctness check (0: none)")
    ap.add_argument("--no-vllm", action="store_true", help="moetune only: no vllm_triton peer")
    ap.add_argument("--config", action="append", default=[], metavar="LABEL=JSON",
                    help="also time moetune with this explicit config (system moetune:LABEL; "
                         "the torch op's config dict as JSON, both GEMMs); repeatable")
    ap.add_argument("--kernels", action="store_true",
                    help="also profile each moetune point's kernels (column kernels)")
    a = ap.parse_args()
    extra = []
    for item in a.config:
        label, _, text = item.partition("=")
        try:
            extra.append((label, json.loads(text)))
        except json.JSONDecodeError as e:
            ap.error(f"--config {label}: not JSON ({e}); expected LABEL={{\"gemm1\": ..., "
                     f"\"gemm2\": ...}}")
        if not label:
            ap.error("--config: no LABEL before '='; expected LABEL=JSON")
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
        bench_shape(n, ms, copy_gbs, tflops, flush, a.check_m, not a.no_vllm, rows, extra,
                    a.kernels)
        write_csv(a.out, rows)  # after every shape: a run cut short keeps the shapes it finished
    print("\n" + summary(names, rows))


def write_csv(path, rows):
    with open(path + ".tmp", "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=FIELDS, restval="")
        w.writeheader()
        w.writerows(rows)
        f.flush()
        os.fsync(f.fileno())
    os.replace(path + ".tmp", path)


if __name__ == "__main__":
    main()
