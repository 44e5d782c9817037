#!/usr/bin/env python3
"""Issue 52 on the device: vLLM's own Triton fused-MoE kernel tuned by `moetune tune` (the triton
family), then vLLM's layer timed with (a) our file, (b) the file vLLM ships for this GPU, (c)
vLLM's default rule, at S1-S3 (bf16, the default) or F2-F4 (fp8 w8a8) x 12 M. Prints a short
table last; writes CSVs to --out.

    python3 bench/triton_vllm_device.py --out DIR [--phase tune|time|all|summary]
        [--shapes S1,S2,S3|F2,F3,F4] [--moetune .devbin/moetune] [--agreement S2
        --agreement-tunes 3] [--budget-min 5]

Shapes (SHAPES): S1 E=128 K=2688 I=1856 top-6 relu2, S2 E=128 K=2048 I=768 top-8 silu, S3 E=8
K=4096 I=14336 top-2 silu (bf16); fp8 w8a8 as vLLM's fused_experts runs it with use_fp8_w8a8:
  F2  E=128 K=2048 I=768 top-8 silu, fp8_block (128x128 weight blocks, activations per token per
      128 channels); (b) on an H100 is vLLM's default: it ships no H100 file for E=128, N=768
      block fp8 (it does for the H200);
  F3  E=8 K=4096 I=14336 top-2 silu, fp8_tensor (a scale per expert, static a1/a2); (b) is the
      file vLLM ships, E=8,N=14336,device_name=NVIDIA_H100_80GB_HBM3,dtype=fp8_w8a8.json (and
      one for the H200);
  F4  E=256 K=7168 I=2048 top-8 silu, fp8_block; (b) is vLLM's default (no E=256, N=2048 file
      for any GPU).
fp8 layers are the tuner's own testbed (triton_layers.fp8_vllm_layer: e4m3 weights drawn expert
by expert on the GPU with 128x128 blocks, or experts, at ranges orders of magnitude apart, so a
weight read with the wrong scale shows; F3's a1/a2 from a calibration pass over 16384 tokens of
their own seed), checked against the tuner gate's reference (triton_layers.fp8_reference, fp32,
vLLM's rounding points) within its tolerance (triton_layers.tolerance: 3e-2 fp8, 1e-2 bf16).
Memory (F4, the largest; estimated, F4 has not run on a GPU): 11 GB of e4m3 weights, one layer
alive at a time; per M the three systems' graphs (at M = 16384 each holds vLLM's bf16 caches,
1.9 + 0.5 GB, and the torch stand-ins' quantisation temporaries) are freed before the next M.

Needs: .engines/vllm-0.33.0 (scripts/fetch_engine_kernels.py here, then carry .engines), a moetune
binary (scripts/build_device.sh: .devbin/moetune; carry .devbin), torch and triton (the device's
python3). The checkout's python/ is the package (its torch ops library is not needed: the worker
and this script enter the package without its __init__). Device tool, one shape per call keeps
each call under its 10 minutes (--out outlives the call while the machine stays warm; a fresh
machine needs DIR carried back: unpack a call's triton-run.tgz into it here):
    carry [".engines", ".devbin"], command "PYTHONUNBUFFERED=1 python3
    bench/triton_vllm_device.py --out build/triton-device --report-to $OUT --shapes S2"
(`bench/device.sh triton-vllm` runs several shapes in one call, each under `timeout`, and packs
what comes back; bench/results/h100-triton-vllm.csv is its run of record.)

tune  per shape: a recipe (recipe_of(): device = this GPU's name, arch sm_90a, "quant" for fp8
      shapes, the 12 buckets, routing uniform; recipes/h100-triton-fp8.json is F2-F4's),
      `moetune tune --store` into DIR/tables (the vLLM file + manifest), wall time from a cold
      Triton cache (a fresh TRITON_CACHE_DIR under /tmp unless --warm-cache); --agreement S adds
      --agreement-tunes more tunes of S into DIR/agree-K/; DIR/triton-run.tgz holds the tables,
      stores and recipes (the device tool brings no file back whose name holds '=' or ',').
time  per shape and M: vLLM's layer (moetune.engines.vllm_triton: vLLM's launch, align
      precomputed as the anchors do) for each config, checked against an fp32 reference first
      (within the tuner gate's tolerance), then one CUDA graph per config replayed with L2
      flushed before each replay, in 4 interleaved passes (a b c, c b a, c b a, a b c); median
      and a bootstrap 95% interval of the median per system. (a) = vLLM's lookup with
      VLLM_TUNED_CONFIG_FOLDER=DIR/tables, (b) = its lookup without (the shipped file; where
      none exists for this GPU, vLLM's default, marked), (c) = get_default_config (fp8: dtype
      "fp8_w8a8" and the block shape, as vLLM passes them; (a) and (b) look up vLLM's fp8 file
      names, table_name()). With --agreement, the agreement tunes' winners for that shape are
      timed in the same passes with (a): a bucket agrees when every tune's winner (a's
      included) is within 1% of the fastest of them, each distinct winner by the median of the
      medians of the tunes that named it (tunes_agree; tunes that name the same row agree by
      definition: timing one row in separate slots would otherwise call drift a disagreement).
Targets (issue 52): tune <= 300 s per shape; geomean(c / a) >= 1.15; no M where a is slower than b
beyond the intervals; agreement >= 95% of buckets.
"""

