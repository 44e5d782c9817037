#!/usr/bin/env python3
"""Writes a variant of a recipe for an A/B on the device: the pinned rows that match get one or
more config fields set, everything else stays (the rows keep their old numbers, so re-time the
variant before quoting it).

usage: bench/recipe_variant.py RECIPE (--set GEMM.FIELD=VALUE [--set ...] | --from-tables DIR)
                               [--where GEMM.FIELD=VALUE ...] [--shapes S2,S3] [--min-m M]
                               [--max-m M] > variant.json
  GEMM is gemm1, gemm2 or both; FIELD is tile.block_n, pipeline.num_warps, launch.schedule,
  launch.cluster_m, ... (the recipe's JSON names). Values are ints where they parse as ints.
  --shapes takes S1/S2/S3 (bench names) or recipe shape names.
  --from-tables DIR: a matching row takes the whole config of the row with its M in the table of
  DIR whose manifest key (E, K, I, top_k, activation) is the shape's (e.g. what `moetune tune
  --out DIR` wrote), so tuned rows can be A/B'd against the pinned ones; rows the tables lack stay.
  --list-changed: instead of the recipe, print the rows whose config differs from the pinned one
  (unset fields at their defaults) as "SHAPES MS" (e.g. "S2,S3 128,1024"), for
  `bench/device.sh stage-ab`'s --shapes and --m; "none" when no row differs.
Exit 2 on bad arguments or a field that does not exist; nothing is written then.
e.g. bench/recipe_variant.py recipes/h200.json --set both.launch.cluster_m=2 \\
       --where both.launch.schedule=tma_ws --min-m 512 > /tmp/cluster2.json
"""
import argparse
import glob
import json
import os
import sys

BENCH_NAMES = {"S1": "nemotron-like-s1", "S2": "qwen3-30b-a3b-s2", "S3": "mixtral-8x7b-s3"}
# Fields a config may leave out, at the values they then take (src/core/config.hpp;
# tests/bench/recipe_tools_test.py checks them against what `moetune materialize` writes).
FIELD_DEFAULTS = {"pipeline": {"split_k": 1},
                  "launch": {"swap_ab": False, "cluster_m": 1, "cluster_n": 1, "schedule": "auto",
                             "num_threads": 0}}


def die(msg):
    print("recipe_variant: " + msg, file=sys.stderr)
    sys.exit(2)


def parse_assign(text):
    if "=" not in text or "." not in text.split("=", 1)[0]:
        die("'%s' is not GEMM.FIELD=VALUE (e.g. gemm2.launch.cluster_m=2)" % text)
    path, value = text.split("=", 1)
    gemm, *field = path.split(".")
    if gemm not in ("gemm1", "gemm2", "both") or len(field) != 2:
        die("'%s': the path is gemm1|gemm2|both . section . field (e.g. gemm2.tile.block_n)"
            % path)
    try:
        value = int(value)
    except ValueError:
        pass
    return (["gemm1", "gemm2"] if gemm == "both" else [gemm]), field, value


def get(cfg, field, default=None):
    return cfg.get(field[0], {}).get(field[1], default)


def table_rows(folder):
    """(E, K, I, top_k, activation) -> {M: config} from every manifest in `folder`."""
    out = {}
    for path in sorted(glob.glob(os.path.join(folder, "*.moetune"))):
        try:
            man = json.load(open(path))
            k = man["key"]
            key = (k["num_experts"], k["hidden_size"], k["intermediate_size"], k["top_k"],
                   k["activation"])
            out[key] = {int(m): row["config"] for m, row in man["rows"].items()}
        except (OSError, ValueError, KeyError) as e:
            die("cannot read the manifest %s: %s" % (path, e))
    if not out:
        die("no table manifest (*.moetune) in %s" % folder)
    return out


def normalized(cfg):
    """A config with every omitted field at its default, for comparing two spellings."""
    out = {}
    for gemm, sections in cfg.items():
        out[gemm] = {sec: dict(FIELD_DEFAULTS.get(sec, {}), **fields)
                     for sec, fields in sections.items()}
        for sec, fields in FIELD_DEFAULTS.items():
            out[gemm].setdefault(sec, dict(fields))
    return out


