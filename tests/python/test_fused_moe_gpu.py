"""moetune.fused_moe on CUDA tensors (sm_90a kernels) against the fp64 reference, under CUDA graph
capture and replay, torch.compile(fullgraph=True), inference mode and a non-default stream.
Every test here is marked gpu: it skips only when torch sees no CUDA device."""

import pytest
import torch

import moetune
from moe_reference import check_close, make_biases, make_layer, reference

pytestmark = pytest.mark.gpu

# (M, K, I, E, top_k): edge M, odd sizes the kernels accept, and a Qwen3-30B-A3B-like layer.
SHAPES = [(1, 256, 128, 8, 2), (7, 512, 256, 16, 4), (33, 256, 384, 8, 2),
          (130, 2048, 768, 128, 8), (1000, 1024, 512, 32, 4)]


def _poison_caching_allocator(nbytes=256 << 20):
    # Fill free blocks of torch's caching allocator with NaN, so an output or workspace element
    # the kernels fail to write shows up as NaN rather than a stale right answer.
    t = torch.full((nbytes // 2,), float("nan"), dtype=torch.bfloat16, device="cuda")
    del t


@pytest.mark.parametrize("shape", SHAPES, ids=[f"M{s[0]}-K{s[1]}-I{s[2]}-E{s[3]}" for s in SHAPES])
def test_matches_fp64_reference_with_poisoned_memory(shape):
    m, k, i, e, top_k = shape
    x, w1, w2, tw, ids = make_layer(m, k, i, e, top_k, device="cuda", seed=m)
    _poison_caching_allocator()
    out = moetune.fused_moe(x, w1, w2, tw, ids)
    check_close(out, reference(x, w1, w2, tw, ids), torch.bfloat16, f"shape {shape}")
    again = moetune.fused_moe(x, w1, w2, tw, ids)
    assert torch.equal(out, again), "same inputs gave different bits"


# gpt-oss-like (K = I = 2880, top-4) and a smaller silu / gelu layer, at M that reach the decode,
# swap-AB, warp-specialised and mma.sync kernels through the default rule.
BIASED = [("swigluoai", 2880, 2880, 32, 4), ("silu", 1024, 512, 32, 4), ("gelu", 1024, 512, 32, 4)]


@pytest.mark.parametrize("m", [1, 5, 64, 300, 2048])
@pytest.mark.parametrize("layer", BIASED, ids=[b[0] for b in BIASED])
def test_biases_and_swigluoai_match_fp64_reference(layer, m):
    act, k, i, e, top_k = layer
    if k * i * m > 1024 * 512 * 2048:
        pytest.skip("the fp64 reference would take minutes on the host")
    x, w1, w2, tw, ids = make_layer(m, k, i, e, top_k, activation=act, device="cuda", seed=m)
    b1, b2 = make_biases(e, w1.shape[1], k, device="cuda", seed=m)
    _poison_caching_allocator()
    out = moetune.fused_moe(x, w1, w2, tw, ids, activation=act, w1_bias=b1, w2_bias=b2)
    want = reference(x, w1, w2, tw, ids, act, b1, b2)
    how = moetune.explain(x, w1, w2, tw, ids, activation=act, w1_bias=b1, w2_bias=b2)
    check_close(out, want, torch.bfloat16, f"{act} M={m} biased, config {how['config']}")
    unbiased = moetune.fused_moe(x, w1, w2, tw, ids, activation=act)
    check_close(unbiased, reference(x, w1, w2, tw, ids, act), torch.bfloat16, "unbiased twin")
    assert not torch.equal(out, unbiased)
    assert torch.equal(out, moetune.fused_moe(x, w1, w2, tw, ids, activation=act, w1_bias=b1,
                                              w2_bias=b2)), "same inputs gave different bits"


def test_int64_ids_bf16_weights_and_inplace():
    x, w1, w2, tw, ids = make_layer(17, 512, 256, 16, 4, device="cuda", seed=3)
    want = moetune.fused_moe(x, w1, w2, tw, ids)
    assert torch.equal(moetune.fused_moe(x, w1, w2, tw, ids.long()), want)
    y = x.clone()
    moetune.fused_moe(y, w1, w2, tw, ids, inplace=True)
    assert torch.equal(y, want)
    bf = moetune.fused_moe(x, w1, w2, tw.bfloat16(), ids)
    check_close(bf, reference(x, w1, w2, tw.bfloat16(), ids), torch.bfloat16, "bf16 weights")


@pytest.mark.parametrize("m", [1, 8, 64, 256])
def test_cuda_graph_replay_with_new_inputs_gives_new_correct_outputs(m):
    x, w1, w2, tw, ids = make_layer(m, 1024, 512, 32, 4, device="cuda", seed=100 + m)
    static = [t.clone() for t in (x, tw, ids)]
    moetune.fused_moe(static[0], w1, w2, static[1], static[2])  # warm-up: loads the kernels
    torch.cuda.synchronize()
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        out = moetune.fused_moe(static[0], w1, w2, static[1], static[2])
    for seed in (1, 2):
        nx, _, _, ntw, nids = make_layer(m, 1024, 512, 32, 4, device="cuda", seed=seed * 7 + m)
        for dst, src in zip(static, (nx, ntw, nids)):
            dst.copy_(src)
        graph.replay()
        torch.cuda.synchronize()
        check_close(out, reference(nx, w1, w2, ntw, nids), torch.bfloat16, f"replay {seed}")
        assert torch.equal(out, moetune.fused_moe(nx, w1, w2, ntw, nids))


def test_compiles_fullgraph_with_inductor():
    x, w1, w2, tw, ids = make_layer(48, 1024, 512, 32, 4, device="cuda", seed=5)

    def block(x, w1, w2, tw, ids):
        return moetune.fused_moe(torch.nn.functional.rms_norm(x, (x.shape[-1],)), w1, w2, tw,
                                 ids) + x

    compiled = torch.compile(block, fullgraph=True)
    with torch.inference_mode():
        got = compiled(x, w1, w2, tw, ids)
        want = block(x, w1, w2, tw, ids)
    assert torch.equal(got, want)


def test_non_default_stream_and_inference_mode():
    x, w1, w2, tw, ids = make_layer(64, 1024, 512, 32, 4, device="cuda", seed=9)
    want = moetune.fused_moe(x, w1, w2, tw, ids)
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side), torch.inference_mode():
        got = moetune.fused_moe(x, w1, w2, tw, ids)
    torch.cuda.current_stream().wait_stream(side)
    torch.cuda.synchronize()
    assert torch.equal(got, want)


def test_explain_names_the_rule_and_config():
    x, w1, w2, tw, ids = make_layer(16, 2048, 768, 128, 8, device="cuda", seed=11)
    info = moetune.explain(x, w1, w2, tw, ids)
    assert info["rule"] in ("table", "default", "cache") and "M=16" in info["explain"]
    assert info["config"]


def test_refused_shape_is_a_value_error():
    x, w1, w2, tw, ids = make_layer(4, 100, 64, 8, 2, device="cuda", seed=13)  # K=100: not /8
    with pytest.raises(ValueError, match="moetune.fused_moe"):
        moetune.fused_moe(x, w1, w2, tw, ids)
