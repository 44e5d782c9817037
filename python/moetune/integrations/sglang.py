"""SGLang drop-in: `fused_moe` with the signature of SGLang 0.5.23's
`sglang.srt.layers.moe.moe_runner.triton_utils.fused_moe.fused_moe` (checked by
tests/python/test_engine_signatures.py), served by moetune.fused_moe.

topk_output is SGLang's StandardTopKOutput (topk_weights, topk_ids, router_logits) or any
3-sequence in that order; moe_runner_config is read for activation, is_gated,
apply_router_weight_on_input, inplace, no_combine, routed_scaling_factor and gpt-oss's clamped
SwiGLU (gemm1_alpha, gemm1_clamp_limit, gate_up_interleaved). Served: bf16, all local experts,
silu-gated (or a non-gated served activation) or gpt-oss's SwiGLU (alpha 1.702, limit 7, gate and
up rows split, not interleaved), biases b1 / b2; unquantised or fp8 (use_fp8_w8a8 with
block_shape [128, 128], or per-tensor with static a1 / a2 scales); with `inplace` the result
overwrites hidden_states, as SGLang's. Anything else raises ValueError.

Routing SGLang to it:

    import moetune.integrations.sglang as mt_sgl
    mt_sgl.install()

What has been run: the signature check against the released wheel, and this function in
moetune's tests. Not run: an SGLang server with it installed.
"""

import torch

import moetune

from ._engine_args import SWIGLUOAI_ALPHA, SWIGLUOAI_LIMIT, activation_name, refuse_if_set

_WHERE = "moetune.integrations.sglang.fused_moe"


class _DefaultRunnerConfig:
    """Stands in for SGLang's MoeRunnerConfig() default when SGLang is not installed."""

    activation = "silu"
    is_gated = True
    apply_router_weight_on_input = False
    inplace = False
    no_combine = False
    routed_scaling_factor = None
    num_experts = None
    num_local_experts = None
    gemm1_alpha = None
    gemm1_clamp_limit = None
    gate_up_interleaved = True


def _swigluoai(cfg):
    """True for SGLang's gpt-oss SwiGLU with moetune's constants; raises for other settings."""
    alpha, limit = getattr(cfg, "gemm1_alpha", None), getattr(cfg, "gemm1_clamp_limit", None)
    if alpha is None and limit is None:
        return False
    if alpha != SWIGLUOAI_ALPHA or limit != SWIGLUOAI_LIMIT:
        raise ValueError(f"{_WHERE}: moe_runner_config.gemm1_alpha={alpha!r}, gemm1_clamp_limit="
                         f"{limit!r}; moetune's swigluoai has alpha {SWIGLUOAI_ALPHA} and limit "
                         f"{SWIGLUOAI_LIMIT}")
    if getattr(cfg, "gate_up_interleaved", True):
        raise ValueError(f"{_WHERE}: moe_runner_config.gate_up_interleaved=True; moetune reads w1 "
                         "as [gate rows; up rows]: de-interleave w1 and b1 once at load "
                         "(w1[:, 0::2] then w1[:, 1::2]) and set it False")
    return True


def _activation(cfg):
    if _swigluoai(cfg):
        return "swigluoai"
    name = getattr(cfg, "activation", "silu")
    gated = getattr(cfg, "is_gated", True)
    if not gated and not str(name).endswith("_no_mul"):
        name = f"{name}_no_mul"
    return activation_name(name, _WHERE)


def _fp8_args(use_fp8_w8a8, w1, w1_scale, w2_scale, a1_scale, a2_scale, block_shape):
    """fused_moe's fp8 keywords for SGLang's use_fp8_w8a8 (block [128, 128] or per-tensor)."""
    if not use_fp8_w8a8:
        refuse_if_set(_WHERE, w1_scale=w1_scale, w2_scale=w2_scale, a1_scale=a1_scale,
                      a2_scale=a2_scale, block_shape=block_shape)
        return {}
    if w1.dtype != torch.float8_e4m3fn:
        raise ValueError(f"{_WHERE}: use_fp8_w8a8=True but w1 has dtype {w1.dtype}; expected "
                         "torch.float8_e4m3fn weights with their scales")
    return dict(w1_scale=w1_scale, w2_scale=w2_scale, a1_scale=a1_scale, a2_scale=a2_scale,
                block_shape=block_shape)


def fused_moe(hidden_states, w1, w2, topk_output, moe_runner_config=None, b1=None, b2=None,
              use_fp8_w8a8=False, use_int8_w8a8=False, use_int8_w8a16=False,
              use_int4_w4a16=False, per_channel_quant=False, w1_scale=None, w2_scale=None,
              w1_zp=None, w2_zp=None, a1_scale=None, a2_scale=None, block_shape=None):
    cfg = moe_runner_config if moe_runner_config is not None else _DefaultRunnerConfig()
    act = _activation(cfg)
    refuse_if_set(_WHERE, use_int8_w8a8=use_int8_w8a8, use_int8_w8a16=use_int8_w8a16,
                  use_int4_w4a16=use_int4_w4a16, per_channel_quant=per_channel_quant,
                  w1_zp=w1_zp, w2_zp=w2_zp,
                  apply_router_weight_on_input=getattr(cfg, "apply_router_weight_on_input", False),
                  no_combine=getattr(cfg, "no_combine", False))
    fp8 = _fp8_args(use_fp8_w8a8, w1, w1_scale, w2_scale, a1_scale, a2_scale, block_shape)
    local = getattr(cfg, "num_local_experts", None)
    total = getattr(cfg, "num_experts", None)
    if total is not None and local is not None and total != local:
        raise ValueError(f"{_WHERE}: moe_runner_config has {local} of {total} experts local; "
                         "expert parallelism is not served here")
    topk_weights, topk_ids = topk_output[0], topk_output[1]
    inplace = bool(getattr(cfg, "inplace", False))
    out = moetune.fused_moe(hidden_states, w1, w2, topk_weights, topk_ids, activation=act,
                            inplace=inplace and not fp8, w1_bias=b1, w2_bias=b2, **fp8)
    if inplace and fp8:  # the fp8 op returns a new tensor; SGLang's caller reads hidden_states
        hidden_states.copy_(out)
        out = hidden_states
    scale = getattr(cfg, "routed_scaling_factor", None)
    if scale is not None and scale != 1.0:
        out.mul_(scale)
    return out


def install():
    """Points SGLang's Triton fused_moe at this one (returns the replaced function)."""
    from sglang.srt.layers.moe.moe_runner.triton_utils import fused_moe as mod

    previous = mod.fused_moe
    mod.fused_moe = fused_moe
    return previous
