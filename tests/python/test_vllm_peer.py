"""moetune.engines.vllm_triton: vLLM 0.33.0's own Triton fused-MoE kernel, run outside vLLM.

CPU tests run the kernel under Triton's interpreter in one child process (TRITON_INTERPRET=1 is
set there before triton is imported, so this pytest process keeps compiled Triton for any GPU
test) and compare every output with the fp64 reference of moe_reference.py; each positive case has
negative twins (a wrong expert id, a wrong weight element) that the same check must catch. The
config tests check that the harness picks exactly vLLM's row: the shipped H200 table where one
exists, vLLM's default rule elsewhere. The `gpu` test runs the compiled kernel and a CUDA-graph
replay. All need .engines/vllm-0.33.0 (scripts/fetch_engine_kernels.py); they skip without it.

What the interpreter cannot check: Triton's code generation, the num_warps/num_stages of a row
and the GPU's summation order inside tl.dot (it is numpy, fp32); vllm_triton's
patch_triton_interpreter lists the three interpreter gaps it closes for bf16.

Seed: MOETUNE_TEST_SEED (default 0), printed in every failure.

    python tests/python/test_vllm_peer.py OUT.pt   # the child: runs the cases, saves outputs
"""

import json
import os
import sys
import time

import pytest
import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from interpreter_child import run_interpreter_child  # noqa: E402
from vllm_engine import ENGINE, needs_engine  # noqa: E402
from moe_reference import check_close, make_layer, reference  # noqa: E402

SEED = int(os.environ.get("MOETUNE_TEST_SEED", "0"))

# name -> (M, K, I, E, top_k, activation); what each covers is on its line.
CASES = {
    "silu_small_m": (5, 64, 32, 4, 2, "silu"),  # M < BLOCK_SIZE_M: vLLM's shortened EM grid
    "relu2_small_m": (5, 64, 32, 4, 2, "relu2"),  # non-gated relu(x)^2
    "silu_naive": (1, 64, 32, 8, 2, "silu"),  # M * top_k * 4 <= E: vLLM skips align
    "silu_odd_k": (33, 72, 32, 4, 2, "silu"),  # M = BLOCK_SIZE_M + 1; K not a BLOCK_SIZE_K multiple
}
# Negative twins: (corruption, case). Each output is compared with the uncorrupted reference.
TWINS = [("topk_id", "silu_small_m"), ("topk_id", "silu_naive"),
         ("aligned_expert_id", "silu_odd_k"), ("w2_element", "silu_small_m"),
         ("w2_element", "relu2_small_m")]


def _seed(name):
    return SEED + sorted(CASES).index(name)


def _what(name):
    M, K, I, E, k, act = CASES[name]
    return f"{name}: M={M} K={K} I={I} E={E} top_k={k} {act} seed={_seed(name)}"


def _layer(name):
    M, K, I, E, k, act = CASES[name]
    return make_layer(M, K, I, E, k, activation=act, seed=_seed(name))


def _corrupt(kind, name, x, w1, w2, tw, ids):
    """The inputs of one twin: ids or weights with exactly one element changed."""
    E = w1.size(0)
    if kind == "topk_id":  # token 0's first expert becomes one it was not routed to
        ids = ids.clone()
        ids[0, 0] = next(e for e in range(E) if e not in ids[0].tolist())
    elif kind == "w2_element":  # w2[e, 0, i] of token 0's first expert, i its largest activation
        M, K, I, E, k, act = CASES[name]
        e = int(ids[0, 0])
        h = w1[e].double() @ x[0].double()
        a = torch.nn.functional.silu(h[:I]) * h[I:] if act == "silu" else torch.relu(h) ** 2
        w2 = w2.clone()
        w2[e, 0, int(a.abs().argmax())] += 4.0  # ~20x the element's scale of 1/sqrt(I)
    return x, w1, w2, tw, ids


