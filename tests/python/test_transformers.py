"""The transformers drop-in: stock Qwen3-MoE and Mixtral models built from small configs with
random weights, against the same models with moetune serving their experts (through
transformers' own ExpertsInterface). Same greedy tokens for 32 new tokens; logits within the
bf16 band."""

import pytest
import torch

transformers = pytest.importorskip("transformers")

from moe_reference import check_close  # noqa: E402
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


def _build(config, device, seed):
    torch.manual_seed(seed)
    model = transformers.AutoModelForCausalLM.from_config(config, dtype=torch.bfloat16)
    return model.to(device).eval()


def _greedy(model, prompt):
    """32 greedy tokens, the prompt's logits, and every experts module's output on the prompt."""
    experts = {}
    hooks = [m.register_forward_hook(lambda mod, args, out, name=name: experts.setdefault(name, out))
             for name, m in model.named_modules() if hasattr(m, "is_concatenated")]
    with torch.no_grad():
        logits = model(prompt).logits.float()
        for h in hooks:
            h.remove()
        out = model.generate(prompt, max_new_tokens=NEW_TOKENS, do_sample=False,
                             min_new_tokens=NEW_TOKENS, pad_token_id=0)
    return out[:, prompt.shape[1]:], logits, experts


def _stock_margins(model, prompt, stock_tokens):
    """The stock model's top-1 minus top-2 logit before each of its generated tokens."""
    with torch.no_grad():
        logits = model(torch.cat([prompt, stock_tokens], dim=1)).logits.float()
    top2 = logits[:, prompt.shape[1] - 1:-1].topk(2, dim=-1).values
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
    margins = _stock_margins(model, prompt, stock_tokens)
    mt_hf.enable(model)
    assert model.config._experts_implementation == "moetune"
    tokens, logits, experts = _greedy(model, prompt)
    # Each experts module against the stock one (their inputs differ only by the layers before).
    assert stock_experts.keys() == experts.keys() and experts
    for name, want in stock_experts.items():
        check_close(experts[name], want, torch.bfloat16, name)
    # bf16 band: every layer rounds to bf16; the logits may differ by a few bf16 ulps of their
    # scale, never by more than 2% of the logits' spread.
    band = 0.02 * (stock_logits.max() - stock_logits.min()).item()
    worst = (logits - stock_logits).abs().max().item()
    assert worst <= band, f"logits differ by {worst:.4g} > {band:.4g}"
    # Greedy tokens: the same 32, except that a sequence may part from the stock one at a token
    # the stock model chose by a near-tie, a top-2 margin within twice the logit difference the
    # two implementations show on the prompt (bf16 rounding decides such a tie, not the kernel).
    for row, pos in _first_divergences(tokens, stock_tokens):
        margin = margins[row, pos].item()
        assert margin <= 2 * worst, (
            f"row {row} parts from the stock tokens at {pos} where the stock margin is "
            f"{margin:.4g} > 2 x {worst:.4g}:\n{tokens}\n{stock_tokens}")
    return _first_divergences(tokens, stock_tokens)


@pytest.mark.parametrize("make_config", [_qwen3_moe, _mixtral], ids=["qwen3_moe", "mixtral"])
def test_cpu_swapped_model_generates_the_stock_tokens(make_config):
    # Exact on the CI machine's CPU; another CPU's bf16 matmuls may round a near-tie the other way.
    parted = _compare(make_config, "cpu", seed=1)
    print(f"CPU {make_config.__name__}: sequences parting from the stock at a near-tie: {parted}")


@pytest.mark.gpu
@pytest.mark.parametrize("make_config", [_qwen3_moe, _mixtral], ids=["qwen3_moe", "mixtral"])
def test_gpu_swapped_model_generates_the_stock_tokens(make_config):
    parted = _compare(make_config, "cuda", seed=2)
    print(f"GPU {make_config.__name__}: sequences parting from the stock at a near-tie: {parted}")


def test_refuses_experts_it_cannot_serve():
    config = transformers.GptOssConfig(
        vocab_size=256, hidden_size=64, intermediate_size=64, num_hidden_layers=1,
        num_attention_heads=4, num_key_value_heads=2, head_dim=16, num_local_experts=4,
        num_experts_per_tok=2)
    model = transformers.AutoModelForCausalLM.from_config(config, dtype=torch.bfloat16)
    with pytest.raises(ValueError, match="GptOssExperts"):
        mt_hf.enable(model)
