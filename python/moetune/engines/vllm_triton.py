"""vLLM's own Triton fused-MoE kernel (bf16, and fp8 w8a8), run outside vLLM.

    from moetune.engines import vllm_triton
    layer = vllm_triton.VllmTritonMoe(w1, w2, top_k, "silu")   # w1 [E, N1, K], w2 [E, K, I]
    config, source, path = layer.config_for(M)  # source: "table:<file>" or "default"
    prepared = layer.prepare(topk_ids)          # vLLM's expert assignment; time it apart
    out = layer.run(x, topk_weights, topk_ids, prepared)   # [M, K]; CUDA-graph capturable
    prepared = layer.prepare(topk_ids, config=row)         # any row instead of vLLM's choice
    vllm_triton.engine_config(load(), w1.shape, w2.shape, top_k, M, device_name=..,
                              capability=..)  # config_for's lookup, without weights

fp8 (w1, w2 torch.float8_e4m3fn; x and the output stay bf16), as fused_experts takes it with
use_fp8_w8a8=True:
    VllmTritonMoe(w1, w2, top_k, "silu", w1_scale=s1, w2_scale=s2, block_shape=[128, 128])
        # s1 [E, N1/128, K/128], s2 [E, K/128, I/128] fp32; activations quantised per token
        # per 128 channels before GEMM1, the intermediate again before GEMM2
    VllmTritonMoe(w1, w2, top_k, "silu", w1_scale=s1, w2_scale=s2, a1_scale=a1, a2_scale=a2)
        # per-tensor: s1, s2 [E]; static input scales a1, a2 (one value each)
The config lookup sees dtype "fp8_w8a8" and the block shape, as vLLM's _get_config_dtype_str
gives them: its fp8 table file (E=..,N=..,device_name=..,dtype=fp8_w8a8[,block_shape=[128,128]]
.json) where vLLM ships one, else its default rule for fp8.

Nothing of vLLM's is in this repository. find_engine() says where its source comes from, first
found wins: the engine_dir argument, the installed vllm package (its files are read, never
imported), .engines/vllm-0.33.0/ at the repository root (or in the current directory), which
scripts/fetch_engine_kernels.py extracts from the released wheel. load() executes chosen
top-level functions of that source (found with `ast`, compiled under their real file names, so
Triton reads the kernel's source from the file) in namespaces whose few outside names come from
vllm_shims.py. What runs is vLLM's:
  fused_moe_kernel (+ write_zeros_to_output), dispatch_fused_moe_kernel and
  invoke_fused_moe_triton_kernel (grid, EM, strides, SPLIT_K, SWAP_AB, USE_TD as vLLM sets them),
  try_get_optimal_moe_config / get_moe_configs / get_config_file_name / get_default_config
  (vLLM's table lookup, nearest-M row and default rule; VLLM_TUNED_CONFIG_FOLDER is honoured),
  _prepare_expert_assignment (including vLLM's align-free "naive" path when
  M * top_k * 4 <= E) and moe_align_block_size's Python wrapper (buffer sizes, hence the grid);
  for fp8, moe_kernel_quantize_input and _fp8_quantize of fused_moe/utils.py (which quantiser,
  with which arguments, and the scale shapes the kernel reads).
What is mirrored rather than executed, from fused_experts_impl of vLLM 0.33.0:
  the align CUDA op (vllm_shims.moe_align_block_size, torch ops, same outputs);
  the fp8 quantisers, CUDA ops in vLLM, torch stand-ins here (vllm_shims) with the same math:
  per token per 128-group, s = max(amax, 1e-10) / 448, q = e4m3(clamp(x / s, -448, 448))
  (per_token_group_quant_fp8 -> vLLM's per_token_group_fp8_quant CUDA op; ue8m0 scales off);
  per-tensor, q = e4m3(clamp(x * (1 / a_scale), -448, 448)) (static_scaled_fp8_quant). Not
  vLLM's Triton quant kernel: its fp8_utils.py is not among the files FETCH extracts, and on CUDA
  vLLM runs the CUDA op, not that kernel. Their cost differs: one kernel per quantisation in vLLM,
  four (per-tensor) or six (group) small torch ops here, which overstates vLLM's time where the
  layer is short (bench/fp8_bench.py times the stand-ins apart, column standin_us);
  the activation: silu -> silu(gate) * up in bf16 (vLLM's silu_and_mul CUDA op rounds silu to
  bf16, then the product); relu2 -> vLLM's own torch code for "relu2_no_mul";
  moe_sum -> torch.sum(dim=1) (vLLM's CUDA op adds in bf16 step by step; torch accumulates in
  fp32 and rounds once: equal for top_k <= 2, within an ulp otherwise).
The cache buffers are allocated per call as vLLM does (cache1 and cache3 share one buffer).
Covered by tests/python/test_vllm_peer.py (bf16) and test_vllm_fp8_peer.py (fp8), each on the
CPU under the Triton interpreter and with a GPU twin; the tuner's triton family
(moetune.tuner.triton_worker) runs every candidate through it, bf16 and fp8 (triton_layers);
bench/fp8_bench.py times the fp8 path as moetune's peer.
"""

