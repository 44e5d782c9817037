"""Drop-ins for the code MoE models are served from: `transformers` (model code), `vllm` and
`sglang` (engines). Each module imports its framework only when used."""
