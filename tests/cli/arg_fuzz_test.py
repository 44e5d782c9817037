#!/usr/bin/env python3
"""Argument fuzz of every subcommand (issue 57): hostile command lines through the real binary.

Each case is `moetune <subcommand> <args...>` run as its own process, from a seeded generator:
known flags of the subcommand (read from its --help) with hostile values (empty, negative, huge,
nan, hex, binary bytes with 0xFF, 100 KB strings, bad --problem specs, bad paths: a directory, a
file that is not JSON, a JSON that is not a table), unknown flags, stray words and unknown
subcommands, mixed with valid values so that some cases get past parsing. Every case must end
within its time limit with a documented exit code (0 ok, 1 findings, 2 bad input; never 3, never
a signal) and, when it fails, a last stderr line that starts "moetune" and is under 1200 bytes.

Usage: arg_fuzz_test.py BUILD/moetune [--cases N] [--seed S] (or MOETUNE_FUZZ_SEED)
"""
import argparse
import os
import random
import re
import shutil
import subprocess
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor

DEFAULT_SEED = 57
DEFAULT_CASES = 500
CASE_TIMEOUT_S = 30
REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
CPU_TABLES = os.path.join(REPO, "tables", "cpu")
TINY = "E=8,K=256,I=128,topk=2,act=silu,dtype=bf16"
# tune and check tune or regenerate whole recipes (tens of seconds each): they get no valid recipe.
SLOW_WITH_A_RECIPE = {"tune", "check", "ab"}
# The internal worker reads requests from stdin; it is not a user's command.
SUBCOMMANDS = ["tune", "resolve", "materialize", "check", "lint", "show", "defaults", "levers",
               "run", "prewarm", "pack", "bench", "ab", "report"]


def flags_of(binary, sub):
    """The --flags that `moetune <sub> --help` lists under Options."""
    out = subprocess.run([binary, sub, "--help"], capture_output=True, text=True).stdout
    options = out.split("Environment:")[0]
    return sorted(set(re.findall(r"(--[a-z][a-z0-9-]*)", options)) - {"--help"})


def hostile_values(rng, work):
    table = os.path.join(work, "tables", os.listdir(os.path.join(work, "tables"))[0])
    fixed = [
        "", " ", "-", "--", "-1", "0", "1", "-0", "007", "0x10", "1e3", "1.5", "nan", "inf", "-inf",
        "9" * 40, "-" + "9" * 40, "2147483648", "9223372036854775807", "18446744073709551616",
        "16777216", "1,2,,3", "1,", ",", "a=b", "=", "on", "off", "true",
        "E=8,K=256,I=128,topk=2,act=silu,dtype=bf16,", "E=-8,K=256,I=128,topk=2,act=silu,dtype=bf16",
        "E=9223372036854775807,K=256,I=128,topk=2,act=silu,dtype=bf16", "E=8,K=256", "E=,K=,I=",
        "E=8,K=256,I=128,topk=9,act=silu,dtype=bf16", "E=8,K=256,I=128,topk=2,act=nope,dtype=bf16",
        "zipf:s=1e308", "zipf:s=-1", "zipf:s=nan", "uniform", "skew:", "a=levers:nosuch=on",
        "b=binary:/bin/false", "x=tables:/nonexistent", "default", "builtin",
        "/nonexistent", "/nonexistent/deeper/file.json", "/", "/dev/null", "/proc/self/status",
        work, os.path.join(work, "not_json.txt"), os.path.join(work, "not_table.json"),
        os.path.join(work, "deep.json"), os.path.join(work, "bad_name.json"),
        os.path.join(work, "loop"), table, table + ".moetune", "../../../escape",
        "x" * 100000, "/" + "y" * 5000,
    ]
    value = rng.choice(fixed)
    roll = rng.random()
    if roll < 0.15:  # NUL-free binary bytes, 0xFF included
        return bytes(rng.choice([0xFF, 0xFE, 0x80, 0xC3, 0x01, 0x0A, 0x22, 0x5C] +
                                list(range(1, 256))) for _ in range(rng.randint(1, 40)))
    if roll < 0.2:
        return str(rng.randint(-2**70, 2**70))
    return value


def valid_values(sub, work):
    table = os.path.join(work, "tables", os.listdir(os.path.join(work, "tables"))[0])
    values = {"--problem": TINY, "--m": "4", "--backend": "cpu", "--table": table,
              "--tables": os.path.join(work, "tables"), "--routing": "uniform",
              "--out": os.path.join(work, "out"), "--arm": "a=default", "--json": None}
    if sub not in SLOW_WITH_A_RECIPE:
        values["--recipe"] = os.path.join(work, "recipe.json")
    return values


