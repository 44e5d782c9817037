"""moetune.tuner: the triton family's rules (triton_rules) and worker (triton_worker), on the CPU.

The rules answer the cases tests/kernels/triton/triton_vllm_cases.json holds (the C++ mirror
answers the same ones, word for word), and their default rule is vLLM's own get_default_config.
The worker is driven over its two pipes as `moetune tune` drives it, under Triton's interpreter:
hello, space, feasible, prepare, check, time, and every fault it injects (a wrong or NaN output
must show in the check it answers; crash must end the process by SIGSEGV; hang must not answer).
tests/tuner/triton_demo_test.py runs the whole tuner through it. Engine-dependent tests skip
without .engines/vllm-0.33.0 (scripts/fetch_engine_kernels.py).
"""

import json
import os
import signal
import subprocess
import sys

import pytest

from moetune.tuner import triton_rules
from vllm_engine import ENGINE, needs_engine

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.abspath(os.path.join(HERE, "..", ".."))
with open(os.path.join(REPO, "tests", "kernels", "triton", "triton_vllm_cases.json")) as f:
    CASES = json.load(f)
TINY = {"num_tokens": 4, "hidden_size": 64, "intermediate_size": 32, "num_experts": 8,
        "top_k": 2, "activation": "silu", "dtype": "bf16", "arch": "cpu"}


@pytest.mark.parametrize("case", CASES["feasible"], ids=lambda c: c["what"])
def test_feasible_gives_the_shared_reason(case):
    assert triton_rules.feasible(case["problem"], case["config"]) == case["reason"]


def test_default_rule_gives_the_shared_rows():
    for case in CASES["default"]:
        assert triton_rules.default_row(case["problem"]) == case["row"], case["problem"]


def test_space_has_the_shared_size_ends_and_feasible_count():
    for case in CASES["space"]:
        p = case["problem"]
        space = triton_rules.space(p)
        assert (len(space), space[0], space[-1]) == (case["size"], case["first"], case["last"]), p
        feasible = sum(not triton_rules.feasible(p, triton_rules.config_of_row(r)) for r in space)
        assert feasible == case["feasible_sm90"], p


def test_space_drops_only_equivalent_group_sizes():
    """At M = 1 (vLLM's naive path, 8 M-blocks) GROUP_SIZE_M 16, 32 and 64 order the same
    programs: one of them stays; at M = 4096 all four differ."""
    p = dict(TINY, hidden_size=2048, intermediate_size=768, num_experts=128, top_k=8,
             arch="sm_90a", num_tokens=1)
    assert triton_rules.num_m_blocks(p, 64) == 8
    assert {r["GROUP_SIZE_M"] for r in triton_rules.space(p)} == {1, 16}
    p["num_tokens"] = 4096
    assert {r["GROUP_SIZE_M"] for r in triton_rules.space(p)} == {1, 16, 32, 64}


def test_space_opens_with_the_default_row_then_its_nearest_neighbours():
    """A budget that stops the screening early has searched around vLLM's own row for this M
    (at M = 16384 that is BLOCK_SIZE_M 128, which product order reaches only after 768 rows)."""
    p = dict(TINY, hidden_size=4096, intermediate_size=14336, arch="sm_90a", num_tokens=16384)
    default = triton_rules.default_row(p)
    space = triton_rules.space(p)
    distances = [triton_rules.prior_distance(r, default) for r in space]
    assert space[0] == default and distances == sorted(distances)
    assert {r["BLOCK_SIZE_M"] for r in space[:12]} == {64, 128, 256}
    assert len({triton_rules.short(r) for r in space}) == len(space) == 1920
    assert triton_rules.prior_distance(dict(default, num_stages=5, BLOCK_SIZE_M=32), default) == 4