def _child(out_path):
    """Runs every case and twin under the interpreter; saves the outputs for the parent."""
    assert os.environ.get("TRITON_INTERPRET") == "1", "the child runs under TRITON_INTERPRET=1"
    from moetune.engines import vllm_triton

    started = time.monotonic()
    eng = vllm_triton.load()
    results = {"patches": eng.interpreter_patches}
    for name in CASES:
        x, w1, w2, tw, ids = _layer(name)
        layer = vllm_triton.VllmTritonMoe(w1, w2, CASES[name][4], CASES[name][5], engine=eng)
        prepared = layer.prepare(ids)
        results[name] = {"out": layer.run(x, tw, ids, prepared),
                         "naive": prepared.sorted_token_ids is None,
                         "source": layer.config_for(x.size(0)).source}
    for kind, name in TWINS:
        x, w1, w2, tw, ids = _corrupt(kind, name, *_layer(name))
        layer = vllm_triton.VllmTritonMoe(w1, w2, CASES[name][4], CASES[name][5], engine=eng)
        prepared = layer.prepare(ids)
        if kind == "aligned_expert_id":  # block 0 of the align result names the next expert
            E = w1.size(0)
            prepared.expert_ids[0] = (prepared.expert_ids[0] + 1) % E
        results[f"{kind}/{name}"] = {"out": layer.run(x, tw, ids, prepared)}
    results["seconds"] = time.monotonic() - started
    torch.save(results, out_path)


@pytest.fixture(scope="module")
def interpreted(tmp_path_factory):
    results, wall = run_interpreter_child(__file__, tmp_path_factory.mktemp("vllm_peer"), SEED, 600)
    print(f"interpreter child: {wall:.1f} s wall, cases "
          f"{results['seconds']:.1f} s, interpreter patches {results['patches']}, seed={SEED}")
    return results


@needs_engine
@pytest.mark.parametrize("name", sorted(CASES))
def test_interpreted_kernel_matches_fp64_reference(interpreted, name):
    x, w1, w2, tw, ids = _layer(name)
    want = reference(x, w1, w2, tw, ids, CASES[name][5])
    check_close(interpreted[name]["out"], want, torch.bfloat16, what=_what(name))


@needs_engine
@pytest.mark.parametrize("kind,name", TWINS)
def test_negative_twin_fails_the_check(interpreted, kind, name):
    x, w1, w2, tw, ids = _layer(name)
    want = reference(x, w1, w2, tw, ids, CASES[name][5])
    with pytest.raises(AssertionError, match="relative L2 error"):
        check_close(interpreted[f"{kind}/{name}"]["out"], want, torch.bfloat16,
                    what=f"{kind} twin of {_what(name)}")


@needs_engine
def test_naive_assignment_only_where_vllm_skips_align(interpreted):
    naive = {name: interpreted[name]["naive"] for name in CASES}
    assert naive == {name: CASES[name][0] * CASES[name][4] * 4 <= CASES[name][3]
                     for name in CASES}, naive
    assert naive["silu_naive"], naive  # the case exists to take that path


@needs_engine
def test_align_reproduces_vllm_docstring_example():
    """moe_align_block_size's own example (its ids 1..4, so E = 5 here), through vLLM's wrapper."""
    from moetune.engines import vllm_triton

    eng = vllm_triton.load()
    ids = torch.tensor([[2, 3, 4], [1, 2, 4], [1, 3, 4], [1, 2, 3]], dtype=torch.int32)
    sorted_ids, expert_ids, post_padded = eng.moe_align_block_size(ids, 4, 5)
    # numel + E * (block - 1) = 12 + 15 slots; padding and tail = numel = 12.
    assert sorted_ids.tolist() == [3, 6, 9, 12, 0, 4, 10, 12, 1, 7, 11, 12, 2, 5, 8, 12] + [12] * 11
    assert expert_ids.tolist() == [1, 2, 3, 4, -1, -1, -1]  # cdiv(27, 4) blocks; unused: -1
    assert post_padded.tolist() == [16]


