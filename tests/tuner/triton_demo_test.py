#!/usr/bin/env python3
"""The triton family end to end on the CPU: `moetune tune` runs vLLM's own Triton kernel in a
Python worker under Triton's interpreter (no GPU), writes the file vLLM reads, and the rest of
the toolchain serves it. One case per run, named as ctest names it (tests/CMakeLists.txt):

    triton_demo_test.py CASE path/to/moetune      (cwd: the repository root)

  TuneWritesVllmsFileThatResolvesChecksAndLints  recipes/demo-triton.json tuned; the file holds
      exactly the buckets with vLLM's six fields, its manifest names triton_vllm; vLLM's own
      get_moe_configs reads it (VLLM_TUNED_CONFIG_FOLDER) and picks the row moetune resolve
      names; check and lint pass; every row compiles for sm_90a with vLLM's kernel (Triton's
      compiler, no GPU) within the shared memory; a row one field off is a lint finding.
  InjectedFaultsEndInTheirOutcomes  --inject-fault crash, hang, wrong, nan, compile, launch and
      oom on seven candidates of one bucket: each ends in its outcome in the store (crashed,
      timed_out, wrong_result twice, compile_failed, launch_failed, oom), the run still exits 0
      and the row written is none of theirs.
  Fp8TunesWriteVllmsFp8Files  recipes/demo-triton-fp8.json tuned: an fp8_block shape (128x128
      weight blocks, activations per token per 128 channels) and an fp8_tensor one (static input
      scales); each file is named as vLLM names fp8 tables (dtype=fp8_w8a8[,block_shape=[128,128]]),
      its manifest says so, vLLM's own lookup for that dtype and block shape reads it and picks the
      row `moetune resolve` names; check and lint pass; every row compiles for sm_90a with vLLM's
      fp8 launch within the shared memory.
  Fp8InjectedWrongIsCaught  the fp8 recipe at bucket 1 with a wrong and a NaN output injected
      (timings that claim 100x faster): both are wrong_result in the store and neither is the row.

Exit 77 (ctest: skipped) with the reason when .engines/vllm-0.33.0 is missing; CI extracts it
with scripts/fetch_engine_kernels.py first.
"""

import json
import os
import shutil
import sqlite3
import subprocess
import sys
import tempfile
import time

ENGINE = os.path.join(".engines", "vllm-0.33.0")
RECIPE = "recipes/demo-triton.json"
TABLE = "E=8,N=32,device_name=cpu.json"
FP8_RECIPE = "recipes/demo-triton-fp8.json"
# quant -> (the file vLLM opens, w1 shape, w2 shape, block_shape) of FP8_RECIPE's shapes.
FP8_TABLES = {
    "fp8_block": ("E=8,N=128,device_name=cpu,dtype=fp8_w8a8,block_shape=[128,128].json",
                  (8, 256, 128), (8, 128, 128), [128, 128]),
    "fp8_tensor": ("E=8,N=32,device_name=cpu,dtype=fp8_w8a8.json", (8, 64, 64), (8, 64, 32), None),
}
kSkip = 77


def run(cmd, env=None, ok=(0,)):
    started = time.monotonic()
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env)
    took = time.monotonic() - started
    print(f"+ {' '.join(cmd)}  ({took:.1f} s, exit {proc.returncode})", flush=True)
    if proc.returncode not in ok:
        raise AssertionError(f"{cmd[:2]} exited {proc.returncode}, expected {ok}:\n"
                             f"{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}")
    return proc


def rows_of(path):
    with open(path) as f:
        return {k: v for k, v in json.load(f).items()}


