"""vLLM drop-in: `fused_experts` with the signature of vLLM 0.33's
`vllm.model_executor.layers.fused_moe.fused_experts` (tests/python/test_engine_signatures.py
compares them), served by moetune.fused_moe.

Served: bf16 experts, all local (global_num_experts -1 or E, no expert_map), activation "silu"
or "swigluoai" (gpt-oss; and the non-gated "*_no_mul" forms), router weights applied after GEMM2,
quant_config None, unquantised or fp8 (use_fp8_w8a8: block_shape [128, 128] with per-token-group
activations, or per-tensor with static a1/a2 scales); its w1_bias / w2_bias are served, as gpt-oss
uses them. Anything else raises ValueError naming the argument.

Routing vLLM to it (the module-level function, as model code and tests import it):

    import moetune.integrations.vllm as mt_vllm
    mt_vllm.install()

What has been run: the signature check against the released wheel, and this function on CPU and
GPU tensors in moetune's tests. Not run: a vLLM server with it installed (vLLM cannot be
installed where moetune is tested), and vLLM's modular-kernel path (TritonExperts), which
`install` does not touch.
"""

import torch

import moetune

from ._engine_args import activation_name, refuse_if_set

_WHERE = "moetune.integrations.vllm.fused_experts"


def _check_quant(quant_config):
    if quant_config is None:
        return
    for name in ("use_int8_w8a8", "use_int8_w8a16", "use_int4_w4a16", "ocp_mx_scheme",
                 "per_act_token_quant", "per_out_ch_quant"):
        refuse_if_set(_WHERE, **{f"quant_config.{name}": getattr(quant_config, name, None)})


def _fp8_args(quant_config, w1):
    """fused_moe's fp8 keywords from vLLM's quant_config (use_fp8_w8a8), else {}."""
    if quant_config is None or not getattr(quant_config, "use_fp8_w8a8", False):
        return {}
    if w1.dtype != torch.float8_e4m3fn:
        raise ValueError(f"{_WHERE}: quant_config.use_fp8_w8a8=True but w1 has dtype {w1.dtype}; "
                         "expected torch.float8_e4m3fn weights with their scales")
    return {name: getattr(quant_config, name, None)
            for name in ("w1_scale", "w2_scale", "a1_scale", "a2_scale", "block_shape")}


def fused_experts(hidden_states, w1, w2, topk_weights, topk_ids, activation="silu",
                  apply_router_weight_on_input=False, global_num_experts=-1, expert_map=None,
                  quant_config=None):
    act = activation_name(activation, _WHERE)
    refuse_if_set(_WHERE, apply_router_weight_on_input=apply_router_weight_on_input,
                  expert_map=expert_map)
    if global_num_experts not in (-1, w1.shape[0]):
        raise ValueError(f"{_WHERE}: global_num_experts={global_num_experts} but w1 holds "
                         f"{w1.shape[0]} experts; expert parallelism is not served here")
    _check_quant(quant_config)
    b1 = getattr(quant_config, "w1_bias", None)
    b2 = getattr(quant_config, "w2_bias", None)
    return moetune.fused_moe(hidden_states, w1, w2, topk_weights, topk_ids, activation=act,
                             w1_bias=b1, w2_bias=b2, **_fp8_args(quant_config, w1))


def install():
    """Points vLLM's module-level fused_experts at this one (returns the replaced function)."""
    from vllm.model_executor.layers import fused_moe as pkg
    from vllm.model_executor.layers.fused_moe import fused_moe as mod

    previous = mod.fused_experts
    mod.fused_experts = fused_experts
    pkg.fused_experts = fused_experts
    return previous
