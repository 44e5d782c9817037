#!/usr/bin/env python3
"""bench/triton_vllm_device.py without a GPU (ctest runs this from the source tree): the agreement
rule (tunes_agree) calls tunes that name one row agreeing however far apart its timings came out,
compares distinct rows by the median of their tunes' medians against the 1% bound, and says
nothing without agreement tunes; `--phase summary` writes that verdict per M into summary.csv.
The fp8 shapes (F2-F4): table_name is vLLM's file name (literal names, and vLLM 0.33.0's own
get_config_file_name from .engines/); write_recipe gives fp8 shapes their "quant" and the C++
reader takes the recipe (`moetune materialize`, with the binary ctest names in
TRITON_VLLM_DEVICE_MOETUNE_BIN), writing exactly table_name's files; recipes/h100-triton-fp8.json
is recipe_of() of F2-F4; and under Triton's interpreter (a child process) a tiny fp8_block and
fp8_tensor layer made by make_layer runs vLLM's kernel with each system's row (our file read
through table_name by vLLM's lookup, vLLM's default for fp8) within the tuner's tolerance of
reference(), while a weight scale read from the wrong block or expert is caught. Tests that need
torch, triton, .engines/vllm-0.33.0 or the binary skip, saying which.

    python3 tests/bench/triton_vllm_device_test.py --interpreter-child OUT.json   # the child
"""
import csv
import glob
import importlib.util
import json
import os
import subprocess
import sys
import tempfile
import unittest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SCRIPT = os.path.join(ROOT, "bench", "triton_vllm_device.py")
ENGINE = os.path.join(ROOT, ".engines", "vllm-0.33.0")
CONFIGS = os.path.join(ENGINE, "vllm", "model_executor", "layers", "fused_moe", "configs")
MOETUNE = os.environ.get("TRITON_VLLM_DEVICE_MOETUNE_BIN", "")
H100 = "NVIDIA H100 80GB HBM3"
HAVE_TORCH_TRITON = all(importlib.util.find_spec(m) is not None for m in ("torch", "triton"))
HAVE_ENGINE = os.path.isfile(os.path.join(ENGINE, "manifest.json"))
needs_engine = unittest.skipUnless(
    HAVE_TORCH_TRITON and HAVE_ENGINE,
    "needs torch, triton and .engines/vllm-0.33.0 (scripts/fetch_engine_kernels.py)")
needs_moetune = unittest.skipUnless(
    os.access(MOETUNE, os.X_OK),
    "needs the moetune binary in TRITON_VLLM_DEVICE_MOETUNE_BIN (ctest sets it)")
sys.path.insert(0, os.path.join(ROOT, "bench"))
import triton_vllm_device as tvd  # noqa: E402


def row(system, config, us, m=1):
    return dict(shape="S2", m=m, system=system, config=config, source="x", median_us=f"{us:.2f}",
                ci_low_us=f"{us - 1:.2f}", ci_high_us=f"{us + 1:.2f}")


class TunesAgree(unittest.TestCase):
    def test_one_row_named_by_every_tune_agrees_whatever_its_timings(self):
        rows = [row("a", "m128n256", 100.0), row("t0", "m128n256", 103.0),
                row("t1", "m128n256", 98.0)]
        self.assertEqual(tvd.tunes_agree(rows), "yes")

    def test_distinct_rows_agree_only_within_one_percent(self):
        self.assertEqual(tvd.tunes_agree([row("a", "x", 100.0), row("t0", "y", 100.9)]), "yes")
        self.assertEqual(tvd.tunes_agree([row("a", "x", 100.0), row("t0", "y", 101.5)]), "no")
        # x by the median of its two tunes' medians (100.5), y at 102: 1.5% apart.
        rows = [row("a", "x", 100.0), row("t0", "x", 101.0), row("t1", "y", 102.0)]
        self.assertEqual(tvd.tunes_agree(rows), "no")

    def test_no_agreement_tunes_says_nothing(self):
        self.assertEqual(tvd.tunes_agree([row("a", "x", 100.0)]), "")


