#!/usr/bin/env python3
"""bench/tuner_targets.py's part c (ctest runs this from the source tree), on real SQLite stores
holding the two tables it reads: winners that every tune timed within 1% of each other pass, a
winner another tune timed 3% slower fails however its own tune ranked it, a pair of winners no
tune timed both of is unknown (not met), and one winner named by every tune has spread 0."""
import contextlib
import io
import json
import os
import sqlite3
import sys
import tempfile
import unittest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "bench"))
import tuner_targets  # noqa: E402


def config(block_m):
    k = {"tile": {"block_m": block_m, "block_n": 64, "block_k": 64, "group_m": 1},
         "pipeline": {"num_warps": 4, "num_stages": 3, "split_k": 1},
         "launch": {"swap_ab": False, "cluster_m": 1, "cluster_n": 1, "schedule": "auto",
                    "num_threads": 0}}
    return json.dumps({"gemm1": k, "gemm2": k})


A, B, C = config(16), config(32), config(64)


def store(path, bucket, winner, times):
    """A store whose bucket's decision names `winner`, with one passes' median per config of
    `times` (config -> us), in a halving round and in the final round."""
    db = sqlite3.connect(path)
    db.execute("CREATE TABLE decisions (id INTEGER PRIMARY KEY, bucket INTEGER, winner TEXT, "
               "tied TEXT, winner_us REAL, verdict TEXT)")
    db.execute("CREATE TABLE measurements (bucket INTEGER, config TEXT, median_us REAL, "
               "outcome TEXT, round INTEGER)")
    db.execute("INSERT INTO decisions (bucket, winner, tied, winner_us, verdict) VALUES "
               "(?, ?, '', ?, 'challenger_wins')", (bucket, winner, times[winner]))
    for c, us in times.items():
        for rnd in (1, tuner_targets.FINAL_ROUND):
            db.execute("INSERT INTO measurements VALUES (?, ?, ?, 'ok', ?)", (bucket, c, us, rnd))
    db.commit()
    db.close()


class Spread(unittest.TestCase):
    def rows(self, tunes):
        """tunes: list of (winner, times) for bucket 16; the CSV's rows after main()."""
        with tempfile.TemporaryDirectory() as d:
            for i, (winner, times) in enumerate(tunes):
                name = "tune-a.db" if i == 0 else "tune-%d.db" % (i + 1)
                store(os.path.join(d, name), 16, winner, times)
            with contextlib.redirect_stdout(io.StringIO()):
                self.assertEqual(tuner_targets.main(d), 0)
            with open(os.path.join(d, "tuner-targets.csv")) as f:
                return f.read()

    def spread_of(self, tunes):
        lines = self.rows(tunes).splitlines()
        header, row = lines[0].split(","), lines[1].split(",")
        return row[header.index("winners_spread_pct")], row[header.index("within_1pct")]

    def test_winners_within_one_percent_pass(self):
        self.assertEqual(self.spread_of([(A, {A: 100.0, B: 100.5}), (B, {A: 100.6, B: 100.0})]),
                         ("0.05", "True"))

    def test_a_winner_three_percent_slower_fails(self):
        # Tune 2 named B, but tune a and tune 3 timed B 3% behind A: the median ratio is 1.03.
        spread, ok = self.spread_of([(A, {A: 100.0, B: 103.0}), (B, {A: 100.4, B: 100.0}),
                                     (A, {A: 100.0, B: 103.0})])
        self.assertEqual((spread, ok), ("3.0", "False"))

    def test_a_pair_no_tune_timed_is_unknown(self):
        spread, ok = self.spread_of([(A, {A: 100.0}), (C, {C: 100.0})])
        self.assertEqual((spread, ok), ("", "False"))

    def test_one_winner_has_no_spread(self):
        self.assertEqual(self.spread_of([(A, {A: 100.0, B: 104.0}), (A, {A: 99.0})]),
                         ("0.0", "True"))


if __name__ == "__main__":
    unittest.main()