import argparse
import csv
import json
import math
import os
import random
import re
import statistics
import subprocess
import sys
import time

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), ".."))
# S1-S3 as bench/torch_ops_bench.py (shared/anchors/h200-baseline.md) has them; F2-F4 (fp8 w8a8,
# quant as core's Quant spells it) as bench/fp8_bench.py (shared/anchors/h100-fp8-vllm.md) does.
SHAPES = {
    "S1": dict(E=128, K=2688, I=1856, top_k=6, act="relu2"),
    "S2": dict(E=128, K=2048, I=768, top_k=8, act="silu"),
    "S3": dict(E=8, K=4096, I=14336, top_k=2, act="silu"),
    "F2": dict(E=128, K=2048, I=768, top_k=8, act="silu", quant="fp8_block"),
    "F3": dict(E=8, K=4096, I=14336, top_k=2, act="silu", quant="fp8_tensor"),
    "F4": dict(E=256, K=7168, I=2048, top_k=8, act="silu", quant="fp8_block"),
}
MS = [1, 4, 16, 64, 128, 256, 512, 1024, 2048, 4096, 8192, 16384]
kCalibrationM = MS[-1]  # fp8_tensor's static input scales: amax / 448 over this many tokens
kCalibrationSeed = 0  # the timed inputs at M take seed M (>= 1)
kPasses = ("abc", "cba", "cba", "abc")


def package():
    """moetune.engines / moetune.tuner from the checkout's python/, without the package's __init__
    (it loads the torch ops library, which these do not use)."""
    import importlib.util

    sys.path.insert(0, os.path.join(REPO, "python"))
    spec = importlib.util.find_spec("moetune")
    sys.modules["moetune"] = importlib.util.module_from_spec(spec)
    from moetune.engines import vllm_triton
    from moetune.tuner import triton_rules
    return vllm_triton, triton_rules


def quant(shape):
    """The shape's quantisation: "none" (bf16), "fp8_block" or "fp8_tensor"."""
    return SHAPES[shape].get("quant", "none")


