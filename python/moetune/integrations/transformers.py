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
Other experts are refused by `enable` with the reason.
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


def _why_not(module):
    """None when moetune serves this experts module, else the reason."""
    name = type(module).__name__
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
    activation = "swigluoai" if type(self)._apply_gate is _gpt_oss_gate() else "silu"
    if _native(self):
        return moetune.fused_moe(hidden_states, self.gate_up_proj, self.down_proj, top_k_weights,
                                 top_k_index, activation=activation)
    w1, w2, b1, b2 = _converted(self)
    return moetune.fused_moe(hidden_states, w1, w2, top_k_weights, top_k_index,
                             activation=activation, w1_bias=b1, w2_bias=b2)


def register(name=NAME):
    """Registers moetune in transformers' ExpertsInterface under `name` (idempotent)."""
    from transformers.integrations.moe import ExpertsInterface

    ExpertsInterface.register(name, experts_forward)


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