def test_row_and_config_round_trip():
    row = {"BLOCK_SIZE_M": 64, "BLOCK_SIZE_N": 128, "BLOCK_SIZE_K": 64, "GROUP_SIZE_M": 16,
           "num_warps": 8, "num_stages": 3}
    config = triton_rules.config_of_row(row)
    assert triton_rules.row_of(config) == row and config["gemm1"] == config["gemm2"]
    assert triton_rules.moe_config({"gemm1": config["gemm1"]}) == config  # gemm2 absent = gemm1


def test_fp8_block_space_is_vllms_tuner_space_filtered_for_the_block_shape():
    """benchmark_moe.py keeps BLOCK_SIZE_N and BLOCK_SIZE_K multiples of the block's 128; of
    those, BLOCK_SIZE_K 256 is launched as 128 (the same kernel), so 128 stays. The per-tensor
    space is the bf16 one."""
    p = dict(TINY, hidden_size=2048, intermediate_size=768, num_experts=128, top_k=8,
             arch="sm_90a", num_tokens=4096)
    bf16 = {triton_rules.short(r) for r in triton_rules.space(p)}
    block = triton_rules.space(dict(p, quant="fp8_block"))
    want = {triton_rules.short(r) for r in triton_rules.space(p)
            if r["BLOCK_SIZE_N"] % 128 == 0 and r["BLOCK_SIZE_K"] == 128}
    assert {triton_rules.short(r) for r in block} == want and len(block) == 320
    assert {triton_rules.short(r) for r in triton_rules.space(dict(p, quant="fp8_tensor"))} == bf16
    launched = {triton_rules.launched_block_k("fp8_block", dict(r, BLOCK_SIZE_K=k))
                for r in block[:1] for k in (64, 128, 256)}
    assert launched == {64, 128}


def test_fp8_rules_refuse_what_the_kernel_cannot_run():
    p = dict(TINY, hidden_size=2048, intermediate_size=768, arch="sm_90a", num_tokens=64)
    row = triton_rules.default_row(dict(p, quant="fp8_block"))
    for q in ("fp8_block", "fp8_tensor"):
        assert triton_rules.feasible(dict(p, quant=q), triton_rules.config_of_row(row)) == ""
        assert "needs sm_89" in triton_rules.feasible(dict(p, quant=q, arch="sm_86"),
                                                      triton_rules.config_of_row(row))
        small_k = triton_rules.config_of_row(dict(row, BLOCK_SIZE_K=16))
        assert "below 32" in triton_rules.feasible(dict(p, quant=q), small_k)
        assert triton_rules.feasible(p, small_k) == ""  # bf16's tl.dot takes K = 16
    assert "quant = int8" in triton_rules.feasible(dict(p, quant="int8"),
                                                   triton_rules.config_of_row(row))


@needs_engine
def test_default_rule_is_vllms_own_get_default_config():
    from moetune.engines import vllm_triton

    eng = vllm_triton.load()
    for quant, dtype, block in (("none", None, None), ("fp8_tensor", "fp8_w8a8", None),
                                ("fp8_block", "fp8_w8a8", [128, 128])):
        for E in (8, 64, 256):
            for M in (1, 2, 4, 5, 8, 9, 16, 17, 31, 32, 33, 64, 65, 96, 97, 128, 129, 512, 513,
                      8192, 65536):
                got = eng.get_default_config(M, E, 768, 2048, 8, dtype, block)
                want = triton_rules.default_row(dict(TINY, num_tokens=M, num_experts=E,
                                                     quant=quant))
                assert {k: got[k] for k in triton_rules.ROW_FIELDS} == want, (quant, M, E, got)
                assert got["SPLIT_K"] == 1


