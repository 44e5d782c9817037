// The torch ops of the Python package, registered with TORCH_LIBRARY so a call from Python costs
// one dispatcher hop (no Python in the op itself):
//   moetune::fused_moe  (out of place)   moetune::fused_moe_ (hidden_states overwritten)
//   moetune::fused_moe_fp8 (fp8 weights: block-scaled or per-tensor, as vLLM passes them)
//   moetune::explain    (which config serves this call, and the rule that chose it)
//   moetune::explain_fp8 (the same for fp8 weights, with fused_moe_fp8's arguments)
// Layouts are vLLM's fused_experts' (op_args.hpp). A CUDA call runs on torch's current stream,
// takes its workspace from torch's caching allocator and never synchronises the host, so it is safe
// in CUDA graph capture once each M has run eagerly; python/moetune/_ops.py registers the fake
// (meta) implementations torch.compile traces with. Tested by tests/python/.
#include <ATen/ATen.h>
#include <c10/util/Exception.h>
#include <torch/library.h>

#include <chrono>

#include <ATen/EmptyTensor.h>
#if defined(MOETUNE_TORCH_HAS_CUDA)
#include <ATen/cuda/EmptyTensor.h>
#include <c10/cuda/CUDACachingAllocator.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>
#endif

#include "op_args.hpp"
#include "runner_registry.hpp"
#include "torch_ops.hpp"

namespace moetune::python {
namespace {

/// Scratch for one call from torch's caching allocator: stream-ordered (freed blocks are reused
/// only by work queued after this call on the same stream), and inside a CUDA graph capture it
/// comes from the graph's private pool. Raw blocks, not tensors: no TensorImpl per call.
struct TorchWorkspace {
  void* stream = nullptr;
  void* ptr = nullptr;
  static void* alloc(void* ctx, size_t bytes) {
    auto* w = static_cast<TorchWorkspace*>(ctx);
#if defined(MOETUNE_TORCH_HAS_CUDA)
    w->ptr = c10::cuda::CUDACachingAllocator::raw_alloc_with_stream(
        bytes, static_cast<cudaStream_t>(w->stream));
#endif
    return w->ptr;
  }
  ~TorchWorkspace() {
#if defined(MOETUNE_TORCH_HAS_CUDA)
    if (ptr != nullptr) c10::cuda::CUDACachingAllocator::raw_delete(ptr);
#endif
  }
};

/// An uninitialised tensor of `like`'s shape, dtype and device, made without a dispatcher round
/// trip (at::empty's costs about 1 us of host time more per call).
at::Tensor new_output(at::Tensor const& like) {
#if defined(MOETUNE_TORCH_HAS_CUDA)
  if (like.is_cuda()) {
    return at::detail::empty_cuda(like.sizes(), like.scalar_type(), like.device(), std::nullopt);
  }
#endif
  return at::detail::empty_cpu(like.sizes(), like.scalar_type());
}

RunnerKey key_of(core::MoeProblem const& p, at::Device dev, std::string const& config,
                 bool batch_invariant) {
  return {.device_index = dev.is_cuda() ? dev.index() : -1,
          .hidden_size = p.hidden_size,
          .intermediate_size = p.intermediate_size,
          .num_experts = p.num_experts,
          .top_k = p.top_k,
          .activation = p.activation,
          .dtype = p.dtype,
          .has_bias = p.has_bias,
          .quant = p.quant,
          .config = config,
          .batch_invariant = batch_invariant};
}

void raise(char const* op, core::Error const& e) {
  bool const user = e.code == core::ErrorCode::kInvalidArgument ||
                    e.code == core::ErrorCode::kUnsupported || e.code == core::ErrorCode::kMismatch;
  TORCH_CHECK_VALUE(!user, op, ": ", e.to_string());
  TORCH_CHECK(false, op, ": ", e.to_string());
}

/// The call's device made current for a scope, and torch's current stream on it (nullptr on the
/// CPU). A build without CUDA refuses CUDA tensors here.
class DeviceScope {
 public:
  DeviceScope(at::Device dev, char const* op) {
#if defined(MOETUNE_TORCH_HAS_CUDA)
    if (dev.is_cuda()) {
      guard_.emplace(dev);
      stream_ = c10::cuda::getCurrentCUDAStream(dev.index()).stream();
    }
#else
    TORCH_CHECK_VALUE(!dev.is_cuda(), op, ": hidden_states is on ", dev,
                      " but this build of moetune has no CUDA backend (built without nvcc)");
#endif
  }
  void* stream() const { return stream_; }

