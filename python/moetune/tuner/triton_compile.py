"""Compiles the rows of a triton_vllm table with vLLM's own kernel for a GPU arch, on any machine
(Triton's compiler and its bundled ptxas; no GPU needed), and checks each fits the arch's shared
memory. The tuner's rows pass triton_rules.feasible (a rule) before they are written; this is
the compiler's word on the same rows.

    python -m moetune.tuner.triton_compile TABLE.json [--arch sm_90a]

Each row is compiled twice, as vLLM launches it for the table's shape at that row's M: GEMM1
(x @ w1^T) and GEMM2 (act @ w2^T with the routed weights), with the argument specialization a
real launch gets (strides of 1 as constants, values divisible by 16 marked so). An fp8 table
(the manifest's dtype_tag fp8_w8a8, with block_shape for fp8_block) compiles vLLM's fp8 launch:
e4m3 operands, fp32 scales with their strides, BLOCK_SIZE_K cut to the 128 group for block
scales, and SWAP_AB where vLLM's enable_swap_ab sets it on sm_90. Exit 0 when every row compiles
within the limit, 1 otherwise (one line per failing row), 2 on bad input.
"""

import argparse
import concurrent.futures
import functools
import json
import os
import sys

from . import triton_pool, triton_rules

_POINTERS = {"a_ptr": "*bf16", "b_ptr": "*bf16", "c_ptr": "*bf16", "topk_weights_ptr": "*fp32",
             "sorted_token_ids_ptr": "*i32", "expert_ids_ptr": "*i32",
             "num_tokens_post_padded_ptr": "*i32"}
# fp8 w8a8: e4m3 operands and fp32 scales (the output stays bf16).
_FP8_POINTERS = {"a_ptr": "*fp8e4nv", "b_ptr": "*fp8e4nv", "a_scale_ptr": "*fp32",
                 "b_scale_ptr": "*fp32"}