def _meta_layer(E, K, I, device_name, activation="silu"):
    from moetune.engines import vllm_triton

    n1 = 2 * I if activation == "silu" else I
    w1 = torch.empty(E, n1, K, dtype=torch.bfloat16, device="meta")
    w2 = torch.empty(E, K, I, dtype=torch.bfloat16, device="meta")
    return vllm_triton.VllmTritonMoe(w1, w2, 8, activation, device_name=device_name)


@needs_engine
def test_config_for_uses_vllm_default_rule_without_a_table():
    choice = _meta_layer(4, 64, 32, "NVIDIA_H200").config_for(5)
    assert choice.source == "default" and choice.path is None, choice
    # vLLM 0.33.0's get_default_config for bf16, M = 5 (<= 32): small tiles, long K, 4 stages.
    assert choice.config == {"BLOCK_SIZE_M": 16, "BLOCK_SIZE_N": 64, "BLOCK_SIZE_K": 128,
                             "GROUP_SIZE_M": 1, "SPLIT_K": 1, "num_warps": 4, "num_stages": 4}


@needs_engine
@pytest.mark.parametrize("device_name", ["NVIDIA_H200", "NVIDIA H200", "NVIDIA H200 NVL"])
def test_config_for_uses_shipped_h200_table(device_name):
    """E=128, N=768 (Qwen3-30B-A3B) has a bf16 H200 table; vLLM maps the H200 family to it."""
    layer = _meta_layer(128, 2048, 768, device_name)
    name = "E=128,N=768,device_name=NVIDIA_H200.json"
    with open(os.path.join(ENGINE, "vllm/model_executor/layers/fused_moe/configs", name)) as f:
        table = {int(m): row for m, row in json.load(f).items() if m != "triton_version"}
    for M in (1, 5, 48, 3000):
        choice = layer.config_for(M)
        assert choice.source == f"table:{name}", (M, choice)
        assert choice.config == table[min(table, key=lambda m: abs(m - M))], (M, choice)


@needs_engine
def test_config_for_is_per_layer_device():
    """vLLM caches its table by (E, N) once per process; two devices here must not share it."""
    assert _meta_layer(128, 2048, 768, "NVIDIA H200").config_for(64).source.startswith("table:")
    assert _meta_layer(128, 2048, 768, None).config_for(64).source == "default"  # the CPU case


def test_load_names_the_fetch_script_when_the_engine_is_missing(tmp_path):
    from moetune.engines import vllm_triton

    with pytest.raises(FileNotFoundError, match="run scripts/fetch_engine_kernels.py"):
        vllm_triton.load(str(tmp_path / "vllm-0.33.0"))


@needs_engine
@pytest.mark.gpu
@pytest.mark.parametrize("M", [1, 4, 32])
def test_compiled_kernel_matches_reference_and_replays_in_a_cuda_graph(M):
    """The H200 table's shape (E=128, I=768, top-8) at a small K; eager, then a graph replay."""
    from moetune.engines import vllm_triton

    x, w1, w2, tw, ids = make_layer(M, 128, 768, 128, 8, device="cuda", seed=SEED + M)
    layer = vllm_triton.VllmTritonMoe(w1, w2, 8, "silu")
    prepared = layer.prepare(ids)
    what = f"cuda M={M} K=128 I=768 E=128 top_k=8 silu seed={SEED + M} {layer.config_for(M)}"
    check_close(layer.run(x, tw, ids, prepared), reference(x, w1, w2, tw, ids), torch.bfloat16,
                what=what)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):  # fails on any host sync inside run()
        out = layer.run(x, tw, ids, prepared)
    x.copy_(torch.randn_like(x))
    graph.replay()
    torch.cuda.synchronize()
    check_close(out, reference(x, w1, w2, tw, ids), torch.bfloat16, what="graph replay " + what)


if __name__ == "__main__":
    _child(sys.argv[1])
