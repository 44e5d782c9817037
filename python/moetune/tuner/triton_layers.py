"""The triton family testbed's layers: a problem's weights drawn (bf16, or e4m3 with fp32 scales),
vLLM's layer on them (moetune.engines.vllm_triton.VllmTritonMoe) and the reference it is checked
against, the MoE layer computed expert by expert in dt (fp64 on the CPU, fp32 on a GPU),
sum_j topk_weights[m, j] * w2[e] @ inner(w1[e] @ x[m]).

  bf16     (bf16_layer) w1 ~ N(0,1)/sqrt(K) [E, N1, K], w2 ~ N(0,1)/sqrt(I) [E, K, I]; inner =
           the activation (silu(gate) * up, or relu(h)^2) in dt on the same bf16 inputs: the
           kernel's only roundings are the bf16 intermediate and output.
  fp8 w8a8 (fp8_layer) e4m3 weights (fp8_weights): fp8_block with 128x128 blocks at 10^-3 ..
           10^1, one fp32 scale each, vLLM's layer with block_shape [128, 128]; fp8_tensor with
           experts at 10^-1 .. 10^1, one scale each, and static input scales a1, a2 =
           static_input_scales (amax / 448 of x and of the intermediate in an unquantised pass
           over the same weights, as a calibration sets them). The reference dequantises the
           same e4m3 weights with the same scales (exact in fp64) and repeats vLLM's rounding
           points (fp8_inner): x quantised by vLLM's own quantiser (VllmTritonMoe.quantize: per
           token per 128 channels, or by the static a1), GEMM1 rounded to bf16 (vLLM's
           intermediate cache is bf16), vLLM's activation on bf16 (silu(gate) rounded, times
           up, rounded), quantised again by vLLM's quantiser (per row per 128 channels, or by
           a2), GEMM2 with the routing weight. fp8_layer is fp8_vllm_layer (the layer) then
           fp8_reference (its reference for one input), which a bench that keeps one layer for
           many inputs calls apart (bench/triton_vllm_device.py).
Why the fp8 reference repeats vLLM's rounding points and the tolerance the tuner's gate applies
to it: tolerance() below.
"""

import math

import torch

from . import fp8_weights, triton_rules

# Relative L2 error the tuner's gate allows (core's kernels::tolerance_for(problem); the worker
# only reports, the parent decides), and why it holds against this reference:
#   bf16  1e-2: the kernel rounds the intermediate and the output to bf16 (2^-9 relative each)
#         and sums in another order; the reference rounds neither.
#   fp8   3e-2: the reference rounds and quantises where vLLM does, with vLLM's quantiser, so
#         what is left is GEMM1's summation order (and on sm_90 the fp8 MMA's accumulation): an
#         element of h on the other side of a bf16 rounding step moves a whole e4m3 step (2^-4
#         relative) when it is quantised again, and its group's scale with it where it is the
#         group's amax. Under the interpreter vLLM's kernel sat 5e-4 .. 1.6e-3 from the same
#         rounding points (tests/python/test_vllm_fp8_peer.py, TOL_SAME_ROUNDING) and 1.5e-3 ..
#         3.1e-3 from this reference (tests/python/test_triton_fp8.py, seeds 0-7); a weight read
#         with another block's or expert's scale was 0.37 .. 22 away (fp8_weights' ranges).
TOLERANCE = {"none": 1e-2, "fp8": 3e-2}


def tolerance(quant):
    """The relative L2 error the tuner's gate allows for quantisation quant ("none", "fp8_*")."""
    return TOLERANCE["none" if quant == "none" else "fp8"]


def moe_reference(x, w1_of, w2_of, topk_weights, topk_ids, inner, dt):
    """out [M, K] in dt: per expert e hit, y = inner(x[rows] @ w1_of(e)^T) @ w2_of(e)^T times the
    rows' routing weights, added into out; w1_of(e), w2_of(e) give that expert's weights in dt."""
    out = torch.zeros(x.shape, dtype=dt, device=x.device)
    flat = topk_ids.long().flatten()
    for e in flat.unique().tolist():
        pairs = (flat == e).nonzero().flatten()
        rows = pairs // topk_ids.shape[1]
        a = inner(x[rows].to(dt) @ w1_of(e).T).to(dt)
        y = a @ w2_of(e).T
        out.index_add_(0, rows, y * topk_weights.flatten()[pairs].to(dt).unsqueeze(1))
    return out


def activation(act, inter):
    """The exact activation of h [rows, N1] in h's dtype: silu(gate) * up (rows [gate; up]) or
    relu(h)^2."""
    if act == "silu":
        return lambda h: torch.nn.functional.silu(h[:, :inter]) * h[:, inter:]
    return lambda h: torch.relu(h).square()


def dequant_activations(layer, q, scale, dt):
    """vLLM's quantised GEMM input of an fp8 layer back in dt: q e4m3 [rows, C] times its
    per-row per-128-column scales [rows, C / 128] (block_shape set), or times the one static
    scale (per-tensor)."""
    if layer.block_shape is None:
        return q.to(dt) * scale.to(dt).reshape(1)
    groups = q.to(dt).unflatten(-1, (scale.shape[-1], fp8_weights.BLOCK))
    return (groups * scale.to(dt).unsqueeze(-1)).flatten(-2)


def fp8_inner(layer, act_fn, dt):
    """inner for an fp8 layer (VllmTritonMoe): h rounded to bf16, vLLM's activation act_fn(out,
    h) on bf16, quantised by the layer's own quantiser with its a2_scale, dequantised in dt."""
    def inner(h):
        h = h.to(torch.bfloat16)
        a = torch.empty(h.shape[0], layer.w2.shape[2], dtype=torch.bfloat16, device=h.device)
        act_fn(a, h)
        return dequant_activations(layer, *layer.quantize(a, layer.a2_scale), dt)
    return inner


