"""moetune.engines.vllm_triton on vLLM 0.33.0's fp8 w8a8 path: block-scaled (128x128 weights, 1x128
activation groups) and per-tensor (static input scales), as fused_experts launches it.

CPU tests run vLLM's kernel under Triton's interpreter in one child process (TRITON_INTERPRET=1
set there before triton is imported, as test_vllm_peer.py does) on the fp8 layers of
fp8_reference.py (weight blocks whose ranges differ by orders of magnitude, so a wrong block
scale shows), and check each output two ways:
- against vllm_rounding_reference (below): fp64 with vLLM's own rounding points, tolerance
  TOL_SAME_ROUNDING; this is the check that finds a harness bug, and each quantisation has
  negative twins (a weight block taking its neighbour's scale, experts' scales swapped) that it
  must catch;
- against fp8_reference (the one the moetune fp8 tests use), TOL_FP8_REFERENCE, on the median
  of MEDIAN_SEEDS seeds (why a median: TOL_FP8_REFERENCE's comment).
The config tests check that the harness picks vLLM's row for fp8: its fp8 table file named for
the dtype and block shape where vLLM ships one, else vLLM's default rule for fp8, never the bf16
table of the same E and N. The `gpu` twin runs the compiled kernel (SWAP_AB at small M on
Hopper) and a CUDA-graph replay. All need .engines/vllm-0.33.0 (scripts/fetch_engine_kernels.py).

What the interpreter cannot check: code generation, num_warps/num_stages, and Hopper's fp8 MMA
accumulation (per-tensor: vLLM's acc= form, fp8 fast accumulation); its tl.dot widens e4m3 to
fp16 exactly and multiplies in fp32.

Seed: MOETUNE_TEST_SEED (default 0), printed in every failure.

    python tests/python/test_vllm_fp8_peer.py OUT.pt   # the child: runs the cases, saves outputs
"""

import os
import statistics
import sys
import time

import pytest
import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from fp8_reference import (FP8_MAX, dequant_groups, dequant_weights,  # noqa: E402
                           fp8_reference, make_fp8_layer, quant_groups, static_scales)
from interpreter_child import run_interpreter_child  # noqa: E402
from vllm_engine import ENGINE, needs_engine  # noqa: E402
from moe_reference import rel_l2  # noqa: E402

SEED = int(os.environ.get("MOETUNE_TEST_SEED", "0"))

# Against vllm_rounding_reference: the same quantisations and bf16 roundings, so what is left is
# fp32 summation order inside the GEMMs and the bf16 output (the cases: 5e-4 .. 1.6e-3); a block
# off by its neighbour's scale is off by up to 10^4.
TOL_SAME_ROUNDING = 1e-2
# Against fp8_reference, which rounds the intermediate to bf16 once (fp64 up to there): vLLM
# rounds GEMM1's output to bf16, then silu(gate), then the product, and re-quantising to e4m3
# (3 mantissa bits) turns those bf16 differences into whole e4m3 steps on a few elements. Over
# 40 seeds of MEDIAN_CASE, vllm_rounding_reference sits at a median 1.6% (block) and 1.4%
# (per-tensor) from fp8_reference, single seeds up to 1.9% and 2.3% (smaller cases: up to 4.7%),
# so one seed can exceed 2e-2 without any fault; the median of MEDIAN_SEEDS seeds does not.
TOL_FP8_REFERENCE = 2e-2
MEDIAN_SEEDS = 5

