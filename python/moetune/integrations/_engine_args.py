"""Checks shared by the engine drop-ins: every engine argument moetune does not serve is refused
with a ValueError that names it, never ignored."""

# Engine activation names -> moetune's, where the math is the same: vLLM and SGLang "silu" is
# silu(gate) * up over [gate; up] rows (moetune "silu"); their "relu2_no_mul" and the
# "*_no_mul" GELUs are non-gated; vLLM's "swigluoai" is gpt-oss's clamped SwiGLU over [gate; up]
# rows (alpha 1.702, limit 7), moetune's "swigluoai".
ACTIVATIONS = {
    "silu": "silu",
    "swigluoai": "swigluoai",
    "relu2_no_mul": "relu2",
    "gelu_no_mul": "gelu",
    "gelu_tanh_no_mul": "gelu_tanh",
}


def activation_name(activation, where):
    name = getattr(activation, "value", activation)
    if name not in ACTIVATIONS:
        raise ValueError(f"{where}: activation {name!r} is not served by moetune; served: "
                         f"{', '.join(sorted(ACTIVATIONS))}")
    return ACTIVATIONS[name]


# gpt-oss's constants of the clamped SwiGLU, the only ones moetune's "swigluoai" has.
SWIGLUOAI_ALPHA = 1.702
SWIGLUOAI_LIMIT = 7.0


def refuse_if_set(where, **args):
    """Raises for the first argument that is set (not None / False / -1 / 0)."""
    for name, value in args.items():
        if value is None or value is False or (isinstance(value, int) and value in (-1, 0)
                                               and not isinstance(value, bool)):
            continue
        raise ValueError(f"{where}: {name}={value!r} is not served by moetune (bf16 experts, "
                         "all local, router weight applied after GEMM2); use the engine's path")