def tune_writes_vllms_file(moetune, out):
    tuned = run([moetune, "tune", "--recipe", RECIPE, "--out", out, "--reps", "3", "--warmup",
                 "0", "--json"])
    report = json.loads(tuned.stdout)
    table = os.path.join(out, TABLE)
    rows = rows_of(table)
    assert sorted(rows, key=int) == ["1", "4", "16"], rows  # exactly the recipe's buckets
    six = ["BLOCK_SIZE_M", "BLOCK_SIZE_N", "BLOCK_SIZE_K", "GROUP_SIZE_M", "num_warps",
           "num_stages"]
    for m, row in rows.items():
        assert list(row) == six and all(isinstance(v, int) for v in row.values()), (m, row)
    with open(table + ".moetune") as f:
        key = json.load(f)["key"]
    assert key["family"] == "triton_vllm" and key["toolchain"].startswith("triton "), key
    print(f"tuned in {report['elapsed_s']:.1f} s: " +
          ", ".join(f"{m}: {r['BLOCK_SIZE_M']}/{r['BLOCK_SIZE_N']}/{r['BLOCK_SIZE_K']}"
                    for m, r in rows.items()))

    # vLLM's own lookup reads the file and picks the row `moetune resolve` names.
    resolved = json.loads(run([moetune, "resolve", "--table", table, "--m", "3",
                               "--json"]).stdout)
    assert resolved["key"] == 4 and resolved["rule"] == "nearest_key", resolved
    probe = ("import json, sys; from moetune.engines import vllm_triton; "
             "eng = vllm_triton.load(); eng.platform.device_name = 'cpu'; "
             "c = eng.try_get_optimal_moe_config((8, 64, 64), (8, 64, 32), 2, None, 3); "
             "print(json.dumps(c))")
    env = dict(os.environ, VLLM_TUNED_CONFIG_FOLDER=out, TRITON_INTERPRET="1")
    vllm_row = json.loads(run([sys.executable, "-c", probe], env=env).stdout.splitlines()[-1])
    assert vllm_row == rows["4"], (vllm_row, rows["4"])

    run([moetune, "check", "--recipe", RECIPE, "--tables", out])
    linted = run([moetune, "lint", "--tables", out, "--recipe", RECIPE])
    assert "no findings" in linted.stdout, linted.stdout
    env = {k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"}
    run([sys.executable, "-m", "moetune.tuner.triton_compile", table, "--arch", "sm_90a"],
        env=env)

    # Negative twin: one field off in both files (a block Triton cannot run) is a finding.
    bad = os.path.join(out, "bad")
    os.makedirs(bad)
    for name in (TABLE, TABLE + ".moetune"):
        with open(os.path.join(out, name)) as f:
            text = f.read()
        if name.endswith(".json"):
            data = json.loads(text)
            data["16"]["BLOCK_SIZE_M"] = 24
        else:
            data = json.loads(text)
            for g in ("gemm1", "gemm2"):
                data["rows"]["16"]["config"][g]["tile"]["block_m"] = 24
        with open(os.path.join(bad, name), "w") as f:
            json.dump(data, f, indent=2)
    linted = run([moetune, "lint", "--tables", bad, "--recipe", RECIPE], ok=(1,))
    assert "family_cannot_produce" in linted.stdout and "block_m = 24" in linted.stdout, \
        linted.stdout


def injected_faults_end_in_their_outcomes(moetune, out):
    sys.path.insert(0, os.path.join(os.path.dirname(moetune), "python"))
    from moetune.tuner import triton_rules

    store = os.path.join(out, "store.sqlite")
    faults = {1: "crash", 2: "hang", 3: "wrong", 4: "nan", 5: "compile", 6: "launch", 7: "oom"}
    plan = ",".join(f"{kind}@{i}" for i, kind in faults.items())
    tuned = run([moetune, "tune", "--recipe", RECIPE, "--out", out, "--buckets", "1", "--reps",
                 "3", "--warmup", "0", "--timeout-s", "8", "--store", store, "--json",
                 "--inject-fault", plan])
    outcomes = json.loads(tuned.stdout)["shapes"][0]["buckets"][0]["outcomes"]
    want = {"crashed": 1, "timed_out": 1, "wrong_result": 2, "compile_failed": 1,
            "launch_failed": 1, "oom": 1}
    assert {k: outcomes.get(k) for k in want} == want, outcomes
    with sqlite3.connect(store) as db:
        seen = {fault: (outcome, reason) for fault, outcome, reason in db.execute(
            "SELECT fault, outcome, reason FROM measurements WHERE round = 0 AND fault != ''")}
        winner = json.loads(db.execute("SELECT winner FROM decisions").fetchone()[0])
    expected = {"crash": "crashed", "hang": "timed_out", "wrong": "wrong_result",
                "nan": "wrong_result", "compile": "compile_failed", "launch": "launch_failed",
                "oom": "oom"}
    assert {f: o for f, (o, _) in seen.items()} == expected, seen
    assert "SIGSEGV" in seen["crash"][1], seen["crash"]
    # Candidates 1.. are the space in order (0 is the default, the incumbent): none of the
    # faulty ones may be the row, least of all wrong and nan, whose timings claim 100x faster.
    problem = {"num_tokens": 1, "hidden_size": 64, "intermediate_size": 32, "num_experts": 8,
               "top_k": 2, "activation": "silu", "dtype": "bf16", "arch": "cpu"}
    space = triton_rules.space(problem)
    default = triton_rules.config_of_row(triton_rules.default_row(problem))
    assert default not in [triton_rules.config_of_row(r) for r in space]  # else indices shift
    faulty = [triton_rules.config_of_row(space[i - 1]) for i in faults]
    assert triton_rules.moe_config(winner) not in faulty, winner
    row = rows_of(os.path.join(out, TABLE))["1"]
    assert row == triton_rules.row_of(triton_rules.moe_config(winner)), (row, winner)


def vllm_lookup(out, w1, w2, dtype, block, m):
    """(source, row) of vLLM's own lookup (try_get_optimal_moe_config, through engine_config)
    for M = m on device "cpu" with out as VLLM_TUNED_CONFIG_FOLDER: "table:<file>" or
    "default"."""
    probe = ("import json, sys; from moetune.engines import vllm_triton as v; "
             "a = json.loads(sys.argv[1]); "
             "c = v.engine_config(v.load(), tuple(a[0]), tuple(a[1]), 2, a[4], "
             "device_name='cpu', capability=None, dtype=a[2], block_shape=a[3]); "
             "print(json.dumps([c.source, c.config]))")
    env = dict(os.environ, VLLM_TUNED_CONFIG_FOLDER=out, TRITON_INTERPRET="1")
    args = json.dumps([w1, w2, dtype, block, m])
    return json.loads(run([sys.executable, "-c", probe, args], env=env).stdout.splitlines()[-1])


def fp8_tunes_write_vllms_fp8_files(moetune, out):
    tuned = json.loads(run([moetune, "tune", "--recipe", FP8_RECIPE, "--out", out, "--reps", "3",
                            "--warmup", "0", "--json"]).stdout)
    names = [name for name, _, _, _ in FP8_TABLES.values()]
    assert sorted(os.listdir(out)) == sorted(names + [n + ".moetune" for n in names]), \
        os.listdir(out)
    for shape in tuned["shapes"]:
        assert [b["outcome"] for b in shape["buckets"]] == ["tuned"] * 3, shape
    for quant, (name, w1, w2, block) in FP8_TABLES.items():
        table = os.path.join(out, name)
        rows = rows_of(table)
        assert sorted(rows, key=int) == ["1", "4", "16"], (quant, rows)
        with open(table + ".moetune") as f:
            key = json.load(f)["key"]
        assert (key["dtype_tag"], key.get("block_shape"), key["family"]) == \
            ("fp8_w8a8", block, "triton_vllm"), key
        resolved = json.loads(run([moetune, "resolve", "--table", table, "--m", "3",
                                   "--json"]).stdout)
        assert resolved["key"] == 4, resolved
        assert vllm_lookup(out, w1, w2, "fp8_w8a8", block, 3) == [f"table:{name}", rows["4"]]
        # vLLM's bf16 lookup for the same E and N finds no file: ours are fp8 tables only.
        assert vllm_lookup(out, w1, w2, None, None, 3)[0] == "default", quant
        env = {k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"}
        run([sys.executable, "-m", "moetune.tuner.triton_compile", table, "--arch", "sm_90a"],
            env=env)
    run([moetune, "check", "--recipe", FP8_RECIPE, "--tables", out])
    linted = run([moetune, "lint", "--tables", out, "--recipe", FP8_RECIPE])
    assert "no findings" in linted.stdout, linted.stdout


def fp8_injected_wrong_is_caught(moetune, out):
    sys.path.insert(0, os.path.join(os.path.dirname(moetune), "python"))
    from moetune.tuner import triton_rules

    store = os.path.join(out, "store.sqlite")
    run([moetune, "tune", "--recipe", FP8_RECIPE, "--out", out, "--buckets", "1", "--reps", "3",
         "--warmup", "0", "--store", store, "--inject-fault", "wrong@1,nan@2"])
    with sqlite3.connect(store) as db:
        seen = sorted((fault, outcome) for fault, outcome in db.execute(
            "SELECT fault, outcome FROM measurements WHERE round = 0 AND fault != ''"))
        winners = [json.loads(w) for (w,) in db.execute("SELECT winner FROM decisions")]
    assert seen == [("nan", "wrong_result")] * 2 + [("wrong", "wrong_result")] * 2, seen
    assert len(winners) == 2, winners
    with open(FP8_RECIPE) as f:
        shapes = json.load(f)["shapes"]
    for shape, winner in zip(shapes, winners):
        problem = dict(shape["problem"], num_tokens=1)
        space = triton_rules.space(problem)
        default = triton_rules.config_of_row(triton_rules.default_row(problem))
        assert default not in [triton_rules.config_of_row(r) for r in space]  # else indices shift
        faulty = [triton_rules.config_of_row(space[i - 1]) for i in (1, 2)]
        assert triton_rules.moe_config(winner) not in faulty, (shape["name"], winner)


CASES = {"TuneWritesVllmsFileThatResolvesChecksAndLints": tune_writes_vllms_file,
         "InjectedFaultsEndInTheirOutcomes": injected_faults_end_in_their_outcomes,
         "Fp8TunesWriteVllmsFp8Files": fp8_tunes_write_vllms_fp8_files,
         "Fp8InjectedWrongIsCaught": fp8_injected_wrong_is_caught}


def main(argv):
    if len(argv) != 3 or argv[1] not in CASES:
        print(f"usage: {argv[0]} {{{','.join(CASES)}}} path/to/moetune", file=sys.stderr)
        return 2
    if not os.path.isfile(os.path.join(ENGINE, "manifest.json")):
        print(f"skipped: {ENGINE} is missing; run scripts/fetch_engine_kernels.py (needs PyPI, "
              f"or --wheel vllm-0.33.0-*.whl) to extract vLLM's kernel", flush=True)
        return kSkip
    out = tempfile.mkdtemp(prefix="moetune-triton-")
    started = time.monotonic()
    try:
        CASES[argv[1]](os.path.abspath(argv[2]), out)
    finally:
        shutil.rmtree(out, ignore_errors=True)
    print(f"{argv[1]}: passed in {time.monotonic() - started:.1f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