 private:
#if defined(MOETUNE_TORCH_HAS_CUDA)
  std::optional<c10::cuda::CUDAGuard> guard_;
#endif
  void* stream_ = nullptr;
};

/// One call's arguments: the tensors' pointers (ids as int32, weights as fp32), M and the scratch.
RunArgs run_args(void* stream, MoeTensors const& t, at::Tensor const& ids,
                 at::Tensor const& weights, at::Tensor& out, int64_t m, WorkspaceSource workspace) {
  return {.stream = stream,
          .x = t.hidden_states.data_ptr(),
          .topk_ids = ids.data_ptr<int32_t>(),
          .topk_weights = weights.data_ptr<float>(),
          .w1 = t.w1.data_ptr(),
          .w2 = t.w2.data_ptr(),
          .out = out.data_ptr(),
          .m = m,
          .b1 = t.w1_bias ? t.w1_bias->data_ptr() : nullptr,
          .b2 = t.w2_bias ? t.w2_bias->data_ptr() : nullptr,
          .w1_scale = t.w1_scale ? t.w1_scale->data_ptr<float>() : nullptr,
          .w2_scale = t.w2_scale ? t.w2_scale->data_ptr<float>() : nullptr,
          .a1_scale = t.a1_scale ? t.a1_scale->data_ptr<float>() : nullptr,
          .a2_scale = t.a2_scale ? t.a2_scale->data_ptr<float>() : nullptr,
          .workspace = workspace};
}

/// Runs the layer into `out` ([M, K], hidden_states' dtype and device); `batch_invariant` turns
/// the lever of that name on for the call's runner.
void run_into(char const* op, MoeTensors const& t, std::string const& activation,
              std::string const& config, bool batch_invariant, at::Tensor& out) {
  core::MoeProblem const p = check_moe_tensors(t, activation, op);
  at::Device const dev = t.hidden_states.device();
  DeviceScope const scope(dev, op);
  void* const stream = scope.stream();
  ServedRunner& served = runner_for(key_of(p, dev, config, batch_invariant), op);
  at::Tensor const ids = ids_as_int32(t.topk_ids);
  at::Tensor const weights = weights_as_fp32(t.topk_weights);
  TorchWorkspace ws{.stream = stream, .ptr = nullptr};
  RunArgs const args = run_args(stream, t, ids, weights, out, p.num_tokens,
                                {.alloc = &TorchWorkspace::alloc, .ctx = &ws});
  core::Status const s = served.runner->run(args, served.knobs);
  if (!s.ok()) raise(op, s.error());
}

/// In place: the layer is computed into a fresh buffer, then copied over hidden_states (the
/// kernels read rows of hidden_states until their last GEMM, so writing them sooner is unsafe).
void fused_moe_(at::Tensor& hidden_states, at::Tensor const& w1, at::Tensor const& w2,
                at::Tensor const& topk_weights, at::Tensor const& topk_ids,
                std::string const& activation, std::string const& config,
                std::optional<at::Tensor> const& w1_bias, std::optional<at::Tensor> const& w2_bias,
                bool batch_invariant) {
  at::Tensor out = new_output(hidden_states);
  run_into("moetune.fused_moe_",
           {hidden_states, w1, w2, topk_weights, topk_ids, bias_arg(w1_bias), bias_arg(w2_bias)},
           activation, config, batch_invariant, out);
  hidden_states.copy_(out);
}

/// The config the runner for these tensors serves at their M and the rule that chose it, as
/// "key=value" lines (moetune.explain, moetune.explain_fp8).
std::string explain_tensors(char const* op, MoeTensors const& t, std::string const& activation,
                            std::string const& config, bool batch_invariant) {
  core::MoeProblem const p = check_moe_tensors(t, activation, op);
  at::Device const dev = t.hidden_states.device();
  DeviceScope const scope(dev, op);
  ServedRunner& served = runner_for(key_of(p, dev, config, batch_invariant), op);
  auto c = served.runner->choose(p.num_tokens, served.knobs);
  if (!c.ok()) raise(op, c.error());
  std::string const table = served.runner->table_path();
  // One "key=value" line per field (no value holds a newline); moetune.explain makes a dict.
  return std::string("rule=") + to_string(c->rule) + "\nconfig=" + core::short_string(c->config) +
         "\ntable=" + (table.empty() ? "none" : table) +
         "\nfast_paths=" + on_names(served.runner->levers().fast_paths) + "\nexplain=" + c->explain;
}

std::string explain(at::Tensor const& hidden_states, at::Tensor const& w1, at::Tensor const& w2,
                    at::Tensor const& topk_weights, at::Tensor const& topk_ids,
                    std::string const& activation, std::string const& config,
                    std::optional<at::Tensor> const& w1_bias,
                    std::optional<at::Tensor> const& w2_bias, bool batch_invariant) {
  return explain_tensors(
      "moetune.explain",
      {hidden_states, w1, w2, topk_weights, topk_ids, bias_arg(w1_bias), bias_arg(w2_bias)},
      activation, config, batch_invariant);
}

/// Host microseconds per call of `body` over `iters` calls.
template <class Body>
double us_per_call(int64_t iters, Body&& body) {
  using clock = std::chrono::steady_clock;
  auto const t0 = clock::now();
  for (int64_t i = 0; i < iters; ++i) body();
  return std::chrono::duration<double, std::micro>(clock::now() - t0).count() / iters;
}

/// MoeRunner::run alone with one workspace (allocated by the first call): the bare launch of the
/// layer's kernels.
double bare_runner_us(MoeTensors const& t, std::string const& activation, std::string const& config,
                      int64_t iters, char const* op) {
  core::MoeProblem const p = check_moe_tensors(t, activation, op);
  at::Device const dev = t.hidden_states.device();
  DeviceScope const scope(dev, op);
  void* const stream = scope.stream();
  ServedRunner& served = runner_for(key_of(p, dev, config, false), op);
  at::Tensor const ids = ids_as_int32(t.topk_ids);
  at::Tensor const weights = weights_as_fp32(t.topk_weights);
  at::Tensor out = at::empty(t.hidden_states.sizes(), t.hidden_states.options());
  struct Fixed {
    at::TensorOptions options;
    at::Tensor held;
    static void* alloc(void* ctx, size_t bytes) {
      auto* f = static_cast<Fixed*>(ctx);
      if (!f->held.defined() || f->held.numel() < static_cast<int64_t>(bytes)) {
        f->held = at::empty({static_cast<int64_t>(bytes)}, f->options.dtype(at::kByte));
      }
      return f->held.data_ptr();
    }
  } fixed{.options = t.hidden_states.options(), .held = {}};
  RunArgs const args =
      run_args(stream, t, ids, weights, out, p.num_tokens, {.alloc = &Fixed::alloc, .ctx = &fixed});
  return us_per_call(iters, [&] {
    core::Status const s = served.runner->run(args, served.knobs);
    if (!s.ok()) raise(op, s.error());
  });
}

/// Bench only (bench/torch_ops_bench.py): host microseconds per call over `iters` back-to-back
/// calls, none waiting for the GPU. mode "runner": the bare launch (bare_runner_us); "op": the
/// op's whole C++ path; "checks": its argument checks alone; "alloc": its output tensor and a 1 MiB
/// workspace from the caching allocator.
double host_us_per_call(at::Tensor const& hidden_states, at::Tensor const& w1, at::Tensor const& w2,
                        at::Tensor const& topk_weights, at::Tensor const& topk_ids,
                        std::string const& activation, std::string const& config, int64_t iters,
                        std::string const& mode) {
  char const* op = "moetune._host_us_per_call";
  TORCH_CHECK_VALUE(iters >= 1, op, ": iters = ", iters, "; expected >= 1");
  MoeTensors const t{hidden_states, w1, w2, topk_weights, topk_ids};
  at::TensorOptions const options = hidden_states.options();
  if (mode == "runner") return bare_runner_us(t, activation, config, iters, op);
  if (mode == "op") {
    return us_per_call(iters, [&] {
      at::Tensor out = new_output(hidden_states);
      run_into(op, t, activation, config, false, out);
    });
  }
  if (mode == "checks") {
    return us_per_call(iters, [&] { (void)check_moe_tensors(t, activation, op); });
  }
  TORCH_CHECK_VALUE(mode == "alloc", op, ": mode '", mode,
                    "'; expected runner, op, checks or alloc");
  return us_per_call(iters, [&] {
    at::Tensor out = new_output(hidden_states);
    TorchWorkspace ws{.stream = nullptr, .ptr = nullptr};
    if (hidden_states.is_cuda()) TorchWorkspace::alloc(&ws, size_t{1} << 20);
  });
}

void set_tables_root_op(std::string const& root) { set_tables_root(root); }

/// Bench only: an op with fused_moe's arguments that does nothing, the floor of any such op's
/// call from Python (argument parsing and one dispatch).
void noop(at::Tensor const&, at::Tensor const&, at::Tensor const&, at::Tensor const&,
          at::Tensor const&, std::string const&, std::string const&) {}

std::string build_info() {
  return std::string("torch=") + MOETUNE_TORCH_VERSION + " cuda=" + MOETUNE_TORCH_CUDA;
}

}  // namespace

at::Tensor fused_moe_out_of_place(at::Tensor const& hidden_states, at::Tensor const& w1,
                                  at::Tensor const& w2, at::Tensor const& topk_weights,
                                  at::Tensor const& topk_ids, std::string const& activation,
                                  std::string const& config,
                                  std::optional<at::Tensor> const& w1_bias,
                                  std::optional<at::Tensor> const& w2_bias, bool batch_invariant) {
  at::Tensor out = new_output(hidden_states);
  run_into("moetune.fused_moe",
           {hidden_states, w1, w2, topk_weights, topk_ids, bias_arg(w1_bias), bias_arg(w2_bias)},
           activation, config, batch_invariant, out);
  return out;
}

/// t's fp8 fields from an fp8 op's arguments (quant "fp8_block" or "fp8_tensor", else a
/// ValueError naming it); the scales must outlive t.
void with_fp8_scales(char const* op, MoeTensors& t, at::Tensor const& w1_scale,
                     at::Tensor const& w2_scale, std::optional<at::Tensor> const& a1_scale,
                     std::optional<at::Tensor> const& a2_scale, std::string const& quant) {
  auto q = core::parse_quant(quant);
  TORCH_CHECK_VALUE(q.ok() && *q != core::Quant::kNone, op, ": quant '", quant,
                    "'; expected fp8_block or fp8_tensor");
  t.quant = *q;
  t.w1_scale = &w1_scale;
  t.w2_scale = &w2_scale;
  t.a1_scale = bias_arg(a1_scale);
  t.a2_scale = bias_arg(a2_scale);
}

at::Tensor fused_moe_fp8(at::Tensor const& hidden_states, at::Tensor const& w1,
                         at::Tensor const& w2, at::Tensor const& topk_weights,
                         at::Tensor const& topk_ids, at::Tensor const& w1_scale,
                         at::Tensor const& w2_scale, std::optional<at::Tensor> const& a1_scale,
                         std::optional<at::Tensor> const& a2_scale, std::string const& quant,
                         std::string const& activation, std::string const& config,
                         std::optional<at::Tensor> const& w1_bias,
                         std::optional<at::Tensor> const& w2_bias) {
  char const* op = "moetune.fused_moe_fp8";
  MoeTensors t{hidden_states, w1, w2, topk_weights, topk_ids, bias_arg(w1_bias), bias_arg(w2_bias)};
  with_fp8_scales(op, t, w1_scale, w2_scale, a1_scale, a2_scale, quant);
  at::Tensor out = new_output(hidden_states);
  run_into(op, t, activation, config, false, out);
  return out;
}

std::string explain_fp8(at::Tensor const& hidden_states, at::Tensor const& w1, at::Tensor const& w2,
                        at::Tensor const& topk_weights, at::Tensor const& topk_ids,
                        at::Tensor const& w1_scale, at::Tensor const& w2_scale,
                        std::optional<at::Tensor> const& a1_scale,
                        std::optional<at::Tensor> const& a2_scale, std::string const& quant,
                        std::string const& activation, std::string const& config,
                        std::optional<at::Tensor> const& w1_bias,
                        std::optional<at::Tensor> const& w2_bias) {
  char const* op = "moetune.explain_fp8";
  MoeTensors t{hidden_states, w1, w2, topk_weights, topk_ids, bias_arg(w1_bias), bias_arg(w2_bias)};
  with_fp8_scales(op, t, w1_scale, w2_scale, a1_scale, a2_scale, quant);
  return explain_tensors(op, t, activation, config, false);
}

}  // namespace moetune::python

