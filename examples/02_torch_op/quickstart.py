# Why: the shortest path from `pip install .` to a checked MoE layer from PyTorch. It runs the
# fused layer on the GPU when one is present (bf16, sm_90a), else on the CPU backend, and checks it
# against a float64 computation of the same layer. The README's Python quick start is this file.
import torch, moetune

dev = "cuda" if torch.cuda.is_available() else "cpu"
M, K, I, E, top_k = 64, 1024, 512, 16, 4
x = torch.randn(M, K, device=dev, dtype=torch.bfloat16)
w1 = torch.randn(E, 2 * I, K, device=dev, dtype=torch.bfloat16) / K**0.5  # [gate; up] rows
w2 = torch.randn(E, K, I, device=dev, dtype=torch.bfloat16) / I**0.5
topk_weights, topk_ids = torch.topk(torch.softmax(torch.randn(M, E, device=dev), -1), top_k)
out = moetune.fused_moe(x, w1, w2, topk_weights, topk_ids)  # [M, K], vLLM's fused_experts layouts

h = torch.einsum("mjnk,mk->mjn", w1[topk_ids].double(), x.double())  # the same layer in fp64
ref = torch.einsum("mjki,mji->mk", w2[topk_ids].double(),
                   torch.nn.functional.silu(h[..., :I]) * h[..., I:] * topk_weights[..., None].double())
err = ((out.double() - ref).norm() / ref.norm()).item()
print(f"{dev}: rel L2 error {err:.2e};", moetune.explain(x, w1, w2, topk_weights, topk_ids)["explain"])
assert err < 1e-2, "moetune.fused_moe disagrees with the fp64 layer"