def _scale_strides(problem, n, k):
    """stride_asm/ask/bse/bsk/bsn as vLLM passes them: block, the activations' [rows, k/128] and
    the weights' [E, n/128, k/128] scales (bsn 0 where n has one group); per-tensor, a1 [1] and
    w [E]; bf16, none."""
    quant, g = triton_rules.quant(problem), triton_rules.kFp8Group
    if quant == "fp8_block":
        groups_n = triton_rules.cdiv(n, g)
        return dict(stride_asm=k // g, stride_ask=1, stride_bse=groups_n * (k // g),
                    stride_bsk=1, stride_bsn=k // g if groups_n > 1 else 0)
    return dict(stride_asm=0, stride_ask=0, stride_bse=1 if quant == "fp8_tensor" else 0,
                stride_bsk=0, stride_bsn=0)


def launch_args(problem, row, gemm, capability=90):
    """The integer arguments and constexprs vLLM's invoke_fused_moe_triton_kernel passes (fp8:
    its group sizes, BLOCK_SIZE_K cut to the group, SWAP_AB on sm_90 as enable_swap_ab says)."""
    M, K, I = problem["num_tokens"], problem["hidden_size"], problem["intermediate_size"]
    E, top_k = problem["num_experts"], problem["top_k"]
    n1 = triton_rules.gemm1_n(problem)
    bm, pairs = row["BLOCK_SIZE_M"], M * top_k
    naive = pairs * 4 <= E  # vLLM's align-free path: one block per (token, expert) pair
    if naive:
        em = pairs * bm
    else:  # moe_align_block_size's buffer, then invoke_fused_moe_triton_kernel's small-M cut
        em = pairs + E * (bm - 1)
        if pairs < E:
            em = min(pairs * bm, em)
        if M < bm:
            em = min(em, pairs * bm)
    n, k = (n1, K) if gemm == 1 else (K, I)
    quant = triton_rules.quant(problem)
    fp8, group = quant != "none", triton_rules.kFp8Group if quant == "fp8_block" else 0
    ints = dict(N=n, K=k, EM=em, num_valid_tokens=M * top_k, stride_am=k, stride_ak=1,
                stride_be=n * k, stride_bk=1, stride_bn=k, stride_cm=n, stride_cn=1,
                stride_bbe=0, stride_bbn=0, **_scale_strides(problem, n, k))
    constexprs = dict(group_n=group, group_k=group, naive_block_assignment=naive, SPLIT_K=1,
                      MUL_ROUTED_WEIGHT=gemm == 2, top_k=top_k if gemm == 1 else 1,
                      use_fp8_w8a8=fp8, use_int8_w8a8=False, use_int8_w8a16=False,
                      per_channel_quant=False, HAS_BIAS=False,
                      SWAP_AB=triton_rules.swap_ab(quant, row, capability), USE_TD=False,
                      b_bias_ptr=None, BLOCK_SIZE_M=row["BLOCK_SIZE_M"],
                      BLOCK_SIZE_N=row["BLOCK_SIZE_N"],
                      BLOCK_SIZE_K=triton_rules.launched_block_k(quant, row),
                      GROUP_SIZE_M=row["GROUP_SIZE_M"])
    if not fp8:
        constexprs.update(a_scale_ptr=None, b_scale_ptr=None)
    return ints, constexprs


def specialization(engine, problem, row, gemm, capability):
    """vLLM's launch of row's GEMM (1 or 2) as Triton's JIT specializes it, serialized as
    JITFunction.preload reads it (triton_pool compiles it)."""
    import triton.language as tl
    from triton.backends.compiler import GPUTarget
    from triton.compiler.compiler import make_backend
    from triton.runtime.jit import serialize_specialization_data

    kernel = engine.fused_moe_kernel
    ints, constexprs = launch_args(problem, row, gemm, capability)
    constexprs["compute_type"] = tl.bfloat16
    fp8 = triton_rules.quant(problem) != "none"
    pointers = dict(_POINTERS, **(_FP8_POINTERS if fp8 else {}))
    signature, attrs = {}, {}
    for i, name in enumerate(kernel.arg_names):
        if name in constexprs:
            signature[name] = "constexpr"
        elif name in pointers:
            signature[name] = pointers[name]
            attrs[(i,)] = [["tt.divisibility", 16]]  # torch's allocations are 256-byte aligned
        elif ints[name] == 1:  # Triton specializes an int argument of 1 to a constant
            signature[name] = "constexpr"
            constexprs[name] = 1
        else:
            signature[name] = "i32" if ints[name] < 2 ** 31 else "i64"
            if ints[name] % 16 == 0:
                attrs[(i,)] = [["tt.divisibility", 16]]
    options = make_backend(GPUTarget("cuda", capability, 32)).parse_options(
        {"num_warps": row["num_warps"], "num_stages": row["num_stages"]})
    constants = {(kernel.arg_names.index(n),): v for n, v in constexprs.items()}
    return serialize_specialization_data(f"{kernel.fn.__module__}.{kernel.fn.__qualname__}",
                                         signature, constants, attrs, options, None)


def _quant_of_key(key):
    """A manifest key's quantisation, as core's problem_for_key reads the engines' fp8 names."""
    if key.get("dtype_tag") != "fp8_w8a8":
        return "none"
    return "fp8_block" if key.get("block_shape") else "fp8_tensor"


def check_table(path, arch, jobs=1):
    """[(M, message)] for every row that does not compile within arch's limit; jobs > 1 compiles
    in that many processes (triton_pool)."""
    from moetune.engines import vllm_triton

    with open(path) as f:
        rows = {int(m): r for m, r in json.load(f).items() if m.isdigit()}
    with open(path + ".moetune") as f:
        key = json.load(f)["key"]
    problem = {"hidden_size": key["hidden_size"], "intermediate_size": key["intermediate_size"],
               "num_experts": key["num_experts"], "top_k": key["top_k"],
               "activation": key["activation"], "dtype": key["dtype"], "arch": arch,
               "quant": _quant_of_key(key)}
    engine = vllm_triton.load()
    capability = int(arch[3:5])
    target = ("cuda", capability, 32)
    if jobs > 1:
        pool = triton_pool.CompilePool(engine.engine_dir, target, jobs)
        submit, close = pool.submit, pool.close
    else:  # in this process, one compile at a time
        here = concurrent.futures.ThreadPoolExecutor(1)
        submit = functools.partial(here.submit, triton_pool.compile_specialization,
                                   engine.fused_moe_kernel, target=target)
        close = here.shutdown
    try:
        launches = [(m, gemm, submit(specialization(engine, dict(problem, num_tokens=m), row,
                                                    gemm, capability)))
                    for m, row in sorted(rows.items()) for gemm in (1, 2)]
        failures = [f for m, gemm, future in launches
                    for f in _findings(m, gemm, future, arch, triton_rules.kSmemLimitBytes[arch])]
    finally:
        close()
    return failures


def _findings(m, gemm, future, arch, limit):
    try:
        shared = future.result()
    except Exception as e:  # noqa: BLE001
        text = str(e).strip().splitlines()
        return [(m, f"GEMM{gemm} does not compile: {type(e).__name__}: {text[-1] if text else ''}")]
    if shared > limit:
        return [(m, f"GEMM{gemm} needs {shared} bytes of shared memory, over {arch}'s {limit}")]
    return []


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("table", help="a vLLM table file with its .moetune manifest beside it")
    ap.add_argument("--arch", default="sm_90a", choices=sorted(a for a in triton_rules.
                                                               kSmemLimitBytes if a != "cpu"))
    ap.add_argument("--jobs", type=int, default=triton_pool.default_processes(),
                    help="compiler processes (default: one per core but one, at most 16)")
    a = ap.parse_args(argv)
    if not os.path.isfile(a.table) or not os.path.isfile(a.table + ".moetune"):
        print(f"triton_compile: {a.table}: needs the table and its .moetune manifest",
              file=sys.stderr)
        return 2
    if os.environ.get("TRITON_INTERPRET") == "1":
        print("triton_compile: TRITON_INTERPRET=1 is set; the interpreter compiles nothing: unset "
              "it", file=sys.stderr)
        return 2
    failures = check_table(a.table, a.arch, max(1, a.jobs))
    for m, why in failures:
        print(f"{a.table}: row {m}: {why}")
    if not failures:
        print(f"{a.table}: every row compiles for {a.arch} within its shared memory")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