class Summary(unittest.TestCase):
    def test_summary_writes_the_verdict_per_m(self):
        with tempfile.TemporaryDirectory() as d:
            rows = []
            for m, t0 in ((1, ("m16", 50.2)), (4, ("m32", 55.0))):
                rows += [row("a", "m16", 50.0, m), row("b", "m16", 50.1, m),
                         row("c", "m16", 50.3, m), row("t0", t0[0], t0[1], m)]
            with open(os.path.join(d, "triton_vllm.csv"), "w", newline="") as f:
                w = csv.DictWriter(f, fieldnames=list(rows[0]))
                w.writeheader()
                w.writerows(rows)
            subprocess.run([sys.executable, SCRIPT, "--out", d, "--shapes", "S2", "--phase",
                            "summary", "--budget-min", "2"], check=True, capture_output=True)
            with open(os.path.join(d, "summary.csv")) as f:
                got = {int(r["m"]): r["tunes_agree"] for r in csv.DictReader(f)}
        self.assertEqual(got, {1: "yes", 4: "no"})


class TableName(unittest.TestCase):
    def test_fp8_names_carry_vllms_dtype_and_block_shape(self):
        self.assertEqual(tvd.table_name("F2", H100), "E=128,N=768,device_name=NVIDIA_H100_80GB_"
                         "HBM3,dtype=fp8_w8a8,block_shape=[128,128].json")
        self.assertEqual(tvd.table_name("F3", H100),
                         "E=8,N=14336,device_name=NVIDIA_H100_80GB_HBM3,dtype=fp8_w8a8.json")
        self.assertEqual(tvd.table_name("F4", "NVIDIA H200"),
                         "E=256,N=2048,device_name=NVIDIA_H200,dtype=fp8_w8a8,"
                         "block_shape=[128,128].json")

    def test_bf16_names_are_unchanged(self):
        self.assertEqual(tvd.table_name("S2", H100),
                         "E=128,N=768,device_name=NVIDIA_H100_80GB_HBM3.json")
        self.assertEqual(tvd.table_name("S3", "NVIDIA H200 NVL"),
                         "E=8,N=14336,device_name=NVIDIA_H200.json")

    @unittest.skipUnless(os.path.isdir(CONFIGS), "needs .engines/vllm-0.33.0's configs/")
    def test_b_is_the_shipped_h100_file_for_f3_only(self):
        # What the script's docstring says (b) is on an H100: F3's shipped file, else the default.
        shipped = {s: os.path.exists(os.path.join(CONFIGS, tvd.table_name(s, H100)))
                   for s in ("F2", "F3", "F4")}
        self.assertEqual(shipped, {"F2": False, "F3": True, "F4": False})


class Recipe(unittest.TestCase):
    def written(self, shape, device=H100):
        with tempfile.TemporaryDirectory() as d:
            tvd.write_recipe(os.path.join(d, "r.json"), shape, device)
            with open(os.path.join(d, "r.json")) as f:
                return json.load(f)

    def test_fp8_shapes_name_their_quant_and_bf16_shapes_none(self):
        quants = {s: self.written(s)["shapes"][0]["problem"].get("quant") for s in tvd.SHAPES}
        self.assertEqual(quants, {"S1": None, "S2": None, "S3": None, "F2": "fp8_block",
                                  "F3": "fp8_tensor", "F4": "fp8_block"})

    def test_bf16_recipe_is_what_it_was(self):
        self.assertEqual(self.written("S2"), {
            "recipe_version": 1, "name": "triton-vllm-S2", "shapes": [{
                "name": "S2",
                "problem": {"hidden_size": 2048, "intermediate_size": 768, "num_experts": 128,
                            "top_k": 8, "activation": "silu", "dtype": "bf16",
                            "arch": "sm_90a"},
                "device": H100, "backend": "triton", "family": "triton_vllm",
                "family_version": 1, "buckets": tvd.MS,
                "routing": {"kind": "uniform", "seed": 0}}]})

    def test_shipped_fp8_recipe_is_write_recipes(self):
        with open(os.path.join(ROOT, "recipes", "h100-triton-fp8.json")) as f:
            shipped = json.load(f)
        self.assertEqual(shipped, tvd.recipe_of(["F2", "F3", "F4"], H100, "h100-triton-fp8"),
                         "recipes/h100-triton-fp8.json differs from triton_vllm_device."
                         "recipe_of(); change both together")

    @needs_moetune
    def test_cpp_reader_takes_each_recipe_and_names_table_names_files(self):
        for shape in ("S2", "F2", "F3", "F4"):
            with self.subTest(shape=shape), tempfile.TemporaryDirectory() as d:
                tvd.write_recipe(os.path.join(d, "r.json"), shape, H100)
                self.assertEqual(materialize(os.path.join(d, "r.json"), d),
                                 [tvd.table_name(shape, H100)])

    @needs_moetune
    def test_cpp_reader_takes_the_shipped_fp8_recipe(self):
        with tempfile.TemporaryDirectory() as d:
            got = materialize(os.path.join(ROOT, "recipes", "h100-triton-fp8.json"), d)
        self.assertEqual(got, sorted(tvd.table_name(s, H100) for s in ("F2", "F3", "F4")))


