#!/usr/bin/env python3
"""bench/defaults_table.py (ctest runs this from the source tree): a point whose CSV default is
still the rule's keeps its measured default time; where the rule has changed since the run and now
gives the recipe row itself, the default time is the row's and the row says what was measured;
where it now gives another config, the measured time stays and the new config is named, not timed.
"The rule now" is `moetune defaults --backend cuda`'s answer (a stand-in binary here)."""
import contextlib
import io
import json
import os
import sys
import tempfile
import unittest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "bench"))
import defaults_table  # noqa: E402

HEADER = "commit,shape,E,K,I,top_k,act,M,time_us,default_us,config,default_config"
S3 = "S3,8,4096,14336,2,silu"
OLD_512 = "m128n128k64g8w8s4tw|m256n128k64g8w8s4tw"  # the rule before its 192-row band
NEW_512 = "m192n96k64g1w12s4swaptw|m192n128k64g8w12s4tw"
STAND_IN = os.path.join(ROOT, "tests", "bench", "defaults_stand_in.py")
# What the stand-in's rule gives S3 (E 8, K 4096, I 14336, top-2, silu) now.
RULE_NOW = {"8,4096,14336,2,silu,256": "m128n128k64g8w8s4tw|m128n256k64g8w8s4tw",
            "8,4096,14336,2,silu,512": NEW_512}


def table(rows):
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "run.csv")
        with open(path, "w") as f:
            f.write(HEADER + "\n" + "".join("abcdef0," + r + "\n" for r in rows))
        rule = os.path.join(d, "rule.json")
        with open(rule, "w") as f:
            json.dump(RULE_NOW, f)
        os.environ["STAND_IN_RULE"] = rule
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            defaults_table.main(["--moetune", STAND_IN, path])
        return {line.split(" | ")[1]: line for line in out.getvalue().splitlines()
                if line.startswith("| S3 | ")}


class DefaultsTable(unittest.TestCase):
    def test_a_default_the_rule_still_gives_keeps_its_measured_time(self):
        rows = table([f"{S3},256,700.0,714.0,m128n128k64g8w8s4tw|m128n256k64g8w8s4tw,"
                      "m128n128k64g8w8s4tw|m128n256k64g8w8s4tw"])
        self.assertIn("| 700.0 | 714.0 | 1.020 |", rows["256"])
        self.assertNotIn("the rule since this run", rows["256"])

    def test_a_rule_that_now_gives_the_row_prices_the_default_as_the_row(self):
        rows = table([f"{S3},512,871.1,898.2,{NEW_512},{OLD_512}"])
        self.assertIn("| 871.1 | 871.1 | 1.000 |", rows["512"])
        self.assertIn("the rule since this run: the row itself; was", rows["512"])
        self.assertIn("898.2 us", rows["512"])

    def test_a_rule_that_now_gives_another_config_names_it_untimed(self):
        # The row is not what the rule gives now: the measured (old) default stays, flagged.
        rows = table([f"{S3},512,860.0,898.2,m128n128k64g8w8s5tw,{OLD_512}"])
        self.assertIn("| 860.0 | 898.2 | 1.044 |", rows["512"])
        self.assertIn("the rule since this run gives " + NEW_512.replace("|", "\\|") + ", not timed",
                      rows["512"])


if __name__ == "__main__":
    unittest.main()
