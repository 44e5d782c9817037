"""fp8 (e4m3) expert weights drawn for checks: random weights whose ranges differ by orders of
magnitude where a scale applies (so a weight read with the wrong scale shows), quantised as fp8
checkpoints store them (one fp32 scale amax / 448 per 128 x 128 block, or per expert), and their
exact dequantisation.

Used by the tests' fp8 layers (tests/python/fp8_reference.py); in the package so that the
package's own checks can draw the same weights.
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

