// The MoeRunners behind the torch ops: one per (device, layer shape, config argument), created on
// first use and kept for the process's life, so a call after the first finds its runner with one
// hash lookup and its config with one atomic load (MoeRunner's memo).
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "core/problem.hpp"
#include "moetune/moe_runner.hpp"

namespace moetune::python {

/// What a runner serves. `config` is the op's config argument: "" (tables -> cache -> default),
/// "auto", a JSON object (one explicit config) or a tables directory.
struct RunnerKey {
  int device_index = -1;  ///< -1 for the CPU
  int64_t hidden_size = 0;
  int64_t intermediate_size = 0;
  int64_t num_experts = 0;
  int64_t top_k = 0;
  core::Activation activation = core::Activation::kSiluGated;
  core::DType dtype = core::DType::kBf16;
  bool has_bias = false;
  core::Quant quant = core::Quant::kNone;
  std::string config;
  /// The op's batch_invariant argument: lever batch_invariant on for this runner, whatever
  /// MOETUNE_LEVER_BATCH_INVARIANT says (false leaves the lever to the environment).
  bool batch_invariant = false;
  bool operator==(RunnerKey const&) const = default;
};

/// A runner and the knobs its config argument asks for.
struct ServedRunner {
  std::unique_ptr<MoeRunner> runner;
  Knobs knobs;
};

/// The runner for `key` (created under a lock on first use; the caller has made the key's device
/// current). Errors (a bad config argument, a table that does not load) raise ValueError naming
/// the config argument; they are not cached, so a fixed file is read on the next call.
ServedRunner& runner_for(RunnerKey const& key, char const* op);

/// Where the package's shipped tables live (<root>/<device dir>/); "" = none. Set once at import.
void set_tables_root(std::string root);

}  // namespace moetune::python
