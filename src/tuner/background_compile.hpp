// BackgroundCompile: the worker's precompile when the parent asks for it in the background. The
// configs of a stage compile on a pool of threads (one config per call of Testbed::precompile)
// while the worker goes on answering the stage's checks, so NVRTC on the host's other cores
// overlaps the checks' GPU runs and host-side comparison instead of preceding them. A check waits
// for its own config's compile only; any other request (a timing above all) first drops what has
// not started and waits for what runs, so no compile ever runs beside a timed kernel.
// A config whose compile fails here is simply compiled again by its check, which then answers
// compile_failed; so the outcome is the candidate's own, as with the synchronous precompile.
#pragma once

#include <condition_variable>
#include <deque>
#include <mutex>
#include <thread>
#include <vector>

#include "core/config.hpp"
#include "kernels/testbed.hpp"

namespace moetune::tuner {

class BackgroundCompile {
 public:
  /// Compiles on `threads` threads (>= 1) through `bed`, which must outlive this object and
  /// compile thread-safely (Testbed::precompile makes no device call).
  BackgroundCompile(kernels::Testbed& bed, unsigned threads);
  ~BackgroundCompile() { stop(); }
  BackgroundCompile(BackgroundCompile const&) = delete;
  BackgroundCompile& operator=(BackgroundCompile const&) = delete;

  /// Queues `configs` (in order) after stopping what a previous start left; returns at once.
  void start(std::vector<core::MoeConfig> configs);
  /// Blocks while `config` is queued or compiling; returns at once when it is neither.
  void wait_for(core::MoeConfig const& config);
  /// Drops the configs not started yet and waits for the compiling ones: afterwards nothing runs.
  void stop();
  /// Configs whose compile has finished since construction (tests).
  int finished() const;

 private:
  void work();

  kernels::Testbed& bed_;
  unsigned threads_;
  mutable std::mutex mutex_;
  std::condition_variable changed_;
  std::deque<core::MoeConfig> queue_;
  std::vector<core::MoeConfig> running_;
  std::vector<std::thread> pool_;
  int finished_ = 0;
};

/// Threads for a background compile: the CPUs this process may run on (sched_getaffinity, which
/// a container's cpuset limits; hardware_concurrency() may count the host's), less one for the
/// thread that answers checks; at least 1.
unsigned background_compile_threads();

}  // namespace moetune::tuner
