"""The triton_vllm family's rules: vLLM's tuner space, Triton's limits, and the two spellings of
one config (our MoeConfig JSON and vLLM's six-field row).

A config of this family is uniform: vLLM reads one row for both GEMMs, so gemm1 == gemm2 and
the row is gemm1's BLOCK_SIZE_M/N/K, GROUP_SIZE_M, num_warps, num_stages. The rules are mirrored
in C++ (src/kernels/triton/triton_vllm_backend.cpp: lint and resolve need them without Python);
tests/kernels/triton/triton_vllm_cases.json holds the cases both must answer alike.

Problems: bf16 layers, and fp8 w8a8 ones (problem "quant", core's Quant) as vLLM 0.33.0's
fused_experts runs them with use_fp8_w8a8: e4m3 weights and activations, fp32 scales, bf16 x and
output. "fp8_block": 128 x 128 weight blocks, activations quantised per token per 128 channels
(DeepSeek-V3, Qwen3 FP8); "fp8_tensor": one scale per expert and static input scales a1/a2
(Mixtral-style). What changes for the kernel (fused_moe_kernel, invoke_fused_moe_triton_kernel):
  - block: the launcher cuts BLOCK_SIZE_K to the group, min(BLOCK_SIZE_K, 128), and the kernel
    loads one activation and one weight scale per K step (k * BLOCK_SIZE_K // 128), so every K
    tile lies in one group; weight scales are read per output column (offs_bn // 128), so any
    BLOCK_SIZE_N is right;
  - on sm_90 (enable_swap_ab) a tile with BLOCK_SIZE_M < 64 and BLOCK_SIZE_N >= 64 runs as
    B x A^T, so its MMA's M is BLOCK_SIZE_N;
  - Triton 3.6 has no e4m3 (fp8e4nv) below sm_89, and tl.dot on 8-bit operands needs K >= 32.

Search space (space()): vLLM 0.33.0's CUDA tuner space (benchmarks/kernels/benchmark_moe.py,
get_configs_compute_bound): BLOCK_SIZE_M {16..256} x BLOCK_SIZE_N {32..256} x BLOCK_SIZE_K
{64, 128, 256} x GROUP_SIZE_M {1, 16, 32, 64} x num_warps {4, 8} x num_stages {2..5}; for
fp8_block filtered as that tuner filters it for a block shape (BLOCK_SIZE_K and BLOCK_SIZE_N
multiples of the block's 128, as read in vllm-project/vllm's repository: that file is not in
the 0.33.0 wheel), ordered nearest the default rule's row first (prior_distance; product order among
equals: a budget that stops the tuner's screening early then has searched a ball around vLLM's
own choice for this M, not only the smallest BLOCK_SIZE_M; for fp8_block at M <= 8 that row's
BLOCK_SIZE_N 64 is outside the filtered space, and is measured as the search's incumbent), less
what is equivalent to a config kept:
  - BLOCK_SIZE_N above next_pow2(max(N1, K)), BLOCK_SIZE_K above next_pow2(max(K, I)): the same
    tiles with more masked work, in both GEMMs (only tiny shapes lose any);
  - fp8_block: BLOCK_SIZE_K 256, which the launcher runs as 128 (so its space is BLOCK_SIZE_K
    128, BLOCK_SIZE_N 128 or 256: at most 320 rows);
  - GROUP_SIZE_M values at or above the grid's M-blocks (num_pid_m, from vLLM's buffer sizes)
    but the smallest: the kernel's raster is then the same program order for all of them;
  - on arch "cpu" (Triton's interpreter, which runs programs one after another in numpy)
    num_warps, num_stages and GROUP_SIZE_M have no effect: they keep the default rule's values.
Limits (feasible()): block sizes powers of two >= 16 (tl.arange, tl.dot); num_warps 4 or 8;
num_stages >= 1; GROUP_SIZE_M >= 1; split_k 1 (vLLM 0.33.0 launches SPLIT_K = 1 whatever a
row says); our launch knobs at their defaults; gemm1 == gemm2; bf16 with silu or relu2; fp8:
an arch of sm_89 or later and a launched BLOCK_SIZE_K >= 32; shared memory (smem_bytes) within
the device's per-block limit.
Default (default_row): vLLM 0.33.0's get_default_config for the problem's dtype string and block
shape (bf16: None; fp8: "fp8_w8a8", block [128, 128] for fp8_block).
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
QUANTS = ("none", "fp8_block", "fp8_tensor")  # core::Quant's spellings
kMinBlock = 16  # tl.dot's smallest M, N and K
kBf16Bytes = 2
kFp8Bytes = 1
kFp32Bytes = 4
kFp8Group = 128  # fp8_block: 128 x 128 weight blocks, 1 x 128 activation groups
kFp8MinBlockK = 32  # Triton 3.6's min_dot_size for 8-bit operands (backends/nvidia/compiler.py)
kFp8MinSm = 89  # Triton 3.6 gives fp8e4nv (e4m3) to sm_89 and later only
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


def quant(problem):
    """The problem's quantisation: "none" (bf16), "fp8_block" or "fp8_tensor"."""
    return problem.get("quant", "none")


