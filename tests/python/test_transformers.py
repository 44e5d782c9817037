"""The transformers drop-in: stock Qwen3-MoE, Mixtral and gpt-oss models built from small configs
with random weights (gpt-oss's expert biases made non-zero, large enough for its clamps to act), against the same models with moetune serving their experts (through
transformers' own ExpertsInterface). Same greedy tokens for 32 new tokens; logits within the
bf16 band."""

import pytest
import torch

transformers = pytest.importorskip("transformers")

from moe_reference import check_close  # noqa: E402
import moetune  # noqa: E402
from moetune.integrations import transformers as mt_hf  # noqa: E402

NEW_TOKENS = 32


def _qwen3_moe():
    return transformers.Qwen3MoeConfig(
        vocab_size=256, hidden_size=128, intermediate_size=256, moe_intermediate_size=64,
        num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2, head_dim=32,
        num_experts=16, num_experts_per_tok=4, decoder_sparse_step=1, norm_topk_prob=True,
        max_position_embeddings=256)


def _mixtral():
    return transformers.MixtralConfig(
        vocab_size=256, hidden_size=128, intermediate_size=96, num_hidden_layers=2,
        num_attention_heads=4, num_key_value_heads=2, num_local_experts=8, num_experts_per_tok=2,
        max_position_embeddings=256)


def _gpt_oss():
    return transformers.GptOssConfig(
        vocab_size=256, hidden_size=128, intermediate_size=64, num_hidden_layers=2,
        num_attention_heads=4, num_key_value_heads=2, head_dim=32, num_local_experts=8,
        num_experts_per_tok=2, max_position_embeddings=256, sliding_window=16,
        attn_implementation="eager")


def _build(config, device, seed):
    torch.manual_seed(seed)
    model = transformers.AutoModelForCausalLM.from_config(config, dtype=torch.bfloat16)
    with torch.no_grad():
        for name, p in model.named_parameters():
            # from_config leaves biases at zero: give the bias paths work.
            if name.endswith("experts.gate_up_proj_bias"):
                p.copy_(torch.randn_like(p) * 3)
            elif name.endswith("experts.down_proj_bias"):
                p.copy_(torch.randn_like(p) * 0.1)
    return model.to(device).eval()


def _greedy(model, prompt):
    """32 greedy tokens, the prompt's logits, and every experts module with its inputs and output
    on the prompt."""
    experts = {}
    hooks = [m.register_forward_hook(
        lambda mod, args, out, name=name: experts.setdefault(name, (mod, args, out)) and None)
        for name, m in model.named_modules() if hasattr(m, "is_concatenated")]
    with torch.no_grad():
        logits = model(prompt).logits.float()
        for h in hooks:
            h.remove()
        out = model.generate(prompt, max_new_tokens=NEW_TOKENS, do_sample=False,
                             min_new_tokens=NEW_TOKENS, pad_token_id=0)
    return out[:, prompt.shape[1]:], logits, experts


def _forced(model, prompt, stock_tokens):
    """Fed the stock sequence: the logits before each of the stock model's generated tokens, per
    layer the experts its router chose at each position ([L, B, S, top_k], sorted) and the
    router's logits ([L, B, S, E])."""
    seq = torch.cat([prompt, stock_tokens], dim=1)
    chosen, router = [], []
    hooks = [m.register_forward_hook(
        lambda mod, args, out: chosen.append(args[1].reshape(*seq.shape, -1).sort(-1).values))
        for m in model.modules() if hasattr(m, "is_concatenated")]
    hooks += [m.register_forward_hook(lambda mod, args, out: router.append(
        (out[0] if isinstance(out, tuple) else out).float().reshape(*seq.shape, -1)))
        for name, m in model.named_modules() if name.endswith((".mlp.gate", ".mlp.router"))]
    with torch.no_grad():
        logits = model(seq).logits.float()
    for h in hooks:
        h.remove()
    assert len(router) == len(chosen), "one router per experts module"
    return logits[:, prompt.shape[1] - 1:-1], torch.stack(chosen), torch.stack(router)


def _check_flips_are_router_near_ties(routes, stock_routes, router, stock_router):
    """Where a router chose other experts than the stock one, the stock router's margin between
    its k-th and (k+1)-th expert is within twice the two routers' logit difference there."""
    top_k = routes.shape[-1]
    for layer, b, s in (routes != stock_routes).any(-1).nonzero().tolist():
        ranked = stock_router[layer, b, s].sort(descending=True).values
        margin = (ranked[top_k - 1] - ranked[top_k]).item()
        moved = (router[layer, b, s] - stock_router[layer, b, s]).abs().max().item()
        assert margin <= 2 * moved + 1e-6, (
            f"layer {layer} token ({b}, {s}): experts changed where the stock router's margin "
            f"{margin:.4g} exceeds twice its logits' change {moved:.4g}")