import ast
import builtins
import functools
import json
import os
import re
import symtable
import types
import typing

import torch

from . import vllm_shims

# The checkout this file lives in (python/moetune/engines/, also through build/python's links).
REPO = os.path.abspath(os.path.join(os.path.dirname(os.path.realpath(__file__)), "..", "..", ".."))
DEFAULT_ENGINE_DIR = ".engines/vllm-0.33.0"
FETCH = "scripts/fetch_engine_kernels.py"
kManifestSchema = 1
kMirroredVersion = "0.33.0"  # the vLLM release whose fused_moe.py this harness mirrors
_FM = "vllm/model_executor/layers/fused_moe/"
# Namespace -> (file in the engine dir, top-level names executed from it), in load order.
EXTRACT = [
    ("math_utils", "vllm/utils/math_utils.py", ["cdiv", "next_power_of_2", "round_up"]),
    ("platform_utils", "vllm/utils/platform_utils.py", ["get_device_name_as_file_name"]),
    ("moe_utils", _FM + "utils.py", ["enable_swap_ab", "resolve_moe_use_td",
                                     "_warned_moe_use_td_ineffective",
                                     "warn_if_moe_use_td_ineffective",
                                     "moe_kernel_quantize_input", "_fp8_quantize"]),
    ("moe_align_block_size", _FM + "moe_align_block_size.py", ["moe_align_block_size"]),
    ("fused_moe", _FM + "fused_moe.py", [
        "write_zeros_to_output", "fused_moe_kernel", "invoke_fused_moe_triton_kernel",
        "dispatch_fused_moe_kernel", "get_config_file_name", "get_moe_configs",
        "should_moe_wna16_use_cuda", "get_default_config", "try_get_optimal_moe_config",
        "_weights_host_resident", "_prepare_expert_assignment"]),
]
# Names the executed functions use only on branches a bf16 or fp8 w8a8 launch never takes
# (wna16 kernels; moe_kernel_quantize_input's int8, nvfp4, mxfp and emulation branches).
UNREACHED = {"invoke_fused_moe_wna16_cuda_kernel", "invoke_fused_moe_wna16_triton_kernel",
             "_fp8_quantize_dequantize", "_int8_quantize", "_nvfp4_quantize",
             "ref_nvfp4_quant_dequant", "_mxfp4_quantize", "_mxfp8_e4m3_quantize",
             "_mxfp6_e3m2_quantize", "_mxfp6_e2m3_quantize"}
FP8 = torch.float8_e4m3fn
_LOADED = {}


class ConfigChoice(typing.NamedTuple):
    """The config row vLLM uses for M tokens and where it came from."""
    config: dict  # BLOCK_SIZE_M/N/K, GROUP_SIZE_M, num_warps, num_stages[, SPLIT_K]
    source: str  # "table:<file name>" or "default" (vLLM's get_default_config)
    path: typing.Optional[str]  # the table file read, or None


class Prepared(typing.NamedTuple):
    """vLLM's expert assignment for one topk_ids; sorted_token_ids is None on the naive path."""
    sorted_token_ids: typing.Optional[torch.Tensor]  # [max_num_tokens_padded] int32
    expert_ids: torch.Tensor  # [num blocks] int32 (naive path: topk_ids.view(-1))
    num_tokens_post_padded: torch.Tensor  # [1] int32
    config: dict
    num_tokens: int