# name -> (M, K, I, E, top_k, block, capability); what each covers is on its line.
CASES = {
    "block_small_m": (5, 128, 128, 4, 2, True, None),  # align; M < BLOCK_SIZE_M: short EM grid
    "block_naive": (1, 256, 128, 8, 2, True, None),  # M * top_k * 4 <= E: vLLM skips align
    "block_odd_m": (17, 128, 256, 4, 2, True, None),  # M = BLOCK_SIZE_M + 1; two I groups
    "block_swap_ab": (5, 256, 128, 4, 2, True, (9, 0)),  # Hopper: vLLM's SWAP_AB kernel form
    "tensor_small_m": (5, 128, 128, 4, 2, False, None),
    "tensor_naive": (1, 256, 128, 8, 2, False, None),
    "tensor_swap_ab": (17, 256, 128, 4, 2, False, (9, 0)),
}
# The fp8_reference check: (M, K, I, E, top_k) per quantisation, run at MEDIAN_SEEDS seeds.
MEDIAN_CASE = (128, 128, 128, 2, 2)
# Negative twins: (corruption, case); each output is compared with the uncorrupted reference.
TWINS = [("w1_block_scale", "block_small_m"), ("w2_block_scale", "block_odd_m"),
         ("w1_block_scale", "block_swap_ab"), ("expert_scales", "tensor_small_m")]


def _seed(name):
    return SEED + sorted(CASES).index(name)


def _what(name):
    M, K, I, E, k, block, cap = CASES[name]
    quant = "block [128, 128]" if block else "per-tensor"
    return f"{name}: M={M} K={K} I={I} E={E} top_k={k} {quant} capability={cap} seed={_seed(name)}"


def _layer(shape, block, seed):
    """An fp8 layer of fp8_reference.py and the harness's quantisation arguments for it."""
    M, K, I, E, k = shape
    layer = make_fp8_layer(M, K, I, E, k, block=block, seed=seed, device="cpu")
    if block:
        return layer, dict(block_shape=[128, 128])
    a1, a2 = static_scales(layer)
    return layer, dict(a1_scale=torch.tensor([a1]), a2_scale=torch.tensor([a2]))


def _case(name):
    M, K, I, E, k, block, _ = CASES[name]
    return _layer((M, K, I, E, k), block, _seed(name))


def _corrupt(kind, layer):
    """One scale tensor changed: a block takes its neighbour's scale, or experts swap theirs."""
    if kind == "w1_block_scale":  # along N1 (every case has 2I / 128 >= 2 blocks there)
        return dict(layer, w1_scale=layer["w1_scale"].roll(1, dims=1).contiguous())
    if kind == "w2_block_scale":  # along I (its case has I / 128 = 2)
        return dict(layer, w2_scale=layer["w2_scale"].roll(1, dims=2).contiguous())
    return dict(layer, w1_scale=layer["w1_scale"].flip(0).contiguous())


def _quant_static(t, scale):
    """vLLM's static per-tensor quantisation, dequantised: e4m3(clamp(t * (1 / s))) * s, the
    reciprocal in fp32 (fp8_reference divides instead: an ulp apart before rounding)."""
    inv = 1.0 / torch.tensor(scale, dtype=torch.float32)
    q = (t.float() * inv).clamp(-FP8_MAX, FP8_MAX).to(torch.float8_e4m3fn)
    return q.double() * scale


def vllm_rounding_reference(layer, quant):
    """fp64 with vLLM's rounding points (fused_experts_impl, silu): x quantised as vLLM does
    (per token per 128 channels, or by a1_scale); GEMM1 on the dequantised values,
    rounded to bf16 (vLLM's cache1); silu(gate) rounded to bf16, times up, rounded (vLLM's
    silu_and_mul); quantised again (by a2_scale, or per row per 128); GEMM2 times the routing
    weight, rounded to bf16 (cache3); the sum over top-k in fp64."""
    x = layer["x"].cpu()
    ids, tw = layer["topk_ids"].long().cpu(), layer["topk_weights"].double().cpu()
    block = "block_shape" in quant
    w1 = dequant_weights(layer["w1"].cpu(), layer["w1_scale"].cpu())
    w2 = dequant_weights(layer["w2"].cpu(), layer["w2_scale"].cpu())
    if block:
        xd = dequant_groups(*quant_groups(x))
    else:
        a1, a2 = float(quant["a1_scale"]), float(quant["a2_scale"])
        xd = _quant_static(x, a1)
    inter = w2.shape[2]
    y = torch.zeros(*ids.shape, x.shape[1], dtype=torch.float64)
    for e in ids.unique().tolist():
        rows, slots = (ids == e).nonzero(as_tuple=True)
        h = (xd[rows] @ w1[e].T).to(torch.bfloat16)
        a = torch.nn.functional.silu(h[:, :inter]) * h[:, inter:]  # bf16 ops: each rounds
        ad = dequant_groups(*quant_groups(a)) if block else _quant_static(a, a2)
        out = (ad @ w2[e].T) * tw[rows, slots].unsqueeze(-1)
        y[rows, slots] = out.to(torch.bfloat16).double()
    return y.sum(dim=1)


