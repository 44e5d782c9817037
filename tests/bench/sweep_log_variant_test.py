#!/usr/bin/env python3
"""bench/sweep_log_variant.py (ctest runs this from the source tree): on a synthetic sweep log it
gives a recipe row the fastest GEMM1 and GEMM2 of the asked block_m space, leaves other rows, points
and spaces alone, honours --points, lists the changed points, and refuses an unparsable config."""
import contextlib
import io
import json
import os
import sys
import tempfile
import unittest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "bench"))
import sweep_log_variant  # noqa: E402

HEADER = "shape,M,pairs_per_expert,space_block_m,gemm,config,us\n"
FAST1, SLOW1 = "m192n96k64g8w12s4tw", "m192n64k64g8w12s5tw"
FAST2 = "m192n128k64g8w12s5tw"
OTHER = "m128n128k64g8w8s4tw"
ROWS = [("S2", 2048, 128, 192, "gemm1", SLOW1, "300"),
        ("S2", 2048, 128, 192, "gemm1", FAST1, "280"),
        ("S2", 2048, 128, 192, "gemm2", FAST2, "140"),
        ("S2", 2048, 128, 128, "gemm1", OTHER, "10"),   # faster, but another space
        ("S2", 2048, 128, 128, "gemm2", OTHER, "10"),
        ("S2", 1024, 64, 192, "gemm1", FAST1, "200"),
        ("S2", 1024, 64, 192, "gemm2", FAST2, ""),       # GEMM2 failed: the point is skipped
        ("S3", 512, 128, 192, "gemm1", FAST1, "600"),
        ("S3", 512, 128, 192, "gemm2", FAST2, "290"),
        ("H1", 2048, 128, 192, "gemm1", FAST1, "900"),   # no such shape in the recipe
        ("H1", 2048, 128, 192, "gemm2", FAST2, "500")]


def recipe():
    pinned = {"config": {"gemm1": {"tile": {"block_m": 128}}, "gemm2": {"tile": {"block_m": 128}}},
              "numbers": {"time_us": 1.0}}
    return {"shapes": [{"name": n, "pinned_rows": {str(m): json.loads(json.dumps(pinned))
                                                   for m in (1024, 2048, 512)}}
                       for n in ("qwen3-30b-a3b-s2", "mixtral-8x7b-s3")]}


class SweepLogVariant(unittest.TestCase):
    def run_main(self, rows, *extra):
        with tempfile.TemporaryDirectory() as d:
            rp, lp = os.path.join(d, "r.json"), os.path.join(d, "log.csv")
            json.dump(recipe(), open(rp, "w"))
            with open(lp, "w") as f:
                f.write(HEADER + "".join("%s,%d,%g,%d,%s,%s,%s\n" % r for r in rows))
            out = io.StringIO()
            with contextlib.redirect_stdout(out):
                sweep_log_variant.main([rp, lp, "--block-m", "192", *extra])
            return out.getvalue()

    def rows_of(self, text):
        return {s["name"]: s["pinned_rows"] for s in json.loads(text)["shapes"]}

    def test_takes_the_fastest_pair_of_the_space_and_keeps_the_rest(self):
        rows = self.rows_of(self.run_main(ROWS))
        s2 = rows["qwen3-30b-a3b-s2"]
        self.assertEqual(s2["2048"]["config"]["gemm1"]["tile"]["block_n"], 96)
        self.assertEqual(s2["2048"]["config"]["gemm1"]["pipeline"]["num_warps"], 12)
        self.assertEqual(s2["2048"]["config"]["gemm2"]["tile"]["block_n"], 128)
        self.assertEqual(s2["2048"]["numbers"], {"time_us": 1.0})  # re-time before quoting
        self.assertEqual(s2["1024"]["config"]["gemm1"]["tile"], {"block_m": 128})
        self.assertEqual(rows["mixtral-8x7b-s3"]["512"]["config"]["gemm1"]["tile"]["block_m"], 192)

    def test_points_limits_the_change_and_list_changed_names_it(self):
        rows = self.rows_of(self.run_main(ROWS, "--points", "S3:512"))
        self.assertEqual(rows["qwen3-30b-a3b-s2"]["2048"]["config"]["gemm1"]["tile"],
                         {"block_m": 128})
        self.assertEqual(self.run_main(ROWS, "--list-changed").strip(), "S2,S3 512,2048")
        self.assertEqual(self.run_main(ROWS[:5], "--points", "S3:512", "--list-changed").strip(),
                         "none")

    def test_refuses_a_config_it_cannot_parse(self):
        bad = ROWS + [("S2", 4096, 256, 192, "gemm1", "m192n96???", "1")]
        with self.assertRaises(SystemExit) as e, contextlib.redirect_stderr(io.StringIO()):
            self.run_main(bad)
        self.assertEqual(e.exception.code, 2)


if __name__ == "__main__":
    unittest.main()
