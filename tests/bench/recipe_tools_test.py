#!/usr/bin/env python3
"""The bench's recipe tools against the shipped H200 recipe, tables and CSV (ctest runs this from
the source tree): bench/csv_to_recipe.py must turn the run the pinned rows name (kept as the result
of record bench/results/h200-recipe-rows.csv) back into recipes/h200.json (and warn where a
row-or-default choice rests on a low clock sample), and bench/recipe_variant.py --from-tables must
see no change between the recipe and its own tables, and recipe_variant.py's FIELD_DEFAULTS must
be the C++ reader's (with the moetune binary ctest names in RECIPE_TOOLS_MOETUNE_BIN). Each check
has a twin that corrupts one value and must be caught."""
import csv
import glob
import json
import os
import shutil
import subprocess
import sys
import tempfile
import unittest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
RECIPE = os.path.join(ROOT, "recipes", "h200.json")
TABLES = os.path.join(ROOT, "tables", "NVIDIA_H200")
SEP = " (device), then bench/csv_to_recipe.py on run "
RECORD = os.path.join("bench", "results", "h200-recipe-rows.csv")  # the run the rows name


def run(*args):
    return subprocess.run([sys.executable] + list(args), cwd=ROOT, capture_output=True, text=True)


def load(path):
    with open(path) as f:
        return json.load(f)


def run_ids(path):
    """The runs (<date>-<commit>) whose rows a bench CSV holds."""
    with open(os.path.join(ROOT, path), newline="") as f:
        return {r["date"] + "-" + r["commit"] for r in csv.DictReader(f)}


def shipped_command_and_csv():
    """The device command the shipped rows record and the CSV of record of the run they name (one
    run for all of them)."""
    recipe = load(RECIPE)
    sources = {row["source"]["command"] for shape in recipe["shapes"]
               for row in shape["pinned_rows"].values()}
    assert len(sources) == 1, "the pinned rows name several commands: %s" % sorted(sources)
    command, run = sources.pop().split(SEP)
    assert run_ids(RECORD) == {run}, "%s holds runs %s, the rows name %s" % (
        RECORD, sorted(run_ids(RECORD)), run)
    return recipe, command, RECORD


def convert_rows(command, rows):
    """bench/csv_to_recipe.py run on `rows` (CSV dicts) written to a temporary CSV."""
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "run.csv")
        with open(path, "w", newline="") as f:
            w = csv.DictWriter(f, fieldnames=list(rows[0].keys()))
            w.writeheader()
            w.writerows(rows)
        return run("bench/csv_to_recipe.py", "--command", command, path)


class CsvToRecipe(unittest.TestCase):
    def test_the_rows_name_their_run_by_id_and_another_run_is_told_apart(self):
        _, _, record = shipped_command_and_csv()
        with open(os.path.join(ROOT, record), newline="") as f:
            rows = list(csv.DictReader(f))
        run = rows[0]["date"] + "-" + rows[0]["commit"]
        self.assertIn("on run " + run, convert_rows("cmd", rows).stdout)
        rows[0]["commit"] = "0" * 12  # the twin: one row from another run
        with tempfile.TemporaryDirectory() as tmp:
            path = os.path.join(tmp, "run.csv")
            with open(path, "w", newline="") as f:
                w = csv.DictWriter(f, fieldnames=list(rows[0].keys()))
                w.writeheader()
                w.writerows(rows)
            self.assertEqual(run_ids(path), {run, rows[0]["date"] + "-" + "0" * 12})

    def test_the_shipped_recipe_is_what_csv_to_recipe_makes_of_its_csv(self):
        recipe, command, csv_path = shipped_command_and_csv()
        r = run("bench/csv_to_recipe.py", "--command", command, csv_path)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(json.loads(r.stdout), recipe)

    def test_one_changed_time_in_the_csv_changes_that_row(self):
        recipe, command, csv_path = shipped_command_and_csv()
        with open(os.path.join(ROOT, csv_path), newline="") as f:
            rows = list(csv.DictReader(f))
        victim = next(r for r in rows if r["shape"] == "S2" and r["M"] == "1024")
        victim["time_us"] = str(float(victim["time_us"]) * 0.5)  # now faster than its default
        r = convert_rows(command, rows)
        self.assertEqual(r.returncode, 0, r.stderr)
        made = json.loads(r.stdout)
        s2 = lambda rec: next(s for s in rec["shapes"] if s["name"] == "qwen3-30b-a3b-s2")
        self.assertNotEqual(s2(made)["pinned_rows"]["1024"]["source"]["numbers"]["time_us"],
                            s2(recipe)["pinned_rows"]["1024"]["source"]["numbers"]["time_us"])
        self.assertEqual(s2(made)["pinned_rows"]["512"]["source"]["numbers"],
                         s2(recipe)["pinned_rows"]["512"]["source"]["numbers"])


    def test_a_close_call_at_a_low_clock_is_warned_about_and_at_full_clock_not(self):
        _, command, csv_path = shipped_command_and_csv()
        with open(os.path.join(ROOT, csv_path), newline="") as f:
            rows = list(csv.DictReader(f))
        top = max(float(r["sm_clock_mhz"]) for r in rows)
        # A point with a default config of its own, made a close call (row and default 0.5% apart).
        victim = next(r for r in rows if r["default_config"] not in ("", r["config"]))
        victim["default_us"] = str(float(victim["time_us"]) * 1.005)
        tag = "warning: %s M=%s:" % (victim["shape"], victim["M"])

        def convert(clock):
            victim["sm_clock_mhz"] = str(clock)
            r = convert_rows(command, rows)
            self.assertEqual(r.returncode, 0, r.stderr)
            return r.stderr

        self.assertNotIn(tag, convert(top))  # full clock: no warning
        throttled = convert(0.7 * top)       # the twin: the same point throttled
        self.assertIn(tag, throttled)
        self.assertIn("re-time this point", throttled)


