"""Engines' own kernels, run outside the engines: vllm_triton (vLLM's Triton fused-MoE kernel,
its launch and its config rules) with the stand-ins of vllm_shims. Their source is read from the
user's vLLM or from .engines/ (scripts/fetch_engine_kernels.py); nothing of it is in this package.
"""