TORCH_LIBRARY(moetune, m) {
  m.def(
      "fused_moe_fp8(Tensor hidden_states, Tensor w1, Tensor w2, Tensor topk_weights, "
      "Tensor topk_ids, Tensor w1_scale, Tensor w2_scale, Tensor? a1_scale, Tensor? a2_scale, "
      "str quant, str activation=\"silu\", str config=\"\", Tensor? w1_bias=None, "
      "Tensor? w2_bias=None) -> Tensor");
  m.def(
      "fused_moe(Tensor hidden_states, Tensor w1, Tensor w2, Tensor topk_weights, "
      "Tensor topk_ids, str activation=\"silu\", str config=\"\", Tensor? w1_bias=None, "
      "Tensor? w2_bias=None, bool batch_invariant=False) -> Tensor");
  m.def(
      "fused_moe_(Tensor(a!) hidden_states, Tensor w1, Tensor w2, Tensor topk_weights, "
      "Tensor topk_ids, str activation=\"silu\", str config=\"\", Tensor? w1_bias=None, "
      "Tensor? w2_bias=None, bool batch_invariant=False) -> ()");
  m.def(
      "explain(Tensor hidden_states, Tensor w1, Tensor w2, Tensor topk_weights, Tensor topk_ids, "
      "str activation=\"silu\", str config=\"\", Tensor? w1_bias=None, Tensor? w2_bias=None, "
      "bool batch_invariant=False) -> str",
      &moetune::python::explain);
  m.def(
      "explain_fp8(Tensor hidden_states, Tensor w1, Tensor w2, Tensor topk_weights, "
      "Tensor topk_ids, Tensor w1_scale, Tensor w2_scale, Tensor? a1_scale, Tensor? a2_scale, "
      "str quant, str activation=\"silu\", str config=\"\", Tensor? w1_bias=None, "
      "Tensor? w2_bias=None) -> str",
      &moetune::python::explain_fp8);
  m.def("set_tables_root(str root) -> ()", &moetune::python::set_tables_root_op);
  m.def("build_info() -> str", &moetune::python::build_info);
  m.def(
      "_noop(Tensor hidden_states, Tensor w1, Tensor w2, Tensor topk_weights, Tensor topk_ids, "
      "str activation, str config) -> ()");
  m.def(
      "_host_us_per_call(Tensor hidden_states, Tensor w1, Tensor w2, Tensor topk_weights, "
      "Tensor topk_ids, str activation, str config, int iters, str mode) -> float",
      &moetune::python::host_us_per_call);
}

TORCH_LIBRARY_IMPL(moetune, CPU, m) {
  m.impl("_noop", &moetune::python::noop);
  m.impl("fused_moe_fp8", &moetune::python::fused_moe_fp8);
  m.impl("fused_moe", &moetune::python::fused_moe_out_of_place);
  m.impl("fused_moe_", &moetune::python::fused_moe_);
}

#if defined(MOETUNE_TORCH_HAS_CUDA)
TORCH_LIBRARY_IMPL(moetune, CUDA, m) {
  m.impl("_noop", &moetune::python::noop);
  m.impl("fused_moe_fp8", &moetune::python::fused_moe_fp8);
  m.impl("fused_moe", &moetune::python::fused_moe_out_of_place);
  m.impl("fused_moe_", &moetune::python::fused_moe_);
}
#endif
