"""moetune.tuner.triton_pool on the CPU: vLLM's fused_moe_kernel compiled for sm_90a in child
processes (Triton's compiler and ptxas need no GPU) into the Triton cache the caller reads.

A launch the pool compiled is a cache hit here afterwards (nothing new in the cache directory);
its answer equals an in-process compile's; a specialization Triton refuses is a CompileError
with Triton's message and the pool goes on; a child that dies mid-request fails that request and
the next one gets a new child; the fp8 launches (block and per-tensor, sm_89 and sm_90) take the
shared memory triton_rules.smem_bytes says. The GPU half (the tuner's testbed loading the pool's
kernels into vLLM's launches) is test_triton_worker.py's and test_triton_fp8.py's GPU tests.
"""

import os
import subprocess
import sys

import pytest
from vllm_engine import ENGINE, needs_engine

pytestmark = needs_engine
TARGET = ("cuda", 90, 32)
PROBLEM = {"num_tokens": 256, "hidden_size": 256, "intermediate_size": 128, "num_experts": 8,
           "top_k": 2, "activation": "silu", "dtype": "bf16", "arch": "sm_90a"}
ROWS = [{"BLOCK_SIZE_M": bm, "BLOCK_SIZE_N": 64, "BLOCK_SIZE_K": 64, "GROUP_SIZE_M": 1,
         "num_warps": 4, "num_stages": 3} for bm in (16, 64)]
# vLLM's fp8 launches (GEMM1 of Qwen3-30B-A3B's experts at M = 256) where each term of
# triton_rules.smem_bytes shows: (capability, quant, (BLOCK_SIZE_M, N, K, num_warps, num_stages)).
FP8_PROBLEM = {"num_tokens": 256, "hidden_size": 2048, "intermediate_size": 768,
               "num_experts": 128, "top_k": 8, "activation": "silu", "dtype": "bf16"}
FP8_SMEM_ROWS = [
    (90, "fp8_block", (128, 32, 64, 4, 2)),  # wgmma's buffers + the scale vectors' conversion
    (90, "fp8_block", (128, 128, 128, 8, 3)),  # 8 warps: a 128-long vector needs no buffer
    (90, "fp8_block", (64, 32, 256, 4, 4)),  # BLOCK_SIZE_K 256 launched as 128
    (90, "fp8_tensor", (16, 128, 128, 4, 3)),  # swapped by vLLM: wgmma's num_stages buffers
    (89, "fp8_tensor", (16, 128, 128, 4, 3)),  # the same on sm_89: mma.sync's num_stages - 1
    (89, "fp8_block", (16, 256, 64, 4, 3)),  # mma.sync + the conversion
    (89, "fp8_block", (128, 64, 64, 4, 2)),  # the epilogue's bf16 C tile is the larger term
]
FP8_SMEM_UPPER = (90, "fp8_tensor", (128, 256, 64, 4, 2))  # the C tile's bound, not taken here


@pytest.fixture
def engine(tmp_path, monkeypatch):
    if os.environ.get("TRITON_INTERPRET") == "1":
        pytest.skip("TRITON_INTERPRET=1 is set: vLLM's kernel would be the interpreter's")
    monkeypatch.setenv("TRITON_CACHE_DIR", str(tmp_path / "triton-cache"))
    from moetune.engines import vllm_triton

    return vllm_triton.load(ENGINE)


def _specs(engine):
    from moetune.tuner import triton_compile

    return [triton_compile.specialization(engine, PROBLEM, row, gemm, 90)
            for row in ROWS for gemm in (1, 2)]


def _cache_entries():
    root = os.environ["TRITON_CACHE_DIR"]
    return sorted(os.listdir(root)) if os.path.isdir(root) else []


def test_pool_fills_the_cache_the_caller_then_reads(engine):
    from moetune.tuner import triton_pool

    specs = _specs(engine)
    pool = triton_pool.CompilePool(engine.engine_dir, TARGET, processes=2)
    try:
        shared = [f.result(timeout=300) for f in [pool.submit(s) for s in specs]]
    finally:
        pool.close()
    filled = _cache_entries()
    assert len(filled) >= len(specs)
    here = [triton_pool.compile_specialization(engine.fused_moe_kernel, s, TARGET) for s in specs]
    assert here == shared and all(s > 0 for s in shared)
    assert _cache_entries() == filled, "the caller compiled again what the pool had compiled"


def test_refused_specialization_is_a_compile_error_and_the_pool_goes_on(engine):
    from moetune.tuner import triton_pool

    spec = _specs(engine)[0]
    bad = spec.replace('"num_warps": 4', '"num_warps": 3')
    assert bad != spec
    pool = triton_pool.CompilePool(engine.engine_dir, TARGET, processes=1)
    try:
        with pytest.raises(triton_pool.CompileError, match="num_warps must be a power of 2"):
            pool.submit(bad).result(timeout=300)
        assert pool.submit(spec).result(timeout=300) > 0
    finally:
        pool.close()


