#!/usr/bin/env python3
"""bench/fit_defaults.py (ctest runs this from the source tree): on a synthetic sweep log it ranks
the fastest compatible pair of a band first, prices the CSV's defaults and RULE against each
point's best, maps RULE's block_k 128 to 64 with 5 stages where the reduction size refuses 128,
ranks decode configs across M by their stage time alone, refuses a log without a timed
candidate, and gives every shape of tests/kernels/cuda/default_rule_grid.csv the configs the C++
rule gives it (jit_default_rule_test.cpp checks sm90_default_config against the same file)."""
import csv
import contextlib
import io
import os
import sys
import tempfile
import unittest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "bench"))
import fit_defaults  # noqa: E402

GRID = os.path.join(ROOT, "tests", "kernels", "cuda", "default_rule_grid.csv")


def grid_mismatches(rows):
    """Rows of the grid whose (gemm1, gemm2) default_pair() gives otherwise, with what it gives."""
    out = []
    for r in rows:
        got = fit_defaults.default_pair(r["act"] == "silu", int(r["E"]), int(r["K"]), int(r["I"]),
                                        int(r["top_k"]), int(r["M"]))
        if got != (r["gemm1"], r["gemm2"]):
            out.append((r, got))
    return out


BENCH_HEADER = "shape,E,K,I,top_k,act,M,time_us,floor_us,default_us,default_config"


def log(rows):
    return "shape,M,pairs_per_expert,space_block_m,gemm,config,us\n" + "".join(
        "%s,%d,%g,%d,%s,%s,%s\n" % r for r in rows)


class FitDefaults(unittest.TestCase):
    def run_main(self, sweep, bench=None):
        with tempfile.TemporaryDirectory() as d:
            sp = os.path.join(d, "sweep.csv")
            with open(sp, "w") as f:
                f.write(sweep)
            args = [sp]
            if bench is not None:
                bp = os.path.join(d, "bench.csv")
                with open(bp, "w") as f:
                    f.write(BENCH_HEADER + "\n" + bench)
                args += ["--bench-csv", bp]
            out = io.StringIO()
            with contextlib.redirect_stdout(out):
                fit_defaults.main(args)
            return out.getvalue()

    def test_ranks_the_fastest_pair_first_and_prices_defaults_and_rule(self):
        fast, slow = "m64n128k64g8w4s5tw", "m32n64k64g8w4s4"
        rows = []
        for shape, m in (("A", 512), ("B", 256)):
            rows += [(shape, m, 32, 64, "gemm1", fast, "100"),
                     (shape, m, 32, 32, "gemm1", slow, "130"),
                     (shape, m, 32, 64, "gemm2", fast, "50"),
                     (shape, m, 32, 32, "gemm2", slow, "65")]
        bench = ("A,128,2048,768,8,silu,512,1,1,1,%s|%s\n" % (slow, slow) +
                 "B,128,2048,768,16,silu,256,1,1,1,%s|%s\n" % (slow, slow))
        text = self.run_main(log(rows), bench)
        band = text.split("p in (24, 48]: 2 points\n")[1].splitlines()
        self.assertIn("1.000 (worst 1.000)  %s | %s" % (fast, fast), band[0])
        self.assertIn("the CSV's defaults: geomean 1.300 over 2 points", text)
        self.assertIn("RULE: geomean 1.000 over 2 points", text)

    def test_rule_block_k_128_reads_64_with_five_stages_where_k_refuses_128(self):
        # K = 2880 (45 x 64): RULE's GEMM1 m16n64k128g8w4s3 at p = 2 is m16n64k64g8w4s5 here.
        rows = [("C", 64, 2, 16, "gemm1", "m16n64k64g8w4s5", "110"),
                ("C", 64, 2, 16, "gemm1", "m16n64k64g8w4s3", "200"),
                ("C", 64, 2, 16, "gemm1", "m16n32k64g1w2s4", "100"),
                ("C", 64, 2, 16, "gemm2", "m16n64k64g8w4s5", "50")]
        bench = "C,128,2880,2880,4,silu,64,1,1,1,m16n32k64g1w2s4|m16n64k64g8w4s5\n"
        text = self.run_main(log(rows), bench)
        self.assertIn("the CSV's defaults: geomean 1.000", text)
        self.assertIn("RULE: geomean 1.067 over 1 points", text)  # (110 + 50) / (100 + 50)

    def test_ranks_decode_configs_without_their_pairs_per_pass_and_prices_rule_decode(self):
        g1, g2 = fit_defaults.RULE_DECODE
        other = "n8k512g1w4s1swap"
        rows = [("D", 1, 0.1, 1, "gemm1", "m1" + g1, "12"),
                ("D", 1, 0.1, 1, "gemm1", "m1" + other, "10"),
                ("D", 4, 0.4, 4, "gemm1", "m4" + g1, "30"),
                ("D", 4, 0.4, 4, "gemm1", "m4" + other, "30"),
                ("D", 1, 0.1, 1, "gemm2", "m1" + g2, "5"),
                ("D", 4, 0.4, 4, "gemm2", "m4" + g2, "9")]
        text = self.run_main(log(rows))
        gemm1 = text.split("decode gemm1: 2 points\n")[1].splitlines()
        self.assertIn("1.000 (worst 1.000)  " + other, gemm1[0])
        self.assertIn("RULE %s: 1.095 (worst 1.200)" % g1, text)  # sqrt(1.2 x 1.0)
        self.assertIn("RULE %s: 1.000 (worst 1.000)" % g2, text)

    def test_default_pair_gives_every_grid_shape_what_the_cpp_rule_gives(self):
        with open(GRID) as f:
            rows = list(csv.DictReader(f))
        self.assertGreaterEqual(len(rows), 100)
        self.assertEqual(grid_mismatches(rows), [])

    def test_grid_option_prints_the_committed_grid(self):
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            fit_defaults.main(["--grid"])
        with open(GRID) as f:
            self.assertEqual(out.getvalue(), f.read())

    def test_grid_check_reports_the_one_row_whose_expectation_was_changed(self):
        with open(GRID) as f:
            rows = list(csv.DictReader(f))
        rows[40]["gemm2"] = "m16n64k64g8w4s4"  # no grid row expects this config
        bad = grid_mismatches(rows)
        self.assertEqual(len(bad), 1)
        self.assertIs(bad[0][0], rows[40])

    def test_refuses_a_log_without_a_timed_candidate(self):
        with self.assertRaises(SystemExit) as e:
            self.run_main(log([("A", 64, 2, 16, "gemm1", "m16n64k64g8w4s5", "")]))
        self.assertIn("holds no timed candidate", str(e.exception.code))


if __name__ == "__main__":
    unittest.main()
