"""The few stand-ins vLLM's extracted Triton fused-MoE code needs to run outside vLLM.

moetune/engines/vllm_triton.py executes chosen functions of vLLM's own source (from .engines/, see
scripts/fetch_engine_kernels.py) in namespaces built here. Each stand-in replaces one thing those
functions reach for that lives in vLLM's compiled extension or in modules whose imports would pull
in all of vLLM; each says what it stands for:

  Envs          vllm.envs: the three variables the functions read, parsed as vllm/envs.py does.
  OnceLogger    vllm.logger.init_logger(...): info/warning and their *_once forms.
  Platform      vllm.platforms.current_platform: CUDA, not ROCm or XPU; the device name and
                capability of the layer's device (or a name the caller pins); fp8 is e4m3fn.
  Ops           vllm._custom_ops: moe_align_block_size and scaled_fp8_quant (static per-tensor),
                CUDA ops, as torch ops with the same outputs.
  per_token_group_quant_fp8   vllm...quantization.utils.fp8_utils.per_token_group_quant_fp8, which
                on CUDA runs vLLM's per_token_group_fp8_quant CUDA op: the same math as torch ops.
  set_triton_allocator   vllm.triton_utils.allocation (only the tensor-descriptor path uses it).
  install_modules        the two vllm.* modules imported from inside function bodies, put in
                sys.modules: vllm.platforms (current_platform) and
                vllm.model_executor.layers.fused_moe (get_config: no override config is set).
"""

import logging
import os
import sys
import types

import torch

_MARK = "__moetune_vllm_shim__"


class Envs:
    """vllm.envs for the variables fused_moe.py and utils.py read; read on access, like vLLM."""

    @property
    def VLLM_BATCH_INVARIANT(self):
        return bool(int(os.getenv("VLLM_BATCH_INVARIANT", "0")))

    @property
    def VLLM_TUNED_CONFIG_FOLDER(self):
        return os.getenv("VLLM_TUNED_CONFIG_FOLDER", None)

    @property
    def VLLM_TRITON_USE_TD(self):
        return {"1": True, "0": False}.get(os.getenv("VLLM_TRITON_USE_TD", "").strip())


class OnceLogger:
    """vLLM's logger: printf-style messages; the *_once forms print a message once per process."""

    def __init__(self, name):
        self._log = logging.getLogger(name)
        self._seen = set()

    def _once(self, level, msg, args):
        key = (level, msg, args)
        if key not in self._seen:
            self._seen.add(key)
            self._log.log(level, msg, *args)

    def debug(self, msg, *args, **_):
        self._log.debug(msg, *args)

    def info(self, msg, *args, **_):
        self._log.info(msg, *args)

    def warning(self, msg, *args, **_):
        self._log.warning(msg, *args)

    def info_once(self, msg, *args, **_):  # vLLM's scope= keyword is accepted and ignored
        self._once(logging.INFO, msg, args)

    def warning_once(self, msg, *args, **_):
        self._once(logging.WARNING, msg, args)


class Platform:
    """current_platform as vLLM's CudaPlatform answers the questions fused_moe.py asks.

    device_name is the raw name (torch.cuda.get_device_name, e.g. "NVIDIA H200"); vLLM's own
    get_device_name_as_file_name turns it into the file-name form. None (a CPU run) becomes "cpu",
    which names no shipped table, so vLLM's default rule applies.
    """

    def __init__(self):
        self.device_name = None
        self.capability = None  # (major, minor), or None off the GPU

    def is_cuda(self):
        return True

    def is_cuda_alike(self):
        return True

    def fp8_dtype(self):
        return torch.float8_e4m3fn

    def is_rocm(self):
        return False

    def is_xpu(self):
        return False

    def get_device_name(self, device_id=0):
        return "cpu" if self.device_name is None else self.device_name

    def is_device_capability(self, capability):
        if self.capability is None:
            return False
        major, minor = self.capability
        return major * 10 + minor == capability

    def has_device_capability(self, capability):
        if self.capability is None:
            return False
        major, minor = self.capability
        return major * 10 + minor >= capability


def moe_align_block_size(topk_ids, num_experts, block_size, sorted_token_ids, expert_ids,
                         num_tokens_post_pad, expert_map=None, scatter_idx=None):
    """vLLM's CUDA align op, in place, with torch ops and no host sync.

    Pair p = (token, slot) flattened; each expert's pairs are padded to a multiple of block_size.
    sorted_token_ids: pair indices grouped by expert (ascending expert; ascending pair index within
    an expert, which vLLM's small-batch kernel also gives and its atomics may permute), padding
    slots and the unused tail = numel. expert_ids[b]: the expert of block b; blocks past
    num_tokens_post_pad get -1 (the kernel returns before reading them). num_tokens_post_pad[0]:
    the padded total. Expert ids must lie in [0, num_experts).
    """
    if expert_map is not None or scatter_idx is not None:
        raise NotImplementedError("vllm_shims.moe_align_block_size: expert_map and scatter_idx "
                                  "(expert parallelism) are not mirrored; pass None")
    flat = topk_ids.reshape(-1).long()
    numel = flat.numel()
    dev = flat.device
    counts = torch.zeros(num_experts, dtype=torch.long, device=dev)
    counts.scatter_add_(0, flat, torch.ones_like(flat))
    padded = (counts + block_size - 1) // block_size * block_size
    ends = padded.cumsum(0)
    starts = ends - padded
    order = torch.sort(flat, stable=True).indices  # pair indices, grouped by expert
    sorted_e = flat[order]
    first_unpadded = counts.cumsum(0) - counts
    rank = torch.arange(numel, device=dev) - first_unpadded[sorted_e]
    sorted_token_ids.fill_(numel)
    sorted_token_ids.scatter_(0, starts[sorted_e] + rank, order.to(sorted_token_ids.dtype))
    total = ends[-1:]
    num_tokens_post_pad.copy_(total.to(num_tokens_post_pad.dtype))
    block_start = torch.arange(expert_ids.numel(), device=dev) * block_size
    block_expert = torch.searchsorted(ends, block_start, right=True)
    expert_ids.copy_(torch.where(block_start < total, block_expert, -1).to(expert_ids.dtype))