def _margins(logits):
    """Top-1 minus top-2 logit at each position."""
    top2 = logits.topk(2, dim=-1).values
    return top2[..., 0] - top2[..., 1]


def _first_divergences(tokens, stock_tokens):
    """(row, position) of each row's first token that differs from the stock one."""
    out = []
    for row in range(tokens.shape[0]):
        diff = (tokens[row] != stock_tokens[row]).nonzero()
        if diff.numel():
            out.append((row, int(diff[0])))
    return out


def _compare(make_config, device, seed):
    model = _build(make_config(), device, seed)
    prompt = torch.randint(1, 256, (2, 12), generator=torch.Generator().manual_seed(seed))
    prompt = prompt.to(device)
    model.set_experts_implementation("eager")
    stock_tokens, stock_logits, stock_experts = _greedy(model, prompt)
    stock_forced, stock_routes, stock_router = _forced(model, prompt, stock_tokens)
    mt_hf.enable(model)
    assert model.config._experts_implementation == "moetune"
    tokens, logits, experts = _greedy(model, prompt)
    # Both fed the stock sequence: how far apart the two are before each generated token, and
    # where a router chose other experts (its input differs by bf16 rounding from the layers
    # before; a router near-tie then flips, and that token's layer output with it).
    forced, routes, router = _forced(model, prompt, stock_tokens)
    _check_flips_are_router_near_ties(routes, stock_routes, router, stock_router)
    forced_diff = (forced - stock_forced).abs().amax(-1)
    # [B, S]: at or after a token whose experts changed in any layer
    flips = (routes != stock_routes).any(-1).any(0).cummax(-1).values
    flipped = flips[:, prompt.shape[1] - 1:-1]
    margins = _margins(stock_forced)
    # Each experts module on the stock module's own inputs against the stock output.
    assert stock_experts.keys() == experts.keys() and experts
    with torch.no_grad():
        for name, (module, args, want) in stock_experts.items():
            check_close(module(*args), want, torch.bfloat16, name)
    # bf16 band: every layer rounds to bf16; the prompt's logits may differ by a few bf16 ulps of
    # their scale, never by more than 2% of the logits' spread, except at and after a token whose
    # experts a router chose otherwise (a near-tie its bf16-rounded input decided, checked above).
    kept = ~flips[:, :prompt.shape[1]]
    assert kept.any(), "every prompt token follows a router flip: nothing left to compare"
    band = 0.02 * (stock_logits.max() - stock_logits.min()).item()
    worst = (logits - stock_logits).abs()[kept].max().item()
    assert worst <= band, f"logits differ by {worst:.4g} > {band:.4g}"
    # Greedy tokens: the same 32, except that a sequence may part from the stock one at a token
    # the stock model chose by a near-tie: a top-2 margin within twice the logit difference of the
    # two implementations at that position, both fed the stock sequence, where that difference is
    # in the bf16 band or a router's choice flipped at or before it (bf16 rounding decides such
    # ties, not the kernel; each experts module is checked on equal inputs above).
    for row, pos in _first_divergences(tokens, stock_tokens):
        margin, diff = margins[row, pos].item(), forced_diff[row, pos].item()
        assert margin <= 2 * diff and (diff <= band or flipped[row, pos]), (
            f"row {row} parts from the stock tokens at {pos} where the stock margin is "
            f"{margin:.4g} and the logits differ by {diff:.4g} (band {band:.4g}):\n{tokens}\n"
            f"{stock_tokens}")
    return _first_divergences(tokens, stock_tokens)


MODELS = dict(argvalues=[_qwen3_moe, _mixtral, _gpt_oss], ids=["qwen3_moe", "mixtral", "gpt_oss"])


@pytest.mark.parametrize("make_config", **MODELS)
def test_cpu_swapped_model_generates_the_stock_tokens(make_config):
    # Exact on the CI machine's CPU; another CPU's bf16 matmuls may round a near-tie the other way.
    parted = _compare(make_config, "cpu", seed=1)
    print(f"CPU {make_config.__name__}: sequences parting from the stock at a near-tie: {parted}")


@pytest.mark.gpu
@pytest.mark.parametrize("make_config", **MODELS)
def test_gpu_swapped_model_generates_the_stock_tokens(make_config):
    parted = _compare(make_config, "cuda", seed=2)
    print(f"GPU {make_config.__name__}: sequences parting from the stock at a near-tie: {parted}")