class Engine(typing.NamedTuple):
    """Where vLLM's source comes from: a directory holding vllm/model_executor/..."""
    path: str  # absolute
    origin: str  # "argument", "installed vllm", ".engines"


def _installed_vllm_root():
    """The directory holding an installed vllm package (site-packages), without importing it."""
    import importlib.machinery

    spec = importlib.machinery.PathFinder.find_spec("vllm")  # sys.path only, never sys.modules
    if spec is None or not spec.submodule_search_locations:
        return None
    root = os.path.dirname(os.path.realpath(list(spec.submodule_search_locations)[0]))
    return root if os.path.isfile(os.path.join(root, EXTRACT[-1][1])) else None


def find_engine(engine_dir=None):
    """The vLLM source load() reads: engine_dir (relative: to the repository root), else the
    installed vllm package, else .engines/vllm-0.33.0 at the repository root or in the current
    directory. Never fails: a missing directory is load()'s to report."""
    if engine_dir is not None:
        path = engine_dir if os.path.isabs(engine_dir) else os.path.join(REPO, engine_dir)
        return Engine(os.path.realpath(path), "argument")
    installed = _installed_vllm_root()
    if installed is not None:
        return Engine(installed, "installed vllm")
    for root in (REPO, os.getcwd()):
        if os.path.isdir(os.path.join(root, DEFAULT_ENGINE_DIR)):
            return Engine(os.path.realpath(os.path.join(root, DEFAULT_ENGINE_DIR)), ".engines")
    return Engine(os.path.join(REPO, DEFAULT_ENGINE_DIR), ".engines")


def _select(tree, names, path):
    """The top-level statements defining names (the last non-@overload def of each)."""
    picked = {}
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name in names:
            if any(isinstance(d, ast.Name) and d.id == "overload" for d in node.decorator_list):
                continue
            picked[node.name] = node
        elif isinstance(node, ast.Assign):
            for t in node.targets:
                if isinstance(t, ast.Name) and t.id in names:
                    picked[t.id] = node
    missing = [n for n in names if n not in picked]
    if missing:
        raise RuntimeError(f"{path}: vllm_triton.load: {missing} not found at top level; the "
                           f"harness mirrors vLLM 0.33.0; run {FETCH} --force")
    return sorted({id(n): n for n in picked.values()}.values(), key=lambda n: n.lineno)


def _free_names(source, path, names):
    """Global names each function in names reads (nested functions and lambdas included)."""
    out = {}

    def walk(table, acc):
        for sym in table.get_symbols():
            if sym.is_global() and sym.is_referenced():
                acc.add(sym.get_name())
        for child in table.get_children():
            walk(child, acc)

    for table in symtable.symtable(source, path, "exec").get_children():
        if table.get_name() in names and table.get_type() == "function":
            acc = out.setdefault(table.get_name(), set())
            walk(table, acc)
    return out


def _exec_file(engine_dir, key, rel, names, env):
    """Executes the named top-level statements of one vLLM file in a fresh module namespace."""
    path = os.path.join(engine_dir, rel)
    with open(path) as f:
        source = f.read()
    tree = ast.parse(source, path)
    mod = types.ModuleType(f"moetune_vllm_peer.{key}")
    mod.__file__ = path  # get_moe_configs finds configs/ beside its __file__, as in vLLM
    mod.__dict__.update(env)
    code = compile(ast.Module(body=_select(tree, names, path), type_ignores=[]), path, "exec")
    exec(code, mod.__dict__)  # line numbers are the file's: Triton reads the kernel from it
    for fn, used in _free_names(source, path, names).items():
        unknown = sorted(n for n in used if n not in mod.__dict__ and not hasattr(builtins, n)
                         and n not in UNREACHED)
        if unknown:
            raise RuntimeError(f"{path}: {fn} uses {unknown}, which vllm_triton/vllm_shims do not "
                               f"provide; the harness mirrors vLLM 0.33.0's fused_moe.py")
    return mod