kFp8Max = 448.0  # torch.finfo(torch.float8_e4m3fn).max, vLLM's get_fp8_min_max() on CUDA


def scaled_fp8_quant(input, scale=None, num_token_padding=None, scale_ub=None,
                     use_per_token_if_dynamic=False, output=None, group_shape=None):
    """vLLM's ops.scaled_fp8_quant for a static per-tensor scale (what fused_experts passes with
    a1_scale/a2_scale): its static_scaled_fp8_quant CUDA op, one kernel there, four torch ops
    here: q = clamp(x * (1 / scale), -448, 448) rounded to e4m3 (the op multiplies by the
    reciprocal). Returns (q, scale), as vLLM does. Dynamic, per-channel or padded forms are not
    mirrored."""
    if scale is None or scale.numel() != 1 or num_token_padding or output is not None:
        raise NotImplementedError(
            "vllm_shims.scaled_fp8_quant: only the static per-tensor form (one scale, no padding, "
            "no output buffer) is mirrored; pass a1_scale/a2_scale with one value each")
    assert input.ndim == 2, input.shape  # as vLLM asserts
    q = torch.mul(input, torch.reciprocal(scale.float().reshape(1)))  # fp32
    return q.clamp_(-kFp8Max, kFp8Max).to(torch.float8_e4m3fn), scale


def per_token_group_quant_fp8(x, group_size, eps=1e-10, dtype=None, column_major_scales=False,
                              tma_aligned_scales=False, out_q=None, use_ue8m0=None):
    """vLLM's fp8_utils.per_token_group_quant_fp8 as it runs on CUDA for fused_experts: its
    per_token_group_fp8_quant CUDA op (one kernel there, six torch ops here) with row-major fp32
    scales and use_ue8m0 False (vLLM sets it only where DeepGEMM's e8m0 scales are in use).
    Per row per group of group_size columns: s = max(amax, eps) / 448, q = clamp(x / s, -448,
    448) rounded to e4m3 (IEEE division, as the CUDA op). Returns (q [..., C] e4m3,
    s [..., C / group_size] fp32)."""
    if column_major_scales or tma_aligned_scales or out_q is not None or use_ue8m0:
        raise NotImplementedError(
            "vllm_shims.per_token_group_quant_fp8: only row-major fp32 scales without ue8m0 or an "
            "output buffer are mirrored (what fused_experts asks for)")
    assert x.shape[-1] % group_size == 0 and x.stride(-1) == 1, (x.shape, x.stride())
    groups = x.unflatten(-1, (x.shape[-1] // group_size, group_size))
    amax = torch.linalg.vector_norm(groups, ord=float("inf"), dim=-1, dtype=torch.float32)
    s = amax.clamp_min_(eps).div_(kFp8Max)
    q = torch.div(groups, s.unsqueeze(-1)).clamp_(-kFp8Max, kFp8Max)
    return q.to(dtype or torch.float8_e4m3fn).flatten(-2), s


class Ops:
    """vllm._custom_ops, reduced to the ops the executed functions call."""

    moe_align_block_size = staticmethod(moe_align_block_size)
    scaled_fp8_quant = staticmethod(scaled_fp8_quant)


def set_triton_allocator(device):
    """vllm.triton_utils.allocation.set_triton_allocator: Triton's scratch comes from torch."""
    import triton

    triton.set_allocator(lambda size, alignment, stream: torch.empty(size, device=device,
                                                                      dtype=torch.int8))


def _get_config():
    """vllm.model_executor.layers.fused_moe.get_config: the override set by vLLM's
    override_config() context, which nothing here sets."""
    return None


def install_modules(platform):
    """Puts the fake vllm.* modules in sys.modules; fails if a real vLLM is already imported.

    Shims stay for the life of the process: a real vLLM cannot be imported after this.
    """
    real = sys.modules.get("vllm")
    if real is not None and not getattr(real, _MARK, False):
        raise RuntimeError(
            "vllm_shims.install_modules: a real vllm is already imported in this process "
            f"({getattr(real, '__file__', '?')}); call vLLM's fused_experts directly instead of "
            "this harness, or run it in a process without vLLM")
    mods = {}
    for name in ("vllm", "vllm.platforms", "vllm.model_executor", "vllm.model_executor.layers",
                 "vllm.model_executor.layers.fused_moe"):
        mod = sys.modules.get(name)
        if mod is None:
            mod = types.ModuleType(name, "moetune stand-in (moetune/engines/vllm_shims.py)")
            setattr(mod, _MARK, True)
            mod.__path__ = []  # a package, so the dotted children resolve
            sys.modules[name] = mod
        mods[name] = mod
    mods["vllm.platforms"].current_platform = platform
    mods["vllm.model_executor.layers.fused_moe"].get_config = _get_config
    for parent, child in (("vllm", "platforms"), ("vllm", "model_executor"),
                          ("vllm.model_executor", "layers"),
                          ("vllm.model_executor.layers", "fused_moe")):
        setattr(mods[parent], child, mods[f"{parent}.{child}"])
