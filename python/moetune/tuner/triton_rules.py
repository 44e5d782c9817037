"""The triton_vllm family's rules: vLLM's tuner space, Triton's limits, and the two spellings of
one config (our MoeConfig JSON and vLLM's six-field row).

A config of this family is uniform: vLLM reads one row for both GEMMs, so gemm1 == gemm2 and
the row is gemm1's BLOCK_SIZE_M/N/K, GROUP_SIZE_M, num_warps, num_stages. The rules are mirrored
in C++ (src/kernels/triton/triton_vllm_backend.cpp: lint and resolve need them without Python);
tests/kernels/triton/triton_vllm_cases.json holds the cases both must answer alike.

Search space (space()): vLLM 0.33.0's CUDA tuner space (benchmarks/kernels/benchmark_moe.py,
get_configs_compute_bound): BLOCK_SIZE_M {16..256} x BLOCK_SIZE_N {32..256} x BLOCK_SIZE_K
{64, 128, 256} x GROUP_SIZE_M {1, 16, 32, 64} x num_warps {4, 8} x num_stages {2..5}, ordered
nearest the default rule's row first (prior_distance; product order among equals: a budget that
stops the tuner's screening early then has searched a ball around vLLM's own choice for this M,
not only the smallest BLOCK_SIZE_M), less what is equivalent to a config kept:
  - BLOCK_SIZE_N above next_pow2(max(N1, K)), BLOCK_SIZE_K above next_pow2(max(K, I)): the same
    tiles with more masked work, in both GEMMs (only tiny shapes lose any);
  - GROUP_SIZE_M values at or above the grid's M-blocks (num_pid_m, from vLLM's buffer sizes)
    but the smallest: the kernel's raster is then the same program order for all of them;
  - on arch "cpu" (Triton's interpreter, which runs programs one after another in numpy)
    num_warps, num_stages and GROUP_SIZE_M have no effect: they keep the default rule's values.
Limits (feasible()): block sizes powers of two >= 16 (tl.arange, tl.dot); num_warps 4 or 8;
num_stages >= 1; GROUP_SIZE_M >= 1; split_k 1 (vLLM 0.33.0 launches SPLIT_K = 1 whatever a
row says); our launch knobs at their defaults; gemm1 == gemm2; bf16 with silu or relu2; shared
memory (smem_bytes) within the device's per-block limit.
"""

FAMILY = "triton_vllm"
FAMILY_VERSION = 1
BACKEND = "triton"

ROW_FIELDS = ("BLOCK_SIZE_M", "BLOCK_SIZE_N", "BLOCK_SIZE_K", "GROUP_SIZE_M", "num_warps",
              "num_stages")
SPACE = {
    "BLOCK_SIZE_M": [16, 32, 64, 128, 256],
    "BLOCK_SIZE_N": [32, 64, 128, 256],
    "BLOCK_SIZE_K": [64, 128, 256],
    "GROUP_SIZE_M": [1, 16, 32, 64],
    "num_warps": [4, 8],
    "num_stages": [2, 3, 4, 5],
}
ACTIVATIONS = ("silu", "relu2")  # what moetune.engines.vllm_triton runs (vLLM's bf16 paths)
kMinBlock = 16  # tl.dot's smallest M, N and K
kBf16Bytes = 2
# Shared memory one block may use (cudaDevAttrMaxSharedMemoryPerBlockOptin), by arch. "cpu" (the
# interpreter, which has no limit) is judged as sm_90, so a row tuned there still fits a Hopper.
kSmemLimitBytes = {
    "sm_80": 166912, "sm_86": 101376, "sm_87": 166912, "sm_89": 101376, "sm_90": 232448,
    "sm_90a": 232448, "cpu": 232448,
}

_TILE = {"block_m": 64, "block_n": 64, "block_k": 64, "group_m": 1}
_PIPELINE = {"num_warps": 4, "num_stages": 2, "split_k": 1}
_LAUNCH = {"swap_ab": False, "cluster_m": 1, "cluster_n": 1, "schedule": "auto", "num_threads": 0}


def next_pow2(n):
    return 1 << max(int(n) - 1, 0).bit_length()


