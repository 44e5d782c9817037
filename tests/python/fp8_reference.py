"""fp8 (e4m3) MoE layers for the tests: fresh random weights whose 128x128 blocks differ in range by
orders of magnitude (so a wrong block scale shows; drawn and quantised by the package's
moetune.tuner.fp8_weights, which the triton family's testbed uses too), the quantisation the
kernels apply to their inputs, repeated exactly, and an fp64 reference on the dequantised
values."""

import torch

from moe_reference import GATED, _act
from moetune.tuner.fp8_weights import (BLOCK, FP8, FP8_MAX, blocky, dequant_weights,
                                       quant_weight_blocks, quant_weight_tensor)


def quant_groups(t):
    """Per row per 128 columns, as the kernels and the engines do: s = max(amax, 1e-10) / 448,
    q = t / s rounded to e4m3. fp32 throughout (IEEE division: the same bits as the kernel)."""
    rows, cols = t.shape
    g = t.float().reshape(rows, cols // BLOCK, BLOCK)
    s = torch.clamp(g.abs().amax(dim=-1), min=1e-10) / FP8_MAX
    q = (g / s.unsqueeze(-1)).clamp(-FP8_MAX, FP8_MAX).to(FP8)
    return q.reshape(rows, cols), s


def dequant_groups(q, s):
    rows, cols = q.shape
    return (q.double().reshape(rows, cols // BLOCK, BLOCK) * s.double().unsqueeze(-1)).reshape(
        rows, cols)


def quant_tensor(t, s):
    """One static scale: q = t / s rounded to e4m3 (saturated)."""
    return (t.float() / s).clamp(-FP8_MAX, FP8_MAX).to(FP8)


def make_fp8_layer(m, k, inter, experts, top_k, *, block, activation="silu", seed=0,
                   device="cuda", experts_hit=None):
    """x bf16 [M, K]; w1, w2 e4m3 with their scales (block: per 128x128 block; else per expert);
    top-k routing over the first `experts_hit` experts (default all: then some get no token at
    small M). Returns a dict of tensors on `device`."""
    g = torch.Generator(device="cpu").manual_seed(seed)
    n1 = 2 * inter if GATED[activation] else inter
    x = torch.randn(m, k, generator=g) * (1 + 4 * torch.rand(m, 1, generator=g))
    w1, w2 = blocky(g, experts, n1, k), blocky(g, experts, k, inter)
    quant = quant_weight_blocks if block else quant_weight_tensor
    (w1q, w1s), (w2q, w2s) = quant(w1), quant(w2)
    hit = experts if experts_hit is None else experts_hit
    logits = torch.randn(m, hit, generator=g)
    weights, ids = torch.topk(torch.softmax(logits, dim=-1), top_k, dim=-1)
    d = dict(x=x.bfloat16(), w1=w1q, w2=w2q, w1_scale=w1s.float(), w2_scale=w2s.float(),
             topk_weights=weights.float(), topk_ids=ids.int())
    return {key: v.to(device) for key, v in d.items()}


def _dequant_weights(layer):
    return (dequant_weights(layer["w1"].cpu(), layer["w1_scale"].cpu()),
            dequant_weights(layer["w2"].cpu(), layer["w2_scale"].cpu()))


def fp8_reference(layer, *, block, activation="silu", a1_scale=None, a2_scale=None):
    """fp64 on the CPU with the kernels' quantisation: x quantised (per token-group, or by
    a1_scale), GEMM1 on the dequantised values, the activation, h rounded to bf16 and quantised
    the same way (a2_scale), GEMM2, the routing weights, the sum over top-k."""
    x = layer["x"].cpu()
    ids, tw = layer["topk_ids"].long().cpu(), layer["topk_weights"].double().cpu()
    w1, w2 = _dequant_weights(layer)
    inter = w2.shape[2]
    if block:
        xq, xs = quant_groups(x)
        xd = dequant_groups(xq, xs)
    else:
        xd = quant_tensor(x, a1_scale).double() * float(a1_scale)
    y = torch.zeros(*ids.shape, x.shape[1], dtype=torch.float64)
    for e in ids.unique().tolist():
        rows, slots = (ids == e).nonzero(as_tuple=True)
        h = _act(xd[rows] @ w1[e].T, activation, inter).to(torch.bfloat16)
        if block:
            hq, hs = quant_groups(h)
            hd = dequant_groups(hq, hs)
        else:
            hd = quant_tensor(h, a2_scale).double() * float(a2_scale)
        y[rows, slots] = hd @ w2[e].T
    return (y * tw.unsqueeze(-1)).sum(dim=1)


def static_scales(layer, activation="silu"):
    """Per-tensor static input scales as a calibration would set them: amax / 448 of x and of the
    intermediate (from an unquantised fp64 pass)."""
    x = layer["x"].cpu()
    a1 = float(x.float().abs().max()) / FP8_MAX
    w1, _ = _dequant_weights(layer)
    inter = layer["w2"].shape[2]
    ids = layer["topk_ids"].long().cpu()
    amax = 0.0
    for e in ids.unique().tolist():
        rows = (ids == e).nonzero(as_tuple=True)[0]
        h = _act(x[rows].double() @ w1[e].T, activation, inter)
        amax = max(amax, float(h.abs().max()))
    return a1, max(amax, 1e-6) / FP8_MAX
