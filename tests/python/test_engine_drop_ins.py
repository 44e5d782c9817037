"""The engine drop-ins compute what moetune.fused_moe computes, and refuse what they do not serve
with a ValueError naming the argument."""

import enum
from collections import namedtuple
from types import SimpleNamespace

import pytest
import torch

import moetune
from moetune.integrations import sglang as mt_sgl
from moetune.integrations import vllm as mt_vllm
from moe_reference import make_biases, make_layer


class MoEActivation(enum.Enum):  # the shape of vLLM's enum
    SILU = "silu"
    SWIGLUOAI = "swigluoai"


def test_vllm_fused_experts_is_fused_moe():
    x, w1, w2, tw, ids = make_layer(9, 64, 32, 8, 2, seed=29)
    want = moetune.fused_moe(x, w1, w2, tw, ids)
    assert torch.equal(mt_vllm.fused_experts(x, w1, w2, tw, ids), want)
    assert torch.equal(mt_vllm.fused_experts(x, w1, w2, tw, ids, MoEActivation.SILU,
                                             global_num_experts=8), want)


def test_vllm_serves_gpt_oss_swigluoai_with_biases():
    x, w1, w2, tw, ids = make_layer(9, 64, 32, 8, 2, activation="swigluoai", seed=29)
    b1, b2 = make_biases(8, 64, 64, seed=29)
    want = moetune.fused_moe(x, w1, w2, tw, ids, activation="swigluoai", w1_bias=b1, w2_bias=b2)
    got = mt_vllm.fused_experts(x, w1, w2, tw, ids, MoEActivation.SWIGLUOAI,
                                quant_config=SimpleNamespace(w1_bias=b1, w2_bias=b2))
    assert torch.equal(got, want)


@pytest.mark.parametrize("kwargs,named", [
    ({"activation": "gelu"}, "activation 'gelu'"),
    ({"apply_router_weight_on_input": True}, "apply_router_weight_on_input"),
    ({"expert_map": torch.arange(8)}, "expert_map"),
    ({"global_num_experts": 16}, "global_num_experts=16"),
    ({"quant_config": SimpleNamespace(use_fp8_w8a8=True)}, "use_fp8_w8a8=True but w1 has dtype"),
    ({"quant_config": SimpleNamespace(use_int8_w8a8=True)}, "quant_config.use_int8_w8a8"),
])
def test_vllm_refuses_what_it_does_not_serve(kwargs, named):
    x, w1, w2, tw, ids = make_layer(3, 64, 32, 8, 2, seed=31)
    with pytest.raises(ValueError, match=named):
        mt_vllm.fused_experts(x, w1, w2, tw, ids, **kwargs)


TopK = namedtuple("StandardTopKOutput", ["topk_weights", "topk_ids", "router_logits"])


def test_sglang_fused_moe_is_fused_moe_and_honours_inplace():
    x, w1, w2, tw, ids = make_layer(9, 64, 32, 8, 2, seed=37)
    want = moetune.fused_moe(x, w1, w2, tw, ids)
    assert torch.equal(mt_sgl.fused_moe(x, w1, w2, TopK(tw, ids, None)), want)
    cfg = SimpleNamespace(activation="silu", is_gated=True, inplace=True, no_combine=False,
                          apply_router_weight_on_input=False, routed_scaling_factor=2.0,
                          num_experts=8, num_local_experts=8)
    y = x.clone()
    out = mt_sgl.fused_moe(y, w1, w2, TopK(tw, ids, None), cfg)
    assert out is y and torch.equal(y, (want * 2.0).to(y.dtype))


def test_sglang_serves_gpt_oss_with_split_gate_up_and_biases():
    x, w1, w2, tw, ids = make_layer(9, 64, 32, 8, 2, activation="swigluoai", seed=47)
    b1, b2 = make_biases(8, 64, 64, seed=47)
    want = moetune.fused_moe(x, w1, w2, tw, ids, activation="swigluoai", w1_bias=b1, w2_bias=b2)
    cfg = SimpleNamespace(activation="silu", is_gated=True, gemm1_alpha=1.702,
                          gemm1_clamp_limit=7.0, gate_up_interleaved=False)
    assert torch.equal(mt_sgl.fused_moe(x, w1, w2, TopK(tw, ids, None), cfg, b1, b2), want)
    with pytest.raises(ValueError, match="gate_up_interleaved=True; moetune reads w1"):
        mt_sgl.fused_moe(x, w1, w2, TopK(tw, ids, None),
                         SimpleNamespace(gemm1_alpha=1.702, gemm1_clamp_limit=7.0), b1, b2)
    with pytest.raises(ValueError, match="gemm1_alpha=1.5"):
        mt_sgl.fused_moe(x, w1, w2, TopK(tw, ids, None),
                         SimpleNamespace(gemm1_alpha=1.5, gemm1_clamp_limit=7.0,
                                         gate_up_interleaved=False), b1, b2)


def test_sglang_refuses_quantisation_and_expert_parallelism():
    x, w1, w2, tw, ids = make_layer(3, 64, 32, 8, 2, seed=41)
    with pytest.raises(ValueError, match="use_fp8_w8a8=True"):
        mt_sgl.fused_moe(x, w1, w2, TopK(tw, ids, None), use_fp8_w8a8=True)
    with pytest.raises(ValueError, match="use_int8_w8a8=True"):
        mt_sgl.fused_moe(x, w1, w2, TopK(tw, ids, None), use_int8_w8a8=True)
    with pytest.raises(ValueError, match="w1_scale"):  # a scale without use_fp8_w8a8
        mt_sgl.fused_moe(x, w1, w2, TopK(tw, ids, None), w1_scale=torch.ones(8))
    cfg = SimpleNamespace(num_experts=16, num_local_experts=8)
    with pytest.raises(ValueError, match="8 of 16 experts local"):
        mt_sgl.fused_moe(x, w1, w2, TopK(tw, ids, None), cfg)
