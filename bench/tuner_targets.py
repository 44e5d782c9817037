#!/usr/bin/env python3
"""The tuner's issue-4 targets from one `bench/device.sh tuner` folder.

Reads the stores (decisions are recorded per bucket as it finishes, so a run stopped by its
timeout still counts the buckets it did) and the --json outputs where the runs finished:
  tune-a.db / tune-a.json / tune-a.time.json   part a: the table tune and its wall time
  exhaustive-<M>.db / .json                    part b: exhaustive sweeps, a's winner as incumbent
  tune-<k>.db / .json (k = 2..5)               part c: repeated tunes
Writes <dir>/tuner-targets.csv (one row per bucket) and prints the summary table last (the
script then packs everything but the CSV, the summary and run.log into tuner-run.tgz).

Targets: a <= 300 s with every candidate run (none left out by part a's --budget-min); b: a's
winner within 2% of the exhaustive best, both timed in the same final round of the exhaustive
run; c: in >= 95% of buckets the tunes' winners lie within 1% of each other by pooled
measurements (add_spread: for each pair of winners, the median over the tunes that timed both, in
any round, of the ratio of their medians; a pair no tune timed leaves the bucket unknown, not
met). Also reported: whether one config is named by every tune,
as its winner or as a finalist it declared statistically tied with its winner (decisions.tied),
and where none is, the config most tunes named and, for each other tune, whether it was missing
from that tune's final round or how far behind its winner it ran there.
Usage: bench/tuner_targets.py DIR
       bench/tuner_targets.py --faults STORE   (part d: each injected fault and its outcome)
"""
import csv
import json
import os
import sqlite3
import statistics
import sys
from collections import Counter

TUNE_TARGET_S = 300.0
GAP_TARGET = 0.02
AGREE_TARGET = 0.95
SPREAD_TARGET = 0.01
FINAL_ROUND = 100  # tuner::kFinalRound: the final round's passes are stored from here


def short(config_text):
    """core::short_string of a MoeConfig's JSON text ("m64n128k64g1w4s4co|..."), '' if empty."""
    if not config_text:
        return ""
    c = json.loads(config_text) if isinstance(config_text, str) else config_text

    def one(k):
        t, p, l = k["tile"], k["pipeline"], k["launch"]
        s = "m%dn%dk%dg%dw%ds%d" % (t["block_m"], t["block_n"], t["block_k"], t["group_m"],
                                    p["num_warps"], p["num_stages"])
        if p["split_k"] != 1:
            s += "sk%d" % p["split_k"]
        if l.get("swap_ab"):
            s += "swap"
        if l.get("cluster_m", 1) != 1 or l.get("cluster_n", 1) != 1:
            s += "c%dx%d" % (l["cluster_m"], l["cluster_n"])
        s += {"pingpong": "pp", "cooperative": "co", "tma_ws": "tw"}.get(l.get("schedule"), "")
        if l.get("num_threads", 0) != 0:
            s += "t%d" % l["num_threads"]
        return s

    a, b = one(c["gemm1"]), one(c["gemm2"])
    return a if a == b else a + "|" + b


def query(path, sql, args=()):
    """The rows of `sql` on the store at `path`, opened read-only ([] when absent or unreadable)."""
    if not os.path.exists(path):
        return []
    try:
        db = sqlite3.connect("file:%s?mode=ro" % path, uri=True)
        db.row_factory = sqlite3.Row
        rows = db.execute(sql, args).fetchall()
        db.close()
    except sqlite3.Error:
        return []
    return rows


def decisions(path):
    """bucket -> the last decision row of the store at `path` ({} when absent)."""
    return {int(r["bucket"]): dict(r) for r in query(path, "SELECT * FROM decisions ORDER BY id")}


def tied_of(decision):
    """The short names of the finalists a decision declared tied with its winner (the decisions
    column `tied` of schema 2: one config JSON per line; none in a schema-1 store)."""
    return {short(line) for line in (decision.get("tied") or "").splitlines() if line.strip()}