def _read_manifest(engine):
    """The extracted tree's manifest.json (its schema, engine and version checked), or for an
    installed vllm one made from its package metadata."""
    engine_dir = engine.path
    if engine.origin == "installed vllm":
        import importlib.metadata

        return {"schema_version": kManifestSchema, "engine": "vllm", "files": {},
                "version": importlib.metadata.version("vllm"), "wheel": "installed"}
    path = os.path.join(engine_dir, "manifest.json")
    if not os.path.isdir(engine_dir) or not os.path.isfile(path):
        raise FileNotFoundError(
            f"{engine_dir}: vLLM's extracted kernel is not there (no manifest.json); run "
            f"{FETCH} on a machine that reaches PyPI (or {FETCH} --wheel vllm-0.33.0-*.whl) and "
            f"carry .engines/ to the device, or install vllm")
    with open(path) as f:
        manifest = json.load(f)
    seen = (manifest.get("schema_version"), manifest.get("engine"), manifest.get("version"))
    if seen != (kManifestSchema, "vllm", kMirroredVersion):
        raise RuntimeError(f"{path}: schema/engine/version {seen}, expected "
                           f"({kManifestSchema}, 'vllm', '{kMirroredVersion}'); run {FETCH} "
                           f"--force")
    return manifest


def patch_triton_interpreter():
    """Makes Triton 3.6's interpreter (TRITON_INTERPRET=1) run this kernel; returns what it did.

    Three process-wide patches, each applied only where the installed Triton still has the gap:
    - "numpy24": the interpreter converts 1-element arrays with int(), which numpy >= 2.4 refuses
      ("only 0-dimensional arrays can be converted to Python scalars"); the kernel's
      `range(tl.cdiv(K, BLOCK_SIZE_K))` hits it. Upstream fix triton-lang/triton#9172 (#9171).
    - "bf16_dot": the interpreter stores bf16 as uint16 and its tl.dot multiplies those bit
      patterns (triton-lang/triton#11584; bf16 is unsupported there). bf16 operands are widened to
      fp32 first, exactly, which is what the GPU's bf16 MMA with fp32 accumulation computes up to
      summation order.
    - "bf16_round": the interpreter casts fp32 -> bf16 by truncating the mantissa; the GPU
      (cvt.rn.bf16.f32) rounds to nearest even, which the patch does (NaN stays NaN).
    """
    from triton.runtime import interpreter

    patches = (("numpy24", _patch_numpy24), ("bf16_dot", _patch_bf16_dot),
               ("bf16_round", _patch_bf16_round))
    return [name for name, patch in patches if patch(interpreter)]


def _needs_patch(fn, gap):
    """Whether the installed Triton still has the gap (fn's source holds it), not patched yet."""
    import inspect

    return not getattr(fn, "_moetune_patch", False) and gap in inspect.getsource(fn)


def _patch_numpy24(interpreter):
    """The "numpy24" patch: __index__ squeezes a 1-element array before int(); False if unneeded."""
    patch_tensor = interpreter._patch_lang_tensor
    if not _needs_patch(patch_tensor, "int(self.handle.data))"):
        return False

    def patched_tensor(tensor, scope):
        patch_tensor(tensor, scope)
        scope.set_attr(tensor, "__index__", lambda self: int(self.handle.data.squeeze()))

    patched_tensor._moetune_patch = True
    interpreter._patch_lang_tensor = patched_tensor
    return True


def _patch_bf16_dot(interpreter):
    """The "bf16_dot" patch: tl.dot widens bf16 operands to fp32 first; False if unneeded."""
    import inspect

    import numpy as np
    import triton.language as tl

    builder = interpreter.InterpreterBuilder
    create_dot = builder.create_dot
    if getattr(create_dot, "_moetune_patch", False) or "bfloat16" in inspect.getsource(create_dot):
        return False

    def widen(h):
        if h.dtype != tl.bfloat16:
            return h
        return interpreter.TensorHandle((h.data.astype(np.uint32) << 16).view(np.float32),
                                        tl.float32)

    def patched_dot(self, a, b, d, input_precision, max_num_imprecise_acc):
        return create_dot(self, widen(a), widen(b), d, input_precision, max_num_imprecise_acc)

    patched_dot._moetune_patch = True
    builder.create_dot = patched_dot
    return True


