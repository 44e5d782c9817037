"""The eager entry point (python/csrc/eager_entry.cpp): one CPython call into the op's body for
plain eager calls, the same bits and errors as the op, and None (so the op is dispatched) wherever
something between the caller and the kernel must see the op."""

import pytest
import torch
from torch.utils._python_dispatch import TorchDispatchMode

import moetune
from moetune import _ops
from moe_reference import make_layer

fast = _ops._fused_moe_fast
pytestmark = pytest.mark.skipif(fast is None, reason="the eager entry point was not built for this "
                                "Python (no Python headers at build time)")


class Recorder(TorchDispatchMode):
    def __init__(self):
        super().__init__()
        self.ops = []

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        self.ops.append(str(func))
        return func(*args, **(kwargs or {}))


def test_plain_tensors_take_the_fast_path_with_the_ops_bits():
    x, w1, w2, tw, ids = make_layer(9, 64, 32, 8, 2, seed=51)
    out = fast(x, w1, w2, tw, ids, "silu", "")
    assert out is not None
    assert torch.equal(out, torch.ops.moetune.fused_moe(x, w1, w2, tw, ids, "silu", ""))
    assert torch.equal(moetune.fused_moe(x, w1, w2, tw, ids), out)


def test_errors_are_the_ops_errors():
    x, w1, w2, tw, ids = make_layer(4, 64, 32, 8, 2, seed=53)
    with pytest.raises(ValueError, match=r"moetune.fused_moe: w2 has shape \[4, 64, 32\]"):
        fast(x, w1, w2[:4], tw, ids, "silu", "")
    with pytest.raises(TypeError, match="hidden_states has dtype Half"):
        fast(x.half(), w1, w2, tw, ids, "silu", "")


def test_declines_where_the_op_must_be_dispatched():
    x, w1, w2, tw, ids = make_layer(4, 64, 32, 8, 2, seed=57)
    meta = [t.to("meta") for t in (x, w1, w2, tw, ids)]
    assert fast(*meta, "silu", "") is None                      # not a CPU or CUDA tensor
    w1g = w1.clone().requires_grad_()
    assert fast(x, w1g, w2, tw, ids, "silu", "") is None        # autograd would record
    with torch.no_grad():
        assert fast(x, w1g, w2, tw, ids, "silu", "") is not None
    assert fast(x, w1, w2, tw, ids, 3, "") is None              # not a str: the op says why
    with Recorder() as rec:
        assert fast(x, w1, w2, tw, ids, "silu", "") is None     # a dispatch mode is active
        out = moetune.fused_moe(x, w1, w2, tw, ids)             # ... and sees the op
    assert "moetune.fused_moe.default" in rec.ops
    assert torch.equal(out, moetune.fused_moe(x, w1, w2, tw, ids))


def test_fake_tensors_get_the_fake_implementation():
    from torch._subclasses.fake_tensor import FakeTensorMode

    x, w1, w2, tw, ids = make_layer(4, 64, 32, 8, 2, seed=59)
    with FakeTensorMode() as mode:
        fx, fw1, fw2, ftw, fids = (mode.from_tensor(t) for t in (x, w1, w2, tw, ids))
        out = moetune.fused_moe(fx, fw1, fw2, ftw, fids)
    assert out.shape == x.shape and type(out).__name__ == "FakeTensor"