def table_name(shape, device_name):
    """vLLM's file name for a shape on this GPU: vLLM 0.33.0's get_config_file_name (fused_moe.py)
    with get_device_name_as_file_name's spelling of the device (platform_utils.py), for dtype
    None (bf16) or "fp8_w8a8", and block_shape [128, 128] for fp8_block."""
    s, q = SHAPES[shape], quant(shape)
    dev = re.sub(r"[\s/]+", "_", device_name)
    dev = "NVIDIA_H200" if "H200" in dev.split("_") else dev
    dtype = "" if q == "none" else ",dtype=fp8_w8a8"
    block = ",block_shape=[128,128]" if q == "fp8_block" else ""
    return f"E={s['E']},N={s['I']},device_name={dev}{dtype}{block}.json"


def problem(shape):
    """The recipe's problem for a shape (core's MoeProblem fields; "quant" for fp8 shapes)."""
    s = SHAPES[shape]
    p = {"hidden_size": s["K"], "intermediate_size": s["I"], "num_experts": s["E"],
         "top_k": s["top_k"], "activation": s["act"], "dtype": "bf16", "arch": "sm_90a"}
    if quant(shape) != "none":
        p["quant"] = quant(shape)
    return p


def recipe_of(shapes, device_name, name):
    """A triton_vllm recipe tuning each shape on device_name at the 12 buckets (uniform routing,
    seed 0); recipes/h100-triton-fp8.json is recipe_of(["F2", "F3", "F4"], "NVIDIA H100 80GB
    HBM3", "h100-triton-fp8")."""
    return {"recipe_version": 1, "name": name, "shapes": [{
        "name": shape, "problem": problem(shape), "device": device_name, "backend": "triton",
        "family": "triton_vllm", "family_version": 1, "buckets": MS,
        "routing": {"kind": "uniform", "seed": 0}} for shape in shapes]}


def write_recipe(path, shape, device_name):
    with open(path, "w") as f:
        json.dump(recipe_of([shape], device_name, f"triton-vllm-{shape}"), f, indent=2)


def tune(a, shape, out_dir, store, log):
    import torch

    os.makedirs(out_dir, exist_ok=True)
    recipe = os.path.join(a.out, f"recipe-{shape}.json")
    write_recipe(recipe, shape, torch.cuda.get_device_name(0))
    env = dict(os.environ, PYTHONPATH=os.path.join(REPO, "python"))
    if not a.warm_cache:  # cold: a fresh cache (outside --out, which should stay small)
        env["TRITON_CACHE_DIR"] = f"/tmp/moetune-triton-cache-{shape}-{time.time_ns()}"
        a.cache_dirs.setdefault(shape, env["TRITON_CACHE_DIR"])  # the time phase reuses it
    cmd = [a.moetune, "tune", "--recipe", recipe, "--out", out_dir, "--store", store, "--json"]
    if a.budget_min:
        cmd += ["--budget-min", str(a.budget_min)]
    started = time.monotonic()
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env)
    seconds = time.monotonic() - started
    with open(log, "a") as f:
        f.write(f"+ {' '.join(cmd)}\nexit {proc.returncode} after {seconds:.1f} s\n{proc.stderr}\n")
    with open(os.path.splitext(store)[0] + ".json", "w") as f:  # per-bucket results (--json)
        f.write(proc.stdout)
    print(f"tune {shape}: exit {proc.returncode} in {seconds:.1f} s -> {out_dir}", flush=True)
    try:  # coverage per bucket: measured / candidates (not run: left out by the budget)
        buckets = json.loads(proc.stdout)["shapes"][0]["buckets"]
        print("  " + ", ".join(f"M={b['bucket']} {b.get('winner_short', b['outcome'])} "
                               f"{b.get('measured', '?')}/{b.get('candidates', '?')}"
                               f" (not run {b.get('not_run', '?')})" for b in buckets), flush=True)
    except (ValueError, KeyError, IndexError):
        pass
    if proc.returncode != 0:
        print(proc.stderr[-3000:], flush=True)
    return seconds, proc.returncode


