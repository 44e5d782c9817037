#!/usr/bin/env python3
"""bench/fit_defaults.py (ctest runs this from the source tree): on a synthetic sweep log it ranks
the fastest compatible pair of a band first, prices the CSV's defaults and the rule against each
point's best, ranks decode configs across M by their stage time alone, refuses a log without a
timed candidate, and takes the rule from `moetune defaults --backend cuda` (a stand-in binary
here: tests/cli/defaults_test.cpp checks the real command against the C++ rule's grid), asking
once for every --bench-csv shape and ending with the binary's message when it fails."""
import contextlib
import io
import json
import os
import sys
import tempfile
import unittest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "bench"))
import fit_defaults  # noqa: E402

STAND_IN = os.path.join(ROOT, "tests", "bench", "defaults_stand_in.py")


BENCH_HEADER = "shape,E,K,I,top_k,act,M,time_us,floor_us,default_us,default_config"


def log(rows):
    return "shape,M,pairs_per_expert,space_block_m,gemm,config,us\n" + "".join(
        "%s,%d,%g,%d,%s,%s,%s\n" % r for r in rows)


class FitDefaults(unittest.TestCase):
    def run_main(self, sweep, bench=None, rule=None, env=None):
        """fit_defaults' output; `rule` maps "E,K,I,top_k,act,M" to "gemm1|gemm2" (the stand-in's
        answers), `env` adds variables for the stand-in."""
        with tempfile.TemporaryDirectory() as d:
            sp = os.path.join(d, "sweep.csv")
            with open(sp, "w") as f:
                f.write(sweep)
            rp = os.path.join(d, "rule.json")
            with open(rp, "w") as f:
                json.dump(rule or {}, f)
            self.log_path = os.path.join(d, "calls.log")
            saved = dict(os.environ)
            os.environ.update({"STAND_IN_RULE": rp, "STAND_IN_LOG": self.log_path}, **(env or {}))
            args = [sp, "--moetune", STAND_IN]
            if bench is not None:
                bp = os.path.join(d, "bench.csv")
                with open(bp, "w") as f:
                    f.write(BENCH_HEADER + "\n" + bench)
                args += ["--bench-csv", bp]
            out = io.StringIO()
            try:
                with contextlib.redirect_stdout(out):
                    fit_defaults.main(args)
            finally:
                self.calls = ""
                if os.path.exists(self.log_path):
                    with open(self.log_path) as f:
                        self.calls = f.read()
                os.environ.clear()
                os.environ.update(saved)
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
        rule = {"128,2048,768,8,silu,512": fast + "|" + fast,
                "128,2048,768,16,silu,256": fast + "|" + fast}
        text = self.run_main(log(rows), bench, rule)
        band = text.split("p in (24, 48]: 2 points\n")[1].splitlines()
        self.assertIn("1.000 (worst 1.000)  %s | %s" % (fast, fast), band[0])
        self.assertIn("the CSV's defaults: geomean 1.300 over 2 points", text)
        self.assertIn("RULE: geomean 1.000 over 2 points", text)
        # One call for both shapes, at every M of the log.
        self.assertEqual(self.calls.count("defaults --backend cuda"), 1, self.calls)
        self.assertIn("--m 256,512", self.calls)
        self.assertIn("--problem E=128,K=2048,I=768,topk=16,act=silu", self.calls)

    def test_rule_is_the_binarys_answer_priced_against_each_points_best(self):
        rows = [("C", 64, 2, 16, "gemm1", "m16n64k64g8w4s5", "110"),
                ("C", 64, 2, 16, "gemm1", "m16n32k64g1w2s4", "100"),
                ("C", 64, 2, 16, "gemm2", "m16n64k64g8w4s5", "50")]
        bench = "C,128,2880,2880,4,silu,64,1,1,1,m16n32k64g1w2s4|m16n64k64g8w4s5\n"
        rule = {"128,2880,2880,4,silu,64": "m16n64k64g8w4s5|m16n64k64g8w4s5"}
        text = self.run_main(log(rows), bench, rule)
        self.assertIn("the CSV's defaults: geomean 1.000", text)
        self.assertIn("RULE: geomean 1.067 over 1 points", text)  # (110 + 50) / (100 + 50)

    def test_a_failing_binary_ends_the_tool_with_its_message(self):
        rows = [("C", 64, 2, 16, "gemm1", "m16n64k64g8w4s5", "110"),
                ("C", 64, 2, 16, "gemm2", "m16n64k64g8w4s5", "50")]
        bench = "C,128,2880,2880,4,silu,64,1,1,1,m16n64k64g8w4s5\n"
        with self.assertRaises(SystemExit) as e:
            self.run_main(log(rows), bench, env={"STAND_IN_FAIL": "backend 'cuda' is not built"})
        self.assertIn("exit 1: moetune defaults: backend 'cuda' is not built", str(e.exception.code))

    def test_ranks_decode_configs_without_their_pairs_per_pass_and_prices_rule_decode(self):
        g1, g2 = "n4k512g1w4s1swap", "n4k512g1w8s1swap"
        other = "n8k512g1w4s1swap"
        rows = [("D", 1, 0.1, 1, "gemm1", "m1" + g1, "12"),
                ("D", 1, 0.1, 1, "gemm1", "m1" + other, "10"),
                ("D", 4, 0.4, 4, "gemm1", "m4" + g1, "30"),
                ("D", 4, 0.4, 4, "gemm1", "m4" + other, "30"),
                ("D", 1, 0.1, 1, "gemm2", "m1" + g2, "5"),
                ("D", 4, 0.4, 4, "gemm2", "m4" + g2, "9")]
        bench = "".join("D,40,1024,512,4,silu,%d,1,1,1,m%d%s|m%d%s\n" % (m, m, g1, m, g2)
                        for m in (1, 4))
        rule = {"40,1024,512,4,silu,%d" % m: "m%d%s|m%d%s" % (m, g1, m, g2) for m in (1, 4)}
        text = self.run_main(log(rows), bench, rule)
        gemm1 = text.split("decode gemm1: 2 points\n")[1].splitlines()
        self.assertIn("1.000 (worst 1.000)  " + other, gemm1[0])
        self.assertIn("RULE %s: 1.095 (worst 1.200)" % g1, text)  # sqrt(1.2 x 1.0)
        self.assertIn("RULE %s: 1.000 (worst 1.000)" % g2, text)

    def test_refuses_a_log_without_a_timed_candidate(self):
        with self.assertRaises(SystemExit) as e:
            self.run_main(log([("A", 64, 2, 16, "gemm1", "m16n64k64g8w4s5", "")]))
        self.assertIn("holds no timed candidate", str(e.exception.code))


if __name__ == "__main__":
    unittest.main()
