#!/usr/bin/env python3
"""Records the signatures of the engine functions moetune's drop-ins copy, from released wheels.

    pip download vllm==0.33.0 sglang==0.5.23 --no-deps -d /tmp/wheels
    scripts/record_engine_signatures.py /tmp/wheels/vllm-0.33.0-*.whl /tmp/wheels/sglang-0.5.23-*.whl

Reads each function's source from the wheel (a zip) with `ast`, so the engine need not be
importable here, and writes tests/python/data/<engine>-<version>-<function>.json: each
parameter's name, kind, default and annotation as source text. test_engine_signatures.py
compares the drop-ins with these files.
"""

import ast
import json
import os
import sys
import tempfile
import zipfile

# engine -> (module path inside the wheel, function)
TARGETS = {
    "vllm": [("vllm/model_executor/layers/fused_moe/fused_moe.py", "fused_experts")],
    "sglang": [("sglang/srt/layers/moe/moe_runner/triton_utils/fused_moe.py", "fused_moe")],
}
OUT = os.path.join(os.path.dirname(__file__), "..", "tests", "python", "data")


def _params(fn):
    a = fn.args
    text = ast.unparse
    positional = a.posonlyargs + a.args
    defaults = [None] * (len(positional) - len(a.defaults)) + list(a.defaults)
    out = []
    for arg, d in zip(positional, defaults):
        kind = "POSITIONAL_ONLY" if arg in a.posonlyargs else "POSITIONAL_OR_KEYWORD"
        out.append({"name": arg.arg, "kind": kind, "default": text(d) if d else None,
                    "annotation": text(arg.annotation) if arg.annotation else None})
    for arg, d in zip(a.kwonlyargs, a.kw_defaults):
        out.append({"name": arg.arg, "kind": "KEYWORD_ONLY", "default": text(d) if d else None,
                    "annotation": text(arg.annotation) if arg.annotation else None})
    return out


def record(wheel):
    base = os.path.basename(wheel)
    engine, version = base.split("-")[:2]
    with zipfile.ZipFile(wheel) as z:
        for path, name in TARGETS[engine]:
            tree = ast.parse(z.read(path).decode())
            fn = next(n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == name)
            doc = {"engine": engine, "version": version, "wheel": base,
                   "module": path[:-3].replace("/", "."), "function": name,
                   "parameters": _params(fn)}
            dest = os.path.join(OUT, f"{engine}-{version}-{name}.json")
            fd, tmp = tempfile.mkstemp(dir=OUT)
            with os.fdopen(fd, "w") as f:
                json.dump(doc, f, indent=1)
                f.write("\n")
                f.flush()
                os.fsync(f.fileno())
            os.replace(tmp, dest)
            print(dest)


if __name__ == "__main__":
    if len(sys.argv) < 2:
        sys.exit("usage: record_engine_signatures.py WHEEL [WHEEL...]")
    for w in sys.argv[1:]:
        record(w)