def make_layer(vt, shape, seed=1234, device="cuda"):
    """vLLM's layer for a shape on weights drawn from seed: bf16 N(0,1)/sqrt(fan-in), or for fp8
    shapes the tuner's fp8 testbed (make_fp8_layer)."""
    import torch

    if quant(shape) != "none":
        return make_fp8_layer(vt, shape, seed, device)
    s = SHAPES[shape]
    g = torch.Generator(device=device).manual_seed(seed)
    n1 = 2 * s["I"] if s["act"] == "silu" else s["I"]
    w1 = torch.empty(s["E"], n1, s["K"], dtype=torch.bfloat16, device=device)
    w2 = torch.empty(s["E"], s["K"], s["I"], dtype=torch.bfloat16, device=device)
    for e in range(s["E"]):
        w1[e] = torch.randn(n1, s["K"], generator=g, device=device) / math.sqrt(s["K"])
        w2[e] = torch.randn(s["K"], s["I"], generator=g, device=device) / math.sqrt(s["I"])
    return vt.VllmTritonMoe(w1, w2, s["top_k"], s["act"])


def make_fp8_layer(vt, shape, seed, device):
    """The tuner's fp8 layer (triton_layers.fp8_vllm_layer: e4m3 weights drawn expert by expert
    on the device, 128x128 blocks or experts at ranges orders of magnitude apart, fp32 scales);
    fp8_tensor's static a1/a2 from a calibration pass over kCalibrationM tokens of their own
    seed, so every timed M runs with the same scales, as a served layer does. F4's draw is 512
    loop steps of about a dozen elementwise GPU ops over at most one expert's w1 in fp32
    (117 MB), so it takes no faster path."""
    import torch

    from moetune.tuner import triton_layers

    g = torch.Generator(device=device).manual_seed(seed)
    calibration = inputs(shape, kCalibrationM, kCalibrationSeed, device) \
        if quant(shape) == "fp8_tensor" else None
    return triton_layers.fp8_vllm_layer(problem(shape), g, vt.load(), torch.float32,
                                        calibration)


def inputs(shape, m, seed, device="cuda"):
    import torch

    s = SHAPES[shape]
    g = torch.Generator(device=device).manual_seed(seed)
    x = torch.randn(m, s["K"], device=device, generator=g).to(torch.bfloat16)
    probs = torch.softmax(torch.randn(m, s["E"], device=device, generator=g), dim=-1)
    tw, ids = torch.topk(probs, s["top_k"], dim=-1)
    return x, tw.float().contiguous(), ids.to(torch.int32).contiguous()


def reference(layer, x, tw, ids):
    """The layer's output in fp32, expert by expert: for fp8 layers the tuner's gate's reference
    (triton_layers.fp8_reference: the same e4m3 weights and scales, vLLM's rounding points);
    for bf16 the exact layer on the bf16 weights."""
    import torch

    if layer.use_fp8_w8a8:
        from moetune.tuner import triton_layers

        return triton_layers.fp8_reference(layer, x, tw, ids, torch.float32)
    out = torch.zeros(x.shape, device=x.device, dtype=torch.float32)
    flat = ids.long().flatten()
    inter = layer.w2.shape[2]
    for e in flat.unique().tolist():
        pairs = (flat == e).nonzero().flatten()
        rows = pairs // ids.shape[1]
        h = x[rows].float() @ layer.w1[e].float().T
        act = torch.nn.functional.silu(h[:, :inter]) * h[:, inter:] \
            if layer.activation == "silu" else torch.relu(h).square()
        out.index_add_(0, rows, (act @ layer.w2[e].float().T) * tw.flatten()[pairs, None])
    return out


def check(shape, m, system, row, out, want):
    """The relative L2 error of out against the reference want; raises AssertionError past the
    tuner gate's tolerance for the shape's quantisation (triton_layers.tolerance)."""
    from moetune.tuner import triton_layers

    err = float((out.float() - want).norm() / want.norm())
    tol = triton_layers.tolerance(quant(shape))
    if not err < tol:
        raise AssertionError(f"{shape} M={m} {system} {row}: rel_l2 {err:.3g} against the fp32 "
                             f"reference, expected < {tol} (triton_layers.tolerance('"
                             f"{quant(shape)}'))")
    return err