def shape_key(shape):
    p = shape.get("problem", {})
    return (p.get("num_experts"), p.get("hidden_size"), p.get("intermediate_size"),
            p.get("top_k"), p.get("activation"))


def parse_args():
    """The command line (argparse's own exit 2 on a malformed one)."""
    ap = argparse.ArgumentParser(add_help=True)
    ap.add_argument("recipe")
    ap.add_argument("--set", action="append", default=[], dest="sets")
    ap.add_argument("--from-tables", default="")
    ap.add_argument("--list-changed", action="store_true")
    ap.add_argument("--where", action="append", default=[])
    ap.add_argument("--shapes", default="")
    ap.add_argument("--min-m", type=int, default=0)
    ap.add_argument("--max-m", type=int, default=1 << 62)
    return ap.parse_args()


def matches(cfg, wheres):
    """Whether a config has every --where value (an unset launch.schedule reads as auto)."""
    return all(get(cfg[g], f, "auto" if f == ["launch", "schedule"] else None) == v
               for gs, f, v in wheres for g in gs)


def apply_sets(cfg, sets):
    """Sets every --set field of a config in place; exits 2 on a section no config has."""
    for gs, f, v in sets:
        for g in gs:
            if f[0] not in cfg[g] and f[0] not in ("tile", "pipeline", "launch"):
                die("no section '%s' in %s's config" % (f[0], g))
            cfg[g].setdefault(f[0], {})[f[1]] = v


def vary_row(a, shape, m, row, sets, wheres, tables):
    """Varies one pinned row in place: None when it does not match (or the tables lack it), else
    whether its config now differs from the pinned one."""
    if not a.min_m <= int(m) <= a.max_m:
        return None
    cfg = row["config"]
    before = normalized(cfg)
    if not matches(cfg, wheres):
        return None
    if a.from_tables:
        tuned = tables.get(shape_key(shape), {}).get(int(m))
        if tuned is None:
            return None
        row["config"] = cfg = tuned
    apply_sets(cfg, sets)
    return normalized(cfg) != before


def print_changed(differ):
    """Prints --list-changed's answer: "SHAPES MS" of the rows that differ, or "none"."""
    if not differ:
        print("none")
    else:
        print(",".join(sorted({s for s, _ in differ})),
              ",".join(str(m) for m in sorted({m for _, m in differ})))


def main():
    a = parse_args()
    if not a.sets and not a.from_tables:
        die("nothing to --set (or --from-tables)")
    tables = table_rows(a.from_tables) if a.from_tables else {}
    sets = [parse_assign(s) for s in a.sets]
    wheres = [parse_assign(w) for w in a.where]
    try:
        recipe = json.load(open(a.recipe))
    except (OSError, ValueError) as e:
        die("cannot read %s: %s" % (a.recipe, e))
    shapes = {BENCH_NAMES.get(s, s) for s in a.shapes.split(",") if s}
    changed = 0
    differ = []  # (bench or recipe shape name, M) of rows whose config now differs
    short_names = {v: k for k, v in BENCH_NAMES.items()}
    for shape in recipe.get("shapes", []):
        if shapes and shape.get("name") not in shapes:
            continue
        for m, row in shape.get("pinned_rows", {}).items():
            differs = vary_row(a, shape, m, row, sets, wheres, tables)
            if differs is None:
                continue
            changed += 1
            if differs:
                differ.append((short_names.get(shape.get("name"), shape.get("name")), int(m)))
    if changed == 0:
        die("no pinned row matched (shapes %s, M %d..%d, where %s)"
            % (",".join(sorted(shapes)) or "all", a.min_m, a.max_m, a.where))
    if a.list_changed:
        print_changed(differ)
        return
    json.dump(recipe, sys.stdout, indent=2)
    print()
    print("recipe_variant: %d rows set, %d of them with a config other than the pinned one"
          % (changed, len(differ)), file=sys.stderr)


if __name__ == "__main__":
    main()