def _patch_bf16_round(interpreter):
    """The "bf16_round" patch: fp32 -> bf16 casts round to nearest even; False if unneeded."""
    import numpy as np
    import triton.language as tl

    builder = interpreter.InterpreterBuilder
    cast_impl = builder.cast_impl
    if not _needs_patch(cast_impl,
                        "_convert_float(src.data, src_element_type, dst_element_type, None)"):
        return False

    def patched_cast(self, src, dst_type):
        if src.dtype.scalar != tl.float32 or dst_type.scalar != tl.bfloat16:
            return cast_impl(self, src, dst_type)
        bits = np.ascontiguousarray(src.data, dtype=np.float32).view(np.uint32)
        nearest_even = ((bits >> 16) & 1) + 0x7FFF
        out = np.where(np.isnan(src.data), np.uint32(0x7FC00000), bits + nearest_even)
        return interpreter.TensorHandle((out >> 16).astype(np.uint16), tl.bfloat16)

    patched_cast._moetune_patch = True
    builder.cast_impl = patched_cast
    return True


def load(engine_dir=None):
    """Loads vLLM's fused-MoE functions from find_engine(engine_dir).

    Returns the fused_moe namespace (a module object) with vLLM's functions, plus: platform (the
    shim current_platform), manifest, engine_dir, engine (find_engine's answer) and
    interpreter_patches. Cached per directory
    and Triton mode (TRITON_INTERPRET is read when the kernel is decorated); in interpreter mode
    it first applies patch_triton_interpreter. Fails naming the fetch script when the directory
    is missing, and naming the file when vLLM's source is not what this harness mirrors.
    """
    import triton
    import triton.language as tl

    engine = find_engine(engine_dir)
    engine_dir = engine.path
    key = (engine_dir, bool(triton.knobs.runtime.interpret))
    if key in _LOADED:
        return _LOADED[key]
    manifest = _read_manifest(engine)
    patches = patch_triton_interpreter() if key[1] else []
    platform = vllm_shims.Platform()
    vllm_shims.install_modules(platform)
    env = {"torch": torch, "triton": triton, "tl": tl, "functools": functools, "json": json,
           "os": os, "cache": functools.cache,
           "re": re,  # vLLM imports the `regex` package as re; stdlib re is the same for [\s/]+
           "Any": typing.Any, "Literal": typing.Literal,
           "envs": vllm_shims.Envs(), "logger": vllm_shims.OnceLogger("moetune.peers.vllm"),
           "current_platform": platform, "ops": vllm_shims.Ops,
           "per_token_group_quant_fp8": vllm_shims.per_token_group_quant_fp8,
           "set_triton_allocator": vllm_shims.set_triton_allocator}
    mods = {}
    for ns, rel, names in EXTRACT:
        mods[ns] = _exec_file(engine_dir, ns, rel, names, env)
        env.update({n: getattr(mods[ns], n) for n in names})
    fm = mods["fused_moe"]
    fm.platform, fm.manifest, fm.engine_dir, fm.engine = platform, manifest, engine_dir, engine
    fm.interpreter_patches = patches
    _LOADED[key] = fm
    return fm


def _act_silu(out, h):
    # vLLM's silu_and_mul: silu(gate) rounded to the dtype, times up, rounded (rows [gate; up]).
    n = h.size(-1) // 2
    torch.mul(torch.nn.functional.silu(h[:, :n]), h[:, n:], out=out)


def _act_relu2(out, h):
    # vLLM's "relu2_no_mul" branch of apply_moe_activation, as it is written there.
    torch.nn.functional.relu(h, inplace=True)
    torch.square(h, out=out)


ACTIVATIONS = {"silu": (True, _act_silu), "relu2": (False, _act_relu2)}