def test_a_child_that_dies_fails_its_request_and_is_replaced(engine):
    from moetune.tuner import triton_pool

    class FirstChildDies(triton_pool.CompilePool):
        spawned = 0

        def _spawn(self):
            FirstChildDies.spawned += 1
            if FirstChildDies.spawned == 1:
                return subprocess.Popen(
                    [sys.executable, "-c", "import sys; sys.stdin.readline(); sys.exit(3)"],
                    stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, bufsize=1)
            return super()._spawn()

    spec = _specs(engine)[0]
    pool = FirstChildDies(engine.engine_dir, TARGET, processes=1)
    try:
        with pytest.raises(triton_pool.CompileError, match=r"died \(exit 3\)"):
            pool.submit(spec).result(timeout=300)
        assert pool.submit(spec).result(timeout=300) > 0
    finally:
        pool.close()
    assert FirstChildDies.spawned == 2


def test_triton_compile_jobs_matches_one_process(engine, tmp_path):
    """The offline compile of a table gives the same findings in two processes as in one."""
    import json

    from moetune.tuner import triton_compile

    table = tmp_path / "E=8,N=128,device_name=X.json"
    rows = {"1": ROWS[0], "256": dict(ROWS[1], BLOCK_SIZE_N=256, BLOCK_SIZE_K=256, num_stages=5)}
    table.write_text(json.dumps(rows))
    key = {k: PROBLEM[k] for k in ("hidden_size", "intermediate_size", "num_experts", "top_k",
                                   "activation", "dtype")}
    (tmp_path / (table.name + ".moetune")).write_text(json.dumps({"key": key}))
    one = triton_compile.check_table(str(table), "sm_90a", jobs=1)
    two = triton_compile.check_table(str(table), "sm_90a", jobs=2)
    assert one == two
    assert [m for m, _ in one] == [256, 256], one  # 64 x 256 x 256 x 5 stages: over 227 KB


def _fp8_smem(engine, cap, quant, shape):
    """(Triton's shared memory for vLLM's GEMM1 launch of the row, triton_rules' bytes)."""
    from moetune.tuner import triton_compile, triton_pool, triton_rules

    bm, bn, bk, warps, stages = shape
    row = {"BLOCK_SIZE_M": bm, "BLOCK_SIZE_N": bn, "BLOCK_SIZE_K": bk, "GROUP_SIZE_M": 1,
           "num_warps": warps, "num_stages": stages}
    p = dict(FP8_PROBLEM, arch=f"sm_{cap}", quant=quant)
    spec = triton_compile.specialization(engine, p, row, 1, cap)
    compiled = triton_pool.compile_specialization(engine.fused_moe_kernel, spec, ("cuda", cap, 32))
    return compiled, triton_rules.smem_bytes(p["arch"], row, quant)


@pytest.mark.parametrize("cap,quant,shape", FP8_SMEM_ROWS)
def test_fp8_shared_memory_rule_is_what_triton_allocates(engine, cap, quant, shape):
    compiled, rule = _fp8_smem(engine, cap, quant, shape)
    assert compiled == rule, (cap, quant, shape, compiled, rule)


def test_fp8_shared_memory_rule_bounds_the_epilogue_where_triton_takes_less(engine):
    compiled, rule = _fp8_smem(engine, *FP8_SMEM_UPPER)
    assert compiled < rule == 128 * 256 * 2, (FP8_SMEM_UPPER, compiled, rule)


@pytest.mark.parametrize("quant", ["none", "fp8_block", "fp8_tensor"])
def test_testbed_loads_what_the_pool_compiled_without_compiling_again(engine, monkeypatch, quant):
    """The tuner's testbed in cuda mode, its GPU replaced by a stand-in driver that names an
    sm_90 target (the launches are traced, never run): the JIT's own specializations go to the
    pool, and loading the rows afterwards adds no kernel to the cache, i.e. the JIT's cache keys
    equal the pool's; for bf16 and both fp8 launches. The same on the GPU: test_triton_worker.py's
    and test_triton_fp8.py's GPU tests."""
    from triton.backends.compiler import GPUTarget
    from triton.runtime import driver

    from moetune.tuner import triton_rules, triton_testbed

    class StandIn:
        def get_current_device(self):
            return 0

        def get_current_stream(self, device=None):
            return 0

        def get_current_target(self):
            return GPUTarget(*TARGET)

    monkeypatch.setattr(driver, "_active", StandIn())
    bed = triton_testbed.Testbed(interpret=False)
    bed.device = "cpu"  # the tensors the traced launches take
    bed.load()
    problem = dict(PROBLEM, num_tokens=96, quant=quant)
    bed.prepare(problem, {"kind": "uniform", "seed": 5}, 5)
    rows = triton_rules.space(problem)[:3]
    bed.compile_in_background(rows)
    for _, futures in bed._pending.values():
        assert [f.result(timeout=300) > 0 for f in futures] == [True, True]
    filled = _cache_entries()
    assert [bed._finish(triton_rules.short(r)) for r in rows] == [None] * 3
    assert _cache_entries() == filled, "the testbed compiled what the pool had compiled"
    assert bed.compile_stats["rows"] == 3
    bed._pool.close()
