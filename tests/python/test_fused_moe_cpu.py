"""moetune.fused_moe on CPU tensors (the CPU backend) against the fp64 reference."""

import os
import shutil

import pytest
import torch

import moetune
from moe_reference import check_close, make_biases, make_layer, reference, rel_l2


@pytest.mark.parametrize("m", [0, 1, 7, 33])
@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float32])
def test_matches_fp64_reference(m, dtype):
    x, w1, w2, tw, ids = make_layer(m, 64, 32, 8, 2, dtype=dtype, seed=m)
    out = moetune.fused_moe(x, w1, w2, tw, ids)
    assert out.shape == x.shape and out.dtype == dtype
    if m:
        check_close(out, reference(x, w1, w2, tw, ids), dtype, f"M={m} {dtype}")


@pytest.mark.parametrize("activation", ["relu2", "gelu", "gelu_tanh"])
def test_non_gated_activations(activation):
    x, w1, w2, tw, ids = make_layer(9, 64, 48, 4, 2, activation=activation, seed=3)
    out = moetune.fused_moe(x, w1, w2, tw, ids, activation=activation)
    check_close(out, reference(x, w1, w2, tw, ids, activation), torch.bfloat16, activation)


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float32])
@pytest.mark.parametrize("activation", ["swigluoai", "silu", "gelu"])
def test_biases_and_gpt_oss_activation(activation, dtype):
    # gpt-oss's experts: biases on both GEMMs, the clamped SwiGLU (its clamps act: |b1| ~ 4).
    x, w1, w2, tw, ids = make_layer(21, 64, 32, 8, 4, activation=activation, dtype=dtype, seed=17)
    b1, b2 = make_biases(8, w1.shape[1], 64, dtype=dtype, seed=17)
    out = moetune.fused_moe(x, w1, w2, tw, ids, activation=activation, w1_bias=b1, w2_bias=b2)
    want = reference(x, w1, w2, tw, ids, activation, b1, b2)
    check_close(out, want, dtype, f"{activation} with biases")
    # The negative twin: the same call without biases is not that layer.
    assert rel_l2(moetune.fused_moe(x, w1, w2, tw, ids, activation=activation), want) > 0.05


def test_swigluoai_clamps_where_transformers_does():
    x, w1, w2, tw, ids = make_layer(5, 64, 32, 4, 2, activation="swigluoai", seed=19)
    b1, b2 = make_biases(4, w1.shape[1], 64, seed=19)
    out = moetune.fused_moe(x, w1, w2, tw, ids, activation="swigluoai", w1_bias=b1, w2_bias=b2)
    unclamped = reference(x, w1, w2, tw, ids, "silu", b1, b2)  # a different gate: must not match
    check_close(out, reference(x, w1, w2, tw, ids, "swigluoai", b1, b2), torch.bfloat16, "clamped")
    assert rel_l2(out, unclamped) > 0.05


def test_int64_ids_and_bf16_weights_give_the_same_bits_as_int32_fp32():
    x, w1, w2, tw, ids = make_layer(17, 64, 32, 8, 4, seed=5)
    a = moetune.fused_moe(x, w1, w2, tw, ids)
    b = moetune.fused_moe(x, w1, w2, tw.to(torch.float32), ids.to(torch.int64))
    assert torch.equal(a, b)
    c = moetune.fused_moe(x, w1, w2, tw.to(torch.bfloat16), ids)
    check_close(c, reference(x, w1, w2, tw.to(torch.bfloat16), ids), torch.bfloat16, "bf16 weights")


def test_inplace_overwrites_hidden_states_with_the_out_of_place_bits():
    x, w1, w2, tw, ids = make_layer(12, 64, 32, 8, 2, seed=7)
    want = moetune.fused_moe(x, w1, w2, tw, ids)
    y = x.clone()
    ret = moetune.fused_moe(y, w1, w2, tw, ids, inplace=True)
    assert ret is y and torch.equal(y, want)


def test_same_inputs_give_the_same_bits():
    x, w1, w2, tw, ids = make_layer(40, 64, 32, 8, 2, seed=11)
    assert torch.equal(moetune.fused_moe(x, w1, w2, tw, ids), moetune.fused_moe(x, w1, w2, tw, ids))