def _cdiv(a, b):
    return -(-a // b)


def _numel(shape):
    n = 1
    for d in shape:
        n *= d
    return n


def _use_platform(engine, device_name, capability):
    """Points the shim platform at a device; drops vLLM's per-process caches of it (vLLM assumes
    one device per process; a harness may hold layers for several)."""
    engine.platform.device_name, engine.platform.capability = device_name, capability
    engine.get_device_name_as_file_name.cache_clear()
    engine.enable_swap_ab.cache_clear()


def engine_config(engine, w1_shape, w2_shape, top_k, M, *, device_name, capability, dtype=None,
                  block_shape=None):
    """The row vLLM runs for M tokens of a layer with these weight shapes on device_name
    (None: no GPU, so no table): the row nearest M of the file VLLM_TUNED_CONFIG_FOLDER holds for
    E, N, dtype and the device, else of the file vLLM ships, else vLLM's get_default_config.
    dtype: vLLM's config dtype string (None for bf16, "fp8_w8a8"); block_shape [bn, bk] or None."""
    _use_platform(engine, device_name, capability)
    engine.get_moe_configs.cache_clear()  # vLLM caches it by (E, N, dtype, block) alone
    E, _, N = w2_shape
    config = engine.try_get_optimal_moe_config(w1_shape, w2_shape, top_k, dtype, int(M),
                                               block_shape=block_shape)
    source, path = "default", None
    bn, bk = block_shape if block_shape else (0, 0)
    if engine.get_moe_configs(E, N, dtype, bn, bk):  # the lookup try_get_... just made (cached)
        name = engine.get_config_file_name(E, N, dtype, block_shape)
        folders = [engine.envs.VLLM_TUNED_CONFIG_FOLDER,
                   os.path.join(os.path.dirname(engine.__file__), "configs")]
        path = next((os.path.join(d, name) for d in folders
                     if d is not None and os.path.exists(os.path.join(d, name))), None)
        source = f"table:{name}"
    return ConfigChoice(dict(config), source, path)


class VllmTritonMoe:
    """One MoE layer run the way vLLM 0.33.0's fused_experts runs it, bf16 or fp8 w8a8.

    w1 [E, N1, K] (silu: rows [gate; up], N1 = 2I; relu2: N1 = I), w2 [E, K, I], unit last
    stride; bf16, or torch.float8_e4m3fn with w1_scale and w2_scale (fp32):
      block_shape [bn, bk] (checkpoints: [128, 128]): w1_scale [E, cdiv(N1, bn), cdiv(K, bk)],
        w2_scale [E, cdiv(K, bn), cdiv(I, bk)]; K and I multiples of bk (vLLM's group quantiser
        asserts it); no a1_scale/a2_scale (vLLM's block path ignores them; refused here);
      block_shape None: per-tensor, w1_scale and w2_scale [E], a1_scale and a2_scale one value
        each (static; vLLM's dynamic per-tensor form, a1_scale None, is not mirrored).
    device_name: the name vLLM's table lookup sees (default: the weights' CUDA device,
    torch.cuda.get_device_name; on the CPU none, so vLLM's default rule). capability: the
    (major, minor) vLLM's platform checks see (default: the weights' CUDA device's; None off the
    GPU); with (9, 0) the fp8 kernel takes vLLM's Hopper SWAP_AB form at BLOCK_SIZE_M < 64.
    Fails with ValueError naming the argument whose shape or dtype is wrong.
    """

    def __init__(self, w1, w2, top_k, activation="silu", device_name=None, engine=None, *,
                 w1_scale=None, w2_scale=None, a1_scale=None, a2_scale=None, block_shape=None,
                 capability=None):
        if activation not in ACTIVATIONS:
            raise ValueError(f"VllmTritonMoe: activation {activation!r}; expected one of "
                             f"{sorted(ACTIVATIONS)}")
        gated, self._act = ACTIVATIONS[activation]
        if w1.dim() != 3 or w2.dim() != 3 or w1.dtype not in (torch.bfloat16, FP8) or \
                w2.dtype != w1.dtype:
            raise ValueError(f"VllmTritonMoe: w1 {tuple(w1.shape)} {w1.dtype}, w2 "
                             f"{tuple(w2.shape)} {w2.dtype}; expected 3-D [E, N1, K], [E, K, I], "
                             f"both bf16 or both float8_e4m3fn")
        E, N1, K = w1.shape
        inter = w2.size(2)
        if w2.size(0) != E or w2.size(1) != K or N1 != (2 * inter if gated else inter):
            raise ValueError(f"VllmTritonMoe: w1 {tuple(w1.shape)}, w2 {tuple(w2.shape)} do not "
                             f"form one {activation} layer (w1 [E, {'2I' if gated else 'I'}, K], "
                             f"w2 [E, K, I])")
        self.w1, self.w2, self.top_k, self.activation = w1, w2, int(top_k), activation
        self.use_fp8_w8a8 = w1.dtype == FP8
        self.block_shape = None if block_shape is None else [int(b) for b in block_shape]
        self.w1_scale, self.w2_scale = w1_scale, w2_scale
        self.a1_scale, self.a2_scale = a1_scale, a2_scale
        self._check_quant_args()
        # vLLM's _get_config_dtype_str: "fp8_w8a8" for use_fp8_w8a8, None for bf16.
        self.config_dtype = "fp8_w8a8" if self.use_fp8_w8a8 else None
        self.engine = engine if engine is not None else load()
        if device_name is None and w1.is_cuda:
            device_name = torch.cuda.get_device_name(w1.device)
        self.device_name = device_name
        if capability is None and w1.is_cuda:
            capability = torch.cuda.get_device_capability(w1.device)
        self.capability = None if capability is None else tuple(capability)
        self._choices = {}

    def _check_quant_args(self):
        E, N1, K = self.w1.shape
        inter = self.w2.size(2)
        given = {n: getattr(self, n) for n in ("w1_scale", "w2_scale", "a1_scale", "a2_scale")}
        if not self.use_fp8_w8a8:
            extra = [n for n, t in given.items() if t is not None]
            if extra or self.block_shape is not None:
                raise ValueError(f"VllmTritonMoe: {extra or ['block_shape']} given with bf16 "
                                 f"weights; scales and block_shape go with float8_e4m3fn w1/w2")
            return
        bs = self.block_shape
        if bs is not None and (len(bs) != 2 or min(bs) <= 0):
            raise ValueError(f"VllmTritonMoe: block_shape {bs}; expected [block_n, block_k] "
                             f"(checkpoints: [128, 128]) or None (per-tensor)")
        if bs is not None:
            want = {"w1_scale": (E, _cdiv(N1, bs[0]), _cdiv(K, bs[1])),
                    "w2_scale": (E, _cdiv(K, bs[0]), _cdiv(inter, bs[1]))}
            extra = [n for n in ("a1_scale", "a2_scale") if given[n] is not None]
            if extra:
                raise ValueError(f"VllmTritonMoe: {extra} given with block_shape {bs}; the "
                                 f"activations' scales are per token per group, computed per call")
            if K % bs[1] or inter % bs[1]:
                raise ValueError(f"VllmTritonMoe: K = {K}, I = {inter} with block_shape {bs}; "
                                 f"both must be multiples of {bs[1]} (vLLM's group quantiser)")
        else:
            want = {"w1_scale": (E,), "w2_scale": (E,), "a1_scale": (1,), "a2_scale": (1,)}
        for name, shape in want.items():
            t = given[name]
            if t is None or t.dtype != torch.float32 or t.numel() != _numel(shape) or \
                    (len(shape) > 1 and tuple(t.shape) != shape) or t.device != self.w1.device:
                seen = "None" if t is None else f"{tuple(t.shape)} {t.dtype} on {t.device}"
                raise ValueError(f"VllmTritonMoe: {name} {seen}; expected {list(shape)} float32 "
                                 f"on {self.w1.device} for fp8 "
                                 f"{'block ' + str(bs) if bs else 'per-tensor'} weights")

    def _use_platform(self):
        _use_platform(self.engine, self.device_name, self.capability)

    def config_for(self, M):
        """vLLM's config for M tokens: its table row nearest M, else its default rule."""
        M = int(M)
        if M not in self._choices:
            self._choices[M] = engine_config(
                self.engine, tuple(self.w1.size()), tuple(self.w2.size()), self.top_k, M,
                device_name=self.device_name, capability=self.capability,
                dtype=self.config_dtype, block_shape=self.block_shape)
        return self._choices[M]

    def prepare(self, topk_ids, config=None):
        """vLLM's _prepare_expert_assignment for topk_ids [M, top_k]: align, or the naive path.

        config: the row to run (BLOCK_SIZE_M/N/K, GROUP_SIZE_M, num_warps, num_stages), as vLLM
        would hand it to the kernel; None = vLLM's own choice, config_for(M).
        """
        M, top_k = topk_ids.shape
        if top_k != self.top_k:
            raise ValueError(f"VllmTritonMoe.prepare: topk_ids {tuple(topk_ids.shape)}, "
                             f"expected top_k = {self.top_k}")
        config = self.config_for(M).config if config is None else dict(config)
        sorted_ids, expert_ids, post_padded = self.engine._prepare_expert_assignment(
            topk_ids, config, M, top_k, self.w1.size(0), None, block_shape=self.block_shape,
            ignore_invalid_experts=True,
            weights_host_resident=self.engine._weights_host_resident(self.w1, self.w2))
        return Prepared(sorted_ids, expert_ids, post_padded, config, M)

    def quantize(self, a, a_scale):
        """vLLM's moe_kernel_quantize_input for one GEMM's input a [rows, cols] bf16: (q, scale).

        fp8 block: q e4m3 [rows, cols], scale [rows, cols / block_k] fp32 (a_scale ignored, as
        vLLM); fp8 per-tensor: q e4m3 and a_scale itself; bf16: (a, None). No host sync.
        """
        quant_dtype = self.engine.platform.fp8_dtype() if self.use_fp8_w8a8 else None
        return self.engine.moe_kernel_quantize_input(
            A=a, A_scale=a_scale, quant_dtype=quant_dtype, per_act_token_quant=False,
            block_shape=self.block_shape)

    def run(self, x, topk_weights, topk_ids, prepared, poison=None):
        """out [M, K] = sum_j topk_weights[m, j] * w2[e] @ act(w1[e] @ x[m]); no host sync.

        x and out are bf16 (fp8 layers quantise x and the intermediate per call, as vLLM).
        poison: a value the intermediate buffers are filled with first (a check passes NaN, so an
        element no kernel wrote reaches the output as NaN); None, as vLLM, leaves them as found.
        """
        eng, w1, w2 = self.engine, self.w1, self.w2
        M, top_k = topk_ids.shape
        if x.size(0) != M or prepared.num_tokens != M or topk_weights.shape != topk_ids.shape:
            raise ValueError(f"VllmTritonMoe.run: x {tuple(x.shape)}, topk_weights "
                             f"{tuple(topk_weights.shape)}, topk_ids {tuple(topk_ids.shape)}, "
                             f"prepared for M = {prepared.num_tokens}; all must share M")
        if x.dtype != torch.bfloat16 or not x.is_contiguous() or x.size(1) != w1.size(2):
            raise ValueError(f"VllmTritonMoe.run: x {tuple(x.shape)} {x.dtype} contiguous="
                             f"{x.is_contiguous()}; expected contiguous [M, {w1.size(2)}] "
                             f"torch.bfloat16")
        self._use_platform()  # enable_swap_ab reads the capability at launch
        _, N, _ = w1.shape
        K = w2.size(1)
        # As fused_experts_impl: cache1 and cache3 share memory, cache2 is apart.
        cache13 = torch.empty(M * top_k * max(N, K), device=x.device, dtype=x.dtype)
        cache1 = cache13[: M * top_k * N].view(M, top_k, N)
        cache3 = cache13[: M * top_k * K].view(M, top_k, K)
        cache2 = torch.empty((M * top_k, w2.size(2)), device=x.device, dtype=x.dtype)
        out = torch.empty_like(x)
        if poison is not None:
            cache13.fill_(poison)
            cache2.fill_(poison)
        launch = dict(compute_type=eng.tl.bfloat16, use_fp8_w8a8=self.use_fp8_w8a8,
                      use_int8_w8a8=False, use_int8_w8a16=False, use_int4_w4a16=False,
                      per_channel_quant=False, block_shape=self.block_shape)
        ids = (prepared.sorted_token_ids, prepared.expert_ids, prepared.num_tokens_post_padded)
        qx, a1q_scale = self.quantize(x, self.a1_scale)
        eng.dispatch_fused_moe_kernel(qx, w1, cache1, a1q_scale, self.w1_scale, None,
                                      topk_weights, *ids, False, top_k, prepared.config,
                                      B_bias=None, **launch)
        self._act(cache2, cache1.view(-1, N))
        qh, a2q_scale = self.quantize(cache2, self.a2_scale)
        eng.dispatch_fused_moe_kernel(qh, w2, cache3, a2q_scale, self.w2_scale, None,
                                      topk_weights, *ids, True, 1, prepared.config, B_bias=None,
                                      **launch)
        torch.sum(cache3, dim=1, out=out)  # vLLM's ops.moe_sum(cache3, out)
        return out