def static_input_scales(x, w1_of, topk_weights, topk_ids, act, inter, dt):
    """Per-tensor a1, a2 (fp32 [1] each) as a calibration sets them: amax / 448 of x and of the
    intermediate act(x @ w1^T) in an unquantised pass (the routed rows of each expert hit)."""
    amax = torch.zeros((), dtype=dt, device=x.device)
    exact = activation(act, inter)

    def record(h):
        nonlocal amax
        a = exact(h)
        amax = torch.maximum(amax, a.abs().max())
        return torch.zeros(a.shape[0], 0, dtype=dt, device=h.device)

    # moe_reference's pass with a GEMM2 of width 0: record sees every expert's rows.
    moe_reference(x, w1_of, lambda e: torch.zeros(x.shape[1], 0, dtype=dt, device=x.device),
                  topk_weights, topk_ids, record, dt)
    a1 = x.abs().max().to(torch.float32) / fp8_weights.FP8_MAX
    a2 = torch.clamp(amax.to(torch.float32), min=1e-6) / fp8_weights.FP8_MAX
    return a1.reshape(1), a2.reshape(1)


def bf16_layer(problem, x, tw, ids, g, engine, dt):
    """bf16 weights drawn with g (expert by expert), vLLM's layer on them, its reference in dt."""
    from moetune.engines import vllm_triton

    K, I, E = problem["hidden_size"], problem["intermediate_size"], problem["num_experts"]
    n1, dev = triton_rules.gemm1_n(problem), x.device
    # Expert by expert: an fp32 draw of all of w1 at once would need 4x the bf16 weights.
    w1 = torch.empty(E, n1, K, dtype=torch.bfloat16, device=dev)
    w2 = torch.empty(E, K, I, dtype=torch.bfloat16, device=dev)
    for e in range(E):
        w1[e] = torch.randn(n1, K, generator=g, device=dev) / math.sqrt(K)
        w2[e] = torch.randn(K, I, generator=g, device=dev) / math.sqrt(I)
    layer = vllm_triton.VllmTritonMoe(w1, w2, problem["top_k"], problem["activation"],
                                      engine=engine)
    ref = moe_reference(x, lambda e: w1[e].to(dt), lambda e: w2[e].to(dt), tw, ids,
                        activation(problem["activation"], I), dt)
    return layer, ref


def fp8_vllm_layer(problem, g, engine, dt, calibration=None):
    """vLLM's fp8 layer (VllmTritonMoe) on e4m3 weights drawn with g (w1, then w2) and quantised
    per block (fp8_block: block_shape [128, 128]) or per expert (fp8_tensor: static a1/a2 from
    an unquantised pass in dt over calibration, (x, topk_weights, topk_ids), as a calibration
    sets them). Fails with ValueError for fp8_tensor without calibration."""
    from moetune.engines import vllm_triton

    K, I, E = problem["hidden_size"], problem["intermediate_size"], problem["num_experts"]
    act, block = problem["activation"], triton_rules.quant(problem) == "fp8_block"
    draw = fp8_weights.draw_blocks if block else fp8_weights.draw_experts
    w1, s1 = draw(g, E, triton_rules.gemm1_n(problem), K)
    w2, s2 = draw(g, E, K, I)
    if block:
        scales = dict(block_shape=[triton_rules.kFp8Group] * 2)
    elif calibration is None:
        raise ValueError(f"fp8_vllm_layer: quant {triton_rules.quant(problem)!r} takes static "
                         f"input scales; pass calibration=(x, topk_weights, topk_ids)")
    else:
        x, tw, ids = calibration
        a1, a2 = static_input_scales(x, expert_weights(w1, s1, dt), tw, ids, act, I, dt)
        scales = dict(a1_scale=a1, a2_scale=a2)
    return vllm_triton.VllmTritonMoe(w1, w2, problem["top_k"], act, engine=engine,
                                     w1_scale=s1, w2_scale=s2, **scales)


def expert_weights(w, s, dt):
    """w1_of / w2_of for moe_reference: e -> expert e of e4m3 w [E, R, C] times its scales s
    (per block or per expert), dequantised in dt (exact in fp64), one expert at a time."""
    return lambda e: fp8_weights.dequant_weights(w[e:e + 1], s[e:e + 1], dt)[0]


def fp8_reference(layer, x, tw, ids, dt):
    """The reference of an fp8 layer (VllmTritonMoe) for x [M, K] bf16 in dt: its own e4m3
    weights and scales dequantised expert by expert, x quantised by the layer's quantiser, and
    vLLM's rounding points in between (fp8_inner)."""
    from moetune.engines import vllm_triton

    xd = dequant_activations(layer, *layer.quantize(x, layer.a1_scale), dt)
    inner = fp8_inner(layer, vllm_triton.ACTIVATIONS[layer.activation][1], dt)
    return moe_reference(xd, expert_weights(layer.w1, layer.w1_scale, dt),
                         expert_weights(layer.w2, layer.w2_scale, dt), tw, ids, inner, dt)


def fp8_layer(problem, x, tw, ids, g, engine, dt):
    """e4m3 weights drawn with g and quantised per block (fp8_block) or per expert
    (fp8_tensor), vLLM's fp8 layer on them (block_shape [128, 128], or static a1/a2 from a
    calibration pass over x), its reference in dt with vLLM's rounding points."""
    layer = fp8_vllm_layer(problem, g, engine, dt, calibration=(x, tw, ids))
    return layer, fp8_reference(layer, x, tw, ids, dt)