def test_checker_catches_one_corrupted_element():
    # The negative twin of check_close: one wrong element must fail it.
    x, w1, w2, tw, ids = make_layer(8, 64, 32, 8, 2, seed=13)
    out = moetune.fused_moe(x, w1, w2, tw, ids)
    want = reference(x, w1, w2, tw, ids)
    bad = out.clone()
    bad[3, 5] += 4 * want.abs().max().to(bad.dtype)
    with pytest.raises(AssertionError, match=r"worst at \(3, 5\)"):
        check_close(bad, want, torch.bfloat16, "corrupted")
    nan = out.clone()
    nan[0, 0] = float("nan")
    assert rel_l2(nan, want) == float("inf")


def test_explicit_config_and_explain():
    x, w1, w2, tw, ids = make_layer(5, 64, 32, 8, 2, seed=17)
    info = moetune.explain(x, w1, w2, tw, ids)
    assert info["rule"] == "default" and "M=5" in info["explain"]
    tile = {"block_m": 16, "block_n": 32, "block_k": 32}
    cfg = {"gemm1": {"tile": tile}, "gemm2": {"tile": tile}}
    info = moetune.explain(x, w1, w2, tw, ids, config=cfg)
    assert info["rule"] == "explicit"
    out = moetune.fused_moe(x, w1, w2, tw, ids, config=cfg)
    check_close(out, reference(x, w1, w2, tw, ids), torch.bfloat16, "explicit config")


SHIPPED_CPU = os.path.join(os.path.dirname(__file__), "..", "..", "tables", "cpu")


def relabelled_tables(out, device):
    """The shipped cpu table (E=8,K=256,I=128) in `out`, relabelled as made on `device`."""
    os.makedirs(out)
    for name in os.listdir(SHIPPED_CPU):
        with open(os.path.join(SHIPPED_CPU, name)) as f:
            text = f.read().replace('"device_name": "cpu"', f'"device_name": "{device}"')
        with open(os.path.join(out, name.replace("device_name=cpu", f"device_name={device}")),
                  "w") as f:
            f.write(text)
    return out


def test_explain_says_other_device_for_a_table_of_another_device(tmp_path, monkeypatch):
    x, w1, w2, tw, ids = make_layer(16, 256, 128, 8, 2, seed=29)
    # The shipped cpu table serves a cpu tensor with rule table.
    assert moetune.explain(x, w1, w2, tw, ids, config=SHIPPED_CPU)["rule"] == "table"
    h200 = relabelled_tables(str(tmp_path / "h200"), "NVIDIA_H200")
    info = moetune.explain(x, w1, w2, tw, ids, config=h200)
    assert info["rule"] == "other_device", info
    assert "made on NVIDIA_H200, this device is cpu" in info["explain"]
    # Forbidden (read when a runner is made: a new directory makes a new runner): the default.
    monkeypatch.setenv("MOETUNE_TABLES_SAME_DEVICE", "1")
    forbidden = relabelled_tables(str(tmp_path / "forbidden"), "NVIDIA_H200")
    assert moetune.explain(x, w1, w2, tw, ids, config=forbidden)["rule"] == "default"


def test_inference_mode_and_no_grad():
    x, w1, w2, tw, ids = make_layer(6, 64, 32, 8, 2, seed=19)
    want = moetune.fused_moe(x, w1, w2, tw, ids)
    with torch.inference_mode():
        assert torch.equal(moetune.fused_moe(x, w1, w2, tw, ids), want)
    with torch.no_grad():
        assert torch.equal(moetune.fused_moe(x, w1, w2, tw, ids), want)


def test_compiles_fullgraph_without_graph_breaks():
    x, w1, w2, tw, ids = make_layer(10, 64, 32, 8, 2, seed=23)

    def layer(x, w1, w2, tw, ids):
        return moetune.fused_moe(x * 2, w1, w2, tw, ids) + 1

    compiled = torch.compile(layer, fullgraph=True, backend="aot_eager")
    assert torch.equal(compiled(x, w1, w2, tw, ids), layer(x, w1, w2, tw, ids))
