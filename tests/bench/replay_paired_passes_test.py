#!/usr/bin/env python3
"""bench/replay_paired_passes.py (ctest runs this from the source tree): its paired test is
tuner::paired_passes_beat's (the C++ unit test's two cases), and on two synthetic stores it widens
a tune's tie set by exactly the finalist whose passes disagree with the winner's order, which turns
a disagreement into agreement; each has a twin that must not."""
import os
import sqlite3
import sys
import tempfile
import unittest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "bench"))
import replay_paired_passes as replay  # noqa: E402


def config(block_n):
    gemm = ('{"tile":{"block_m":128,"block_n":%d,"block_k":64,"group_m":8},'
            '"pipeline":{"num_warps":8,"num_stages":4,"split_k":1},"launch":{"swap_ab":false,'
            '"cluster_m":1,"cluster_n":1,"schedule":"tma_ws","num_threads":0}}' % block_n)
    return '{"gemm1":%s,"gemm2":%s}' % (gemm, gemm)


def write_store(path, winner, passes):
    """A store with one bucket (M=8192): `winner` decided (no ties), and the final round's pass
    medians `passes` {block_n: [4 medians]}."""
    db = sqlite3.connect(path)
    db.execute("CREATE TABLE measurements (bucket INTEGER, round INTEGER, config TEXT, "
               "outcome TEXT, median_us REAL)")
    db.execute("CREATE TABLE decisions (id INTEGER PRIMARY KEY, bucket INTEGER, winner TEXT, "
               "tied TEXT)")
    for bn, medians in passes.items():
        for p, m in enumerate(medians):
            db.execute("INSERT INTO measurements VALUES (8192, ?, ?, 'ok', ?)",
                       (100 + p, config(bn), m))
    db.execute("INSERT INTO decisions (bucket, winner, tied) VALUES (8192, ?, '')",
               (config(winner),))
    db.commit()
    db.close()


class PairedBeat(unittest.TestCase):
    def test_a_lead_one_pass_reverses_does_not_beat(self):
        self.assertFalse(replay.paired_beat([88, 89, 90, 101], [100] * 4, 0.01))

    def test_a_lead_every_pass_shows_beats(self):
        self.assertTrue(replay.paired_beat([88, 89, 90, 91], [100] * 4, 0.01))


class Replay(unittest.TestCase):
    def agreement(self, tune_a_232):
        with tempfile.TemporaryDirectory() as d:
            # Tune a names n256, with n232's pass medians `tune_a_232` against its 1000 us.
            write_store(os.path.join(d, "tune-a.db"), 256,
                        {256: [1000] * 4, 232: tune_a_232})
            # Tune 2 names n232; n256 is 10% behind it in every pass.
            write_store(os.path.join(d, "tune-2.db"), 232, {232: [1000] * 4, 256: [1100] * 4})
            tunes = [replay.answers(os.path.join(d, t), 0.01) for t in ("tune-a.db", "tune-2.db")]
            stored = replay.agree([t[8192][0] for t in tunes])
            replayed = replay.agree([t[8192][1] for t in tunes])
            return stored, replayed

    def test_a_finalist_the_passes_do_not_separate_joins_the_ties_and_the_tunes_agree(self):
        # In tune a n232 was slower in three passes and faster in one.
        self.assertEqual(self.agreement([1060, 1050, 990, 1070]), (False, True))

    def test_a_finalist_behind_in_every_pass_stays_out(self):
        # The twin: n232 5-7% behind in every pass of tune a; the tunes still disagree.
        self.assertEqual(self.agreement([1060, 1050, 1050, 1070]), (False, False))


if __name__ == "__main__":
    unittest.main()