class RecipeVariantFromTables(unittest.TestCase):
    def test_the_shipped_tables_change_no_pinned_row(self):
        r = run("bench/recipe_variant.py", RECIPE, "--from-tables", TABLES, "--list-changed")
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(r.stdout.strip(), "none")

    def test_a_table_row_with_another_block_n_is_listed_with_its_shape_and_m(self):
        with tempfile.TemporaryDirectory() as tmp:
            for path in glob.glob(os.path.join(TABLES, "*")):
                shutil.copy(path, tmp)
            manifest = glob.glob(os.path.join(tmp, "E=128,N=768,*.moetune"))[0]
            man = load(manifest)
            cfg = man["rows"]["1024"]["config"]["gemm2"]["tile"]
            cfg["block_n"] = 64 if cfg["block_n"] != 64 else 128
            with open(manifest, "w") as f:
                json.dump(man, f)
            r = run("bench/recipe_variant.py", RECIPE, "--from-tables", tmp, "--list-changed")
            self.assertEqual(r.returncode, 0, r.stderr)
            self.assertEqual(r.stdout.strip(), "S2 1024")
            v = run("bench/recipe_variant.py", RECIPE, "--from-tables", tmp)
        self.assertEqual(v.returncode, 0, v.stderr)
        variant = json.loads(v.stdout)
        s2 = next(s for s in variant["shapes"] if s["name"] == "qwen3-30b-a3b-s2")
        self.assertEqual(s2["pinned_rows"]["1024"]["config"]["gemm2"]["tile"]["block_n"],
                         cfg["block_n"])

    def test_a_folder_without_manifests_is_exit_2_with_one_line(self):
        with tempfile.TemporaryDirectory() as tmp:
            r = run("bench/recipe_variant.py", RECIPE, "--from-tables", tmp)
        self.assertEqual(r.returncode, 2)
        self.assertEqual(r.stdout, "")
        self.assertEqual(len(r.stderr.strip().splitlines()), 1, r.stderr)
        self.assertIn("no table manifest", r.stderr)


sys.path.insert(0, os.path.join(ROOT, "bench"))
import recipe_variant  # noqa: E402  (FIELD_DEFAULTS, the reader's defaults mirrored)

MOETUNE = os.environ.get("RECIPE_TOOLS_MOETUNE_BIN", "")


def default_mismatches(defaults, written):
    """(section, field, mirrored, written) where the mirrored default differs from what the
    reader wrote for a field the config left out."""
    return [(sec, field, value, written.get(sec, {}).get(field))
            for sec, fields in defaults.items() for field, value in fields.items()
            if written.get(sec, {}).get(field) != value]


@unittest.skipUnless(os.access(MOETUNE, os.X_OK),
                     "needs the moetune binary in RECIPE_TOOLS_MOETUNE_BIN (ctest sets it)")
class FieldDefaultsMirrorTheReader(unittest.TestCase):
    """recipe_variant.py's FIELD_DEFAULTS fill the fields a pinned row leaves out; they must be
    what the C++ reader fills in (src/core/config.hpp), or --list-changed would see changes that
    are not there. `moetune materialize` of a row that leaves them all out writes the reader's."""

    def written_config(self):
        recipe = load(os.path.join(ROOT, "recipes", "demo.json"))
        row = next(iter(recipe["shapes"][0]["pinned_rows"].values()))
        row["config"] = {"gemm1": {"tile": row["config"]["gemm1"]["tile"]}}
        with tempfile.TemporaryDirectory() as tmp:
            path = os.path.join(tmp, "recipe.json")
            with open(path, "w") as f:
                json.dump(recipe, f)
            r = subprocess.run([MOETUNE, "materialize", "--recipe", path, "--out",
                                os.path.join(tmp, "tables")], capture_output=True, text=True)
            self.assertEqual(r.returncode, 0, r.stderr)
            manifest = load(glob.glob(os.path.join(tmp, "tables", "*.moetune"))[0])
        return next(iter(manifest["rows"].values()))["config"]["gemm1"]

    def test_every_mirrored_default_is_what_the_reader_writes(self):
        self.assertEqual(default_mismatches(recipe_variant.FIELD_DEFAULTS, self.written_config()),
                         [])

    def test_one_changed_mirrored_default_is_caught(self):
        wrong = json.loads(json.dumps(recipe_variant.FIELD_DEFAULTS))
        wrong["pipeline"]["split_k"] = 2
        self.assertEqual(default_mismatches(wrong, self.written_config()),
                         [("pipeline", "split_k", 2, 1)])


if __name__ == "__main__":
    unittest.main(verbosity=2)
