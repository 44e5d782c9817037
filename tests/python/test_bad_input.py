"""Bad arguments to moetune.fused_moe end in a Python exception that names the argument, what
was seen and what was expected; never a crash or a silent answer."""

import pytest
import torch

import moetune
from moetune import _ops
from moe_reference import make_layer


def _layer():
    return make_layer(6, 64, 32, 8, 2, seed=43)


def _misaligned(t):
    """t's values in a contiguous tensor whose data starts one element past its storage's start."""
    flat = torch.empty(t.numel() + 1, dtype=t.dtype, device=t.device)
    out = flat[1:].view(t.shape)
    out.copy_(t)
    return out


def _call(**replace):
    x, w1, w2, tw, ids = _layer()
    args = dict(hidden_states=x, w1=w1, w2=w2, topk_weights=tw, topk_ids=ids)
    kw = {k: replace.pop(k) for k in ("activation", "config", "inplace") if k in replace}
    args.update(replace)
    return moetune.fused_moe(*args.values(), **kw)


@pytest.mark.parametrize("replace,error,message", [
    (lambda x, w1, w2, tw, ids: {"hidden_states": x.to(torch.float16)}, TypeError,
     r"hidden_states has dtype Half; expected bfloat16"),
    (lambda x, w1, w2, tw, ids: {"w1": w1.float()}, TypeError,
     r"w1 has dtype Float; expected BFloat16 \(the dtype of hidden_states\)"),
    (lambda x, w1, w2, tw, ids: {"w1": w1[:, :40]}, ValueError,
     r"w1 has shape \[8, 40, 64\]; expected \[8, 64, 64\]"),
    (lambda x, w1, w2, tw, ids: {"w2": w2[:4]}, ValueError, r"w2 has shape \[4, 64, 32\]"),
    (lambda x, w1, w2, tw, ids: {"hidden_states": x[0]}, ValueError,
     r"hidden_states has 1 dimensions"),
    (lambda x, w1, w2, tw, ids: {"topk_ids": ids[:3]}, ValueError,
     r"topk_ids has shape \[3, 2\]; expected \[6, 2\]"),
    (lambda x, w1, w2, tw, ids: {"topk_ids": ids.to(torch.int16)}, TypeError,
     r"topk_ids has dtype Short; expected int32 or int64"),
    (lambda x, w1, w2, tw, ids: {"topk_weights": tw.to(torch.float64)}, TypeError,
     r"topk_weights has dtype Double"),
    (lambda x, w1, w2, tw, ids: {"topk_ids": ids + 8}, ValueError,
     r"topk_ids holds expert ids in \[\d+, \d+\]; expected \[0, 7\]"),
    (lambda x, w1, w2, tw, ids: {"topk_ids": ids - 9}, ValueError, r"topk_ids holds expert ids"),
    (lambda x, w1, w2, tw, ids: {"w1": w1.transpose(1, 2).contiguous().transpose(1, 2)},
     ValueError, r"w1 is not contiguous \(strides"),
    (lambda x, w1, w2, tw, ids: {"hidden_states": _misaligned(x)}, ValueError,
     r"hidden_states's data starts 2 bytes past a 16-byte boundary \(storage offset 1\)"),
    (lambda x, w1, w2, tw, ids: {"activation": "swish"}, ValueError,
     r"activation: unknown activation 'swish'; expected one of silu"),
    (lambda x, w1, w2, tw, ids: {"activation": "relu2"}, ValueError,
     r"w1 has shape \[8, 64, 64\]; expected \[8, 32, 64\]"),
    (lambda x, w1, w2, tw, ids: {"config": 3}, TypeError, r"config: int seen"),
    (lambda x, w1, w2, tw, ids: {"config": "/nonexistent/tables"}, ValueError,
     r"config: '/nonexistent/tables' is not a directory"),
    (lambda x, w1, w2, tw, ids: {"config": {"gemm1": {"tile": {"block_m": "big"}}}}, ValueError,
     r"config"),
    (lambda x, w1, w2, tw, ids: {"config": {"gemm1": {"tile": {"block_m": 24}}}}, ValueError,
     r"block_m"),
], ids=["x-dtype", "w1-dtype", "w1-shape", "w2-experts", "x-rank", "ids-rows", "ids-dtype",
        "weights-dtype", "ids-high", "ids-negative", "w1-strides", "x-misaligned", "activation-name",
        "activation-gating", "config-type", "config-dir", "config-json", "config-refused"])
def test_bad_argument_names_itself(replace, error, message):
    with pytest.raises(error, match=message):
        _call(**replace(*_layer()))


def test_meta_tensors_get_the_fake_implementation():
    # Meta tensors (shape propagation, torch.compile's tracing) get an empty [M, K] result.
    x, w1, w2, tw, ids = (t.to("meta") for t in _layer())
    out = moetune.fused_moe(x, w1, w2, tw, ids)
    assert out.device.type == "meta" and out.shape == x.shape and out.dtype == x.dtype


def test_torch_version_mismatch_is_an_import_error(monkeypatch):
    monkeypatch.setattr(_ops._build_info, "torch_version", "1.0.0")
    with pytest.raises(ImportError, match=r"built against torch 1\.0\.0 .* but torch "):
        _ops._check_torch()
    monkeypatch.setattr(_ops._build_info, "torch_version", torch.__version__)
    monkeypatch.setattr(_ops._build_info, "torch_cuda", "9.9")
    with pytest.raises(ImportError, match=r"CUDA 9\.9"):
        _ops._check_torch()


@pytest.mark.parametrize("biases,error,message", [
    (lambda b1, b2: dict(w1_bias=b1), ValueError,
     r"w1_bias is given but w2_bias is None; pass both biases or neither"),
    (lambda b1, b2: dict(w1_bias=b1[:, :10], w2_bias=b2), ValueError,
     r"w1_bias has shape \[8, 10\]; expected \[8, 64\]"),
    (lambda b1, b2: dict(w1_bias=b1, w2_bias=b2[:, :32]), ValueError,
     r"w2_bias has shape \[8, 32\]; expected \[8, 64\]"),
    (lambda b1, b2: dict(w1_bias=b1.float(), w2_bias=b2), TypeError,
     r"w1_bias has dtype Float; expected BFloat16 \(the weights' dtype\)"),
    (lambda b1, b2: dict(w1_bias=b1, w2_bias=b2[0]), ValueError, r"w2_bias has 1 dimensions"),
])
def test_bad_biases_name_the_argument(biases, error, message):
    from moe_reference import make_biases
    x, w1, w2, tw, ids = _layer()
    b1, b2 = make_biases(8, w1.shape[1], 64, seed=43)
    with pytest.raises(error, match=message):
        moetune.fused_moe(x, w1, w2, tw, ids, **biases(b1, b2))
