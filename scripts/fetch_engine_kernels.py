#!/usr/bin/env python3
"""Fetches vLLM's Triton fused-MoE module from its released wheel into .engines/ (dev machine).

    scripts/fetch_engine_kernels.py [--wheel PATH] [--force]

Without --wheel, runs `pip download vllm==0.33.0 --no-deps` into a temporary directory (PyPI must
be reachable). Extracts only the files bench/peers/vllm_triton.py reads, keeping the wheel's
layout, into .engines/vllm-0.33.0/ at the repository root (git-ignored; nothing of vLLM's is
committed):

    vllm/model_executor/layers/fused_moe/fused_moe.py   the kernel, its launch and config rules
    vllm/model_executor/layers/fused_moe/configs/*.json the tuned tables vLLM ships
    vllm/model_executor/layers/fused_moe/moe_align_block_size.py   align buffer sizing
    vllm/model_executor/layers/fused_moe/utils.py       enable_swap_ab, resolve_moe_use_td
    vllm/utils/math_utils.py, vllm/utils/platform_utils.py   next_power_of_2, round_up, device name
    vllm-0.33.0.dist-info/licenses/LICENSE              Apache-2.0, kept beside the code

and writes manifest.json (schema version, wheel name and sha256, each file's sha256). The tree is
built in a temporary directory beside the destination and renamed into place, so a reader never
sees half of it. Idempotent: when the manifest and every file it lists verify, it does nothing
(and downloads nothing); --force extracts again. Exit codes: 0 done or up to date, 1 failed.
"""

import argparse
import fnmatch
import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import zipfile

ENGINE = "vllm"
VERSION = "0.33.0"
kSchemaVersion = 1
REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), ".."))
DEST = os.path.join(REPO, ".engines", f"{ENGINE}-{VERSION}")
FUSED_MOE = "vllm/model_executor/layers/fused_moe/"
# Exact members, then glob patterns (each must match at least one member).
MEMBERS = [
    FUSED_MOE + "fused_moe.py",
    FUSED_MOE + "moe_align_block_size.py",
    FUSED_MOE + "utils.py",
    "vllm/utils/math_utils.py",
    "vllm/utils/platform_utils.py",
    f"vllm-{VERSION}.dist-info/licenses/LICENSE",
]
PATTERNS = [FUSED_MOE + "configs/*.json"]


def sha256_file(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def up_to_date(dest):
    """True when dest's manifest is ours and every file it lists is there with its hash."""
    try:
        with open(os.path.join(dest, "manifest.json")) as f:
            manifest = json.load(f)
    except (OSError, ValueError):
        return False
    if (manifest.get("schema_version") != kSchemaVersion or manifest.get("engine") != ENGINE
            or manifest.get("version") != VERSION):
        return False
    for rel, digest in manifest.get("files", {}).items():
        path = os.path.join(dest, rel)
        if not os.path.isfile(path) or sha256_file(path) != digest:
            return False
    return bool(manifest.get("files"))


def download(tmp):
    """pip download the wheel into tmp; returns its path."""
    cmd = [sys.executable, "-m", "pip", "download", f"{ENGINE}=={VERSION}", "--no-deps",
           "--only-binary=:all:", "--platform", "manylinux_2_28_x86_64", "-d", tmp]
    print("+ " + " ".join(cmd), flush=True)
    subprocess.run(cmd, check=True)
    wheels = [w for w in os.listdir(tmp)
              if w.startswith(f"{ENGINE}-{VERSION}-") and w.endswith(".whl")]
    if len(wheels) != 1:
        sys.exit(f"fetch_engine_kernels.py: pip download left {wheels} in {tmp}; expected one "
                 f"{ENGINE}-{VERSION}-*.whl")
    return os.path.join(tmp, wheels[0])


def select(names):
    """The wheel members to extract; fails naming what the wheel lacks."""
    have = set(names)
    missing = [m for m in MEMBERS if m not in have]
    chosen = [m for m in MEMBERS if m in have]
    for pattern in PATTERNS:
        # fnmatch's * also matches '/': keep to the pattern's own directory.
        hits = sorted(n for n in names if fnmatch.fnmatchcase(n, pattern)
                      and os.path.dirname(n) == os.path.dirname(pattern))
        if not hits:
            missing.append(pattern)
        chosen += hits
    if missing:
        sys.exit(f"fetch_engine_kernels.py: the wheel lacks {missing}; is it vllm {VERSION}?")
    return chosen


def extract(wheel, dest):
    base = os.path.basename(wheel)
    if not (base.startswith(f"{ENGINE}-{VERSION}-") and base.endswith(".whl")):
        sys.exit(f"fetch_engine_kernels.py: {wheel} is not a {ENGINE}-{VERSION}-*.whl; pass the "
                 f"wheel of vllm {VERSION} or leave --wheel out to download it")
    parent = os.path.dirname(dest)
    os.makedirs(parent, exist_ok=True)
    stage = tempfile.mkdtemp(prefix=f".{os.path.basename(dest)}.tmp-", dir=parent)
    try:
        files = {}
        with zipfile.ZipFile(wheel) as z:
            for name in select(z.namelist()):
                out = os.path.join(stage, name)
                os.makedirs(os.path.dirname(out), exist_ok=True)
                data = z.read(name)
                with open(out, "wb") as f:
                    f.write(data)
                    f.flush()
                    os.fsync(f.fileno())
                files[name] = hashlib.sha256(data).hexdigest()
        manifest = {"schema_version": kSchemaVersion, "engine": ENGINE, "version": VERSION,
                    "wheel": base, "wheel_sha256": sha256_file(wheel), "files": files}
        with open(os.path.join(stage, "manifest.json"), "w") as f:
            json.dump(manifest, f, indent=1, sort_keys=True)
            f.write("\n")
            f.flush()
            os.fsync(f.fileno())
        old = None
        if os.path.exists(dest):
            old = tempfile.mkdtemp(prefix=f".{os.path.basename(dest)}.old-", dir=parent)
            os.rmdir(old)
            os.rename(dest, old)
        os.rename(stage, dest)
        stage = None
        if old:
            shutil.rmtree(old)
        return manifest
    finally:
        if stage:
            shutil.rmtree(stage, ignore_errors=True)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--wheel", help=f"a local {ENGINE}-{VERSION}-*.whl instead of pip download")
    ap.add_argument("--force", action="store_true", help="extract again even when up to date")
    a = ap.parse_args()
    rel = os.path.relpath(DEST, REPO)
    if not a.force and up_to_date(DEST):
        print(f"{rel}: up to date")
        return 0
    if a.wheel:
        manifest = extract(os.path.abspath(a.wheel), DEST)
    else:
        with tempfile.TemporaryDirectory(prefix="moetune-wheel-") as tmp:
            manifest = extract(download(tmp), DEST)
    print(f"{rel}: {len(manifest['files'])} files from {manifest['wheel']} "
          f"(sha256 {manifest['wheel_sha256'][:12]})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