def _testbed_on(monkeypatch, device_name):
    """A cuda-mode testbed whose torch.cuda names device_name (capability 9.0): default_row
    runs vLLM's lookup for that GPU without one; VLLM_TUNED_CONFIG_FOLDER unset."""
    import torch

    from moetune.engines import vllm_triton
    from moetune.tuner import triton_testbed

    bed = triton_testbed.Testbed(interpret=False)
    bed.engine = vllm_triton.load()
    monkeypatch.setattr(torch.cuda, "get_device_name", lambda *_: device_name)
    monkeypatch.setattr(torch.cuda, "get_device_capability", lambda *_: (9, 0))
    monkeypatch.delenv("VLLM_TUNED_CONFIG_FOLDER", raising=False)
    return bed


def _shipped(name):
    """The rows of a config file vLLM 0.33.0 ships, by M."""
    with open(os.path.join(ENGINE, "vllm", "model_executor", "layers", "fused_moe", "configs",
                           name)) as f:
        return {int(k): v for k, v in json.load(f).items() if k.isdigit()}


@needs_engine
def test_gpu_default_row_is_the_row_vllm_reads_for_that_gpu(monkeypatch, tmp_path):
    """On the GPU the search's incumbent is what vLLM runs without our table: the row nearest M
    of the file it ships for E, N and the GPU (an S1-like shape on an H100), a
    VLLM_TUNED_CONFIG_FOLDER file before that, and its default rule where it has neither."""
    bed = _testbed_on(monkeypatch, "NVIDIA H100 80GB HBM3")
    p = dict(TINY, num_experts=128, hidden_size=2688, intermediate_size=1856, arch="sm_90a",
             activation="relu2")
    name = "E=128,N=1856,device_name=NVIDIA_H100_80GB_HBM3.json"
    shipped = _shipped(name)
    differs = 0
    for m in (1, 100, 3000, 16384):
        q = dict(p, num_tokens=m)
        want = shipped[min(shipped, key=lambda k: abs(k - m))]
        assert bed.default_row(q) == {f: want[f] for f in triton_rules.ROW_FIELDS}, m
        differs += bed.default_row(q) != triton_rules.default_row(q)
    assert differs, "the shipped rows equal the default rule's: the test would not tell them apart"
    mine = {"BLOCK_SIZE_M": 32, "BLOCK_SIZE_N": 32, "BLOCK_SIZE_K": 32, "GROUP_SIZE_M": 1,
            "num_warps": 2, "num_stages": 2}
    (tmp_path / name).write_text(json.dumps({"1": mine}))
    monkeypatch.setenv("VLLM_TUNED_CONFIG_FOLDER", str(tmp_path))
    assert bed.default_row(dict(p, num_tokens=100)) == mine
    q = dict(p, num_experts=96, num_tokens=100)  # vLLM ships no file for E=96
    assert bed.default_row(q) == triton_rules.default_row(q)


@needs_engine
def test_gpu_default_row_for_fp8_is_vllms_fp8_file_not_the_bf16_one(monkeypatch):
    """fp8 problems reach vLLM's lookup with dtype fp8_w8a8 and the block shape: on an H200,
    E=128, N=768 (Qwen3-30B-A3B) has a bf16 file and a block-fp8 file; the block problem takes
    the fp8 file's rows, the per-tensor one (no file) vLLM's default rule for fp8."""
    bed = _testbed_on(monkeypatch, "NVIDIA H200")
    p = dict(TINY, num_experts=128, hidden_size=2048, intermediate_size=768, top_k=8,
             arch="sm_90a")
    shipped = _shipped("E=128,N=768,device_name=NVIDIA_H200,dtype=fp8_w8a8,"
                       "block_shape=[128,128].json")
    differs = 0
    for m in (1, 100, 3000):
        block = bed.default_row(dict(p, num_tokens=m, quant="fp8_block"))
        want = shipped[min(shipped, key=lambda k: abs(k - m))]
        assert block == {f: want[f] for f in triton_rules.ROW_FIELDS}, m
        differs += block != bed.default_row(dict(p, num_tokens=m))  # the bf16 file's row
        tensor = dict(p, num_tokens=m, quant="fp8_tensor")
        assert bed.default_row(tensor) == triton_rules.default_row(tensor), m
    assert differs, "the fp8 rows equal the bf16 file's: the test would not tell them apart"


