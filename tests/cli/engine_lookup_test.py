#!/usr/bin/env python3
"""`moetune resolve` against the engines' own lookup, over real engine config files.

    engine_lookup_test.py MOETUNE [unittest args]        the checked-in sample, every M
    engine_lookup_test.py MOETUNE --count DIR [DIR...]  agreement over whole config folders

vLLM (get_moe_configs + try_get_optimal_moe_config) and SGLang (fused_moe_triton_config.py) read a
config file as `{int(key): row for key, row in json.load(f).items()}` (vLLM first pops
"triton_version") and pick `configs[min(configs.keys(), key=lambda x: abs(x - M))]`: Python's
min() over dict keys in file order, so a tie goes to the key listed first in the file. engine_row()
below is that code, and the tests check that moetune's key, its config fields and the row fields
it does not model (engine_fields, absent_fields) are the engine's row at every M.

The sample (tests/cli/engine_configs/, copied unchanged from the vLLM 0.33.0 and SGLang 0.5.23
wheels, both Apache-2.0) holds files with keys out of order, rows without num_warps/num_stages,
SGLang's USE_TMA and _down files, Intel's grf_mode, num_ctas, and ROCm's waves_per_eu, kpack and
matrix_instr_nonkdim. --count runs the same comparison over whole folders at the M where the
engines' answer can change (every key, its neighbours, and both sides of every midpoint between
two keys, where a tie falls), and prints the counts.
"""

import json
import os
import subprocess
import sys
import tempfile
import unittest

SAMPLE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "engine_configs")
TILE_FIELDS = {"BLOCK_SIZE_M": "block_m", "BLOCK_SIZE_N": "block_n", "BLOCK_SIZE_K": "block_k",
               "GROUP_SIZE_M": "group_m"}
LAUNCH_FIELDS = {"num_warps": "num_warps", "num_stages": "num_stages"}
MOETUNE = None  # set from argv


def engine_configs(path):
    """The engines' dict: {int(key): row} in file order (vLLM drops triton_version first)."""
    with open(path) as f:
        tuned = json.load(f)
    tuned.pop("triton_version", None)
    return {int(key): val for key, val in tuned.items()}


def engine_key(configs, m):
    """The engines' choice, verbatim."""
    return min(configs.keys(), key=lambda x: abs(x - m))


def critical_ms(keys):
    """Every M at which the engines' answer can change, and one M inside each stretch between."""
    ms = {1, 2 * max(keys) + 1}
    for a in keys:
        ms.update((a - 1, a, a + 1))
        for b in keys:
            lo, hi = (a + b) // 2, (a + b + 1) // 2
            ms.update((lo - 1, lo, hi, hi + 1))
    return sorted(m for m in ms if m >= 1)


def moetune_resolve(path, ms):
    """moetune resolve --json for each M: a list of Resolution objects, or the error text."""
    out = []
    for i in range(0, len(ms), 2000):  # argv stays well under the kernel's per-argument limit
        chunk = ms[i:i + 2000]
        proc = subprocess.run([MOETUNE, "resolve", "--table", path, "--json",
                               "--m", ",".join(map(str, chunk))],
                              capture_output=True, text=True)
        if proc.returncode != 0:
            return proc.stderr.strip()
        lines = proc.stdout.splitlines() if len(chunk) > 1 else [proc.stdout]
        out.extend(json.loads(line) for line in lines if line.strip())
    return out


def row_mismatch(row, res):
    """'' when moetune's resolution serves the engine's row, else what differs."""
    gemm1 = res["config"]["gemm1"]
    for field, ours in TILE_FIELDS.items():
        if gemm1["tile"][ours] != row[field]:
            return f"{field} {gemm1['tile'][ours]} != {row[field]}"
    absent = [f for f in LAUNCH_FIELDS if f not in row]
    if res["absent_fields"] != absent:
        return f"absent_fields {res['absent_fields']} != {absent}"
    for field, ours in LAUNCH_FIELDS.items():
        if field in row and gemm1["pipeline"][ours] != row[field]:
            return f"{field} {gemm1['pipeline'][ours]} != {row[field]}"
    known = set(TILE_FIELDS) | set(LAUNCH_FIELDS) | {"SPLIT_K"}
    extra = {k: v for k, v in row.items() if k not in known}
    if res["engine_fields"] != extra:
        return f"engine_fields {res['engine_fields']} != {extra}"
    return ""


def compare(path, ms, configs=None):
    """(lookups agreeing, lookups, first disagreement or '') for one file."""
    configs = engine_configs(path) if configs is None else configs
    got = moetune_resolve(path, ms)
    if isinstance(got, str):
        return 0, len(ms), f"refused: {got}"
    agree, first = 0, ""
    for m, res in zip(ms, got):
        want = engine_key(configs, m)
        if res["m"] != m or res["key"] != want:
            why = f"M={m}: moetune key {res['key']}, engine key {want}"
        else:
            why = row_mismatch(configs[want], res)
            why = f"M={m} key {want}: {why}" if why else ""
        agree += not why
        first = first or why
    return agree, len(ms), first


