"""moetune as a transformers experts implementation.

transformers (5.x) routes every `@use_experts_implementation` experts module through its
`ExpertsInterface`; this module registers `"moetune"` there, so a model runs its experts on
moetune with

    import moetune.integrations.transformers as mt_hf
    mt_hf.enable(model)          # or: from_pretrained(..., experts_implementation="moetune")
                                 #     after mt_hf.register()

Served: experts with concatenated gate/up weights [E, 2I, K], down weights [E, K, I], no biases
and a SiLU gate (Qwen3-MoE, Mixtral, Qwen2-MoE, OLMoE, ...). Experts that differ (gpt-oss:
interleaved, transposed, biased, clamped SwiGLU) are refused by `enable` with the reason.
"""

import moetune

NAME = "moetune"
_SILU = ("silu", "swish")


def _why_not(module):
    """None when moetune serves this experts module, else the reason."""
    name = type(module).__name__
    if getattr(module, "has_bias", False):
        return f"{name} has biases"
    if getattr(module, "is_transposed", False):
        return f"{name} stores its weights transposed ([E, K, N])"
    if not getattr(module, "is_concatenated", True):
        return f"{name} interleaves its gate and up rows"
    if not getattr(module, "has_gate", True):
        return f"{name} has no gate"
    from transformers.integrations import moe as hf_moe

    if getattr(type(module), "_apply_gate", None) is not hf_moe._default_apply_gate:
        return f"{name} has its own gating function"
    act = getattr(getattr(module, "config", None), "hidden_act", None)
    if act not in _SILU:
        return f"{name} uses activation {act!r}; moetune serves silu-gated experts here"
    if not hasattr(module, "gate_up_proj") or not hasattr(module, "down_proj"):
        return f"{name} has no gate_up_proj / down_proj parameters"
    return None


def experts_forward(self, hidden_states, top_k_index, top_k_weights):
    """The ExpertsInterface function: [T, K] tokens, [T, top_k] ids and weights -> [T, K]."""
    return moetune.fused_moe(hidden_states, self.gate_up_proj, self.down_proj, top_k_weights,
                             top_k_index)


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
