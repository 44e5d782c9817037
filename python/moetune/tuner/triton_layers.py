"""The triton family testbed's layers: a problem's weights drawn, vLLM's layer on them
(moetune.engines.vllm_triton.VllmTritonMoe) and the reference it is checked against, the MoE
layer computed expert by expert in dt (fp64 on the CPU, fp32 on a GPU),
sum_j topk_weights[m, j] * w2[e] @ inner(w1[e] @ x[m]).

  bf16     (bf16_layer) w1 ~ N(0,1)/sqrt(K) [E, N1, K], w2 ~ N(0,1)/sqrt(I) [E, K, I]; inner =
           the activation (silu(gate) * up, or relu(h)^2) in dt on the same bf16 inputs: the
           kernel's only roundings are the bf16 intermediate and output.
"""

import math

import torch

from . import triton_rules


def moe_reference(x, w1_of, w2_of, topk_weights, topk_ids, inner, dt):
    """out [M, K] in dt: per expert e hit, y = inner(x[rows] @ w1_of(e)^T) @ w2_of(e)^T times the
    rows' routing weights, added into out; w1_of(e), w2_of(e) give that expert's weights in dt."""
    out = torch.zeros(x.shape, dtype=dt, device=x.device)
    flat = topk_ids.long().flatten()
    for e in flat.unique().tolist():
        pairs = (flat == e).nonzero().flatten()
        rows = pairs // topk_ids.shape[1]
        a = inner(x[rows].to(dt) @ w1_of(e).T).to(dt)
        y = a @ w2_of(e).T
        out.index_add_(0, rows, y * topk_weights.flatten()[pairs].to(dt).unsqueeze(1))
    return out


def activation(act, inter):
    """The exact activation of h [rows, N1] in h's dtype: silu(gate) * up (rows [gate; up]) or
    relu(h)^2."""
    if act == "silu":
        return lambda h: torch.nn.functional.silu(h[:, :inter]) * h[:, inter:]
    return lambda h: torch.relu(h).square()


def bf16_layer(problem, x, tw, ids, g, engine, dt):
    """bf16 weights drawn with g (expert by expert), vLLM's layer on them, its reference in dt."""
    from moetune.engines import vllm_triton

    K, I, E = problem["hidden_size"], problem["intermediate_size"], problem["num_experts"]
    n1, dev = triton_rules.gemm1_n(problem), x.device
    # Expert by expert: an fp32 draw of all of w1 at once would need 4x the bf16 weights.
    w1 = torch.empty(E, n1, K, dtype=torch.bfloat16, device=dev)
    w2 = torch.empty(E, K, I, dtype=torch.bfloat16, device=dev)
    for e in range(E):
        w1[e] = torch.randn(n1, K, generator=g, device=dev) / math.sqrt(K)
        w2[e] = torch.randn(K, I, generator=g, device=dev) / math.sqrt(I)
    layer = vllm_triton.VllmTritonMoe(w1, w2, problem["top_k"], problem["activation"],
                                      engine=engine)
    ref = moe_reference(x, lambda e: w1[e].to(dt), lambda e: w2[e].to(dt), tw, ids,
                        activation(problem["activation"], I), dt)
    return layer, ref