class Worker:
    """python -m moetune.tuner.triton_worker on two pipes, as `moetune worker` execs it."""

    def __init__(self):
        r_in, self.w_in = os.pipe()
        self.r_out, w_out = os.pipe()
        env = dict(os.environ, TRITON_INTERPRET="1")
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "moetune.tuner.triton_worker", "--fd-in", str(r_in),
             "--fd-out", str(w_out)], pass_fds=(r_in, w_out), env=env)
        os.close(r_in)
        os.close(w_out)
        self.out = os.fdopen(self.r_out)

    def ask(self, request, timeout=60):
        import select

        os.write(self.w_in, (json.dumps(request) + "\n").encode())
        ready, _, _ = select.select([self.out], [], [], timeout)
        if not ready:
            return None
        line = self.out.readline()
        return json.loads(line) if line else None

    def close(self):
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait()
        os.close(self.w_in)
        self.out.close()


@pytest.fixture
def worker():
    w = Worker()
    yield w
    w.close()


def _prepared(worker):
    hello = worker.ask({"op": "hello"})
    assert hello["ok"] and hello["family"] == "triton_vllm" and hello["backend"] == "triton", hello
    assert hello["protocol_version"] == 3 and hello["device"]["arch"] == "cpu", hello
    space = worker.ask({"op": "space", "problem": TINY})
    assert space["gemm_spaces"] == [] and len(space["configs"]) == len(triton_rules.space(TINY))
    assert worker.ask({"op": "prepare", "problem": TINY, "routing": {"kind": "uniform", "seed": 3},
                       "seed": 3}) == {"ok": True}
    return space


@needs_engine
def test_worker_checks_times_and_reports_each_fault_as_the_tuner_expects(worker):
    space = _prepared(worker)
    config = space["configs"][0]
    feasible = worker.ask({"op": "feasible", "problem": TINY,
                           "configs": [config, {"gemm1": {"tile": {"block_m": 24}}}]})
    assert feasible["reasons"][0] == "" and "block_m = 24" in feasible["reasons"][1], feasible
    good = worker.ask({"op": "check", "config": config, "fault": ""})
    assert good["ok"] and good["rel_l2_error"] < 1e-2 and good["first_bad"] == -1, good
    again = worker.ask({"op": "check", "config": config, "fault": ""})
    assert again["digest"] == good["digest"]  # the winner's recheck compares it
    timed = worker.ask({"op": "time", "config": config, "fault": "", "warmup": 0, "reps": 2})
    assert len(timed["samples_us"]) == 2 and min(timed["samples_us"]) > 0, timed
    wrong = worker.ask({"op": "check", "config": config, "fault": "wrong"})
    assert wrong["rel_l2_error"] > 1e-2 and wrong["first_bad"] == 0, wrong
    nan = worker.ask({"op": "check", "config": config, "fault": "nan"})
    assert nan["all_finite"] is False and nan["rel_l2_error"] is None, nan
    fast = worker.ask({"op": "time", "config": config, "fault": "wrong", "warmup": 0, "reps": 2})
    assert max(fast["samples_us"]) < min(timed["samples_us"]) / 10, (fast, timed)
    for fault, outcome in (("compile", "compile_failed"), ("launch", "launch_failed"),
                           ("oom", "oom")):
        failed = worker.ask({"op": "check", "config": config, "fault": fault})
        assert failed == {"ok": False, "outcome": outcome,
                          "message": f"injected {fault} fault (test-only --inject-fault)"}
    pre = worker.ask({"op": "precompile", "configs": space["configs"][:2],
                      "faults": ["compile", ""]})
    assert pre["outcomes"] == ["compile_failed", "ok"], pre


