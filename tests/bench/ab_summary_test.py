#!/usr/bin/env python3
"""bench/ab_summary.py (ctest runs this from the source tree): on synthetic runs of two and of three
arms, the medians over rounds and the ratios to the first arm are printed, equal digests pass
(exit 0), one corrupted digest or a missing round is caught (exit 1 with DIGESTS=equal, exit 0 with
any), a second arm faster in every run says so with its config, and bad usage is refused
(exit 2)."""
import contextlib
import csv
import io
import os
import sys
import tempfile
import unittest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "bench"))
import ab_summary  # noqa: E402

FIELDS = ["shape", "M", "time_us", "gemm1_us", "gemm2_us", "digest", "config"]


def write_runs(root, times, digest="d1", config="cfg"):
    """times: arm -> list (per round) of (shape, M, time_us); gemm1 = time / 2, gemm2 = time / 4."""
    for arm, rounds in times.items():
        for r, points in enumerate(rounds, start=1):
            d = os.path.join(root, "%s-%d" % (arm, r))
            os.makedirs(d, exist_ok=True)
            with open(os.path.join(d, "run.csv"), "w", newline="") as f:
                w = csv.DictWriter(f, fieldnames=FIELDS)
                w.writeheader()
                for shape, m, t in points:
                    w.writerow({"shape": shape, "M": m, "time_us": t, "gemm1_us": t / 2,
                                "gemm2_us": t / 4, "digest": digest, "config": config})


class AbSummary(unittest.TestCase):
    def run_main(self, root, rounds, digests, arms):
        out = io.StringIO()
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(io.StringIO()):
            rc = ab_summary.main(["ab_summary.py", root, str(rounds), digests] + arms)
        return rc, out.getvalue()

    def test_two_arms_print_medians_ratio_and_rounds_and_pass_on_equal_digests(self):
        with tempfile.TemporaryDirectory() as d:
            write_runs(d, {"A": [[("S1", 64, 100.0)], [("S1", 64, 104.0)], [("S1", 64, 102.0)]],
                           "B": [[("S1", 64, 90.0)], [("S1", 64, 80.0)], [("S1", 64, 85.0)]]})
            rc, out = self.run_main(d, 3, "equal", ["A", "B"])
            self.assertEqual(rc, 0)
            line = out.splitlines()[1].split()
            self.assertEqual(line[:5], ["S1", "64", "102.00", "85.00", "0.833"])
            self.assertEqual(line[-1], "same")
            self.assertIn("per round A: 100.00 104.00 102.00  B: 90.00 80.00 85.00", out)

    def test_two_arms_say_whether_b_beat_a_in_every_run_and_name_bs_other_config(self):
        with tempfile.TemporaryDirectory() as d:
            write_runs(d, {"A": [[("S2", 2048, 400.0)], [("S2", 2048, 420.0)]]})
            write_runs(d, {"B": [[("S2", 2048, 380.0)], [("S2", 2048, 390.0)]]}, config="wide")
            _, out = self.run_main(d, 2, "any", ["A", "B"])
            self.assertEqual(out.splitlines()[1].split()[-2], "yes")
            self.assertIn("B config: wide", out)
            write_runs(d, {"B": [[("S2", 2048, 380.0)], [("S2", 2048, 405.0)]]}, config="wide")
            _, out = self.run_main(d, 2, "any", ["A", "B"])
            self.assertEqual(out.splitlines()[1].split()[-2], "no")  # 405 is not below 400

    def test_three_arms_print_a_line_per_arm_with_its_ratio_to_the_first(self):
        with tempfile.TemporaryDirectory() as d:
            write_runs(d, {"off": [[("S2", 8, 50.0)]], "on4": [[("S2", 8, 60.0)]],
                           "on8": [[("S2", 8, 40.0)]]})
            rc, out = self.run_main(d, 1, "equal", ["off", "on4", "on8"])
            self.assertEqual(rc, 0)
            rows = [l.split() for l in out.splitlines()[1:]]
            self.assertEqual([r[2] for r in rows], ["off", "on4", "on8"])
            self.assertEqual([r[4] for r in rows], ["1.000", "1.200", "0.800"])
            self.assertEqual([r[5] for r in rows], ["25.00", "30.00", "20.00"])  # gemm1 = t / 2

    def test_one_corrupted_digest_is_caught_where_digests_must_be_equal(self):
        with tempfile.TemporaryDirectory() as d:
            write_runs(d, {"A": [[("S1", 64, 100.0)]], "B": [[("S1", 64, 90.0)]]})
            write_runs(d, {"B": [[("S1", 64, 90.0)]]}, digest="d2")  # B's one run: another digest
            rc, out = self.run_main(d, 1, "equal", ["A", "B"])
            self.assertEqual(rc, 1)
            self.assertIn("DIFFER", out)
            rc_any, _ = self.run_main(d, 1, "any", ["A", "B"])
            self.assertEqual(rc_any, 0)

    def test_a_missing_round_is_caught_where_digests_must_be_equal(self):
        with tempfile.TemporaryDirectory() as d:
            write_runs(d, {"A": [[("S1", 64, 100.0)], [("S1", 64, 101.0)]],
                           "B": [[("S1", 64, 90.0)]]})
            rc, out = self.run_main(d, 2, "equal", ["A", "B"])
            self.assertEqual(rc, 1)
            self.assertIn("DIFFER", out)

    def test_bad_usage_is_refused(self):
        with tempfile.TemporaryDirectory() as d:
            self.assertEqual(self.run_main(d, 1, "maybe", ["A", "B"])[0], 2)
            self.assertEqual(self.run_main(d, 1, "equal", ["A"])[0], 2)


if __name__ == "__main__":
    unittest.main()