def sample_files():
    out = []
    for root, _, files in os.walk(SAMPLE):
        out.extend(os.path.join(root, f) for f in files if f.endswith(".json"))
    return sorted(out)


class SampleOfEngineFiles(unittest.TestCase):
    def test_sample_holds_every_kind_of_file_the_issue_names(self):
        kinds = set()
        for path in sample_files():
            configs = engine_configs(path)
            if list(configs) != sorted(configs):
                kinds.add("keys out of order")
            for row in configs.values():
                kinds.update(f for f in ("USE_TMA", "grf_mode", "num_ctas", "waves_per_eu", "kpack",
                                         "matrix_instr_nonkdim") if f in row)
                if "num_warps" not in row:
                    kinds.add("no num_warps")
        self.assertEqual(kinds, {"keys out of order", "USE_TMA", "grf_mode", "num_ctas",
                                 "waves_per_eu", "kpack", "matrix_instr_nonkdim", "no num_warps"})

    def test_resolve_is_the_engines_lookup_at_every_m(self):
        for path in sample_files():
            keys = list(engine_configs(path))
            ms = list(range(1, 2 * max(keys) + 2))
            with self.subTest(file=os.path.relpath(path, SAMPLE)):
                agree, total, why = compare(path, ms)
                self.assertEqual(why, "")
                self.assertEqual(agree, total)

    def test_a_tie_goes_to_the_key_first_in_the_file(self):
        # keys ... 512, 256 ...: M=384 is 128 from both; the engines take 512, listed first.
        path = os.path.join(SAMPLE, "vllm-0.33.0",
                            "E=16,N=800,device_name=NVIDIA_H100_80GB_HBM3,dtype=fp8_w8a8.json")
        got = moetune_resolve(path, [384])
        self.assertEqual(engine_key(engine_configs(path), 384), 512)
        self.assertEqual(got[0]["key"], 512)
        self.assertIn("ties to the key listed first in the file", got[0]["explain"])

    def test_the_comparison_catches_a_lookup_that_sorts_the_keys(self):
        # Negative twin: an "engine" that sorted its keys first (the bug this test guards against)
        # disagrees with moetune at some tie of a file whose keys are out of order.
        path = os.path.join(SAMPLE, "vllm-0.33.0",
                            "E=16,N=800,device_name=NVIDIA_H100_80GB_HBM3,dtype=fp8_w8a8.json")
        configs = engine_configs(path)
        sorted_configs = dict(sorted(configs.items()))
        _, _, why = compare(path, critical_ms(list(configs)), sorted_configs)
        self.assertIn("engine key", why)

    def test_the_comparison_catches_a_dropped_engine_field(self):
        # Negative twin: a row field moetune did not show (here one the file lacks) is caught.
        path = os.path.join(SAMPLE, "vllm-0.33.0", "E=8,N=3584,device_name=NVIDIA_L40S.json")
        configs = engine_configs(path)
        for row in configs.values():
            row.pop("num_ctas", None)
        _, _, why = compare(path, [1], configs)
        self.assertIn("engine_fields", why)

    def test_refusals_say_so(self):
        with tempfile.TemporaryDirectory() as tmp:
            path = os.path.join(tmp, "E=8,N=128,device_name=X.json")
            with open(path, "w") as f:
                f.write('{"16": {"BLOCK_SIZE_M": 16}}')
            agree, total, why = compare(path, [16], {16: {"BLOCK_SIZE_M": 16}})
            self.assertEqual((agree, total), (0, 1))
            self.assertIn("refused", why)
            self.assertIn("missing field 'BLOCK_SIZE_N'", why)


def count(dirs):
    files = files_ok = lookups = lookups_ok = other_loader = 0
    for d in dirs:
        for root, _, names in os.walk(d):
            for name in sorted(names):
                if not (name.startswith("E=") and name.endswith(".json")):
                    continue
                path = os.path.join(root, name)
                ms = critical_ms(list(engine_configs(path)))
                agree, total, why = compare(path, ms)
                if why.startswith("refused") and "the name says backend=" in why:
                    other_loader += 1  # vLLM's FlyDSL files: refused by name, with the reason
                    continue
                files += 1
                files_ok += not why
                lookups += total
                lookups_ok += agree
                if why:
                    print(f"{os.path.relpath(path, d)}: {why}")
    print(f"files agreeing: {files_ok}/{files}; lookups agreeing: {lookups_ok}/{lookups}; "
          f"refused as another loader's (backend= in the name): {other_loader}")
    return 0 if files_ok == files else 1


if __name__ == "__main__":
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    MOETUNE = os.path.abspath(sys.argv[1])
    if len(sys.argv) > 2 and sys.argv[2] == "--count":
        sys.exit(count(sys.argv[3:]))
    unittest.main(argv=[sys.argv[0]] + sys.argv[2:])
