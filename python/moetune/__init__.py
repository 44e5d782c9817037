"""moetune: fused Mixture-of-Experts layers for PyTorch, on Hopper GPUs and the CPU.

    import moetune
    out = moetune.fused_moe(hidden_states, w1, w2, topk_weights, topk_ids)

`fused_moe` takes vLLM's `fused_experts` layouts and runs moetune's kernels for CUDA tensors
(sm_90a) and its CPU backend for CPU tensors. Drop-ins for model code and engines live in
`moetune.integrations` (transformers, vllm, sglang). See the README's Python quick start.
"""

from ._ops import build_info, explain, fused_moe, library_path

__all__ = ["build_info", "explain", "fused_moe", "library_path"]
__version__ = "0.1.0"
