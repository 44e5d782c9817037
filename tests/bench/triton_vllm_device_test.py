#!/usr/bin/env python3
"""bench/triton_vllm_device.py without a GPU (ctest runs this from the source tree): the agreement
rule (tunes_agree) calls tunes that name one row agreeing however far apart its timings came out,
compares distinct rows by the median of their tunes' medians against the 1% bound, and says
nothing without agreement tunes; `--phase summary` writes that verdict per M into summary.csv."""
import csv
import os
import subprocess
import sys
import tempfile
import unittest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SCRIPT = os.path.join(ROOT, "bench", "triton_vllm_device.py")
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


if __name__ == "__main__":
    unittest.main()
