#!/usr/bin/env python3
"""A stand-in for `moetune defaults --backend cuda --m LIST --problem SPEC ...` in the tests of the
tools that price the default rule (fit_defaults_test.py, defaults_table_test.py): it prints the
command's CSV from the JSON file named by $STAND_IN_RULE ({"E,K,I,top_k,act,M": "gemm1|gemm2"}),
leaving out the points it names no config for; appends its arguments to $STAND_IN_LOG when set;
with $STAND_IN_FAIL set, exits 2 with that one-line message, as moetune does on bad input."""
import json
import os
import sys

args = sys.argv[1:]
if os.environ.get("STAND_IN_LOG"):
    with open(os.environ["STAND_IN_LOG"], "a") as f:
        f.write(" ".join(args) + "\n")
if os.environ.get("STAND_IN_FAIL"):
    sys.exit("moetune defaults: " + os.environ["STAND_IN_FAIL"])
rule = json.load(open(os.environ["STAND_IN_RULE"]))
ms = args[args.index("--m") + 1].split(",")
problems = [args[i + 1] for i, a in enumerate(args) if a == "--problem"]
print("E,K,I,top_k,act,M,gemm1,gemm2")
for spec in problems:
    kv = dict(item.split("=") for item in spec.split(","))
    shape = ",".join([kv["E"], kv["K"], kv["I"], kv["topk"], kv["act"]])
    for m in ms:
        key = "%s,%s" % (shape, m)
        if key in rule:
            print(key + "," + rule[key].replace("|", ","))
