#!/usr/bin/env python3
"""bench/device.sh (ctest runs this from the source tree) without a GPU: stage-ab with a stand-in
for moetune_sm90_bench runs the arms in rotated rounds (A B, B A), each with its recipe, binaries,
environment and bench options, packs the runs and prints bench/ab_summary.py's table (B faster in
every run: "yes" and B's config); a B run slower than one A run is no win; --help lists every
command; bad usage (no command, an unknown command or option, one arm, a malformed arm, an option
without its value) ends in exit 2 with one line and runs nothing."""
import os
import stat
import subprocess
import tempfile
import unittest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SCRIPT = os.path.join(ROOT, "bench", "device.sh")
COMMANDS = ["protocol", "ab", "stage-ab", "kernels", "runtime", "ncu", "tuner", "retune",
            "session", "triton-vllm"]

# The stand-in: appends its arguments and $ARM_TAG to calls.log beside it, writes one CSV row per
# point into --out, its time read from the recipe file ("<run 1 time> <run 2 time> ...").
FAKE = r"""#!/usr/bin/env bash
echo "${ARM_TAG:-} $*" >> "$(dirname "$0")/calls.log"
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
{
  echo "shape,M,time_us,gemm1_us,gemm2_us,config,digest"
  echo "S2,2048,$t,$(awk "BEGIN { print $t / 2 }"),$(awk "BEGIN { print $t / 4 }"),$(basename "$recipe"),d1"
} > "$out/run.csv"
"""


class DeviceScript(unittest.TestCase):
    def run_script(self, args, d):
        env = dict(os.environ, MOETUNE_CACHE_DIR=os.path.join(d, "cache"))
        return subprocess.run(["bash", SCRIPT] + args, env=env, capture_output=True, text=True)

    def stage_ab(self, a_times, b_times):
        with tempfile.TemporaryDirectory() as d:
            bin_dir = os.path.join(d, "bin")
            os.makedirs(bin_dir)
            fake = os.path.join(bin_dir, "moetune_sm90_bench")
            with open(fake, "w") as f:
                f.write(FAKE)
            os.chmod(fake, os.stat(fake).st_mode | stat.S_IEXEC)
            a, b = os.path.join(d, "a.json"), os.path.join(d, "b.json")
            for path, times in ((a, a_times), (b, b_times)):
                with open(path, "w") as f:
                    f.write(" ".join(map(str, times)))
            out = os.path.join(d, "out")
            p = self.run_script(["--bin", bin_dir, "--out", out, "stage-ab", "--arm",
                                 "A=recipe:" + a, "--arm", "B=recipe:%s,env:ARM_TAG=b,args:--dense"
                                 % b, "--rounds", "2", "--digests", "any", "--m", "2048",
                                 "--", "--sweep-reps", "3"], d)
            with open(os.path.join(bin_dir, "calls.log")) as f:
                calls = f.read().splitlines()
            return p, calls, sorted(os.listdir(out))

    def test_stage_ab_rotates_the_arms_and_prints_medians_stages_and_every(self):
        p, calls, files = self.stage_ab([400, 420], [380, 390])
        self.assertEqual(p.returncode, 0, p.stderr)
        # Round 1: A then B; round 2: B then A. B alone carries its environment and options.
        self.assertEqual([c.split()[0] if c.startswith("b ") else "a" for c in calls],
                         ["a", "b", "b", "a"])
        self.assertTrue(all("--dense" in c for c in calls if c.startswith("b ")), calls)
        self.assertTrue(all("--no-sweep" in c and "--sweep-reps 3" in c for c in calls), calls)
        self.assertIn("runs.tgz", files)
        self.assertIn("summary.txt", files)
        row = [l.split() for l in p.stdout.splitlines() if l.startswith("S2 ")][0]
        self.assertEqual(row[2:5], ["410.00", "385.00", "0.939"])
        self.assertEqual(row[-2:], ["yes", "same"])
        self.assertIn("B config: b.json", p.stdout)

    def test_stage_ab_b_slower_than_one_a_run_is_not_a_win(self):
        p, _, _ = self.stage_ab([400, 420], [380, 405])
        self.assertEqual(p.returncode, 0, p.stderr)
        row = [l.split() for l in p.stdout.splitlines() if l.startswith("S2 ")][0]
        self.assertEqual(row[-2], "no")

    def test_help_names_every_command(self):
        with tempfile.TemporaryDirectory() as d:
            p = self.run_script(["--help"], d)
        self.assertEqual(p.returncode, 0)
        for c in COMMANDS:
            self.assertIn("\n  %s " % c, p.stdout)

    def test_bad_usage_ends_in_exit_2_with_one_line_and_runs_nothing(self):
        cases = [([], "name a command"),
                 (["protcol"], "unknown command 'protcol'"),
                 (["--bogus", "ab"], "unknown option '--bogus' before the command"),
                 (["ab", "--rouns", "3"], "ab: unknown option '--rouns'"),
                 (["ab", "--arm", "A=default"], "ab: name two arms or more"),
                 (["ab", "--m"], "ab: --m needs a value"),
                 (["stage-ab", "--arm", "A", "--arm", "B=recipe:x"], "arm 'A' is not NAME=SPEC"),
                 (["stage-ab", "--arm", "A=bin:x", "--arm", "B=cfg:y"],
                  "'cfg:y' is not bin:DIR, recipe:FILE"),
                 (["stage-ab", "--arm", "A=x", "--arm", "B=y", "--digests", "some"],
                  "--digests 'some': expected equal or any"),
                 (["kernels", "--heldout", "--limit-s"], "kernels: --limit-s needs a value"),
                 (["runtime", "--", "--m", "1"], "runtime: takes no bench options after --"),
                 (["retune"], "retune: name the buckets to tune with --tune-recipe"),
                 (["--backend", "rocm", "ab"], "--backend 'rocm': expected cuda or cpu")]
        for args, message in cases:
            with tempfile.TemporaryDirectory() as d:
                out = os.path.join(d, "out")
                p = self.run_script(["--bin", os.path.join(d, "nobin"), "--out", out] + args, d)
                self.assertEqual(p.returncode, 2, (args, p.stdout, p.stderr))
                self.assertEqual(len(p.stderr.splitlines()), 1, (args, p.stderr))
                self.assertIn(message, p.stderr, args)
                self.assertEqual(p.stdout, "", args)


if __name__ == "__main__":
    unittest.main()