def _run(layer, quant, top_k, capability=None, engine=None):
    from moetune.engines import vllm_triton

    moe = vllm_triton.VllmTritonMoe(layer["w1"], layer["w2"], top_k, "silu", engine=engine,
                                    w1_scale=layer["w1_scale"], w2_scale=layer["w2_scale"],
                                    capability=capability, **quant)
    prepared = moe.prepare(layer["topk_ids"])
    out = moe.run(layer["x"], layer["topk_weights"], layer["topk_ids"], prepared)
    return out, moe, prepared


def _child(out_path):
    """Runs every case, twin and median seed under the interpreter; saves the outputs."""
    assert os.environ.get("TRITON_INTERPRET") == "1", "the child runs under TRITON_INTERPRET=1"
    from moetune.engines import vllm_triton

    started = time.monotonic()
    eng = vllm_triton.load()
    results = {}
    for name, (M, K, I, E, k, block, cap) in CASES.items():
        layer, quant = _case(name)
        out, moe, prepared = _run(layer, quant, k, cap, eng)
        results[name] = {"out": out, "naive": prepared.sorted_token_ids is None,
                         "swap_ab": eng.enable_swap_ab(prepared.config["BLOCK_SIZE_M"],
                                                       prepared.config["BLOCK_SIZE_N"]),
                         "source": moe.config_for(M).source}
    for kind, name in TWINS:
        layer, quant = _case(name)
        results[f"{kind}/{name}"] = {"out": _run(_corrupt(kind, layer), quant, CASES[name][4],
                                                 CASES[name][6], eng)[0]}
    for block in (True, False):
        for i in range(MEDIAN_SEEDS):
            layer, quant = _layer(MEDIAN_CASE, block, SEED + 100 + i)
            results[f"median/{block}/{i}"] = {"out": _run(layer, quant, MEDIAN_CASE[4],
                                                          None, eng)[0]}
    results["seconds"] = time.monotonic() - started
    torch.save(results, out_path)


@pytest.fixture(scope="module")
def interpreted(tmp_path_factory):
    results, wall = run_interpreter_child(__file__, tmp_path_factory.mktemp("vllm_fp8_peer"), SEED, 900)
    print(f"fp8 interpreter child: {wall:.1f} s wall, cases "
          f"{results['seconds']:.1f} s, seed={SEED}")
    return results


def _check(got, want, tol, what):
    err = rel_l2(got, want)
    if not err <= tol:
        diff = torch.nan_to_num((got.double().cpu() - want.double().cpu()).abs(), nan=1e300)
        idx = tuple(int(i) for i in torch.unravel_index(diff.argmax(), diff.shape))
        raise AssertionError(f"{what}: relative L2 error {err:.3g} > {tol:g}; worst at {idx}: "
                             f"got {got[idx].item()!r}, expected {want[idx].item()!r}")


@needs_engine
@pytest.mark.parametrize("name", sorted(CASES))
def test_interpreted_fp8_kernel_matches_vllm_rounding_reference(interpreted, name):
    layer, quant = _case(name)
    _check(interpreted[name]["out"], vllm_rounding_reference(layer, quant), TOL_SAME_ROUNDING,
           _what(name))


@needs_engine
@pytest.mark.parametrize("kind,name", TWINS)
def test_fp8_negative_twin_fails_the_check(interpreted, kind, name):
    layer, quant = _case(name)
    with pytest.raises(AssertionError, match="relative L2 error"):
        _check(interpreted[f"{kind}/{name}"]["out"], vllm_rounding_reference(layer, quant),
               TOL_SAME_ROUNDING, f"{kind} twin of {_what(name)}")