def cdiv(a, b):
    return -(-a // b)


def gemm1_n(problem):
    return (2 if problem["activation"] == "silu" else 1) * problem["intermediate_size"]


def kernel_config(d=None):
    """One GEMM's config with every field (absent fields take core's defaults, as C++ reads)."""
    d = d or {}
    return {"tile": {**_TILE, **d.get("tile", {})},
            "pipeline": {**_PIPELINE, **d.get("pipeline", {})},
            "launch": {**_LAUNCH, **d.get("launch", {})}}


def moe_config(d):
    """A MoeConfig JSON object with every field; gemm2 absent = gemm1 (core's reading)."""
    g1 = kernel_config(d.get("gemm1"))
    return {"gemm1": g1, "gemm2": kernel_config(d["gemm2"]) if "gemm2" in d else g1}


def config_of_row(row):
    """vLLM's row (six fields; SPLIT_K and others ignored) as a uniform MoeConfig."""
    k = kernel_config({"tile": {"block_m": row["BLOCK_SIZE_M"], "block_n": row["BLOCK_SIZE_N"],
                                "block_k": row["BLOCK_SIZE_K"], "group_m": row["GROUP_SIZE_M"]},
                       "pipeline": {"num_warps": row["num_warps"],
                                    "num_stages": row["num_stages"]}})
    return {"gemm1": k, "gemm2": kernel_config(k)}


def row_of(config):
    """The vLLM row of a MoeConfig: gemm1's six fields."""
    t, p = config["gemm1"]["tile"], config["gemm1"]["pipeline"]
    return {"BLOCK_SIZE_M": t["block_m"], "BLOCK_SIZE_N": t["block_n"],
            "BLOCK_SIZE_K": t["block_k"], "GROUP_SIZE_M": t["group_m"],
            "num_warps": p["num_warps"], "num_stages": p["num_stages"]}


def short(row):
    """m64n128k64g1w4s3, as core's short_string writes a uniform config."""
    return "m{BLOCK_SIZE_M}n{BLOCK_SIZE_N}k{BLOCK_SIZE_K}g{GROUP_SIZE_M}w{num_warps}" \
           "s{num_stages}".format(**row)


def num_m_blocks(problem, block_m):
    """The kernel grid's M-blocks (num_pid_m) vLLM launches for M = num_tokens: cdiv(EM, BM),
    EM from _prepare_expert_assignment, moe_align_block_size's buffer size and
    invoke_fused_moe_triton_kernel's small-batch cut."""
    M, top_k, E = problem["num_tokens"], problem["top_k"], problem["num_experts"]
    pairs = M * top_k
    if pairs * 4 <= E:  # vLLM's naive assignment: one block per (token, expert) pair
        return pairs
    em = pairs + E * (block_m - 1)
    if pairs < E:
        em = min(pairs * block_m, em)
    if M < block_m:
        em = min(em, pairs * block_m)
    return cdiv(em, block_m)


def smem_buffers(arch, row):
    """Operand buffers Triton 3.6's pipeliner allocates: num_stages where Hopper's wgmma reads
    the operands from shared memory (sm_90, BLOCK_SIZE_M >= 64), one fewer where mma.sync loads
    them to registers first (found by compiling the kernel for sm_80 and sm_90). "cpu" (the
    interpreter) is judged as sm_90, so a row tuned there still fits a Hopper."""
    stages = row["num_stages"]
    wgmma = (arch.startswith("sm_90") or arch == "cpu") and row["BLOCK_SIZE_M"] >= 64
    return stages if wgmma else max(stages - 1, 1)


def smem_bytes(arch, row):
    """Shared memory of one block: the pipeline's A and B tiles, or the epilogue's C tile."""
    bm, bn, bk = row["BLOCK_SIZE_M"], row["BLOCK_SIZE_N"], row["BLOCK_SIZE_K"]
    return max(smem_buffers(arch, row) * (bm + bn) * bk, bm * bn) * kBf16Bytes


def default_row(problem):
    """vLLM 0.33.0's get_default_config for bf16 (the C++ mirror's rule; the worker asks the
    engine's own function, and tests compare the two)."""
    M, E = problem["num_tokens"], problem["num_experts"]
    block_m = 16 if M <= 32 else 32 if M <= 96 else 64 if M <= 512 else 128
    return {"BLOCK_SIZE_M": block_m, "BLOCK_SIZE_N": 64 if M <= 64 else 128,
            "BLOCK_SIZE_K": 128 if M <= 64 else 64,
            "GROUP_SIZE_M": 16 if M // max(E, 1) > 128 else 1,
            "num_warps": 4 if M <= 128 else 8, "num_stages": 4 if M <= 32 else 3}


def _log2(n):
    return int(n).bit_length() - 1


def prior_distance(row, default):
    """How far row is from the default rule's row: steps of a power of two in each block size
    and num_warps, one per stage, one for another GROUP_SIZE_M."""
    return (sum(abs(_log2(row[f]) - _log2(default[f])) for f in
                ("BLOCK_SIZE_M", "BLOCK_SIZE_N", "BLOCK_SIZE_K", "num_warps")) +
            abs(row["num_stages"] - default["num_stages"]) +
            (row["GROUP_SIZE_M"] != default["GROUP_SIZE_M"]))


def space(problem, default=None):
    """The rows to search for problem (M = num_tokens), nearest the default row first, then in
    vLLM's product order; see the module docstring for what is left out. default: the row the
    search centres on (the worker passes the row vLLM runs without our file; None: the default
    rule's row; arch "cpu" keeps its num_warps, num_stages and GROUP_SIZE_M)."""
    default = default or default_row(problem)
    cap_n = max(SPACE["BLOCK_SIZE_N"][0],
                next_pow2(max(gemm1_n(problem), problem["hidden_size"])))
    cap_k = max(SPACE["BLOCK_SIZE_K"][0],
                next_pow2(max(problem["hidden_size"], problem["intermediate_size"])))
    interpreted = problem.get("arch") == "cpu"
    out = []
    for bm in SPACE["BLOCK_SIZE_M"]:
        blocks = num_m_blocks(problem, bm)
        groups = [g for g in SPACE["GROUP_SIZE_M"] if g < blocks]
        groups += [g for g in SPACE["GROUP_SIZE_M"] if g >= blocks][:1]
        for bn in SPACE["BLOCK_SIZE_N"]:
            for bk in SPACE["BLOCK_SIZE_K"]:
                if bn > cap_n or bk > cap_k:
                    continue
                if interpreted:
                    out.append(dict(default, BLOCK_SIZE_M=bm, BLOCK_SIZE_N=bn, BLOCK_SIZE_K=bk))
                    continue
                for g in groups:
                    for w in SPACE["num_warps"]:
                        for s in SPACE["num_stages"]:
                            out.append({"BLOCK_SIZE_M": bm, "BLOCK_SIZE_N": bn,
                                        "BLOCK_SIZE_K": bk, "GROUP_SIZE_M": g, "num_warps": w,
                                        "num_stages": s})
    return sorted(out, key=lambda r: prior_distance(r, default))  # stable: product order kept


def _bad(field, value, why):
    return f"{field} = {value} {why}"


def unsupported_problem(problem):
    """"" when this family runs problem's dtype and activation, else why not."""
    if problem.get("dtype", "bf16") != "bf16":
        return _bad("problem.dtype", problem["dtype"], "is not run by triton_vllm (bf16 only); "
                    "tune a bf16 problem")
    if problem["activation"] not in ACTIVATIONS:
        return _bad("problem.activation", problem["activation"],
                    "is not run by triton_vllm (silu or relu2); use silu or relu2")
    return ""


def feasible(problem, config, smem_limit=None):
    """"" when this family can run config for problem, else the first reason (core's
    can_implement form: "<field> = <value> <why>; <what to do>"). smem_limit: the device's
    bytes per block (None: kSmemLimitBytes of problem's arch)."""
    arch = problem.get("arch", "sm_90a")
    why = unsupported_problem(problem)
    if why:
        return why
    if smem_limit is None:
        if arch not in kSmemLimitBytes:
            return _bad("problem.arch", arch, "has no shared-memory limit known to triton_vllm; "
                        "use one of " + ", ".join(sorted(kSmemLimitBytes)))
        smem_limit = kSmemLimitBytes[arch]
    config = moe_config(config)
    if config["gemm2"] != config["gemm1"]:
        return "gemm2 differs from gemm1; vLLM reads one row for both GEMMs: set gemm2 to gemm1"
    k = config["gemm1"]
    for field in ("block_m", "block_n", "block_k"):
        v = k["tile"][field]
        if v < kMinBlock or v & (v - 1):
            return _bad("gemm1.tile." + field, v, "is not a power of two >= 16 (tl.arange needs "
                        "a power of two, tl.dot at least 16); use 16, 32, 64, 128 or 256")
    if k["tile"]["group_m"] < 1:
        return _bad("gemm1.tile.group_m", k["tile"]["group_m"], "is below 1; use 1, 16, 32 or 64")
    if k["pipeline"]["num_warps"] not in (4, 8):
        return _bad("gemm1.pipeline.num_warps", k["pipeline"]["num_warps"],
                    "is not 4 or 8 (vLLM's tuner space); use 4 or 8")
    if k["pipeline"]["num_stages"] < 1:
        return _bad("gemm1.pipeline.num_stages", k["pipeline"]["num_stages"],
                    "is below 1; use 2, 3, 4 or 5")
    if k["pipeline"]["split_k"] != 1:
        return _bad("gemm1.pipeline.split_k", k["pipeline"]["split_k"],
                    "is ignored: vLLM 0.33.0 launches with SPLIT_K = 1; use 1")
    for field, allowed in _LAUNCH.items():
        if k["launch"][field] != allowed:
            shown = {True: "1", False: "0"}.get(k["launch"][field], k["launch"][field])
            return _bad("gemm1.launch." + field, shown, "is a knob triton_vllm does not have "
                        f"(allowed: {({True: '1', False: '0'}).get(allowed, allowed)}); "
                        "set it back")
    row = row_of(config)
    need = smem_bytes(arch, row)
    if need > smem_limit:
        return (f"shared memory = {need} bytes for {short(row)} on {arch} exceeds the "
                f"{smem_limit} a block may use; use fewer stages or smaller tiles")
    return ""
