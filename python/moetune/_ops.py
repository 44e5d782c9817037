"""Loads the torch ops library and exposes the ops with Python signatures.

The ops themselves are C++ (python/csrc/torch_ops.cpp), registered as torch.ops.moetune.*; this
module checks that the installed torch is the one the library was built against, loads it,
registers the fake implementations torch.compile traces with, and turns the `config` argument
into the string the op takes.
"""

import json
import os

import torch

from . import _build_info

_HERE = os.path.dirname(os.path.abspath(__file__))
library_path = os.path.join(_HERE, "_moetune_torch.so")


def _base(version):
    return version.split("+")[0]


def _check_torch():
    have, have_cuda = _base(torch.__version__), torch.version.cuda or ""
    want, want_cuda = _base(_build_info.torch_version), _build_info.torch_cuda
    if have != want or have_cuda != want_cuda:
        raise ImportError(
            f"moetune was built against torch {want} (CUDA {want_cuda or 'none'}) but torch {have} "
            f"(CUDA {have_cuda or 'none'}) is installed; rebuild moetune against this torch: "
            "pip install --force-reinstall --no-deps .")


def _tables_root():
    root = os.environ.get("MOETUNE_TABLES")
    if root is not None:
        return root
    shipped = os.path.join(_HERE, "tables")
    return shipped if os.path.isdir(shipped) else ""


_check_torch()
if not os.path.exists(library_path):
    raise ImportError(f"moetune: {library_path} is missing; reinstall the package (pip install .)")
torch.ops.load_library(library_path)
torch.ops.moetune.set_tables_root(_tables_root())
# The overloads themselves: .default skips the packet's overload resolution, and in eager mode
# their C++ callables (_op) skip OpOverload.__call__'s Python frame. torch.compile traces the
# OpOverloads, which it knows.
_fused_moe = torch.ops.moetune.fused_moe.default
_fused_moe_inplace = torch.ops.moetune.fused_moe_.default
_fused_moe_eager = _fused_moe._op
_fused_moe_inplace_eager = _fused_moe_inplace._op
_is_compiling = torch.compiler.is_compiling
try:  # one CPython call into the op's body for plain eager calls (python/csrc/eager_entry.cpp)
    from ._moetune_eager import fused_moe as _fused_moe_fast
except ImportError:  # built for another Python, or without Python's headers: dispatch the op
    _fused_moe_fast = None


@torch.library.register_fake("moetune::fused_moe")
def _fused_moe_fake(hidden_states, w1, w2, topk_weights, topk_ids, activation="silu", config="",
                    w1_bias=None, w2_bias=None, batch_invariant=False):
    return hidden_states.new_empty(hidden_states.shape)


@torch.library.register_fake("moetune::fused_moe_fp8")
def _fused_moe_fp8_fake(hidden_states, w1, w2, topk_weights, topk_ids, w1_scale, w2_scale,
                        a1_scale, a2_scale, quant, activation="silu", config="", w1_bias=None,
                        w2_bias=None):
    return hidden_states.new_empty(hidden_states.shape)


@torch.library.register_fake("moetune::fused_moe_")
def _fused_moe_inplace_fake(hidden_states, w1, w2, topk_weights, topk_ids, activation="silu",
                            config="", w1_bias=None, w2_bias=None, batch_invariant=False):
    return None


def _config_arg(config):
    """The op's config string: "" (tables, cache, default), "auto", JSON, or a directory."""
    if config is None:
        return ""
    if isinstance(config, dict):
        return json.dumps(config, sort_keys=True)
    if isinstance(config, (str, os.PathLike)):
        text = os.fspath(config)
        if text == "":
            raise ValueError("moetune: config: an empty string; expected None, \"auto\", a dict "
                             "or a tables directory")
        return text
    raise TypeError(f"moetune: config: {type(config).__name__} seen; expected None, \"auto\", a "
                    "dict of a MoeConfig or a tables directory (str or os.PathLike)")