def materialize(recipe_path, out):
    """The table files `moetune materialize` writes for a recipe into out/tables (sorted names),
    which parses and validates it as `moetune tune` does; fails with the reader's message."""
    proc = subprocess.run([MOETUNE, "materialize", "--recipe", recipe_path, "--out",
                           os.path.join(out, "tables")], capture_output=True, text=True)
    if proc.returncode != 0:
        raise AssertionError(f"moetune materialize --recipe {recipe_path}: exit "
                             f"{proc.returncode}: {proc.stderr.strip()}")
    return sorted(os.path.basename(p) for p in glob.glob(os.path.join(out, "tables", "*.json")))


# The interpreter child's shapes: fp8_block with two K groups in GEMM1 and one in GEMM2, and a
# tiny per-tensor layer.
TINY = {"Tb": dict(E=4, K=256, I=128, top_k=2, act="silu", quant="fp8_block"),
        "Tt": dict(E=4, K=64, I=32, top_k=2, act="silu", quant="fp8_tensor")}
# get_device_name_as_file_name's cases: spaces, the H200 family, '-', and '/' or runs of white
# space (its [\s/]+, on a made-up name).
DEVICES = (H100, "NVIDIA H200", "NVIDIA H200 NVL", "NVIDIA A100-SXM4-80GB", "Made Up/GPU  X",
           "cpu")
kChildM = 5  # above M * top_k * 4 <= E: vLLM aligns (the naive path is the tuner tests')
OUR_ROW = {"BLOCK_SIZE_M": 32, "BLOCK_SIZE_N": 64, "BLOCK_SIZE_K": 64, "GROUP_SIZE_M": 1,
           "num_warps": 4, "num_stages": 2}


def interpreter_child(out_path):
    """Under TRITON_INTERPRET=1: vLLM's get_config_file_name for every shape and device, and per
    TINY shape each system's row run, checked, and a wrong-scale twin; writes JSON to out_path."""
    assert os.environ.get("TRITON_INTERPRET") == "1", "the child runs under TRITON_INTERPRET=1"
    import torch

    vt, rules = tvd.package()
    engine = vt.load()
    names = {}
    for dev in DEVICES:
        vt._use_platform(engine, dev, (9, 0))
        for shape, s in tvd.SHAPES.items():
            q = tvd.quant(shape)
            names[f"{shape}@{dev}"] = engine.get_config_file_name(
                s["E"], s["I"], None if q == "none" else "fp8_w8a8",
                [128, 128] if q == "fp8_block" else None)
    tvd.SHAPES.update(TINY)
    results = {"vllm_names": names}
    with tempfile.TemporaryDirectory() as tables:
        for shape in TINY:
            with open(os.path.join(tables, tvd.table_name(shape, "cpu")), "w") as f:
                json.dump({str(kChildM): OUR_ROW}, f)
            results[shape] = child_shape(vt, rules, shape, tables, torch)
    with open(out_path, "w") as f:
        json.dump(results, f)


