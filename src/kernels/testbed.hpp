// Testbed: runs one MoE problem on one backend over generated inputs, checks it against the
// float64 reference and times it. tune, bench, run and the tests all go through this interface,
// so the CPU backend exercises in CI every path the GPU uses on the device.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "core/backend.hpp"
#include "core/config.hpp"
#include "core/problem.hpp"
#include "core/result.hpp"
#include "core/routing.hpp"
#include "kernels/fast_paths.hpp"

namespace moetune::kernels {

/// The outcome of one checked run.
struct CheckResult {
  double rel_l2_error = 0;  ///< ||out - ref|| / ||ref|| (0 when ref is all zero and out too)
  bool all_finite = true;   ///< no NaN/Inf in the output
  bool all_written = true;  ///< no poisoned element left after the run
  std::string digest;       ///< hex digest of the output bits (deterministic paths: stable)
  int64_t first_bad = -1;   ///< flat index of the first bad element, -1 when none
};

/// Tolerances per dtype, with their reasons (STYLE 22).
struct Tolerance {
  double rel_l2;
  const char* reason;
};
/// bf16: 1e-2 (bf16 output rounding ~4e-3 plus bf16 intermediate); fp16: 5e-3; fp32: 1e-5.
Tolerance tolerance_for(core::DType dtype);
/// A problem's: its dtype's, or with quant (fp8) 3e-2.
Tolerance tolerance_for(core::MoeProblem const& problem);

/// What check() writes into its output after the kernel ran and before the comparison (test-only
/// fault injection, so that the correctness gate itself must catch a wrong or NaN output).
enum class OutputFault { kNone, kWrong, kNan };
/// The value kWrong writes into output element 0: far outside any tolerance of a layer whose
/// outputs are O(1), and of an fp8 layer's, whose block scales 10^-2..10^2 make its output norm
/// ~1e6 (1e4 was not caught there under the fp8 tolerance); its square is still a finite float.
inline constexpr float kWrongOutputValue = 1.0e12f;

/// Timing of one config: per-replay samples in microseconds.
struct TimingResult {
  std::vector<double> samples_us;
  double median_us = 0;
};

/// The median of timing samples as every testbed reports it (TimingResult::median_us): the middle
/// sample, the mean of the middle two for an even count, 0 for none.
double median_us(std::vector<double> samples_us);

class Testbed {
 public:
  virtual ~Testbed() = default;
  virtual core::Backend const& backend() const = 0;
  /// Generates x, w1, w2 (x ~ N(0,1), w1 ~ N(0,1)/sqrt(K), w2 ~ N(0,1)/sqrt(I)) and the routing
  /// for `problem` (M = problem.num_tokens), all from `seed`. Fresh data per call.
  virtual core::Status prepare(core::MoeProblem const& problem, core::RoutingProfile const& routing,
                               uint64_t seed) = 0;
  /// Runs `config` once on poisoned output and compares with the reference.
  virtual core::Result<CheckResult> check(core::MoeConfig const& config) = 0;
  /// Times `config`: warm-up runs, then `reps` timed runs (GPU: graph replays with the L2 flushed).
  virtual core::Result<TimingResult> time(core::MoeConfig const& config, int warmup, int reps) = 0;
  /// The fast paths (levers) later runs take; backends without a given path ignore its field.
  virtual void set_fast_paths(FastPaths const& fast_paths) = 0;
  /// Compiles (or loads from a cache) the kernels of `configs` ahead of their runs, concurrently
  /// where the backend compiles (cuda: NVRTC on a thread pool). One Status per config, in order: a
  /// failure is that config's own (its later check fails the same way); never fails as a whole.
  /// Call after prepare(). Default: nothing to compile, every config ok.
  virtual std::vector<core::Status> precompile(std::vector<core::MoeConfig> const& configs) {
    return std::vector<core::Status>(configs.size(), core::Status::Ok());
  }
  /// The next check() (only that one) corrupts its real output after the kernel: kWrong writes
  /// kWrongOutputValue into element 0, kNan a NaN. False when this testbed cannot (then nothing is
  /// armed). Test only (--inject-fault wrong / nan).
  virtual bool corrupt_next_output(OutputFault fault) {
    (void)fault;
    return false;
  }
};

/// "cpu" always; "cuda" when built with CUDA and a GPU is present. The error says why not.
core::Result<std::unique_ptr<core::Backend>> make_backend(std::string_view name);
core::Result<std::unique_ptr<Testbed>> make_testbed(std::string_view name);
/// "cuda" when the cuda backend is built and a GPU is visible, else "cpu".
std::string default_backend_name();

}  // namespace moetune::kernels
