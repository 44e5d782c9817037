"""The tuner's Python side: workers of kernel families that live in Python (the triton family:
vLLM's own Triton fused-MoE kernel). `moetune tune` starts them through `moetune worker`; they
speak the line protocol of src/tuner/protocol.hpp. Nothing here is imported by `import moetune`.
"""
