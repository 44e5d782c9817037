"""Shared testbed of the Python tests: fresh random MoE layers, an fp64 reference, and the one
relative-L2 checker (with its tolerance table) every test uses."""

import math

import torch

# Relative L2 error allowed per dtype, and why.
TOLERANCE = {
    # inputs are exact in the reference (same bf16 values, upcast); the kernels round the
    # intermediate activation to bf16 and the output to bf16: ~2^-8 relative per element.
    torch.bfloat16: 1e-2,
    # fp32 end to end; only the summation order differs from the reference.
    torch.float32: 1e-5,
}

GATED = {"silu": True, "swigluoai": True, "relu2": False, "gelu": False, "gelu_tanh": False}


def make_layer(num_tokens, hidden, inter, experts, top_k, *, dtype=torch.bfloat16, device="cpu",
               activation="silu", seed=0, ids_dtype=torch.int32, weights_dtype=torch.float32):
    """Random inputs whose scales differ per expert (a wrong expert shows), never zeros."""
    g = torch.Generator(device="cpu").manual_seed(seed)
    n1 = 2 * inter if GATED[activation] else inter
    x = torch.randn(num_tokens, hidden, generator=g)
    scale1 = 0.5 + torch.rand(experts, 1, 1, generator=g)
    w1 = torch.randn(experts, n1, hidden, generator=g) * scale1 / math.sqrt(hidden)
    w2 = torch.randn(experts, hidden, inter, generator=g) / math.sqrt(inter)
    logits = torch.randn(num_tokens, experts, generator=g)
    weights, ids = torch.topk(torch.softmax(logits, dim=-1), top_k, dim=-1)
    to = dict(device=device)
    return (x.to(dtype=dtype, **to), w1.to(dtype=dtype, **to), w2.to(dtype=dtype, **to),
            weights.to(dtype=weights_dtype, **to), ids.to(dtype=ids_dtype, **to))


def make_biases(experts, n1, hidden, *, dtype=torch.bfloat16, device="cpu", seed=0):
    """w1_bias [E, n1] ~ 4 N(0, 1) (so gpt-oss's clamps at +-7 act on some rows) and w2_bias
    [E, K] ~ N(0, 1) / 2, never zeros."""
    g = torch.Generator(device="cpu").manual_seed(1000 + seed)
    b1 = torch.randn(experts, n1, generator=g) * 4
    b2 = torch.randn(experts, hidden, generator=g) / 2
    return b1.to(dtype=dtype, device=device), b2.to(dtype=dtype, device=device)


def swigluoai(gate, up, alpha=1.702, limit=7.0):
    """gpt-oss's clamped SwiGLU, as transformers' GptOssExperts computes it."""
    gate = gate.clamp(max=limit)
    up = up.clamp(min=-limit, max=limit)
    return (up + 1) * gate * torch.sigmoid(gate * alpha)


def _act(h, activation, inter):
    if activation == "silu":
        return torch.nn.functional.silu(h[..., :inter]) * h[..., inter:]
    if activation == "swigluoai":
        return swigluoai(h[..., :inter], h[..., inter:])
    if activation == "relu2":
        return torch.relu(h) ** 2
    if activation == "gelu":
        return torch.nn.functional.gelu(h)
    return torch.nn.functional.gelu(h, approximate="tanh")


def reference(x, w1, w2, topk_weights, topk_ids, activation="silu", w1_bias=None, w2_bias=None):
    """fp64 on the CPU: out[m] = sum_j w[m, j] * (w2[e] @ act(w1[e] @ x[m] + b1[e]) + b2[e]),
    e = ids[m, j] (biases when given)."""
    # One expert at a time (memory stays at one expert's weights, whatever M).
    x64 = x.detach().double().cpu()
    ids = topk_ids.long().cpu()
    tw = topk_weights.double().cpu()
    inter = w2.shape[2]
    y = torch.zeros(*ids.shape, x.shape[1], dtype=torch.float64)
    for e in ids.unique().tolist():
        rows, slots = (ids == e).nonzero(as_tuple=True)
        h = x64[rows] @ w1[e].detach().double().cpu().T
        if w1_bias is not None:
            h = h + w1_bias[e].double().cpu()
        out = _act(h, activation, inter) @ w2[e].detach().double().cpu().T
        if w2_bias is not None:
            out = out + w2_bias[e].double().cpu()
        y[rows, slots] = out
    return (y * tw.unsqueeze(-1)).sum(dim=1)


def rel_l2(got, want):
    got, want = got.double().cpu(), want.double().cpu()
    if not torch.isfinite(got).all():
        return math.inf
    denom = want.norm().item()
    return (got - want).norm().item() / (denom if denom > 0 else 1.0)


def check_close(got, want, dtype, what=""):
    """Asserts the relative L2 error is within the dtype's tolerance; says where it is worst."""
    err = rel_l2(got, want)
    tol = TOLERANCE[dtype]
    if not err <= tol:
        diff = (got.double().cpu() - want.double().cpu()).abs()
        diff = torch.nan_to_num(diff, nan=math.inf)
        idx = tuple(int(i) for i in torch.unravel_index(diff.argmax(), diff.shape))
        raise AssertionError(
            f"{what}: relative L2 error {err:.3g} > {tol:g}; worst at {idx}: "
            f"got {got[idx].item()!r}, expected {want[idx].item()!r}")