def graph_of(layer, x, tw, ids, row):
    """One CUDA graph of the layer for row, its eager output, and the expert assignment the graph
    reads: the caller keeps it alive as long as the graph (freed, its memory is reused and the
    replays index with whatever lands there: an illegal address, seen on the H100)."""
    import torch

    prepared = layer.prepare(ids, config=row)
    out = layer.run(x, tw, ids, prepared)
    torch.cuda.synchronize()
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        layer.run(x, tw, ids, prepared)
    return graph, out, prepared


def boot_ci(samples, reps=1000, seed=0):
    rng = random.Random(seed)
    meds = sorted(statistics.median(rng.choices(samples, k=len(samples))) for _ in range(reps))
    return meds[int(0.025 * reps)], meds[int(0.975 * reps) - 1]


def systems_at(layer, shape, m, tables, agree_dirs, name):
    """{system: (row, source)} at M: (a) vLLM's lookup in DIR/tables, (b) its lookup without
    (the shipped file), (c) get_default_config, and t0, t1, .. the agreement tunes' rows."""
    os.environ["VLLM_TUNED_CONFIG_FOLDER"] = tables
    ours = layer.config_for(m)
    os.environ.pop("VLLM_TUNED_CONFIG_FOLDER")
    layer._choices.clear()
    shipped = layer.config_for(m)
    layer._choices.clear()
    s = SHAPES[shape]  # vLLM's dtype string ("fp8_w8a8" or None) and block shape, as it calls it
    default = layer.engine.get_default_config(m, s["E"], s["I"], s["K"], s["top_k"],
                                              layer.config_dtype, layer.block_shape)
    systems = {"a": (ours.config, ours.source), "b": (shipped.config, shipped.source),
               "c": (default, "default")}
    if ours.path is None or not ours.path.startswith(tables):
        systems["a"] = (ours.config, f"NOT OURS: {ours.source}")
    for k, d in enumerate(agree_dirs):  # the agreement tunes' rows, in the same passes
        with open(os.path.join(d, name)) as f:
            t = {int(key): r for key, r in json.load(f).items() if key.isdigit()}
        systems[f"t{k}"] = (t[min(t, key=lambda q: abs(q - m))], d)
    return systems


def replay_samples(graphs, flush):
    """{system: replay times in us}: each graph replayed in the kPasses order with L2 flushed
    before each replay, as many times per pass as fill about 30 ms of (c)."""
    import torch

    est = time.perf_counter()
    graphs["c"].replay()
    torch.cuda.synchronize()
    reps = max(10, min(200, int(0.03 / max(time.perf_counter() - est, 1e-5))))
    samples = {k: [] for k in graphs}
    order = list(graphs)
    for p in kPasses:
        seq = order if p == "abc" else order[::-1]
        for k in seq:
            events = []
            for _ in range(reps):
                flush.zero_()
                start, end = (torch.cuda.Event(enable_timing=True) for _ in range(2))
                start.record()
                graphs[k].replay()
                end.record()
                events.append((start, end))
            torch.cuda.synchronize()
            samples[k] += [st.elapsed_time(en) * 1e3 for st, en in events]
    return samples


def sample_stats(samples, systems, rules, shape, m, rows_out):
    """{system: (median, ci low, ci high)} of the samples; appends one CSV row per system."""
    stats = {}
    for k, v in samples.items():
        lo, hi = boot_ci(v)
        stats[k] = (statistics.median(v), lo, hi)
        rows_out.append(dict(shape=shape, m=m, system=k, config=rules.short(
            {f: systems[k][0][f] for f in rules.ROW_FIELDS}), source=systems[k][1],
            median_us=f"{stats[k][0]:.2f}", ci_low_us=f"{lo:.2f}", ci_high_us=f"{hi:.2f}"))
    return stats


