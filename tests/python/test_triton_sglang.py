"""moetune.tuner.triton_sglang writes a triton_vllm table where SGLang 0.5.23 reads it: the file
names and folder of its get_config_file_name / get_moe_configs, the _down file, the manifest
beside each, and refusals of tables that are not the triton family's (CPU only, no SGLang)."""

import json
import os

import pytest

from moetune.tuner import triton_sglang

ROWS = {"1": {"BLOCK_SIZE_M": 16, "BLOCK_SIZE_N": 64, "BLOCK_SIZE_K": 256, "GROUP_SIZE_M": 16,
              "num_warps": 4, "num_stages": 5},
        "4096": {"BLOCK_SIZE_M": 128, "BLOCK_SIZE_N": 128, "BLOCK_SIZE_K": 64, "GROUP_SIZE_M": 16,
                 "num_warps": 8, "num_stages": 3}}
KEY = {"num_experts": 8, "intermediate_size": 14336, "hidden_size": 4096, "top_k": 2,
       "activation": "silu", "dtype": "bf16", "dtype_tag": "", "block_shape": None,
       "device_name": "NVIDIA_H100_80GB_HBM3", "family": "triton_vllm", "family_version": 1,
       "toolchain": "triton 3.6.0"}
NAME = "E=8,N=14336,device_name=NVIDIA_H100_80GB_HBM3.json"


def _table(tmp_path, key=KEY, rows=ROWS):
    path = tmp_path / NAME
    path.write_text(json.dumps(rows))
    (tmp_path / (NAME + ".moetune")).write_text(json.dumps({"manifest_version": 1, "key": key}))
    return str(path)


def sglang_lookup(config_dir, triton_version, E, N, device_name, M, down=False):
    """SGLang 0.5.23's get_moe_configs (its own Triton version's folder) and
    try_get_optimal_moe_config's nearest-M pick, for bf16."""
    name = f"E={E},N={N},device_name={device_name.replace(' ', '_')}" + \
        ("_down" if down else "") + ".json"
    path = os.path.join(config_dir, "configs", f"triton_{triton_version.replace('.', '_')}", name)
    if not os.path.exists(path):
        return None
    with open(path) as f:
        configs = {int(k): v for k, v in json.load(f).items()}
    return configs[min(configs, key=lambda x: abs(x - M))]


def test_writes_both_files_where_sglang_reads_them(tmp_path):
    out = tmp_path / "sglang"
    written = triton_sglang.export(_table(tmp_path), str(out))
    folder = out / "configs" / "triton_3_6_0"
    assert written == [str(folder / NAME), str(folder / NAME.replace(".json", "_down.json"))]
    for down in (False, True):
        assert sglang_lookup(str(out), "3.6.0", 8, 14336, "NVIDIA H100 80GB HBM3", 3000,
                             down) == ROWS["4096"]
        assert sglang_lookup(str(out), "3.6.0", 8, 14336, "NVIDIA H100 80GB HBM3", 2, down) == \
            ROWS["1"]
    assert sglang_lookup(str(out), "3.5.1", 8, 14336, "NVIDIA H100 80GB HBM3", 2) is None
    for path in written:
        assert json.loads(open(path + ".moetune").read())["key"] == KEY
        assert "USE_TMA" not in json.dumps(json.loads(open(path).read()))


def test_device_name_is_torchs_with_spaces_as_underscores(tmp_path):
    written = triton_sglang.export(_table(tmp_path), str(tmp_path / "o"), "NVIDIA H200 NVL")
    assert os.path.basename(written[1]) == "E=8,N=14336,device_name=NVIDIA_H200_NVL_down.json"


@pytest.mark.parametrize("change, message", [
    ({"family": "sm90_gather"}, "family = 'sm90_gather', expected 'triton_vllm'"),
    ({"toolchain": "nvrtc 13.0"}, "toolchain = 'nvrtc 13.0' is not 'triton X.Y.Z'"),
    ({"dtype": "fp8"}, "dtype = 'fp8', expected 'bf16'"),
    ({"dtype_tag": "fp8_w8a8", "block_shape": [128, 128]},
     "dtype_tag = 'fp8_w8a8', expected none; only bf16 tables are exported"),
])
def test_refuses_a_table_that_is_not_the_triton_familys(tmp_path, capsys, change, message):
    table = _table(tmp_path, key=dict(KEY, **change))
    assert triton_sglang.main([table, "--out", str(tmp_path / "o")]) == 2
    assert message in capsys.readouterr().err
    assert not (tmp_path / "o" / "configs").exists()


def test_refuses_a_row_without_vllms_six_fields_and_a_missing_manifest(tmp_path, capsys):
    bad = dict(ROWS, **{"16": dict(ROWS["1"], num_warps=None, extra=1)})
    assert triton_sglang.main([_table(tmp_path, rows=bad), "--out", str(tmp_path / "o")]) == 2
    assert "row '16' is not M -> vLLM's six fields" in capsys.readouterr().err
    os.remove(tmp_path / (NAME + ".moetune"))
    assert triton_sglang.main([str(tmp_path / NAME), "--out", str(tmp_path / "o")]) == 2
    assert ".moetune: cannot read" in capsys.readouterr().err