def final_medians(path):
    """bucket -> {short config: median of its final-round pass medians} from the store at `path`
    (rounds FINAL_ROUND .. FINAL_ROUND + 9: the main round's passes; repeats come after)."""
    rows = query(path, "SELECT bucket, config, median_us FROM measurements WHERE outcome = 'ok' "
                 "AND round >= ? AND round < ?", (FINAL_ROUND, FINAL_ROUND + 10))
    passes = {}
    for bucket, config, median_us in rows:
        passes.setdefault(int(bucket), {}).setdefault(short(config), []).append(median_us)
    return {b: {c: sorted(v)[len(v) // 2] for c, v in cs.items()} for b, cs in passes.items()}


def all_medians(path):
    """bucket -> {short config: median of its pass medians in every round} from the store at
    `path` (stage, halving and final rounds alike)."""
    rows = query(path, "SELECT bucket, config, median_us FROM measurements WHERE outcome = 'ok'")
    passes = {}
    for bucket, config, median_us in rows:
        passes.setdefault(int(bucket), {}).setdefault(short(config), []).append(median_us)
    return {b: {c: statistics.median(v) for c, v in cs.items()} for b, cs in passes.items()}


def why_not(config, finals, decision):
    """Why a tune did not name `config`: absent from its final round, or how far behind its
    winner it was there."""
    if config not in finals:
        return "not in its final round"
    winner = finals.get(short(decision["winner"]))
    if not winner:
        return "in its final round"
    return "in its final round, %+.1f%% against its winner, not tied" % (
        100 * (finals[config] / winner - 1))


def json_buckets(path):
    """bucket -> the --json entry of a finished run ({} when the run did not finish)."""
    try:
        with open(path) as f:
            doc = json.load(f)
    except (OSError, ValueError):
        return {}
    out = {}
    for shape in doc.get("shapes", []):
        for b in shape.get("buckets", []):
            if b.get("outcome") == "tuned":
                out[int(b["bucket"])] = b
    return out


FIELDS = ["M", "tuned_winner", "tuned_us", "tuned_verdict", "checked", "not_run",
          "joint_product", "final_agreement", "exhaustive_best", "exhaustive_best_us",
          "tuned_us_same_round", "gap_pct", "within_2pct", "exhaustive_checked", "tunes",
          "winners", "same_winner", "winners_spread_pct", "within_1pct", "spread_note",
          "agreed_on", "agree", "disagreement"]


def a_time_of(folder):
    """Part a's tune-a.time.json ({"exit": None, "wall_s": None} when absent or unreadable)."""
    try:
        with open(os.path.join(folder, "tune-a.time.json")) as f:
            return json.load(f)
    except (OSError, ValueError):
        return {"exit": None, "wall_s": None}


def load_tunes(folder, a):
    """The decisions, names, final-round medians and all-round medians of tune a and of every
    tune-<k>.db (k = 2..5) that holds a decision."""
    tunes, names, finals, alls = [], [], [], []
    for k in ["a"] + [str(k) for k in range(2, 6)]:
        path = os.path.join(folder, "tune-%s.db" % k)
        d = a if k == "a" else decisions(path)
        if d or k == "a":
            tunes.append(d)
            names.append(k)
            finals.append(final_medians(path))
            alls.append(all_medians(path))
    return tunes, names, finals, alls


def load_exhaustive(folder):
    """bucket -> (decision row, --json entry) of the exhaustive-<M>.db stores in `folder`."""
    exh = {}
    for name in os.listdir(folder):
        if name.startswith("exhaustive-") and name.endswith(".db"):
            for b, row in decisions(os.path.join(folder, name)).items():
                exh[b] = (row, json_buckets(os.path.join(folder, name[:-3] + ".json")).get(b, {}))
    return exh


def add_tuned(row, d, j):
    """Fills part a's columns of a bucket's row from its decision `d` and --json entry `j`."""
    row["tuned_winner"] = short(d["winner"]) if d else ""
    row["tuned_us"] = round(d["winner_us"], 3) if d else ""
    row["tuned_verdict"] = d["verdict"] if d else "not tuned"
    row["checked"] = j.get("measured", "")
    row["not_run"] = j.get("not_run", "")
    row["joint_product"] = j.get("joint_product", "")
    row["final_agreement"] = ("%d/%d" % (j["agreeing"], j["repeats"])
                              if j.get("repeats") else "")


def add_exhaustive(row, d, e, ej):
    """Fills part b's columns: the exhaustive run's best against part a's winner `d`, both timed in
    the exhaustive run's final round (`e` its decision, `ej` its --json entry)."""
    tuned_is_incumbent = e["incumbent"] == d["winner"]
    times = [t for t in (e["incumbent_us"], e["challenger_us"]) if t and t > 0]
    best = min(times) if times else None
    row["exhaustive_best"] = short(e["challenger"] if best and e["challenger_us"] == best
                                   else e["incumbent"])
    row["exhaustive_best_us"] = round(best, 3) if best else ""
    row["tuned_us_same_round"] = round(e["incumbent_us"], 3) if tuned_is_incumbent else ""
    row["exhaustive_checked"] = ej.get("measured", "")
    if tuned_is_incumbent and best and e["incumbent_us"] > 0:
        gap = e["incumbent_us"] / best - 1
        row["gap_pct"] = round(100 * gap, 2)
        row["within_2pct"] = gap <= GAP_TARGET
    else:
        row["gap_pct"] = ""
        row["within_2pct"] = "" if not tuned_is_incumbent else False


def add_agreement(row, b, tunes, names, finals):
    """Fills part c's columns of bucket `b`: each tune's winner, and the config every tune named
    (or, where none did, the one most tunes named and why the others did not)."""
    winners = [short(t[b]["winner"]) for t in tunes if b in t]
    # Each tune's answer: its winner and the finalists it declared tied with it (schema 2).
    answers = [{short(t[b]["winner"])} | tied_of(t[b]) for t in tunes if b in t]
    if not winners:
        return
    modal = Counter(winners).most_common(1)[0][0]
    row["winners"] = ";".join(winners)
    row["tunes"] = len(winners)
    row["same_winner"] = len(set(winners)) == 1
    # Agreement: one config every tune names, as its winner or as tied with it (the
    # modal winner first among equally common ones).
    counts = Counter(x for s in answers for x in s)
    common = max(counts, key=lambda x: (counts[x], x == modal))
    row["agreed_on"] = common if counts[common] == len(answers) else ""
    row["agree"] = counts[common] == len(answers)
    if not row["agree"]:  # the config most tunes named, and why the others did not
        missing = ["tune %s: %s" % (names[i], why_not(common, finals[i].get(b, {}), t[b]))
                   for i, t in enumerate(tunes) if b in t and common not in
                   ({short(t[b]["winner"])} | tied_of(t[b]))]
        row["disagreement"] = "%s named by %d of %d; %s" % (
            common, counts[common], len(answers), "; ".join(missing))


def add_spread(row, b, tunes, alls):
    """Fills part c's spread: for each pair of the tunes' winners, the median over the tunes that
    timed both (any round) of the ratio of their medians; the spread is the largest such ratio's
    distance from 1. Unknown (not met) where no tune timed some pair."""
    winners = sorted({short(t[b]["winner"]) for t in tunes if b in t})
    if not winners:
        return
    spread, unknown = 0.0, []
    for i, w1 in enumerate(winners):
        for w2 in winners[i + 1:]:
            ratios = [m[b][w2] / m[b][w1] for t, m in zip(tunes, alls)
                      if b in t and w1 in m.get(b, {}) and w2 in m.get(b, {})]
            if not ratios:
                unknown.append("%s / %s" % (w1, w2))
                continue
            r = statistics.median(ratios)
            spread = max(spread, max(r, 1 / r) - 1)
    if unknown:
        row["winners_spread_pct"], row["within_1pct"] = "", False
        row["spread_note"] = "unknown: no tune timed " + "; ".join(unknown)
        return
    row["winners_spread_pct"] = round(100 * spread, 2)
    row["within_1pct"] = spread <= SPREAD_TARGET


def write_csv(folder, rows):
    """Writes <folder>/tuner-targets.csv, one row per bucket."""
    with open(os.path.join(folder, "tuner-targets.csv"), "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=FIELDS, extrasaction="ignore")
        w.writeheader()
        for r in rows:
            w.writerow(r)


def print_buckets(rows):
    """Prints the per-bucket table, then each bucket's disagreement."""
    print("%6s  %-44s %10s  %-9s %7s  %-44s %7s  %s" % (
        "M", "tuned winner", "us", "checked", "not run", "exhaustive best", "gap %", "agree"))
    for r in rows:
        checked = ("%s/%s" % (r["checked"], r["joint_product"])) if r["checked"] != "" else ""
        print("%6d  %-44s %10s  %-9s %7s  %-44s %7s  %s" % (
            r["M"], r["tuned_winner"][:44], r["tuned_us"], checked, r.get("not_run", ""),
            r.get("exhaustive_best", "")[:44], r.get("gap_pct", ""),
            "%s (%d tunes)" % (r["agree"], r["tunes"]) if "agree" in r else ""))
    for r in rows:
        if r.get("disagreement"):
            print("  M=%d: %s" % (r["M"], r["disagreement"]))


def print_targets(rows, num_buckets, num_tunes, a_json, a_time):
    """Prints targets a, b and c: what was measured and whether each was met."""
    wall = a_time.get("wall_s")
    tuned = sum(1 for r in rows if r["tuned_winner"])
    # Every bucket finished (the JSON has it) and the budget left no candidate out.
    not_run = sum(r["not_run"] for r in rows if isinstance(r.get("not_run"), int))
    complete = all(r["M"] in a_json for r in rows) and not_run == 0
    a_met = (a_time.get("exit") == 0 and wall is not None and wall <= TUNE_TARGET_S and complete)
    compared = [r for r in rows if r.get("within_2pct") in (True, False)]
    gaps = [r["gap_pct"] for r in compared]
    b_met = bool(compared) and all(r["within_2pct"] for r in compared)
    judged = [r for r in rows if "agree" in r and r["tunes"] >= 2]
    agree = sum(1 for r in judged if r["agree"])
    within = sum(1 for r in judged if r.get("within_1pct"))
    c_met = bool(judged) and within >= AGREE_TARGET * len(judged)
    spreads = [r["winners_spread_pct"] for r in judged if r.get("winners_spread_pct") != ""]
    print()
    print("target                                    measured                                met")
    print("a. table tuned in <= %3.0f s (%2d buckets)   %-39s %s" % (
        TUNE_TARGET_S, num_buckets,
        "%s s, exit %s, %d tuned, %d not run" % (wall, a_time.get("exit"), tuned, not_run),
        a_met))
    print("b. within 2%% of exhaustive                 %-39s %s" % (
        "%d/%d buckets, max gap %s%%" % (sum(1 for r in compared if r["within_2pct"]),
                                         len(compared), max(gaps) if gaps else "-"), b_met))
    print("c. winners within 1%% (pooled), >= 95%%    %-39s %s" % (
        "%d/%d buckets over %d tunes, max %s%%" % (
            within, len(judged), num_tunes, max(spreads) if spreads else "-"), c_met))
    print("   (one config named or tied by every tune: %d/%d buckets)" % (agree, len(judged)))


def main(folder):
    a = decisions(os.path.join(folder, "tune-a.db"))
    a_json = json_buckets(os.path.join(folder, "tune-a.json"))
    a_time = a_time_of(folder)
    tunes, names, finals, alls = load_tunes(folder, a)
    buckets = sorted(set(a) | set().union(*[set(t) for t in tunes]))
    exh = load_exhaustive(folder)

    rows = []
    for b in buckets:
        row = {"M": b}
        d = a.get(b)
        add_tuned(row, d, a_json.get(b, {}))
        if b in exh and d:
            add_exhaustive(row, d, *exh[b])
        add_agreement(row, b, tunes, names, finals)
        add_spread(row, b, tunes, alls)
        rows.append(row)

    write_csv(folder, rows)
    print_buckets(rows)
    print_targets(rows, len(buckets), len(tunes), a_json, a_time)
    return 0


def faults(path):
    """Part d: each injected fault of the store at `path` and the outcome the tuner recorded."""
    rows = query(path, "SELECT fault, outcome, substr(reason, 1, 90) AS reason FROM measurements "
                       "WHERE fault != '' AND round = 0")
    if not rows:
        print("d: no fault measurements in %s" % path)
    for r in rows:
        print("d: %-8s -> %-14s %s" % (r["fault"], r["outcome"], r["reason"]))
    return 0


if __name__ == "__main__":
    if len(sys.argv) == 3 and sys.argv[1] == "--faults":
        sys.exit(faults(sys.argv[2]))
    if len(sys.argv) != 2 or sys.argv[1].startswith("-"):
        print(__doc__, file=sys.stderr)
        sys.exit(2)
    sys.exit(main(sys.argv[1]))
