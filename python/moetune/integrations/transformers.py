"""moetune as a transformers experts implementation.

transformers (5.x) routes every `@use_experts_implementation` experts module through its
`ExpertsInterface`; this module registers `"moetune"` there, so a model runs its experts on
moetune with

    import moetune.integrations.transformers as mt_hf
    mt_hf.enable(model)          # or: from_pretrained(..., experts_implementation="moetune")
                                 #     after mt_hf.register()

Served:
- experts with concatenated gate/up weights [E, 2I, K], down weights [E, K, I] and a SiLU gate
  (Qwen3-MoE, Mixtral, Qwen2-MoE, OLMoE, ...): moetune reads the module's parameters as they are;
- gpt-oss's experts (transposed weights, gate and up columns interleaved, biases on both
  projections, the clamped SwiGLU): moetune runs them with activation "swigluoai" and the biases
  in its kernels' epilogues, from a copy of the weights in its own layout, made on the module's
  first call and kept beside it (twice the experts' weight memory; remade if a parameter changes).
- fp8 checkpoints loaded with transformers' finegrained_fp8 quantisation (its FP8Experts: e4m3
  gate_up_proj / down_proj with float32 128x128 block scales `*_scale_inv`, activations quantised
  per token per 128 channels, `activation_scheme="dynamic"`; DeepSeek-V3 / Qwen3 FP8): moetune
  reads the parameters and scales as they are (fused_moe with block_shape [128, 128]).
Other experts are refused by `enable` with the reason (fp8: static activation scales, UE8M0
scales, fp4 weights, other block sizes, a clamped SwiGLU).
"""

import functools

import moetune

NAME = "moetune"
_SILU = ("silu", "swish")
# gpt-oss's clamped SwiGLU, with the constants moetune's "swigluoai" has built in.
_SWIGLUOAI = {"alpha": 1.702, "limit": 7.0}


@functools.cache
def _gpt_oss_gate():
    try:
        from transformers.models.gpt_oss.modeling_gpt_oss import GptOssExperts
    except ImportError:
        return None
    return GptOssExperts._apply_gate


def _activation(module):
    """(moetune activation, None) for a module moetune serves, else (None, the reason)."""
    name = type(module).__name__
    gate = getattr(type(module), "_apply_gate", None)
    if gate is not None and gate is _gpt_oss_gate():
        for attr, want in _SWIGLUOAI.items():
            if getattr(module, attr, None) != want:
                return None, (f"{name}.{attr} = {getattr(module, attr, None)!r}; moetune's "
                              f"swigluoai has {attr} = {want}")
        return "swigluoai", None
    from transformers.integrations import moe as hf_moe

    if gate is not hf_moe._default_apply_gate:
        return None, f"{name} has its own gating function"
    act = getattr(getattr(module, "config", None), "hidden_act", None)
    if act not in _SILU:
        return None, f"{name} uses activation {act!r}; moetune serves silu-gated experts here"
    return "silu", None


def _is_fp8(module):
    """True for transformers' FP8Experts (finegrained_fp8): quantised weights with *_scale_inv."""
    return hasattr(module, "gate_up_proj_scale_inv") or hasattr(module, "up_proj_scale_inv")


def _fp8_why_not(module):
    """None when moetune serves this FP8Experts module, else the reason."""
    import torch

    name = type(module).__name__
    block = getattr(module, "block_size", None)
    if block is None or list(block) != [128, 128]:
        return (f"{name}.block_size = {block!r}; moetune serves fp8 experts with 128x128 weight "
                "blocks")
    scheme = getattr(module, "activation_scheme", None)
    if scheme != "dynamic":
        return (f"{name}.activation_scheme = {scheme!r}; moetune quantises the activations per "
                "token per 128 channels ('dynamic')")
    if module.gate_up_proj.dtype != torch.float8_e4m3fn:
        return f"{name}.gate_up_proj is {module.gate_up_proj.dtype}; expected torch.float8_e4m3fn"
    for attr in ("gate_up_proj_scale_inv", "down_proj_scale_inv"):
        dtype = getattr(module, attr).dtype
        if dtype != torch.float32:
            return f"{name}.{attr} is {dtype}; moetune takes float32 block scales"
    if getattr(module, "swiglu_alpha", None) is not None or getattr(module, "limit", None):
        return f"{name} clamps its SwiGLU (swiglu_limit); moetune serves plain silu-gated experts"
    config = getattr(module, "config", None)
    act = getattr(config, "hidden_activation", None) or getattr(config, "hidden_act", None)
    if act not in _SILU:
        return f"{name} uses activation {act!r}; moetune serves silu-gated experts here"
    return None