@needs_engine
def test_interpreter_worker_refuses_a_gpu_recipe_instead_of_interpreting_its_space(worker):
    assert worker.ask({"op": "hello"})["ok"]
    answer = worker.ask({"op": "space", "problem": dict(TINY, arch="sm_90a")})
    assert answer["ok"] is False and "tune it on that GPU" in answer["message"], answer


@needs_engine
def test_worker_crash_fault_is_a_real_sigsegv(worker):
    space = _prepared(worker)
    assert worker.ask({"op": "check", "config": space["configs"][0], "fault": "crash"}) is None
    assert worker.proc.wait(timeout=30) == -signal.SIGSEGV


@needs_engine
def test_worker_hang_fault_never_answers(worker):
    space = _prepared(worker)
    assert worker.ask({"op": "time", "config": space["configs"][0], "fault": "hang",
                       "warmup": 0, "reps": 1}, timeout=3) is None
    assert worker.proc.poll() is None  # still there: the parent's timeout must kill it


def test_worker_without_the_engine_fails_hello_naming_the_fetch_script(tmp_path):
    """No vLLM source anywhere: hello answers launch_failed, which the tuner reports."""
    probe = ("import json, sys; from moetune.engines import vllm_triton as v; "
             "v.find_engine = lambda d=None, f=v.find_engine: f(d or sys.argv[1]); "
             "from moetune.tuner import triton_worker as w; "
             "print(w.Worker(True).respond(json.dumps({'op': 'hello'})))")
    env = dict(os.environ, TRITON_INTERPRET="1")
    out = subprocess.run([sys.executable, "-c", probe, str(tmp_path / "none")], env=env,
                         capture_output=True, text=True, check=True).stdout
    answer = json.loads(out.splitlines()[-1])
    assert answer["ok"] is False and answer["outcome"] == "launch_failed", answer
    assert "scripts/fetch_engine_kernels.py" in answer["message"], answer


def test_find_engine_prefers_the_argument_then_an_installed_vllm_then_engines(tmp_path):
    from moetune.engines import vllm_triton

    assert vllm_triton.find_engine(str(tmp_path)) == (os.path.realpath(tmp_path), "argument")
    found = vllm_triton.find_engine()
    if vllm_triton._installed_vllm_root() is None:
        assert found.origin == ".engines" and found.path.endswith(".engines/vllm-0.33.0"), found
    else:
        assert found.origin == "installed vllm", found


@pytest.mark.gpu
@needs_engine
def test_gpu_testbed_runs_the_kernels_its_compiler_processes_put_in_the_cache(tmp_path,
                                                                             monkeypatch):
    """Rows compiled in the background by triton_pool are loaded from Triton's cache by their
    checks (no compile in the testbed's process: the cache gains no kernel, only the launcher
    Triton builds for the first launch) and are correct."""
    monkeypatch.setenv("TRITON_CACHE_DIR", str(tmp_path / "cache"))
    from moetune.tuner import triton_testbed

    p = dict(TINY, num_tokens=96, hidden_size=256, intermediate_size=128, arch="sm_90a")
    bed = triton_testbed.Testbed(interpret=False)
    bed.load()
    bed.prepare(p, {"kind": "uniform", "seed": 5}, 5)
    rows = triton_rules.space(p)[:6]
    bed.compile_in_background(rows)
    for _, futures in bed._pending.values():
        assert [f.result(timeout=300) > 0 for f in futures] == [True, True]
    filled = _kernels_in(tmp_path / "cache")
    assert len(filled) == 2 * len(rows)
    for row in rows:
        got = bed.check(row)
        assert got["all_finite"] and got["rel_l2_error"] < 1e-2, (row, got)
    assert _kernels_in(tmp_path / "cache") == filled
    bed.stop()


def _kernels_in(cache):
    """The entries of a Triton cache directory that hold a compiled kernel."""
    return sorted(d for d in os.listdir(cache)
                  if any(f.endswith(".cubin") for f in os.listdir(os.path.join(cache, d))))
