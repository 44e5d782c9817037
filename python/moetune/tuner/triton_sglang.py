"""Writes a triton_vllm table where SGLang reads its Triton fused-MoE configs.

    python -m moetune.tuner.triton_sglang TABLE.json --out DIR [--device-name "NVIDIA H100 ..."]
    SGLANG_MOE_CONFIG_DIR=DIR python -m sglang.launch_server ...

SGLang 0.5.23 (sglang/srt/layers/moe/moe_runner/triton_utils/fused_moe_triton_config.py,
get_moe_configs) reads $SGLANG_MOE_CONFIG_DIR/configs/triton_X_Y_Z/<name> for the Triton version
it runs (X.Y.Z with '.' -> '_'), where <name> is get_config_file_name's
E={E},N={N},device_name={torch's device name, ' ' -> '_'}[,dtype=...].json (bf16: no dtype; N is
w2's last dimension, the intermediate size), and the same name ending _down.json for the second
GEMM (fused_experts_impl always asks for it; absent, it reuses the first file with a warning).
This family tunes one row for both GEMMs, so both files get the same rows, without "USE_TMA":
SGLang's TMA path for GEMM2 was not measured. X.Y.Z is the Triton the table was tuned with (the
manifest's toolchain): SGLang falls back to another version's folder only when its own has no file.

Each file gets the table's .moetune manifest beside it, unchanged (the measurement's provenance).
The rows were measured with vLLM's kernel and launch (moetune.engines.vllm_triton); SGLang's
fused_moe_kernel is a fork of it with the same six fields, but its timings were not taken.
Writes are atomic (temp file, fsync, rename). Exit 0 written, 2 bad input (one line on stderr):
among them fp8 tables (dtype_tag fp8_w8a8), whose SGLang names were not checked.
"""

import argparse
import json
import os
import sys

from . import triton_rules


class BadInput(Exception):
    pass


def file_name(E, N, device_name, down=False):
    """SGLang's get_config_file_name for bf16 (no dtype, block shape or per-channel suffix)."""
    return f"E={E},N={N},device_name={device_name.replace(' ', '_')}" + \
        ("_down" if down else "") + ".json"


def version_dir(toolchain):
    """triton_3_6_0 for the manifest's toolchain "triton 3.6.0"."""
    parts = toolchain.split()
    if len(parts) != 2 or parts[0] != "triton" or not all(p.isdigit() for p in
                                                          parts[1].split(".")):
        raise BadInput(f"toolchain = '{toolchain}' is not 'triton X.Y.Z'; tune the table with the "
                       "triton backend (its manifest names the Triton it measured with)")
    return "triton_" + parts[1].replace(".", "_")


def _load(path):
    try:
        with open(path) as f:
            return json.load(f)
    except OSError as e:
        raise BadInput(f"{path}: cannot read ({e.strerror})") from None
    except ValueError as e:
        raise BadInput(f"{path}: not JSON ({e})") from None


def _write(path, text):
    tmp = f"{path}.tmp{os.getpid()}"
    with open(tmp, "w") as f:
        f.write(text)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)


def export(table, out, device_name=None):
    """Writes table's rows where SGLang reads them under out; returns the paths written."""
    manifest_path = table + ".moetune"
    rows, manifest = _load(table), _load(manifest_path)
    key = manifest.get("key", {})
    if key.get("family") != triton_rules.FAMILY:
        raise BadInput(f"{manifest_path}: family = '{key.get('family')}', expected "
                       f"'{triton_rules.FAMILY}'; only the triton family's tables are SGLang's")
    if key.get("dtype") != "bf16":
        raise BadInput(f"{manifest_path}: dtype = '{key.get('dtype')}', expected 'bf16'")
    if key.get("dtype_tag"):  # fp8 tables: SGLang's names and lookup for them were not read
        raise BadInput(f"{manifest_path}: dtype_tag = '{key['dtype_tag']}', expected none; "
                       "only bf16 tables are exported to SGLang (its fp8 file names were not "
                       "checked): serve this table with vLLM")
    bad = [m for m, r in rows.items() if not m.isdigit() or not isinstance(r, dict) or
           sorted(r) != sorted(triton_rules.ROW_FIELDS)]
    if bad or not rows:
        raise BadInput(f"{table}: row '{bad[0] if bad else ''}' is not M -> vLLM's six fields "
                       f"({', '.join(triton_rules.ROW_FIELDS)})")
    folder = os.path.join(out, "configs", version_dir(key.get("toolchain", "")))
    os.makedirs(folder, exist_ok=True)
    text = json.dumps(rows, indent=4) + "\n"
    with open(manifest_path) as f:
        manifest_text = f.read()
    written = []
    for down in (False, True):
        path = os.path.join(folder, file_name(key["num_experts"], key["intermediate_size"],
                                              device_name or key["device_name"], down))
        _write(path, text)
        _write(path + ".moetune", manifest_text)
        written.append(path)
    return written


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("table", help="a triton_vllm table (vLLM's file) with its .moetune manifest")
    ap.add_argument("--out", required=True, help="SGLANG_MOE_CONFIG_DIR: configs/triton_X_Y_Z/ "
                    "is made under it")
    ap.add_argument("--device-name", help="torch.cuda.get_device_name() of the GPU (default: the "
                    "manifest's, vLLM's spelling; differs only for H200 variants such as H200 NVL)")
    a = ap.parse_args(argv)
    try:
        for path in export(a.table, a.out, a.device_name):
            print(path)
    except BadInput as e:
        print(f"triton_sglang: {e}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
