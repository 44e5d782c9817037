"""moetune.fused_moe with fp8 (e4m3) weights on CUDA: block-scaled (128x128 weights, activations
per token per 128 channels) and per-tensor, against an fp64 reference that repeats the
quantisation of the kernels' inputs and dequantises the same scales. Fresh random data whose
weight blocks differ in range by orders of magnitude; the caching allocator poisoned with NaN;
edge M; experts with no token; a wrong block scale must fail the same check (negative twin)."""

import pytest
import torch

import moetune
from fp8_reference import fp8_reference, make_fp8_layer, static_scales
from moe_reference import rel_l2

pytestmark = pytest.mark.gpu

# The kernels differ from the reference only where fp32 accumulation moves a value of h across a
# bf16 or e4m3 rounding boundary; 2% relative L2 leaves room for that and none for a wrong scale
# (a block off by its neighbour's scale is off by up to 10^4).
TOL = 2e-2


def _poison(nbytes=256 << 20):
    t = torch.full((nbytes // 2,), float("nan"), dtype=torch.bfloat16, device="cuda")
    del t


def _run(layer, activation, block, **kw):
    return moetune.fused_moe(layer["x"], layer["w1"], layer["w2"], layer["topk_weights"],
                             layer["topk_ids"], activation=activation, w1_scale=layer["w1_scale"],
                             w2_scale=layer["w2_scale"],
                             block_shape=[128, 128] if block else None, **kw)


# (M, K, I, E, top_k, activation): edge and odd M, a Qwen3-30B-A3B-like K and I, non-gated.
BLOCK_CASES = [(1, 512, 256, 16, 4, "silu"), (5, 512, 256, 16, 4, "silu"),
               (77, 2048, 768, 32, 8, "silu"), (300, 1024, 512, 16, 2, "relu2"),
               (1024, 2048, 768, 32, 8, "silu")]


@pytest.mark.parametrize("case", BLOCK_CASES, ids=[f"M{c[0]}-K{c[1]}-I{c[2]}-{c[5]}"
                                                   for c in BLOCK_CASES])
def test_block_fp8_matches_the_fp64_reference(case):
    m, k, i, e, top_k, act = case
    layer = make_fp8_layer(m, k, i, e, top_k, block=True, activation=act, seed=m)
    _poison()
    out = _run(layer, act, True)
    want = fp8_reference(layer, block=True, activation=act)
    err = rel_l2(out, want)
    assert err <= TOL, f"{case}: relative L2 error {err:.3g} > {TOL}"
    assert torch.equal(out, _run(layer, act, True)), "same inputs gave different bits"
    # Negative twin: the same check fails when a weight block takes its neighbour's scale.
    wrong = dict(layer, w1_scale=layer["w1_scale"].roll(1, dims=2).contiguous())
    assert rel_l2(_run(wrong, act, True), want) > TOL, "a wrong block scale passed the check"


def _kernel(block_m, block_n):
    return {"tile": {"block_m": block_m, "block_n": block_n, "block_k": 128, "group_m": 8},
            "pipeline": {"num_warps": block_m // 16, "num_stages": 4, "split_k": 1},
            "launch": {"schedule": "cooperative"}}


def test_block_fp8_128_row_tiles_give_the_bits_of_the_default():
    # The default rule runs block-scaled layers on 64-row tiles; 128-row tiles (two warpgroups)
    # must give the same bits: the k-blocks are promoted in the same order whatever the tile.
    layer = make_fp8_layer(300, 1024, 512, 16, 4, block=True, seed=11)
    want = _run(layer, "silu", True)
    assert rel_l2(want, fp8_reference(layer, block=True)) <= TOL
    for cfg in ({"gemm1": _kernel(128, 64), "gemm2": _kernel(128, 128)},
                {"gemm1": _kernel(64, 32), "gemm2": _kernel(64, 64)}):
        assert torch.equal(_run(layer, "silu", True, config=cfg), want), cfg


def _ws(block_m, block_n, warps=8, stages=4):
    k = _kernel(block_m, block_n)
    k["pipeline"].update(num_warps=warps, num_stages=stages)
    k["launch"]["schedule"] = "tma_ws"
    return k


# tma_ws (TMA producer warpgroup, persistent) against the cp.async loop at the same wgmma width
# per warpgroup: block_m 128 (two warpgroups of 64 rows), and block_m 64 with two warpgroups
# splitting the columns (each half the tile's width). Per mode: (tma_ws config, cp.async twin).
WS_PAIRS = {
    True: [({"gemm1": _ws(128, 64), "gemm2": _ws(128, 128, stages=6)},
            {"gemm1": _kernel(128, 64), "gemm2": _kernel(128, 128)}),
           ({"gemm1": _ws(64, 64), "gemm2": _ws(64, 128)},
            {"gemm1": _kernel(64, 32), "gemm2": _kernel(64, 64)})],
    False: [({"gemm1": _ws(128, 128), "gemm2": _ws(128, 256)},
             {"gemm1": _kernel(128, 128), "gemm2": _kernel(128, 256)}),
            ({"gemm1": _ws(64, 128), "gemm2": _ws(64, 256)},
             {"gemm1": _kernel(64, 64), "gemm2": _kernel(64, 128)})],
}
# Block-scaled tma_ws at wgmma width 256 (gated GEMM1 128 + 128 columns, GEMM2 two weight blocks):
# two parts of 128 columns per k-tile, each with its own weight scale.
WIDE_BLOCK = {"gemm1": _ws(128, 128), "gemm2": _ws(128, 256)}


@pytest.mark.parametrize("case", [(300, 1024, 512, 16, 2, "silu"), (77, 2048, 768, 32, 8, "silu"),
                                  (129, 1024, 512, 16, 2, "relu2")],
                         ids=["M300-silu", "M77-K2048-silu", "M129-relu2"])
def test_block_fp8_tma_ws_at_width_256_matches_the_reference(case):
    m, k, i, e, top_k, act = case
    layer = make_fp8_layer(m, k, i, e, top_k, block=True, activation=act, seed=700 + m)
    want = fp8_reference(layer, block=True, activation=act)
    cfg = WIDE_BLOCK if act == "silu" else {"gemm1": _ws(128, 256), "gemm2": _ws(128, 256)}
    _poison()
    out = _run(layer, act, True, config=cfg)
    err = rel_l2(out, want)
    assert err <= TOL, f"{case}: relative L2 error {err:.3g} > {TOL}"
    assert torch.equal(out, _run(layer, act, True, config=cfg)), "different bits"
    # Negative twins: the second part's weight block takes the first's scale (GEMM2), and the
    # up half's block the gate's (GEMM1, gated).
    w2s = layer["w2_scale"].clone()
    w2s[:, 1::2] = w2s[:, 0::2]
    assert rel_l2(_run(dict(layer, w2_scale=w2s), act, True, config=cfg), want) > TOL
    if act == "silu":
        w1s = layer["w1_scale"].clone()
        half = w1s.shape[1] // 2
        w1s[:, half:] = w1s[:, :half]
        assert rel_l2(_run(dict(layer, w1_scale=w1s), act, True, config=cfg), want) > TOL


# GEMM1 that stores h quantised itself (a warpgroup's columns are whole 128-column groups of h):
# one group a warpgroup at 128 rows, and at 64 rows with two warpgroups splitting 256 columns
# (I = 384: the second warpgroup of the last tile lies past I).
FUSED_H = [({"gemm1": _ws(128, 128), "gemm2": _ws(128, 128, stages=6)},
            {"gemm1": _ws(128, 64), "gemm2": _ws(128, 128, stages=6)}),
           ({"gemm1": _ws(64, 256, stages=3), "gemm2": _ws(64, 128)},
            {"gemm1": _ws(64, 64), "gemm2": _ws(64, 128)})]


@pytest.mark.parametrize("case", [(300, 1024, 512, 16, 2), (150, 1024, 384, 16, 4)],
                         ids=["M300-I512", "M150-I384"])
@pytest.mark.parametrize("pair", [0, 1], ids=["128rows", "64rows-split"])
@pytest.mark.parametrize("act", ["silu", "relu2"])
def test_block_fp8_gemm1_that_stores_hq_gives_the_bits_of_the_quant_pass(case, pair, act):
    # The fused epilogue quantises h by the quant kernel's rule, and the two-part wgmma promotes
    # each k-block as the one-part one does, so the layer's bits are those of GEMM1 storing bf16
    # h and the quant pass over it (relu2, not gated: the same block_n is one part, half the
    # width).
    m, k, i, e, top_k = case
    layer = make_fp8_layer(m, k, i, e, top_k, block=True, activation=act, seed=900 + m)
    fused, twin = FUSED_H[pair]
    _poison()
    out = _run(layer, act, True, config=fused)
    assert rel_l2(out, fp8_reference(layer, block=True, activation=act)) <= TOL
    assert torch.equal(out, _run(layer, act, True, config=twin)), "fused h: different bits"


WS_CASES = [(1, 512, 256, 16, 4, "silu"), (77, 2048, 768, 32, 8, "silu"),
            (300, 1024, 512, 16, 2, "relu2"), (1500, 1024, 384, 8, 2, "silu")]


@pytest.mark.parametrize("block", [True, False], ids=["block", "tensor"])
@pytest.mark.parametrize("case", WS_CASES, ids=[f"M{c[0]}-K{c[1]}-I{c[2]}-{c[5]}"
                                                for c in WS_CASES])
def test_tma_ws_fp8_matches_the_reference_and_gives_the_bits_of_the_cp_async_loop(case, block):
    m, k, i, e, top_k, act = case
    layer = make_fp8_layer(m, k, i, e, top_k, block=block, activation=act, seed=900 + m)
    kw = {}
    if not block:
        a1, a2 = static_scales(layer, act)
        kw = dict(a1_scale=torch.tensor([a1], device="cuda"),
                  a2_scale=torch.tensor([a2], device="cuda"))
    want = fp8_reference(layer, block=block, activation=act, **(
        {} if block else dict(a1_scale=a1, a2_scale=a2)))
    for ws, twin in WS_PAIRS[block]:
        _poison()
        out = _run(layer, act, block, config=ws, **kw)
        err = rel_l2(out, want)
        assert err <= TOL, f"{case} {ws}: relative L2 error {err:.3g} > {TOL}"
        assert torch.equal(out, _run(layer, act, block, config=ws, **kw)), "different bits"
        assert torch.equal(out, _run(layer, act, block, config=twin, **kw)), (ws, twin)
        wrong = dict(layer, w2_scale=layer["w2_scale"].flip(0).contiguous())
        if e > 1 and m > 1:  # negative twin: the experts' scales swapped
            assert rel_l2(_run(wrong, act, block, config=ws, **kw), want) > TOL, ws


def test_block_fp8_with_experts_that_get_no_token_and_an_empty_batch():
    layer = make_fp8_layer(64, 1024, 512, 32, 4, block=True, seed=7, experts_hit=8)
    out = _run(layer, "silu", True)
    assert rel_l2(out, fp8_reference(layer, block=True)) <= TOL
    empty = make_fp8_layer(0, 1024, 512, 32, 4, block=True, seed=8)
    assert _run(empty, "silu", True).shape == (0, 1024)


@pytest.mark.parametrize("m", [1, 33, 512])
def test_per_tensor_fp8_matches_the_fp64_reference(m):
    layer = make_fp8_layer(m, 1024, 384, 8, 2, block=False, seed=100 + m)
    a1, a2 = static_scales(layer)
    scales = dict(a1_scale=torch.tensor([a1], device="cuda"),
                  a2_scale=torch.tensor([a2], device="cuda"))
    _poison()
    out = _run(layer, "silu", False, **scales)
    want = fp8_reference(layer, block=False, a1_scale=a1, a2_scale=a2)
    err = rel_l2(out, want)
    assert err <= TOL, f"M={m}: relative L2 error {err:.3g} > {TOL}"
    assert torch.equal(out, _run(layer, "silu", False, **scales)), "different bits"
    wrong = dict(layer, w1_scale=layer["w1_scale"].flip(0).contiguous())
    assert rel_l2(_run(wrong, "silu", False, **scales), want) > TOL, "a wrong scale passed"


def test_fp8_inside_a_cuda_graph():
    layer = make_fp8_layer(16, 512, 256, 16, 4, block=True, seed=3)
    want = _run(layer, "silu", True)
    torch.cuda.synchronize()
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        out = _run(layer, "silu", True)
    graph.replay()
    torch.cuda.synchronize()
    assert torch.equal(out, want)


def test_bad_scales_are_value_errors_naming_the_argument():
    layer = make_fp8_layer(8, 512, 256, 16, 4, block=True, seed=4)
    with pytest.raises(ValueError, match=r"w1_scale has shape \[16, 2, 4\]; expected \[16, 4, 4\]"):
        _run(dict(layer, w1_scale=layer["w1_scale"][:, :2].contiguous()), "silu", True)
    with pytest.raises(ValueError, match="a1_scale/a2_scale given with block_shape"):
        _run(layer, "silu", True, a1_scale=torch.ones(1, device="cuda"),
             a2_scale=torch.ones(1, device="cuda"))
    per_expert = dict(layer, w1_scale=layer["w1_scale"][:, 0, 0].contiguous(),
                      w2_scale=layer["w2_scale"][:, 0, 0].contiguous())
    with pytest.raises(ValueError, match="a1_scale is None"):
        _run(per_expert, "silu", False)


def test_engine_drop_ins_serve_fp8_as_the_op_does():
    from collections import namedtuple
    from types import SimpleNamespace

    import moetune.integrations.sglang as mt_sgl
    import moetune.integrations.vllm as mt_vllm
    layer = make_fp8_layer(9, 512, 256, 16, 4, block=True, seed=12)
    want = _run(layer, "silu", True)
    args = (layer["x"], layer["w1"], layer["w2"])
    qc = SimpleNamespace(use_fp8_w8a8=True, w1_scale=layer["w1_scale"],
                         w2_scale=layer["w2_scale"], a1_scale=None, a2_scale=None,
                         block_shape=[128, 128])
    got = mt_vllm.fused_experts(*args, layer["topk_weights"], layer["topk_ids"], quant_config=qc)
    assert torch.equal(got, want)
    topk = namedtuple("StandardTopKOutput", ["topk_weights", "topk_ids", "router_logits"])
    got = mt_sgl.fused_moe(*args, topk(layer["topk_weights"], layer["topk_ids"], None),
                           use_fp8_w8a8=True, w1_scale=layer["w1_scale"],
                           w2_scale=layer["w2_scale"], block_shape=[128, 128])
    assert torch.equal(got, want)


def _decode(block_m, bn1=4, bk=1024, warps2=8, rows=1):
    def k(block_n, warps):
        return {"tile": {"block_m": block_m, "block_n": block_n, "block_k": bk, "group_m": 1},
                "pipeline": {"num_warps": warps, "num_stages": rows, "split_k": 1},
                "launch": {"schedule": "auto", "swap_ab": True}}
    return {"gemm1": k(bn1, 4), "gemm2": k(4, warps2)}


# The fp8 decode kernels (launch.swap_ab): x and h quantised inside them by the quant kernel's
# rule. Cases: one token; several pairs of one expert in one pass and over passes (block_m 1 and
# 2, with 9 tokens among 4 experts); a non-gated activation; odd block_n (a partial column
# chunk), one 16-byte vector a step and two rows a warp.
DECODE_CASES = [(1, 512, 256, 16, 4, "silu", _decode(1)),
                (3, 1024, 384, 16, 4, "silu", _decode(4, bn1=8, bk=512, warps2=4)),
                (9, 512, 256, 4, 2, "silu", _decode(2, rows=2)),
                (9, 512, 256, 4, 2, "silu", _decode(1, bn1=3)),
                (4, 1024, 512, 64, 4, "relu2", _decode(4, bk=2048))]


@pytest.mark.parametrize("block", [True, False], ids=["block", "tensor"])
@pytest.mark.parametrize("case", DECODE_CASES, ids=[f"M{c[0]}-K{c[1]}-I{c[2]}-E{c[3]}-{c[5]}-"
                                                    f"{i}" for i, c in enumerate(DECODE_CASES)])
def test_fp8_decode_kernels_match_the_fp64_reference(case, block):
    m, k, i, e, top_k, act, cfg = case
    layer = make_fp8_layer(m, k, i, e, top_k, block=block, activation=act, seed=500 + m)
    kw, ref_kw = {}, {}
    if not block:
        a1, a2 = static_scales(layer, act)
        kw = dict(a1_scale=torch.tensor([a1], device="cuda"),
                  a2_scale=torch.tensor([a2], device="cuda"))
        ref_kw = dict(a1_scale=a1, a2_scale=a2)
    want = fp8_reference(layer, block=block, activation=act, **ref_kw)
    _poison()
    out = _run(layer, act, block, config=cfg, **kw)
    err = rel_l2(out, want)
    assert err <= TOL, f"{case}: relative L2 error {err:.3g} > {TOL}"
    assert torch.equal(out, _run(layer, act, block, config=cfg, **kw)), "different bits"
    # Negative twins: a weight block with its neighbour's scale; the experts' scales swapped.
    wrong = (dict(layer, w2_scale=layer["w2_scale"].roll(1, dims=2).contiguous()) if block else
             dict(layer, w2_scale=layer["w2_scale"].flip(0).contiguous()))
    assert rel_l2(_run(wrong, act, block, config=cfg, **kw), want) > TOL, "a wrong scale passed"