def test_gpt_oss_biases_reach_the_kernels():
    # The negative twin of the bias path: the swapped experts with their biases zeroed must differ.
    model = _build(_gpt_oss(), "cpu", seed=3)
    experts = model.model.layers[0].mlp.experts
    x = torch.randn(5, 128, dtype=torch.bfloat16)
    ids = torch.tensor([[0, 1], [2, 3], [4, 5], [6, 7], [1, 6]])
    w = torch.full((5, 2), 0.5, dtype=torch.bfloat16)
    model.set_experts_implementation("eager")
    with torch.no_grad():
        stock = experts(x, ids, w)
        mt_hf.enable(model)
        ours = experts(x, ids, w)
        check_close(ours, stock, torch.bfloat16, "gpt-oss experts")
        experts.gate_up_proj_bias.zero_()  # a changed parameter: the copy is remade
        assert (experts(x, ids, w) - stock).abs().max() > 0.1


def test_refuses_experts_it_cannot_serve():
    model = _build(_gpt_oss(), "cpu", seed=4)
    model.model.layers[1].mlp.experts.limit = 5.0
    with pytest.raises(ValueError, match=r"layers.1.mlp.experts: GptOssExperts.limit = 5.0"):
        mt_hf.enable(model)
    assert model.config._experts_implementation != "moetune"


def _fp8_experts(seed, **kw):
    """transformers' FP8Experts (finegrained_fp8, wrapped for its FP8ExpertsInterface as its
    quantiser wraps it) of a small Qwen3-MoE config, holding tests' fp8 layer: e4m3 weights with
    float32 128x128 block scales whose ranges differ by orders of magnitude; and that layer."""
    fp8 = pytest.importorskip("transformers.integrations.finegrained_fp8")
    from fp8_reference import make_fp8_layer
    from transformers.integrations.moe import use_experts_implementation

    config = transformers.Qwen3MoeConfig(hidden_size=256, moe_intermediate_size=128,
                                         num_experts=8, num_experts_per_tok=2, hidden_act="silu")
    cls = use_experts_implementation(experts_class=fp8.FP8Experts,
                                     experts_interface=fp8.ALL_FP8_EXPERTS_FUNCTIONS)
    experts = cls(config, block_size=[128, 128], **kw)
    layer = make_fp8_layer(16, 256, 128, 8, 2, block=True, seed=seed, device="cpu")
    with torch.no_grad():
        experts.gate_up_proj.copy_(layer["w1"])
        experts.down_proj.copy_(layer["w2"])
        experts.gate_up_proj_scale_inv.copy_(layer["w1_scale"])
        experts.down_proj_scale_inv.copy_(layer["w2_scale"])
    return experts, layer


@pytest.mark.parametrize("device", ["cpu", pytest.param("cuda", marks=pytest.mark.gpu)])
def test_fp8_experts_of_a_finegrained_fp8_checkpoint_run_on_moetune(device):
    from fp8_reference import fp8_reference
    from moe_reference import rel_l2

    experts, layer = _fp8_experts(seed=43)
    experts.to(device)
    layer = {k: v.to(device) if torch.is_tensor(v) else v for k, v in layer.items()}
    mt_hf.register()
    experts.config._experts_implementation = "moetune"
    with torch.no_grad():
        out = experts(layer["x"], layer["topk_ids"], layer["topk_weights"])
    want = fp8_reference(layer, block=True)
    assert out.device.type == device
    assert rel_l2(out, want) <= 1e-2, rel_l2(out, want)
    direct = moetune.fused_moe(layer["x"], layer["w1"], layer["w2"], layer["topk_weights"],
                               layer["topk_ids"], w1_scale=layer["w1_scale"],
                               w2_scale=layer["w2_scale"], block_shape=[128, 128])
    assert torch.equal(out, direct), "the drop-in is not the op on the module's own parameters"


def test_refuses_fp8_experts_it_cannot_serve():
    class Holder(torch.nn.Module):  # enable refuses before it touches the model's config
        def __init__(self, experts):
            super().__init__()
            self.experts = experts

    static, _ = _fp8_experts(seed=47, activation_scheme="static")
    with pytest.raises(ValueError, match=r"experts: FP8Experts.activation_scheme = 'static'"):
        mt_hf.enable(Holder(static))
    ue8m0, _ = _fp8_experts(seed=53)
    ue8m0.down_proj_scale_inv = torch.nn.Parameter(ue8m0.down_proj_scale_inv.to(torch.float64))
    with pytest.raises(ValueError, match=r"FP8Experts.down_proj_scale_inv is torch.float64"):
        mt_hf.enable(Holder(ue8m0))