def make_case(rng, binary_flags, work):
    roll = rng.random()
    if roll < 0.05:
        sub = rng.choice(["", "nosuch", "tun", "RESOLVE", "-x", "--tables", "worker2", "x" * 5000])
        return [sub] + [rng.choice(["--m", "1", "--json"]) for _ in range(rng.randint(0, 3))]
    sub = rng.choice(SUBCOMMANDS)
    args = [sub]
    if sub == "levers":
        args.append(rng.choice(["list", "show", "resolve", "diff", "nosuch", ""]))
    flags = binary_flags[sub]
    valid = valid_values(sub, work)
    # Valid values first for some flags, so later hostile ones meet parsed state.
    for flag, value in valid.items():
        if flag in flags and rng.random() < 0.35:
            args += [flag] if value is None else [flag, value]
    for _ in range(rng.randint(0, 5)):
        kind = rng.random()
        if kind < 0.6 and flags:
            args += [rng.choice(flags), hostile_values(rng, work)]
        elif kind < 0.7:
            args += ["--" + rng.choice(["nosuch", "tabels", "m2", "", "-", "problem=" + TINY])]
        elif kind < 0.8 and flags:
            args.append(rng.choice(flags))  # a flag with its value missing
        else:
            args.append(hostile_values(rng, work))
    return args


def set_up(work):
    shutil.copytree(CPU_TABLES, os.path.join(work, "tables"))
    with open(os.path.join(REPO, "recipes", "demo.json")) as f:
        recipe = f.read()
    with open(os.path.join(work, "recipe.json"), "w") as f:
        f.write(recipe)
    with open(os.path.join(work, "not_json.txt"), "w") as f:
        f.write("this is not JSON\n")
    with open(os.path.join(work, "not_table.json"), "w") as f:
        f.write('{"shapes": [1, 2, 3]}\n')
    with open(os.path.join(work, "deep.json"), "w") as f:
        f.write("[" * 100000 + "]" * 100000)
    with open(os.path.join(work, "bad_name.json"), "w") as f:
        f.write('{"16": {"BLOCK_SIZE_M": 16}}\n')
    os.symlink(os.path.join(work, "loop"), os.path.join(work, "loop"))


def show(args):
    return " ".join(repr(a if len(a) < 80 else a[:60] + (b"..." if isinstance(a, bytes) else "..."))
                    for a in args)


def run_case(binary, work, index, args, env):
    cwd = os.path.join(work, "run%d" % index)
    os.makedirs(cwd)
    try:
        p = subprocess.run([binary] + args, cwd=cwd, env=env, stdin=subprocess.DEVNULL,
                           capture_output=True, timeout=CASE_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        return "timed out after %d s" % CASE_TIMEOUT_S
    finally:
        shutil.rmtree(cwd, ignore_errors=True)
    if p.returncode < 0:
        return "killed by signal %d" % -p.returncode
    if p.returncode not in (0, 1, 2):
        return "exit %d: %s" % (p.returncode, p.stderr.decode(errors="replace")[-600:])
    if p.returncode != 0:
        lines = p.stderr.decode(errors="replace").rstrip("\n").split("\n")
        last = lines[-1]
        if not last.startswith("moetune"):
            return "exit %d, last stderr line is not moetune's: %r" % (p.returncode, last[:300])
        if len(last.encode()) > 1200:
            return "exit %d, a %d-byte stderr line" % (p.returncode, len(last.encode()))
    return None


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("binary")
    parser.add_argument("--cases", type=int, default=DEFAULT_CASES)
    parser.add_argument("--seed", type=int,
                        default=int(os.environ.get("MOETUNE_FUZZ_SEED", DEFAULT_SEED)))
    opts = parser.parse_args()
    binary = os.path.abspath(opts.binary)
    print("arg fuzz: seed %d (MOETUNE_FUZZ_SEED), %d cases" % (opts.seed, opts.cases))
    binary_flags = {sub: flags_of(binary, sub) for sub in SUBCOMMANDS}
    with tempfile.TemporaryDirectory(prefix="moetune-argfuzz-") as work:
        set_up(work)
        env = {k: v for k, v in os.environ.items() if not k.startswith("MOETUNE_")}
        env.update({"HOME": work, "XDG_CACHE_HOME": os.path.join(work, "cache"),
                    "MOETUNE_BACKEND": "cpu"})
        rng = random.Random(opts.seed)
        cases = [make_case(rng, binary_flags, work) for _ in range(opts.cases)]
        with ThreadPoolExecutor(max_workers=2) as pool:
            results = list(pool.map(lambda ic: run_case(binary, work, ic[0], ic[1], env),
                                    enumerate(cases)))
    failures = [(i, cases[i], r) for i, r in enumerate(results) if r is not None]
    for i, args, why in failures:
        print("case %d: moetune %s\n  -> %s" % (i, show(args), why))
    print("arg fuzz: %d cases, %d failed" % (len(cases), len(failures)))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