@needs_engine
@pytest.mark.parametrize("block", [True, False], ids=["block", "per_tensor"])
def test_interpreted_fp8_kernel_is_within_2e2_of_fp8_reference(interpreted, block):
    errs = []
    for i in range(MEDIAN_SEEDS):
        layer, quant = _layer(MEDIAN_CASE, block, SEED + 100 + i)
        kw = {} if block else {k: float(v) for k, v in quant.items()}
        errs.append(rel_l2(interpreted[f"median/{block}/{i}"]["out"],
                           fp8_reference(layer, block=block, **kw)))
    med = statistics.median(errs)
    assert med <= TOL_FP8_REFERENCE, (
        f"(M, K, I, E, top_k) = {MEDIAN_CASE} {'block' if block else 'per-tensor'}, seeds "
        f"{SEED + 100}..{SEED + 99 + MEDIAN_SEEDS}: median relative L2 {med:.3g} > "
        f"{TOL_FP8_REFERENCE}; per seed {[f'{e:.3g}' for e in errs]}")


@needs_engine
def test_fp8_cases_take_the_paths_they_are_named_for(interpreted):
    seen = {n: (interpreted[n]["naive"], interpreted[n]["swap_ab"]) for n in CASES}
    want = {n: (CASES[n][0] * CASES[n][4] * 4 <= CASES[n][3], CASES[n][6] == (9, 0))
            for n in CASES}
    assert seen == want, seen
    assert all(interpreted[n]["source"] == "default" for n in CASES)  # no table names "cpu"


