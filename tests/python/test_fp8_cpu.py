"""moetune.fused_moe with fp8 (e4m3) weights on the CPU (cpu_tiled: fp32 math on the dequantised
values, x and h quantised as the GPU kernels quantise them): block-scaled and per-tensor, gated
and not, against the fp64 reference that repeats the quantisation (fp8_reference.py); the same
bits twice; a wrong block scale fails the same check (negative twin); M = 0."""

import pytest
import torch

import moetune
from fp8_reference import fp8_reference, make_fp8_layer, static_scales
from moe_reference import rel_l2

# The same quantisation on both sides: only fp32 against fp64 sums (and the rare value of h that
# they round to the other bf16 or e4m3 neighbour) remain.
TOL = 1e-2


def _run(layer, activation, block, **kw):
    return moetune.fused_moe(layer["x"], layer["w1"], layer["w2"], layer["topk_weights"],
                             layer["topk_ids"], activation=activation, w1_scale=layer["w1_scale"],
                             w2_scale=layer["w2_scale"],
                             block_shape=[128, 128] if block else None, **kw)


CASES = [(1, 256, 128, 8, 2, "silu"), (37, 512, 256, 16, 4, "silu"), (64, 256, 256, 8, 3, "relu2")]


@pytest.mark.parametrize("block", [True, False], ids=["block", "tensor"])
@pytest.mark.parametrize("case", CASES, ids=[f"M{c[0]}-K{c[1]}-I{c[2]}-{c[5]}" for c in CASES])
def test_fp8_on_the_cpu_matches_the_fp64_reference(case, block):
    m, k, i, e, top_k, act = case
    layer = make_fp8_layer(m, k, i, e, top_k, block=block, activation=act, seed=200 + m,
                           device="cpu")
    kw, ref_kw = {}, {}
    if not block:
        a1, a2 = static_scales(layer, act)
        kw = dict(a1_scale=torch.tensor([a1]), a2_scale=torch.tensor([a2]))
        ref_kw = dict(a1_scale=a1, a2_scale=a2)
    want = fp8_reference(layer, block=block, activation=act, **ref_kw)
    out = _run(layer, act, block, **kw)
    err = rel_l2(out, want)
    assert err <= TOL, f"{case}: relative L2 error {err:.3g} > {TOL}"
    assert torch.equal(out, _run(layer, act, block, **kw)), "same inputs gave different bits"
    if block:  # negative twin: a weight block takes its neighbour's scale
        wrong = dict(layer, w1_scale=layer["w1_scale"].roll(1, dims=2).contiguous())
        assert rel_l2(_run(wrong, act, block, **kw), want) > TOL, "a wrong block scale passed"


def test_fp8_on_the_cpu_takes_an_empty_batch():
    layer = make_fp8_layer(0, 256, 128, 8, 2, block=True, seed=3, device="cpu")
    assert _run(layer, "silu", True).shape == (0, 256)