def fused_moe(hidden_states, w1, w2, topk_weights, topk_ids, *, activation="silu", inplace=False,
              config=None, w1_bias=None, w2_bias=None, w1_scale=None, w2_scale=None,
              a1_scale=None, a2_scale=None, block_shape=None, batch_invariant=False):
    """The fused MoE layer: out[m] = sum_j topk_weights[m, j] * expert_{topk_ids[m, j]}(x[m]),
    expert_e(x) = w2[e] @ act(w1[e] @ x + w1_bias[e]) + w2_bias[e] (biases optional).

    Layouts (vLLM's fused_experts): hidden_states [M, K]; w1 [E, 2I, K] (gate rows, then up rows)
    for the gated activations "silu" and "swigluoai" (gpt-oss's clamped SwiGLU), [E, I, K] for
    "relu2", "gelu", "gelu_tanh"; w2 [E, K, I]; topk_weights [M, top_k] float32 or the hidden
    dtype; topk_ids [M, top_k] int32 or int64; w1_bias [E, 2I or I] and w2_bias [E, K] in the
    weights' dtype, both or neither. bfloat16 on CUDA (sm_90a), bfloat16 or float32 on the CPU.
    Returns [M, K] in the hidden dtype; with inplace=True the result overwrites hidden_states,
    which is returned.

    config: None (the shipped table for this device and shape, else the knob cache, else the
    default rule), "auto" (tune this shape once per bucket and cache the winner; refused during
    CUDA graph capture), a dict (one MoeConfig, validated), or a tables directory.

    batch_invariant: True turns lever batch_invariant on (as MOETUNE_LEVER_BATCH_INVARIANT=on
    does; False leaves it to that knob, off by default): every M runs the backend's
    batch-invariant config (one kernel family and K order at every M, no split-K), so a token's
    output bits do not depend on the other tokens of the batch. Tables, the knob
    cache and "auto" are then bypassed, a dict config is refused, and fp8 weights are refused.

    fp8 (w1 and w2 torch.float8_e4m3fn, hidden_states bfloat16; CUDA, or the CPU in fp32 math), as
    vLLM passes them:
    block_shape=[128, 128]: w1_scale [E, N1/128, K/128] and w2_scale [E, K/128, I/128] float32
    (DeepSeek-V3 / Qwen3 FP8 checkpoints); the activations are quantised per token per 128
    channels on the fly. block_shape=None: per-tensor, w1_scale and w2_scale [E] and the static
    input scales a1_scale and a2_scale (one value each).

    CUDA calls run on the current stream with workspace from torch's caching allocator and never
    synchronise; topk_ids are not range-checked on the GPU (that check would synchronise).
    """
    c = "" if config is None else _config_arg(config)
    if type(batch_invariant) is not bool:
        _bad_flag("batch_invariant", batch_invariant)
    if w1.dtype == torch.float8_e4m3fn or w1_scale is not None or w2_scale is not None:
        _check_fp8_flags(inplace, batch_invariant)
        return _fused_moe_fp8(hidden_states, w1, w2, topk_weights, topk_ids, w1_scale, w2_scale,
                              a1_scale, a2_scale, _quant_arg(block_shape), activation, c,
                              w1_bias, w2_bias)
    eager = not _is_compiling()
    biased = w1_bias is not None or w2_bias is not None
    if eager and not inplace and not biased and _fused_moe_fast is not None:
        out = _fused_moe_fast(hidden_states, w1, w2, topk_weights, topk_ids, activation, c,
                              batch_invariant)
        if out is not None:
            return out
    if inplace:
        op = _fused_moe_inplace_eager if eager else _fused_moe_inplace
        op(hidden_states, w1, w2, topk_weights, topk_ids, activation, c, w1_bias, w2_bias,
           batch_invariant)
        return hidden_states
    op = _fused_moe_eager if eager else _fused_moe
    if biased or batch_invariant:
        return op(hidden_states, w1, w2, topk_weights, topk_ids, activation, c, w1_bias, w2_bias,
                  batch_invariant)
    return op(hidden_states, w1, w2, topk_weights, topk_ids, activation, c)