def time_shape(a, shape, vt, rules, rows_out):
    """Times one shape at every M (see the module docstring); one layer alive, freed at the end
    (F4's e4m3 weights are 11 GB), and each M's graphs freed before the next M."""
    import torch

    if shape in a.cache_dirs:  # the tune's compiled kernels (Triton reads this per compile)
        os.environ["TRITON_CACHE_DIR"] = a.cache_dirs[shape]
    layer = make_layer(vt, shape)
    tables = os.path.join(a.out, "tables")
    agree_dirs = [os.path.join(a.out, f"agree-{k}") for k in range(a.agreement_tunes)] \
        if a.agreement == shape else []
    name = table_name(shape, torch.cuda.get_device_name(0))
    flush = torch.empty(2 * torch.cuda.get_device_properties(0).L2_cache_size, dtype=torch.uint8,
                        device="cuda")
    summary = []
    for m in MS:
        x, tw, ids = inputs(shape, m, seed=m)
        systems = systems_at(layer, shape, m, tables, agree_dirs, name)
        want = reference(layer, x, tw, ids)
        graphs, keep = {}, []  # keep: what the graphs read, alive while they replay
        for sys_name, (row, _) in systems.items():
            graph, out, prepared = graph_of(layer, x, tw, ids,
                                            {f: row[f] for f in rules.ROW_FIELDS})
            check(shape, m, sys_name, row, out, want)
            graphs[sys_name] = graph
            keep.append(prepared)
        samples = replay_samples(graphs, flush)
        stats = sample_stats(samples, systems, rules, shape, m, rows_out)
        print(f"  {shape} M={m}: " + ", ".join(f"{k} {v[0]:.1f} us" for k, v in stats.items()),
              flush=True)  # progress: a call cut short still shows the points it measured
        agree = None
        if agree_dirs:  # the same rule summary.csv's tunes_agree column applies
            agree = tunes_agree([r for r in rows_out if r["shape"] == shape and r["m"] == m and
                                 (r["system"] == "a" or r["system"].startswith("t"))]) == "yes"
        summary.append((m, stats, systems, agree))
        del graphs, keep, graph, out, prepared  # the loop's last graph too, before the next M
        torch.cuda.empty_cache()
    del layer
    torch.cuda.empty_cache()
    return summary


def print_table(shape, summary, tune_s):
    print(f"\n{shape}  (tune {tune_s})")
    print(f"{'M':>6} {'a us':>9} {'b us':>9} {'c us':>9} {'c/a':>6} {'b/a':>6}  a vs b   b source")
    ca, ba, worse = [], [], []
    for m, st, systems, agree in summary:
        a, b, c = st["a"], st["b"], st["c"]
        ca.append(c[0] / a[0])
        ba.append(b[0] / a[0])
        verdict = "slower" if a[1] > b[2] else "faster" if a[2] < b[1] else "tie"
        if verdict == "slower":
            worse.append(m)
        extra = "" if agree is None else ("  agree" if agree else "  DISAGREE")
        print(f"{m:>6} {a[0]:9.1f} {b[0]:9.1f} {c[0]:9.1f} {c[0] / a[0]:6.3f} {b[0] / a[0]:6.3f}"
              f"  {verdict:7} {systems['b'][1]}{extra}")
    g = lambda v: math.exp(sum(map(math.log, v)) / len(v))  # noqa: E731
    print(f"geomean c/a {g(ca):.3f} (target >= 1.15), b/a {g(ba):.3f}; M where a is slower than "
          f"b beyond the intervals: {worse or 'none'}")
    agrees = [x[3] for x in summary if x[3] is not None]
    if agrees:
        print(f"agreement: {sum(agrees)}/{len(agrees)} buckets within 1% (target >= 95%)")