def child_shape(vt, rules, shape, tables, torch):
    """One TINY shape on the CPU: {system: (source, row, rel_l2)} and the wrong-scale twin."""
    layer = tvd.make_layer(vt, shape, device="cpu")
    x, tw, ids = tvd.inputs(shape, kChildM, seed=kChildM, device="cpu")
    systems = tvd.systems_at(layer, shape, kChildM, tables, [], tvd.table_name(shape, "cpu"))
    want = tvd.reference(layer, x, tw, ids)
    out = {}
    for name, (row, source) in systems.items():
        row = {f: row[f] for f in rules.ROW_FIELDS}
        got = layer.run(x, tw, ids, layer.prepare(ids, config=row))
        out[name] = (source, row, tvd.check(shape, kChildM, name, row, got, want))
    s = tvd.SHAPES[shape]
    out["our_file"] = tvd.table_name(shape, "cpu")  # what the child wrote our row into
    out["vllm_default"] = layer.engine.get_default_config(
        kChildM, s["E"], s["I"], s["K"], s["top_k"], "fp8_w8a8",
        [128, 128] if tvd.quant(shape) == "fp8_block" else None)
    # The twin: expert 0's w1 scales read as expert 1's (per block or per expert).
    layer.w1_scale = torch.cat([layer.w1_scale[1:2], layer.w1_scale[1:]]).contiguous()
    row = out["c"][1]
    got = layer.run(x, tw, ids, layer.prepare(ids, config=row))
    try:
        out["twin"] = ("passed", tvd.check(shape, kChildM, "twin", row, got, want))
    except AssertionError as e:
        out["twin"] = ("caught", str(e))
    return out


@needs_engine
class InterpreterChild(unittest.TestCase):
    """What the child saw (one child for every test here, about 10-20 s)."""

    @classmethod
    def setUpClass(cls):
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "out.json")
            proc = subprocess.run([sys.executable, os.path.abspath(__file__),
                                   "--interpreter-child", path], capture_output=True, text=True,
                                  env=dict(os.environ, TRITON_INTERPRET="1"), timeout=300)
            if proc.returncode != 0:
                raise AssertionError(f"interpreter child exited {proc.returncode}:\n"
                                     f"{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}")
            with open(path) as f:
                cls.seen = json.load(f)

    def test_table_name_is_vllms_get_config_file_name(self):
        want = {f"{shape}@{dev}": tvd.table_name(shape, dev) for dev in DEVICES
                for shape in tvd.SHAPES if shape not in TINY}
        self.assertEqual(self.seen["vllm_names"], want)

    def test_each_system_runs_within_the_tolerance_and_a_reads_our_file(self):
        for shape in TINY:
            seen = self.seen[shape]
            self.assertEqual(set(seen) - {"our_file", "vllm_default", "twin"}, {"a", "b", "c"})
            self.assertEqual(seen["a"][:2], ["table:" + seen["our_file"], OUR_ROW])
            self.assertEqual(seen["b"][0], "default", shape)  # vLLM ships no file for "cpu"
            want_c = {f: seen["vllm_default"][f] for f in OUR_ROW}
            self.assertEqual(seen["c"][1], want_c, shape)
            self.assertEqual(seen["b"][1], want_c, shape)
            for system in "abc":
                self.assertLess(seen[system][2], 3e-2, (shape, system, seen[system]))

    def test_c_is_vllms_block_fp8_rule(self):
        # vLLM 0.33.0's get_default_config at M = 5 for fp8_w8a8 with block [128, 128] (its bf16
        # and per-tensor rule gives num_stages 4 there).
        self.assertEqual(self.seen["Tb"]["c"][1], {
            "BLOCK_SIZE_M": 16, "BLOCK_SIZE_N": 64, "BLOCK_SIZE_K": 128, "GROUP_SIZE_M": 1,
            "num_warps": 4, "num_stages": 3})

    def test_a_weight_scale_of_another_expert_is_caught(self):
        for shape in TINY:
            self.assertEqual(self.seen[shape]["twin"][0], "caught", (shape,
                                                                   self.seen[shape]["twin"]))


if __name__ == "__main__":
    if sys.argv[1:2] == ["--interpreter-child"]:
        interpreter_child(sys.argv[2])
    else:
        unittest.main()