def _check_fp8_flags(inplace, batch_invariant):
    """fused_moe's flags an fp8 layer cannot take."""
    if batch_invariant:
        raise ValueError("moetune.fused_moe: batch_invariant=True with fp8 weights; batch "
                         "invariance is implemented for bfloat16 (CUDA) and bfloat16 or "
                         "float32 (CPU) layers: pass batch_invariant=False")
    if inplace:
        raise ValueError("moetune.fused_moe: inplace=True with fp8 weights; use the result")


def _bad_flag(name, value):
    """Raises for a bool argument of the ops that is not a bool (a torch schema `bool` takes
    nothing else); the callers check the type inline, on the hot path."""
    raise TypeError(f"moetune: {name}: {type(value).__name__} seen; expected True or False")


def _quant_arg(block_shape):
    """The fp8 op's quant: "fp8_block" for block_shape [128, 128], "fp8_tensor" for None."""
    if block_shape is None:
        return "fp8_tensor"
    if list(block_shape) != [128, 128]:
        raise ValueError(f"moetune.fused_moe: block_shape {list(block_shape)}; expected [128, 128] "
                         "or None (per-tensor fp8)")
    return "fp8_block"


def _require_fp8_scales(w1_scale, w2_scale):
    """fp8 weights need both weight scales."""
    for name, t in (("w1_scale", w1_scale), ("w2_scale", w2_scale)):
        if t is None:
            raise ValueError(f"moetune.fused_moe: {name} is None but the weights are fp8; pass "
                             "the checkpoint's weight scales")


def _fused_moe_fp8(hidden_states, w1, w2, topk_weights, topk_ids, w1_scale, w2_scale, a1_scale,
                   a2_scale, quant, activation, config, w1_bias, w2_bias):
    _require_fp8_scales(w1_scale, w2_scale)
    return torch.ops.moetune.fused_moe_fp8.default(
        hidden_states, w1, w2, topk_weights, topk_ids, w1_scale, w2_scale, a1_scale, a2_scale,
        quant, activation, config, w1_bias, w2_bias)


def explain(hidden_states, w1, w2, topk_weights, topk_ids, *, activation="silu", config=None,
            w1_bias=None, w2_bias=None, w1_scale=None, w2_scale=None, a1_scale=None,
            a2_scale=None, block_shape=None, batch_invariant=False):
    """Which config fused_moe would run for these tensors, and the rule that chose it; the same
    arguments as fused_moe (fp8 weights with their scales and block_shape, as fused_moe takes
    them).

    Returns a dict: rule ("explicit", "cache", "table", "default", "auto", "other_device": a
    row of a table made on another device, which MOETUNE_TABLES_SAME_DEVICE=1 forbids, or
    "batch_invariant": lever batch_invariant on), config, table, fast_paths, and explain (the
    runner's sentence, as `moetune run` prints it).
    """
    c = "" if config is None else _config_arg(config)
    if type(batch_invariant) is not bool:
        _bad_flag("batch_invariant", batch_invariant)
    if w1.dtype == torch.float8_e4m3fn or w1_scale is not None or w2_scale is not None:
        _check_fp8_flags(False, batch_invariant)
        _require_fp8_scales(w1_scale, w2_scale)
        text = torch.ops.moetune.explain_fp8(
            hidden_states, w1, w2, topk_weights, topk_ids, w1_scale, w2_scale, a1_scale,
            a2_scale, _quant_arg(block_shape), activation, c, w1_bias, w2_bias)
    else:
        text = torch.ops.moetune.explain(hidden_states, w1, w2, topk_weights, topk_ids,
                                         activation, c, w1_bias, w2_bias, batch_invariant)
    return dict(line.split("=", 1) for line in text.split("\n"))


def build_info():
    """What the loaded ops library was built against, and its commit."""
    return {"torch": _build_info.torch_version, "cuda": _build_info.torch_cuda,
            "cuda_backend": _build_info.cuda_backend, "commit": _build_info.commit}