def parse_args():
    """The command line, with --moetune made absolute where it names a path."""
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", required=True)
    ap.add_argument("--phase", choices=["tune", "time", "all", "summary"], default="all")
    ap.add_argument("--shapes", default="S1,S2,S3")
    ap.add_argument("--moetune", default=next((p for p in (".devbin/moetune", "build/moetune")
                                               if os.path.exists(os.path.join(REPO, p))),
                                              "moetune"))
    ap.add_argument("--agreement", default="", help="a shape tuned --agreement-tunes more times")
    ap.add_argument("--agreement-tunes", type=int, default=2)
    ap.add_argument("--budget-min", type=float, default=0)
    ap.add_argument("--warm-cache", action="store_true", help="keep Triton's default cache")
    ap.add_argument("--report-to", default="",
                    help="also copy the results (csv, logs, triton-run.tgz) here, e.g. $OUT")
    a = ap.parse_args()
    a.cache_dirs = {}
    a.moetune = os.path.abspath(os.path.join(REPO, a.moetune)) if os.sep in a.moetune else a.moetune
    return a


def tune_all(a, shapes):
    """The tune phase: every shape, then the agreement tunes; writes tune-seconds.json and packs
    triton-run.tgz. Returns {shape: its wall time (and exit code when not 0)}."""
    tune_s = {}
    log = os.path.join(a.out, "tune.log")
    for shape in shapes:
        secs, rc = tune(a, shape, os.path.join(a.out, "tables"),
                        os.path.join(a.out, f"tune-{shape}.sqlite"), log)
        tune_s[shape] = f"{secs:.0f} s" + ("" if rc == 0 else f", exit {rc}")
    if a.agreement:
        for k in range(a.agreement_tunes):
            tune(a, a.agreement, os.path.join(a.out, f"agree-{k}"),
                 os.path.join(a.out, f"agree-{k}.sqlite"), log)
    with open(os.path.join(a.out, "tune-seconds.json"), "w") as f:
        json.dump(tune_s, f)
    # vLLM's file names hold '=' and ',', which the device tool does not bring back by name.
    subprocess.run(["tar", "czf", os.path.join(a.out, "triton-run.tgz"), "-C", a.out] +
                   [n for n in os.listdir(a.out) if n == "tables" or n.startswith("agree-")
                    or n.endswith((".sqlite", ".json")) or n.startswith("recipe-")],
                   check=False)
    return tune_s


