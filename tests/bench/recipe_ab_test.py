#!/usr/bin/env python3
"""bench/run_h200_recipe_ab.sh (ctest runs this from the source tree) end to end with a stand-in
for moetune_sm90_bench: the script runs A B A B, archives the runs and prints per point the
medians of each arm (layer, GEMM1, GEMM2), B/A, whether B beat A in every run and B's config where
it differs; a B run slower than one A run is caught ("no"), and a missing recipe is refused
(exit 2, nothing run)."""
import os
import stat
import subprocess
import tempfile
import unittest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SCRIPT = os.path.join(ROOT, "bench", "run_h200_recipe_ab.sh")

# The stand-in: writes one CSV row per point into --out, its times read from the recipe file
# ("<A time> <B time> ..." for the run number kept in a counter file beside it).
FAKE = r"""#!/usr/bin/env bash
out= recipe=
while [ $# -gt 0 ]; do
  case $1 in --out) out=$2; shift ;; --recipe) recipe=$2; shift ;; esac
  shift
done
mkdir -p "$out"
n=$(cat "$recipe.count" 2>/dev/null || echo 0)
echo $((n + 1)) > "$recipe.count"
read -r -a times < "$recipe"
t=${times[$n]}
cfg=$(basename "$recipe")
{
  echo "shape,M,time_us,gemm1_us,gemm2_us,config"
  echo "S2,2048,$t,$(awk "BEGIN { print $t / 2 }"),$(awk "BEGIN { print $t / 4 }"),$cfg"
  echo "S1,64,500,250,125,same"
} > "$out/run.csv"
"""


class RecipeAb(unittest.TestCase):
    def run_ab(self, a_times, b_times, b_exists=True):
        with tempfile.TemporaryDirectory() as d:
            bin_dir = os.path.join(d, "bin")
            os.makedirs(bin_dir)
            fake = os.path.join(bin_dir, "moetune_sm90_bench")
            with open(fake, "w") as f:
                f.write(FAKE)
            os.chmod(fake, os.stat(fake).st_mode | stat.S_IEXEC)
            a, b = os.path.join(d, "a.json"), os.path.join(d, "b.json")
            with open(a, "w") as f:
                f.write(" ".join(map(str, a_times)))
            if b_exists:
                with open(b, "w") as f:
                    f.write(" ".join(map(str, b_times)))
            env = dict(os.environ, BIN=bin_dir, OUT=os.path.join(d, "out"))
            p = subprocess.run(["bash", SCRIPT, a, b], env=env, capture_output=True, text=True)
            archived = os.path.exists(os.path.join(d, "out", "ab.tgz"))
            return p.returncode, p.stdout, p.stderr, archived

    def point(self, out, shape, m):
        for line in out.splitlines():
            f = line.split()
            if f[:2] == [shape, str(m)]:
                return f
        self.fail("no row for %s %d in:\n%s" % (shape, m, out))

    def test_b_faster_in_every_run_prints_medians_stages_yes_and_its_config(self):
        rc, out, err, archived = self.run_ab([400, 420], [380, 390])
        self.assertEqual(rc, 0, err)
        self.assertTrue(archived)
        f = self.point(out, "S2", 2048)
        self.assertEqual(f[2:5], ["410.0", "385.0", "0.939"])
        self.assertEqual(f[5:9], ["205.0", "192.5", "102.5", "96.2"])
        self.assertEqual(f[9:], ["yes", "b.json"])
        same = self.point(out, "S1", 64)
        self.assertEqual(same[4], "1.000")
        self.assertEqual(same[-1], "=")  # the same config in both arms

    def test_b_slower_than_one_a_run_is_not_a_win(self):
        rc, out, err, _ = self.run_ab([400, 420], [380, 405])
        self.assertEqual(rc, 0, err)
        f = self.point(out, "S2", 2048)
        self.assertEqual(f[4], "0.957")  # 392.5 / 410
        self.assertEqual(f[9], "no")

    def test_a_missing_recipe_is_refused_before_any_run(self):
        rc, out, err, archived = self.run_ab([400, 420], [], b_exists=False)
        self.assertEqual(rc, 2)
        self.assertIn("cannot read recipe", err)
        self.assertFalse(archived)


if __name__ == "__main__":
    unittest.main()