def sm_of(arch):
    """arch's compute capability as one number (sm_90a -> 90; "cpu", the interpreter, is judged
    as sm_90, so a row tuned there still fits a Hopper); 0 when arch names none."""
    if arch == "cpu":
        return 90
    digits = arch[3:].rstrip("a") if arch.startswith("sm_") else ""
    return int(digits) if digits.isdigit() else 0


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


def launched_block_k(q, row):
    """The BLOCK_SIZE_K vLLM launches for quantisation q: fp8_block cuts it to the group."""
    return min(row["BLOCK_SIZE_K"], kFp8Group) if q == "fp8_block" else row["BLOCK_SIZE_K"]


def swap_ab(q, row, sm):
    """vLLM's enable_swap_ab: an fp8 launch on sm_90 with BLOCK_SIZE_M < 64 and BLOCK_SIZE_N
    >= 64 runs B x A^T (its MMA's M is then BLOCK_SIZE_N)."""
    return q != "none" and sm == 90 and row["BLOCK_SIZE_M"] < 64 and row["BLOCK_SIZE_N"] >= 64


def smem_buffers(arch, row, q="none"):
    """Operand buffers Triton 3.6's pipeliner allocates: num_stages where Hopper's wgmma reads
    the operands from shared memory (sm_90 with an MMA M of 64 or more: BLOCK_SIZE_M >= 64, or
    a swapped fp8 tile), one fewer where mma.sync loads them to registers first (found by
    compiling the kernel for sm_80, sm_89 and sm_90)."""
    stages = row["num_stages"]
    wgmma = sm_of(arch) == 90 and (row["BLOCK_SIZE_M"] >= 64 or swap_ab(q, row, 90))
    return stages if wgmma else max(stages - 1, 1)


def smem_bytes(arch, row, q="none"):
    """Shared memory of one block of vLLM's kernel as Triton 3.6 allocates it, for quantisation
    q: the larger of
      - the operand buffers, smem_buffers x (BLOCK_SIZE_M + BLOCK_SIZE_N) x the launched
        BLOCK_SIZE_K elements of 2 bytes (bf16) or 1 (fp8), plus for fp8_block the layout
        conversion of its per-row and per-column fp32 scale vectors inside the K loop,
        4 x max(BLOCK_SIZE_M, BLOCK_SIZE_N) bytes once that length reaches one element per
        thread (32 x num_warps; shorter vectors move within warps);
      - the epilogue's C tile, BLOCK_SIZE_M x BLOCK_SIZE_N bf16 for fp8 too: the accumulator is
        cast to bf16 (compute_type) before its layout conversion and store, so that tile does
        not shrink with the operands. It is an upper bound: Triton allocated it in full in one
        fp8 row compiled (sm_89, m128n64k64s2: 16384 bytes over 12800 of operands) and less
        in the others where it exceeds the operands.
    Checked against Triton 3.6's compiler for GEMM1 of one shape (K 2048, I 768, E 128, M 256)
    on sm_89 and sm_90, both quantisations: 144 rows each (BLOCK_SIZE_M 16-128, every
    BLOCK_SIZE_N and BLOCK_SIZE_K, 2-4 stages, 4 warps) and a sample at 8 warps took exactly
    this, or less where the epilogue tile is the larger term; tests/python/test_triton_pool.py
    keeps a sample of them."""
    bm, bn = row["BLOCK_SIZE_M"], row["BLOCK_SIZE_N"]
    elem = kBf16Bytes if q == "none" else kFp8Bytes
    operands = smem_buffers(arch, row, q) * (bm + bn) * launched_block_k(q, row) * elem
    longest = max(bm, bn)
    if q == "fp8_block" and longest >= 32 * row["num_warps"]:
        operands += kFp32Bytes * longest
    return max(operands, bm * bn * kBf16Bytes)