def _meta_layer(E, K, I, device_name, block, capability=(9, 0)):
    from moetune.engines import vllm_triton

    fp8 = dict(dtype=torch.float8_e4m3fn, device="meta")
    f32 = dict(dtype=torch.float32, device="meta")
    w1, w2 = torch.empty(E, 2 * I, K, **fp8), torch.empty(E, K, I, **fp8)
    if block:
        quant = dict(w1_scale=torch.empty(E, 2 * I // 128, K // 128, **f32),
                     w2_scale=torch.empty(E, K // 128, I // 128, **f32), block_shape=[128, 128])
    else:
        quant = dict(w1_scale=torch.empty(E, **f32), w2_scale=torch.empty(E, **f32),
                     a1_scale=torch.empty(1, **f32), a2_scale=torch.empty(1, **f32))
    return vllm_triton.VllmTritonMoe(w1, w2, 8, "silu", device_name=device_name,
                                     capability=capability, **quant)


def _table(name):
    import json

    with open(os.path.join(ENGINE, "vllm/model_executor/layers/fused_moe/configs", name)) as f:
        return {int(m): row for m, row in json.load(f).items() if m != "triton_version"}


@needs_engine
@pytest.mark.parametrize("device_name,block,name", [
    ("NVIDIA H200", True,
     "E=128,N=768,device_name=NVIDIA_H200,dtype=fp8_w8a8,block_shape=[128,128].json"),
    ("NVIDIA H100 80GB HBM3", False, "E=8,N=14336,device_name=NVIDIA_H100_80GB_HBM3,"
                                     "dtype=fp8_w8a8.json")])
def test_fp8_config_for_uses_vllm_fp8_table(device_name, block, name):
    """Qwen3-30B-A3B (block) on an H200 and Mixtral (per-tensor) on an H100: vLLM ships both."""
    E, K, I = (128, 2048, 768) if block else (8, 4096, 14336)
    layer = _meta_layer(E, K, I, device_name, block)
    table = _table(name)
    for M in (1, 5, 48, 3000):
        choice = layer.config_for(M)
        assert choice.source == f"table:{name}", (M, choice)
        assert choice.config == table[min(table, key=lambda m: abs(m - M))], (M, choice)


@needs_engine
def test_fp8_config_for_uses_vllm_fp8_default_rule_not_the_bf16_table():
    """E=128, N=768 on an H200 has a bf16 table and a block-fp8 table, but no per-tensor fp8
    one; on an H100 none at all. vLLM 0.33.0's get_default_config, M = 5 (<= 8)."""
    block_h100 = _meta_layer(128, 2048, 768, "NVIDIA H100 80GB HBM3", True).config_for(5)
    assert block_h100.source == "default" and block_h100.path is None, block_h100
    # block: N tile 64 at M <= 8 (more CTAs), K tile = the group, 3 stages at 4 < M <= 8
    assert block_h100.config == {"BLOCK_SIZE_M": 16, "BLOCK_SIZE_N": 64, "BLOCK_SIZE_K": 128,
                                 "GROUP_SIZE_M": 1, "SPLIT_K": 1, "num_warps": 4,
                                 "num_stages": 3}
    tensor_h200 = _meta_layer(128, 2048, 768, "NVIDIA H200", False).config_for(5)
    assert tensor_h200.source == "default", tensor_h200
    # per-tensor: the general rule, K tile 128 for fp8 at every M
    assert tensor_h200.config == {"BLOCK_SIZE_M": 16, "BLOCK_SIZE_N": 64, "BLOCK_SIZE_K": 128,
                                  "GROUP_SIZE_M": 1, "SPLIT_K": 1, "num_warps": 4,
                                  "num_stages": 4}


@needs_engine
def test_fp8_arguments_that_do_not_fit_are_value_errors_naming_them():
    from moetune.engines import vllm_triton

    layer, quant = _case("block_small_m")
    w1, w2, s1, s2 = layer["w1"], layer["w2"], layer["w1_scale"], layer["w2_scale"]
    make = lambda **kw: vllm_triton.VllmTritonMoe(w1, w2, 2, "silu", **kw)
    with pytest.raises(ValueError, match=r"w1_scale \(4, 1, 1\) torch.float32 on cpu; expected "
                                         r"\[4, 2, 1\] float32"):
        make(w1_scale=s1[:, :1].contiguous(), w2_scale=s2, block_shape=[128, 128])
    with pytest.raises(ValueError, match=r"\['a1_scale'\] given with block_shape \[128, 128\]"):
        make(w1_scale=s1, w2_scale=s2, block_shape=[128, 128], a1_scale=torch.ones(1))
    with pytest.raises(ValueError, match=r"a1_scale None; expected \[1\] float32"):
        make(w1_scale=s1[:, 0, 0].contiguous(), w2_scale=s2[:, 0, 0].contiguous())
    with pytest.raises(ValueError, match=r"\['w1_scale'\] given with bf16 weights"):
        vllm_triton.VllmTritonMoe(w1.bfloat16(), w2.bfloat16(), 2, "silu", w1_scale=s1)


@needs_engine
@pytest.mark.gpu
@pytest.mark.parametrize("block", [True, False], ids=["block", "per_tensor"])
@pytest.mark.parametrize("M", [1, 4, 33])
def test_compiled_fp8_kernel_matches_reference_and_replays_in_a_cuda_graph(M, block):
    """Qwen3-30B-A3B's E and I at a small K; eager, then a graph replay with new x."""
    layer, quant = _layer((M, 512, 768, 128, 8), block, SEED + M)
    layer = {k: v.cuda() for k, v in layer.items()}
    quant = {k: v.cuda() if torch.is_tensor(v) else v for k, v in quant.items()}
    out, moe, prepared = _run(layer, quant, 8)
    what = (f"cuda M={M} K=512 I=768 E=128 top_k=8 {'block' if block else 'per-tensor'} "
            f"seed={SEED + M} {moe.config_for(M)}")
    _check(out, vllm_rounding_reference(layer, quant), TOL_SAME_ROUNDING, what)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):  # fails on any host sync inside run()
        out = moe.run(layer["x"], layer["topk_weights"], layer["topk_ids"], prepared)
    layer["x"].neg_()  # new values, the same amax: the static a1_scale still fits
    graph.replay()
    torch.cuda.synchronize()
    _check(out, vllm_rounding_reference(layer, quant), TOL_SAME_ROUNDING, "graph replay " + what)


if __name__ == "__main__":
    _child(sys.argv[1])
