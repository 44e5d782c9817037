#!/usr/bin/env python3
"""Replays tune --paired-passes on the final rounds of finished tunes, from their stores alone.

Usage: bench/replay_paired_passes.py DIR [--margin 0.01]
DIR holds the stores of repeated tunes of one recipe (tune-a.db, tune-2.db, ...: the layout
bench/run_h200_tuner.sh leaves, two calls merged as bench/tuner_targets.py reads them). For each
bucket, each tune's answer is its stored winner and the finalists it declared tied with it
(decisions.tied), as bench/tuner_targets.py counts agreement; the replay adds every other finalist
the paired test over the passes does not separate from the winner (tuner::paired_passes_beat: the
Student-t interval of the faster one's per-pass median ratio not below 1 - margin, over the
passes both were timed in: the final round's, then its settling rounds'). That is what
--paired-passes adds to the tie set when the winner stays; the winner itself may change under the
rule (a challenger's win over the incumbent can become a tie), which the replay does not model.
Prints, per bucket, agreement as stored and as replayed, and the number of ties each adds.
"""
import glob
import math
import os
import sys
from collections import Counter

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from tuner_targets import decisions, query, short, tied_of  # noqa: E402

FINAL_ROUNDS = list(range(100, 104)) + list(range(80, 88))  # main passes, then settling passes
T975 = [12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228, 2.201]


def paired_beat(fast, slow, margin):
    """tuner::paired_passes_beat: mean + t * sd / sqrt(n) of fast / slow per pass < 1 - margin."""
    r = [f / s for f, s in zip(fast, slow) if s > 0]
    n = len(r)
    if n < 2:
        return False
    mean = sum(r) / n
    sd = math.sqrt(sum((x - mean) ** 2 for x in r) / (n - 1))
    t = T975[n - 2] if n - 2 < len(T975) else 1.96
    return mean + t * sd / math.sqrt(n) < 1 - margin


def pass_medians(path):
    """bucket -> {short config: {round: that pass's median}} of the final and settling rounds."""
    rows = query(path, "SELECT bucket, round, config, median_us FROM measurements WHERE "
                 "outcome = 'ok' AND round IN (%s)" % ",".join(map(str, FINAL_ROUNDS)))
    out = {}
    for bucket, rnd, config, median_us in rows:
        out.setdefault(int(bucket), {}).setdefault(short(config), {})[int(rnd)] = median_us
    return out


def answers(path, margin):
    """bucket -> (stored answer set, replayed answer set) of the tune whose store is `path`."""
    out = {}
    passes = pass_medians(path)
    for bucket, d in decisions(path).items():
        winner = short(d["winner"])
        stored = {winner} | tied_of(d)
        replayed = set(stored)
        mine = passes.get(bucket, {})
        w = mine.get(winner, {})
        for config, p in mine.items():
            if config in stored:
                continue
            shared = [r for r in FINAL_ROUNDS if r in p and r in w]
            if len(shared) < 3:
                continue
            a, b = [p[r] for r in shared], [w[r] for r in shared]
            fast, slow = (a, b) if sorted(a)[len(a) // 2] < sorted(b)[len(b) // 2] else (b, a)
            if not paired_beat(fast, slow, margin):
                replayed.add(config)
        out[bucket] = (stored, replayed)
    return out


def agree(sets):
    counts = Counter(x for s in sets for x in s)
    return bool(counts) and max(counts.values()) == len(sets)


def main():
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    folder = sys.argv[1]
    margin = float(sys.argv[sys.argv.index("--margin") + 1]) if "--margin" in sys.argv else 0.01
    stores = sorted(glob.glob(os.path.join(folder, "tune-*.db")))
    tunes = [answers(s, margin) for s in stores]
    buckets = sorted(set(b for t in tunes for b in t))
    print("tunes: %s (margin %.3f)" % (", ".join(os.path.basename(s) for s in stores), margin))
    print("%7s  %-14s %-14s %s" % ("M", "agree stored", "agree replay", "ties added per tune"))
    stored_n = replay_n = 0
    for b in buckets:
        per = [t[b] for t in tunes if b in t]
        s_ok, r_ok = agree([s for s, _ in per]), agree([r for _, r in per])
        stored_n += s_ok
        replay_n += r_ok
        print("%7d  %-14s %-14s %s" % (b, s_ok, r_ok, " ".join(str(len(r - s)) for s, r in per)))
    print("agreement: stored %d/%d, replayed with --paired-passes %d/%d buckets over %d tunes" %
          (stored_n, len(buckets), replay_n, len(buckets), len(tunes)))


if __name__ == "__main__":
    main()