def _why_not(module):
    """None when moetune serves this experts module, else the reason."""
    name = type(module).__name__
    if _is_fp8(module):
        if not getattr(module, "has_gate", True) or getattr(module, "has_bias", False):
            return f"{name}: moetune serves gated fp8 experts without biases"
        return _fp8_why_not(module)
    if not getattr(module, "has_gate", True):
        return f"{name} has no gate"
    if not hasattr(module, "gate_up_proj") or not hasattr(module, "down_proj"):
        return f"{name} has no gate_up_proj / down_proj parameters"
    if getattr(module, "has_bias", False) and not (hasattr(module, "gate_up_proj_bias")
                                                   and hasattr(module, "down_proj_bias")):
        return f"{name} has biases but no gate_up_proj_bias / down_proj_bias parameters"
    return _activation(module)[1]


def _native(module):
    """True when the module's own parameters are moetune's layout (no copy needed)."""
    return (not getattr(module, "is_transposed", False) and getattr(module, "is_concatenated", True)
            and not getattr(module, "has_bias", False))


def _stamp(module):
    params = [module.gate_up_proj, module.down_proj]
    if module.has_bias:
        params += [module.gate_up_proj_bias, module.down_proj_bias]
    return tuple((p.data_ptr(), p._version, p.device, p.dtype) for p in params)


def _converted(module):
    """(w1 [E, 2I, K], w2 [E, K, I], w1_bias [E, 2I] | None, w2_bias [E, K] | None) in moetune's
    layout (gate rows then up rows), made once per change of the module's parameters."""
    stamp = _stamp(module)
    cached = getattr(module, "_moetune_weights", None)
    if cached is not None and cached[0] == stamp:
        return cached[1]
    import torch

    with torch.no_grad():
        gate_up, down = module.gate_up_proj.detach(), module.down_proj.detach()
        if module.is_transposed:  # [E, K, 2I] and [E, I, K]
            gate_up, down = gate_up.transpose(1, 2), down.transpose(1, 2)
        b1 = module.gate_up_proj_bias.detach() if module.has_bias else None
        b2 = module.down_proj_bias.detach().contiguous() if module.has_bias else None
        if not module.is_concatenated:  # gate0, up0, gate1, up1, ... -> gates, then ups
            gate_up = torch.cat([gate_up[:, 0::2], gate_up[:, 1::2]], dim=1)
            if b1 is not None:
                b1 = torch.cat([b1[:, 0::2], b1[:, 1::2]], dim=1)
        weights = (gate_up.contiguous(), down.contiguous(),
                   None if b1 is None else b1.contiguous(), b2)
    module._moetune_weights = (stamp, weights)
    return weights


def experts_forward(self, hidden_states, top_k_index, top_k_weights):
    """The ExpertsInterface function: [T, K] tokens, [T, top_k] ids and weights -> [T, K]."""
    if _is_fp8(self):
        return moetune.fused_moe(hidden_states, self.gate_up_proj, self.down_proj, top_k_weights,
                                 top_k_index, w1_scale=self.gate_up_proj_scale_inv,
                                 w2_scale=self.down_proj_scale_inv, block_shape=[128, 128])
    activation = "swigluoai" if type(self)._apply_gate is _gpt_oss_gate() else "silu"
    if _native(self):
        return moetune.fused_moe(hidden_states, self.gate_up_proj, self.down_proj, top_k_weights,
                                 top_k_index, activation=activation)
    w1, w2, b1, b2 = _converted(self)
    return moetune.fused_moe(hidden_states, w1, w2, top_k_weights, top_k_index,
                             activation=activation, w1_bias=b1, w2_bias=b2)


def register(name=NAME):
    """Registers moetune in transformers' ExpertsInterface under `name` (idempotent), and in its
    FP8ExpertsInterface (finegrained_fp8's experts) where this transformers has one."""
    from transformers.integrations.moe import ExpertsInterface

    ExpertsInterface.register(name, experts_forward)
    try:
        from transformers.integrations.finegrained_fp8 import FP8ExpertsInterface
    except ImportError:
        return
    FP8ExpertsInterface.register(name, experts_forward)


def enable(model, name=NAME):
    """Runs every experts module of `model` on moetune; raises ValueError naming each module that
    moetune cannot serve (the model is then left as it was)."""
    refused = []
    found = 0
    for path, module in model.named_modules():
        if hasattr(module, "has_gate") and hasattr(module, "is_concatenated"):
            found += 1
            why = _why_not(module)
            if why:
                refused.append(f"{path}: {why}")
    if refused:
        raise ValueError("moetune cannot serve these experts: " + "; ".join(refused[:3]) +
                         (f" (+{len(refused) - 3} more)" if len(refused) > 3 else ""))
    if not found:
        raise ValueError(f"{type(model).__name__} has no experts module that uses transformers' "
                         "ExpertsInterface (@use_experts_implementation)")
    register(name)
    model.set_experts_implementation(name)
    return model
