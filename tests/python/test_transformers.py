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


def _compare(make_config, device, seed):
    model = _build(make_config(), device, seed)
    prompt = torch.randint(1, 256, (2, 12), generator=torch.Generator().manual_seed(seed))
    prompt = prompt.to(device)
    model.set_experts_implementation("eager")
    stock_tokens, stock_logits, stock_experts = _greedy(model, prompt)
    mt_hf.enable(model)
    assert model.config._experts_implementation == "moetune"
    tokens, logits, experts = _greedy(model, prompt)
    # Each experts module against the stock one (their inputs differ only by the layers before).
    assert stock_experts.keys() == experts.keys() and experts
    for name, want in stock_experts.items():
        check_close(experts[name], want, torch.bfloat16, name)
    assert torch.equal(tokens, stock_tokens), f"greedy tokens differ:\n{tokens}\n{stock_tokens}"
    # bf16 band: every layer rounds to bf16; the logits may differ by a few bf16 ulps of their
    # scale, never by more than 2% of the logits' spread.
    band = 0.02 * (stock_logits.max() - stock_logits.min()).item()
    worst = (logits - stock_logits).abs().max().item()
    assert worst <= band, f"logits differ by {worst:.4g} > {band:.4g}"


@pytest.mark.parametrize("make_config", [_qwen3_moe, _mixtral], ids=["qwen3_moe", "mixtral"])
def test_cpu_swapped_model_generates_the_stock_tokens(make_config):
    _compare(make_config, "cpu", seed=1)


@pytest.mark.gpu
@pytest.mark.parametrize("make_config", [_qwen3_moe, _mixtral], ids=["qwen3_moe", "mixtral"])
def test_gpu_swapped_model_generates_the_stock_tokens(make_config):
    _compare(make_config, "cuda", seed=2)


def test_refuses_experts_it_cannot_serve():
    config = transformers.GptOssConfig(
        vocab_size=256, hidden_size=64, intermediate_size=64, num_hidden_layers=1,
        num_attention_heads=4, num_key_value_heads=2, head_dim=16, num_local_experts=4,
        num_experts_per_tok=2)
    model = transformers.AutoModelForCausalLM.from_config(config, dtype=torch.bfloat16)
    with pytest.raises(ValueError, match="GptOssExperts"):
        mt_hf.enable(model)
