"""moetune.fused_moe with fp8 (e4m3) weights on the CPU (cpu_tiled: fp32 math on the dequantised
values, x and h quantised as the GPU kernels quantise them): block-scaled and per-tensor, gated
and not, against the fp64 reference that repeats the quantisation (fp8_reference.py); the same
bits twice; a wrong block scale fails the same check (negative twin); M = 0."""

import os

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


SHIPPED_CPU = os.path.join(os.path.dirname(__file__), "..", "..", "tables", "cpu")


def fp8_relabelled_cpu_tables(out):
    """The shipped cpu table (E=8, K=256, I=128, bf16) in `out`, relabelled as a block-scaled
    fp8 table: its file names and manifest key carry dtype fp8_w8a8 and block_shape [128, 128]."""
    os.makedirs(out)
    for name in os.listdir(SHIPPED_CPU):
        with open(os.path.join(SHIPPED_CPU, name)) as f:
            text = f.read().replace('"dtype_tag": ""', '"dtype_tag": "fp8_w8a8"').replace(
                '"block_shape": null', '"block_shape": [128, 128]')
        fp8_name = name.replace(",family=", ",dtype=fp8_w8a8,block_shape=[128,128],family=")
        with open(os.path.join(out, fp8_name), "w") as f:
            f.write(text)
    return out


def _explain(layer, block=True, **kw):
    return moetune.explain(layer["x"], layer["w1"], layer["w2"], layer["topk_weights"],
                           layer["topk_ids"], w1_scale=layer["w1_scale"],
                           w2_scale=layer["w2_scale"],
                           block_shape=[128, 128] if block else None, **kw)


def test_explain_takes_fp8_weights_and_only_an_fp8_table_serves_them(tmp_path):
    layer = make_fp8_layer(16, 256, 128, 8, 2, block=True, seed=31, device="cpu")
    assert _explain(layer)["rule"] == "default"
    fp8_tables = fp8_relabelled_cpu_tables(str(tmp_path / "fp8"))
    info = _explain(layer, config=fp8_tables)
    assert info["rule"] == "table" and "fp8_w8a8" in info["table"], info
    # The layer runs from that table within the reference's tolerance.
    err = rel_l2(_run(layer, "silu", True, config=fp8_tables), fp8_reference(layer, block=True))
    assert err <= TOL, f"from the fp8 table: relative L2 error {err:.3g} > {TOL}"
    # The bf16 table of the same shape serves no fp8 layer, and the fp8 table no bf16 layer.
    assert _explain(layer, config=SHIPPED_CPU)["rule"] == "default"
    x = layer["x"]
    w1 = torch.randn(layer["w1"].shape, dtype=torch.bfloat16)
    w2 = torch.randn(layer["w2"].shape, dtype=torch.bfloat16)
    bf16 = moetune.explain(x, w1, w2, layer["topk_weights"], layer["topk_ids"],
                           config=fp8_tables)
    assert bf16["rule"] == "default", bf16


def test_explain_refuses_fp8_weights_without_scales_or_with_batch_invariant():
    layer = make_fp8_layer(4, 256, 128, 8, 2, block=True, seed=37, device="cpu")
    with pytest.raises(ValueError, match="w2_scale is None"):
        moetune.explain(layer["x"], layer["w1"], layer["w2"], layer["topk_weights"],
                        layer["topk_ids"], w1_scale=layer["w1_scale"], block_shape=[128, 128])
    with pytest.raises(ValueError, match="batch_invariant=True with fp8 weights"):
        _explain(layer, batch_invariant=True)
