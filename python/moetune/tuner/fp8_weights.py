"""fp8 (e4m3) expert weights drawn for checks: random weights whose ranges differ by orders of
magnitude where a scale applies (so a weight read with the wrong scale shows), quantised as fp8
checkpoints store them (one fp32 scale amax / 448 per 128 x 128 block, or per expert), and their
exact dequantisation.

Shared by the triton family's testbed (triton_layers.fp8_layer, for problems with quant
fp8_block or fp8_tensor) and the tests' fp8 layers (tests/python/fp8_reference.py).
"""

import math

import torch

FP8 = torch.float8_e4m3fn
FP8_MAX = 448.0  # torch.finfo(torch.float8_e4m3fn).max
BLOCK = 128  # fp8_block's weight block, 128 x 128


def blocky(g, experts, rows, cols):
    """Random fp32 [E, rows, cols] on g's device whose 128x128 blocks span 10^-3 .. 10^1 in
    scale (then / sqrt(cols)): a block read with its neighbour's scale is off by up to 10^4."""
    w = torch.randn(experts, rows, cols, generator=g, device=g.device)
    mag = 10.0 ** (torch.rand(experts, math.ceil(rows / BLOCK), math.ceil(cols / BLOCK),
                              generator=g, device=g.device) * 4 - 3)
    mag = mag.repeat_interleave(BLOCK, 1)[:, :rows].repeat_interleave(BLOCK, 2)[:, :, :cols]
    return w * mag / math.sqrt(cols)


def ranged(g, experts, rows, cols):
    """Random fp32 [E, rows, cols] on g's device, each expert at its own scale 10^-1 .. 10^1
    (then / sqrt(cols)): an expert read with another's per-tensor scale is off by up to 100x."""
    mag = 10.0 ** (torch.rand(experts, 1, 1, generator=g, device=g.device) * 2 - 1)
    return torch.randn(experts, rows, cols, generator=g, device=g.device) * mag / math.sqrt(cols)


def quant_weight_blocks(w):
    """[E, R, C] (R, C multiples of 128) -> e4m3 weights and fp32 scales [E, R/128, C/128]
    (amax / 448 per block)."""
    e, r, c = w.shape
    b = w.reshape(e, r // BLOCK, BLOCK, c // BLOCK, BLOCK)
    s = b.abs().amax(dim=(2, 4)) / FP8_MAX
    q = (b / s[:, :, None, :, None]).clamp(-FP8_MAX, FP8_MAX).to(FP8)
    return q.reshape(e, r, c), s.float()


def quant_weight_tensor(w):
    """[E, R, C] -> e4m3 weights and fp32 scales [E] (amax / 448 per expert)."""
    s = w.abs().amax(dim=(1, 2)) / FP8_MAX
    return (w / s[:, None, None]).to(FP8), s.float()


def dequant_weights(q, s, dtype=torch.float64):
    """q e4m3 [E, R, C] times its scales, in dtype: per block for s [E, R/128, C/128], per expert
    for s [E]. Exact in fp64 (an e4m3 value times an fp32 scale)."""
    if s.dim() == 1:
        return q.to(dtype) * s.to(dtype)[:, None, None]
    e, r, c = q.shape
    b = q.to(dtype).reshape(e, r // BLOCK, BLOCK, c // BLOCK, BLOCK)
    return (b * s.to(dtype)[:, :, None, :, None]).reshape(e, r, c)


def draw_blocks(g, experts, rows, cols):
    """fp8_block weights: e4m3 [E, rows, cols] with blocks at 10^-3 .. 10^1 (blocky) and their
    scales [E, rows/128, cols/128], drawn and quantised one expert at a time."""
    return _draw(g, experts, rows, cols, blocky, quant_weight_blocks)


def draw_experts(g, experts, rows, cols):
    """fp8_tensor weights: e4m3 [E, rows, cols] with experts at 10^-1 .. 10^1 (ranged) and their
    scales [E], drawn and quantised one expert at a time."""
    return _draw(g, experts, rows, cols, ranged, quant_weight_tensor)


def _draw(g, experts, rows, cols, draw, quantize):
    # One expert at a time: an fp32 draw of every expert at once would need 4x the e4m3 weights.
    q = torch.empty(experts, rows, cols, dtype=FP8, device=g.device)
    scales = []
    for e in range(experts):
        qe, se = quantize(draw(g, 1, rows, cols))
        q[e] = qe[0]
        scales.append(se)
    return q, torch.cat(scales)