def main():
    a = parse_args()
    os.makedirs(a.out, exist_ok=True)
    shapes = a.shapes.split(",")
    if a.phase == "summary":
        write_summary(a.out, shapes, a.budget_min)
        return 0
    vt, rules = package()
    import torch

    print(f"device {torch.cuda.get_device_name(0)}, torch {torch.__version__}, engine "
          f"{vt.find_engine()}", flush=True)
    tune_s = tune_all(a, shapes) if a.phase in ("tune", "all") else {}
    if a.phase == "tune":
        report(a)
        return 0
    rows = []
    summaries = {shape: time_shape(a, shape, vt, rules, rows) for shape in shapes}
    with open(os.path.join(a.out, "triton_vllm.csv"), "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=list(rows[0]))
        w.writeheader()
        w.writerows(rows)
    if not tune_s and os.path.exists(os.path.join(a.out, "tune-seconds.json")):
        with open(os.path.join(a.out, "tune-seconds.json")) as f:
            tune_s = json.load(f)
    for shape in shapes:
        print_table(shape, summaries[shape], tune_s.get(shape, "not in this run"))
    write_summary(a.out, shapes, a.budget_min)
    report(a)
    return 0


def tunes_agree(rows):
    """'yes' / 'no' when rows hold agreement tunes' winners (a and t0, t1, ..): whether their
    distinct configs are within 1% (each by the median of its rows' medians); '' without."""
    if len(rows) < 2:
        return ""
    by_config = {}
    for r in rows:
        by_config.setdefault(r["config"], []).append(float(r["median_us"]))
    medians = [statistics.median(v) for v in by_config.values()]
    return "yes" if max(medians) <= 1.01 * min(medians) else "no"


def write_summary(out, shapes, budget_min):
    """summary.csv (the results of record's format): per shape and M, the tune's wall time and
    budget, candidates measured / in the space (from tune-SHAPE.json), and a, b, c with their
    intervals, c/a, a against b (slower / faster beyond the intervals, else tie) and, with
    --agreement, tunes_agree (tunes_agree()). Needs no GPU:
    `--phase summary` rewrites it from a run's triton_vllm.csv."""
    with open(os.path.join(out, "triton_vllm.csv")) as f:
        timed = {(r["shape"], int(r["m"]), r["system"]): r for r in csv.DictReader(f)}
    seconds = {}
    if os.path.exists(os.path.join(out, "tune-seconds.json")):
        with open(os.path.join(out, "tune-seconds.json")) as f:
            seconds = json.load(f)
    fields = ["shape", "m", "tune_s", "budget_min", "measured", "candidates"]
    for k in "abc":
        fields += [f"{k}_config"] + ([f"{k}_source"] if k == "b" else []) + \
            [f"{k}_us", f"{k}_ci_low_us", f"{k}_ci_high_us"]
    fields += ["c_over_a", "a_vs_b", "tunes_agree"]
    rows = []
    for shape in shapes:
        buckets = {}
        try:
            with open(os.path.join(out, f"tune-{shape}.json")) as f:
                buckets = {b["bucket"]: b for b in json.load(f)["shapes"][0]["buckets"]}
        except (OSError, ValueError, KeyError, IndexError):
            pass
        for m in MS:
            if (shape, m, "a") not in timed:
                continue
            t = {k: timed[(shape, m, k)] for k in "abc"}
            row = dict(shape=shape, m=m, tune_s=seconds.get(shape, "").split(" ")[0],
                       budget_min=budget_min, measured=buckets.get(m, {}).get("measured", ""),
                       candidates=buckets.get(m, {}).get("candidates", ""))
            for k in "abc":
                row.update({f"{k}_config": t[k]["config"], f"{k}_us": t[k]["median_us"],
                            f"{k}_ci_low_us": t[k]["ci_low_us"],
                            f"{k}_ci_high_us": t[k]["ci_high_us"]})
            row["b_source"] = t["b"]["source"]
            a_lo, a_hi = float(t["a"]["ci_low_us"]), float(t["a"]["ci_high_us"])
            b_lo, b_hi = float(t["b"]["ci_low_us"]), float(t["b"]["ci_high_us"])
            row["c_over_a"] = f"{float(t['c']['median_us']) / float(t['a']['median_us']):.3f}"
            row["a_vs_b"] = "slower" if a_lo > b_hi else "faster" if a_hi < b_lo else "tie"
            row["tunes_agree"] = tunes_agree([r for (sh, mm, k), r in timed.items()
                                              if sh == shape and mm == m and
                                              (k == "a" or k.startswith("t"))])
            rows.append(row)
    with open(os.path.join(out, "summary.csv"), "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=fields)
        w.writeheader()
        w.writerows(rows)


def report(a):
    """Copies the results to --report-to (the device tool empties $OUT before every command, so
    --out is best a folder of the checkout that lives as long as the machine)."""
    if not a.report_to:
        return
    import shutil

    os.makedirs(a.report_to, exist_ok=True)
    for name in ("triton_vllm.csv", "summary.csv", "tune.log", "tune-seconds.json",
                 "triton-run.tgz"):
        if os.path.exists(os.path.join(a.out, name)):
            shutil.copy(os.path.join(a.out, name), a.report_to)


if __name__ == "__main__":
    sys.exit(main())