def default_row(problem):
    """vLLM 0.33.0's get_default_config on CUDA (the C++ mirror's rule; the worker asks the
    engine's own function, and tests compare the two): fp8_block its block rule; bf16 and
    fp8_tensor its general rule, whose BLOCK_SIZE_K is 128 at every M for fp8."""
    M, E = problem["num_tokens"], problem["num_experts"]
    if quant(problem) == "fp8_block":
        return {"BLOCK_SIZE_M": 16 if M <= 64 else 64, "BLOCK_SIZE_N": 64 if M <= 8 else 128,
                "BLOCK_SIZE_K": kFp8Group, "GROUP_SIZE_M": 1 if M <= 16 else 32,
                "num_warps": 4, "num_stages": 4 if M <= 4 else 3}
    block_m = 16 if M <= 32 else 32 if M <= 96 else 64 if M <= 512 else 128
    return {"BLOCK_SIZE_M": block_m, "BLOCK_SIZE_N": 64 if M <= 64 else 128,
            "BLOCK_SIZE_K": 128 if M <= 64 or quant(problem) == "fp8_tensor" else 64,
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
    # fp8_block: benchmark_moe.py's filter (multiples of the group), less BLOCK_SIZE_K 256,
    # which the launcher runs as 128.
    block = quant(problem) == "fp8_block"
    block_ns = [bn for bn in SPACE["BLOCK_SIZE_N"]
                if bn <= cap_n and (not block or bn % kFp8Group == 0)]
    block_ks = [bk for bk in SPACE["BLOCK_SIZE_K"]
                if bk <= cap_k and (not block or bk == kFp8Group)]
    interpreted = problem.get("arch") == "cpu"
    out = []
    for bm in SPACE["BLOCK_SIZE_M"]:
        blocks = num_m_blocks(problem, bm)
        groups = [g for g in SPACE["GROUP_SIZE_M"] if g < blocks]
        groups += [g for g in SPACE["GROUP_SIZE_M"] if g >= blocks][:1]
        for bn in block_ns:
            for bk in block_ks:
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
    """"" when this family runs problem's dtype, activation and quantisation on its arch, else
    why not."""
    if problem.get("dtype", "bf16") != "bf16":
        return _bad("problem.dtype", problem["dtype"], "is not run by triton_vllm (bf16 only); "
                    "tune a bf16 problem")
    if problem["activation"] not in ACTIVATIONS:
        return _bad("problem.activation", problem["activation"],
                    "is not run by triton_vllm (silu or relu2); use silu or relu2")
    q, arch = quant(problem), problem.get("arch", "sm_90a")
    if q not in QUANTS:
        return _bad("problem.quant", q, "is not run by triton_vllm; use none, fp8_block or "
                    "fp8_tensor")
    if q != "none" and 0 < sm_of(arch) < kFp8MinSm:
        return _bad("problem.arch", arch, f"has no e4m3 (fp8e4nv) in Triton, which needs "
                    f"sm_{kFp8MinSm} or later; tune the {q} layer on an sm_89 or sm_90 GPU")
    return ""


def _tile_reason(k, q):
    """"" when one GEMM's tile and pipeline are vLLM's kernel's to run for quantisation q,
    else why not (feasible's form)."""
    for field in ("block_m", "block_n", "block_k"):
        v = k["tile"][field]
        if v < kMinBlock or v & (v - 1):
            return _bad("gemm1.tile." + field, v, "is not a power of two >= 16 (tl.arange needs "
                        "a power of two, tl.dot at least 16); use 16, 32, 64, 128 or 256")
    if q != "none" and k["tile"]["block_k"] < kFp8MinBlockK:
        return _bad("gemm1.tile.block_k", k["tile"]["block_k"], "is below 32, the smallest K "
                    "of Triton's tl.dot on 8-bit (fp8) operands; use 32, 64, 128 or 256")
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
    why = _tile_reason(config["gemm1"], quant(problem))
    if why:
        return why
    row = row_of(config)
    need = smem_bytes(arch, row, quant(problem))
    if need > smem_limit:
        return (f"shared memory = {need} bytes for {short(row)} on {arch} exceeds the "
                f"{smem_limit} a block may use; use fewer stages or smaller tiles")
    return ""
