#!/usr/bin/env python3
"""tools/stage_floors.py (ctest runs this from the source tree): the per-stage floors of a synthetic
row equal the bytes and flops worked out by hand (gated and not, bandwidth- and compute-bound), a
shape filter and --min-m leave rows out, and a CSV without a needed column or file is refused
(exit 2)."""
import contextlib
import csv
import io
import os
import sys
import tempfile
import unittest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "tools"))
import stage_floors  # noqa: E402


def row(**kw):
    r = {"shape": "T", "K": "1000", "I": "500", "top_k": "2", "act": "relu2", "M": "10",
         "experts_hit": "4", "time_us": "100", "floor_us": "50", "align_us": "5", "gemm1_us": "40",
         "gemm2_us": "30", "combine_us": "10", "copy_GBps": "1000", "peak_TFLOPs": "1000"}
    r.update({k: str(v) for k, v in kw.items()})
    return r


class StageFloors(unittest.TestCase):
    def test_bandwidth_bound_floors_count_weights_and_intermediates(self):
        # relu2: N1 = I = 500; pairs = 20; 1000 GB/s = 1e6 bytes per us.
        g1, g2, comb = stage_floors.floors(row())
        self.assertAlmostEqual(g1, (4 * 500 * 1000 + 10 * 1000 + 20 * 500) * 2 / 1e6)
        self.assertAlmostEqual(g2, (4 * 1000 * 500 + 20 * 500 + 20 * 1000) * 2 / 1e6)
        self.assertAlmostEqual(comb, (20 * 1000 + 10 * 1000) * 2 / 1e6)

    def test_gated_gemm1_has_twice_the_rows_and_compute_bound_floors_use_the_flops(self):
        g1, g2, _ = stage_floors.floors(row(act="silu", M=100000, peak_TFLOPs=1))
        pairs = 200000
        self.assertAlmostEqual(g1, 2.0 * pairs * 1000 * 1000 / 1e6)  # N1 = 2 I = 1000
        self.assertAlmostEqual(g2, 2.0 * pairs * 1000 * 500 / 1e6)

    def run_main(self, rows, *args, fields=None):
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "run.csv")
            with open(path, "w", newline="") as f:
                w = csv.DictWriter(f, fieldnames=fields or list(rows[0].keys()),
                                   extrasaction="ignore")
                w.writeheader()
                w.writerows(rows)
            out = io.StringIO()
            with contextlib.redirect_stdout(out), contextlib.redirect_stderr(io.StringIO()):
                rc = stage_floors.main(["stage_floors.py", path] + list(args))
            return rc, out.getvalue()

    def test_the_table_has_a_row_per_kept_point_and_the_filters_drop_the_others(self):
        rows = [row(shape="A", M=10), row(shape="A", M=2000), row(shape="B", M=2000)]
        rc, out = self.run_main(rows)
        self.assertEqual(rc, 0)
        self.assertEqual(len(out.splitlines()), 2 + 3)
        rc, out = self.run_main(rows, "--shapes", "A", "--min-m", "100")
        self.assertEqual(rc, 0)
        body = out.splitlines()[2:]
        self.assertEqual(len(body), 1)
        self.assertTrue(body[0].startswith("| A | 2000 |"))

    def test_a_missing_column_or_file_is_refused(self):
        fields = [f for f in row().keys() if f != "combine_us"]
        rc, _ = self.run_main([row()], fields=fields)
        self.assertEqual(rc, 2)
        with contextlib.redirect_stderr(io.StringIO()):
            self.assertEqual(stage_floors.main(["stage_floors.py", "/nonexistent/run.csv"]), 2)


if __name__ == "__main__":
    unittest.main()
