// The runner registry of the torch ops (runner_registry.hpp).
#include "runner_registry.hpp"

#include <c10/util/Exception.h>
#include <unistd.h>

#include <filesystem>
#include <mutex>
#include <unordered_map>

#include "core/json_text.hpp"
#include "core/lever.hpp"
#include "core/lever_resolve.hpp"
#include "core/table.hpp"
#if defined(MOETUNE_HAVE_CUDA)
#include "kernels/cuda/cuda_backend.hpp"
#endif

extern char** environ;

namespace moetune::python {
namespace {

struct KeyHash {
  size_t operator()(RunnerKey const& k) const {
    size_t h = std::hash<std::string>{}(k.config);
    for (int64_t v : {int64_t{k.device_index}, k.hidden_size, k.intermediate_size, k.num_experts,
                      k.top_k, int64_t(k.activation), int64_t(k.dtype), int64_t(k.has_bias),
                      int64_t(k.quant), int64_t(k.batch_invariant)}) {
      h = h * 1000003u ^ std::hash<int64_t>{}(v);
    }
    return h;
  }
};

std::mutex g_mu;
std::string g_tables_root;
std::unordered_map<RunnerKey, ServedRunner, KeyHash> g_runners;

/// The shipped tables of this device, when the package has any: <root>/<vLLM device name>/.
std::string default_tables_dir(RunnerKey const& key) {
  if (g_tables_root.empty()) return "";
  std::string dir = "cpu";
#if defined(MOETUNE_HAVE_CUDA)
  if (key.device_index >= 0) {
    auto dev = kernels::cuda::query_cuda_device();
    if (!dev.ok()) return "";
    dir = core::vllm_device_name(dev->name);
  }
#endif
  std::filesystem::path p = std::filesystem::path(g_tables_root) / dir;
  std::error_code ec;
  return std::filesystem::is_directory(p, ec) ? p.string() : "";
}

ServedRunner create(RunnerKey const& key, char const* op) {
  ServedRunner served;
  RunnerOptions opts;
  opts.max_tokens = core::kMaxTokens;
  opts.caller_workspace = true;
  std::string const& c = key.config;
  if (c.empty() || c == "auto") {
    opts.tables_dir = default_tables_dir(key);
    served.knobs = c.empty() ? Knobs::none() : Knobs::auto_tune();
  } else if (c.front() == '{') {
    auto parsed = core::parse_moe_config_json(c, "config");
    TORCH_CHECK_VALUE(parsed.ok(), op, ": config: ", parsed.ok() ? "" : parsed.error().to_string());
    served.knobs = Knobs::explicit_config(*parsed);
  } else {
    std::error_code ec;
    TORCH_CHECK_VALUE(std::filesystem::is_directory(c, ec), op, ": config: '", c,
                      "' is not a directory; expected None, \"auto\", a dict of a MoeConfig or a "
                      "tables directory");
    opts.tables_dir = c;
  }
  core::MoeProblem p;
  p.hidden_size = key.hidden_size;
  p.intermediate_size = key.intermediate_size;
  p.num_experts = key.num_experts;
  p.top_k = key.top_k;
  p.activation = key.activation;
  p.dtype = key.dtype;
  p.has_bias = key.has_bias;
  p.quant = key.quant;
  p.arch = key.device_index < 0 ? "cpu" : "sm_90a";
  if (key.batch_invariant) {
    // The other levers still come from this process's environment, read once here.
    core::EnvSnapshot env = core::snapshot_environment(environ);
    env[core::knob_name("batch_invariant")] = "on";
    opts.levers.env = std::move(env);
  }
  auto runner = MoeRunner::create(p, key.device_index < 0 ? "cpu" : "cuda", std::move(opts));
  TORCH_CHECK_VALUE(runner.ok(), op, ": ", runner.ok() ? "" : runner.error().to_string());
  served.runner = std::move(*runner);
  return served;
}

}  // namespace

ServedRunner& runner_for(RunnerKey const& key, char const* op) {
  // A layer called again from the same thread (the common case) skips the lock and the hash.
  // Entries are never erased, so the pointers stay valid.
  thread_local RunnerKey const* last_key = nullptr;
  thread_local ServedRunner* last = nullptr;
  if (last_key != nullptr && *last_key == key) return *last;
  std::lock_guard<std::mutex> lock(g_mu);
  auto it = g_runners.find(key);
  if (it == g_runners.end()) it = g_runners.emplace(key, create(key, op)).first;
  last_key = &it->first;
  last = &it->second;
  return it->second;
}

void set_tables_root(std::string root) {
  std::lock_guard<std::mutex> lock(g_mu);
  g_tables_root = std::move(root);
}

}  // namespace moetune::python
