// Worker isolation: the tuner's parent process never touches the device. It talks to one worker
// process per device (the moetune binary itself, `moetune worker`, started by fork + exec) over two
// pipes with the line protocol of protocol.hpp. A request that gets no answer within its timeout
// kills the worker (SIGKILL): timed_out. A worker that dies (EOF on its pipe) is reaped: crashed
// with its signal. Either way the next request starts a fresh worker and replays the last prepare,
// so a segfault, a hang, a sticky CUDA error or an illegal address costs one candidate, never the
// run. After launch_failed or oom the worker is restarted too: the device context may be poisoned.
#pragma once

#include <sys/types.h>

#include <optional>
#include <string>
#include <vector>

#include "core/result.hpp"
#include "kernels/fast_paths.hpp"
#include "kernels/testbed.hpp"
#include "tuner/outcome.hpp"
#include "tuner/protocol.hpp"

namespace moetune::tuner {

/// How workers are started.
struct WorkerOptions {
  std::string exe = "/proc/self/exe";  ///< the moetune binary (tests pass the built one)
  std::string backend = "cpu";         ///< `moetune worker --backend <backend>`
  double start_timeout_s = 120;        ///< hello and a replayed prepare (NVRTC, references)
};

/// The answer to one request: outcome kOk with the worker's response, or the failure class and
/// why (a worker's own error, "signal 11 (SIGSEGV)", "no answer within 2 s").
struct Reply {
  Outcome outcome = Outcome::kOk;
  std::string reason{};
  Response response{};
  bool ok() const { return outcome == Outcome::kOk; }
};

/// The parent's handle on one worker process. Not thread-safe; one per device. hello and call are
/// virtual so tests can answer in-process (tests/tuner: a worker with synthetic timings).
class WorkerClient {
 public:
  explicit WorkerClient(WorkerOptions options);
  virtual ~WorkerClient();
  WorkerClient(WorkerClient const&) = delete;
  WorkerClient& operator=(WorkerClient const&) = delete;

  /// Starts the worker when none runs (replaying the last successful prepare) and answers hello:
  /// the backend, family and device. Fails (kUnsupported) with the worker's reason, e.g. no GPU.
  virtual core::Result<Response> hello();
  /// Sends one request and waits at most `timeout_s` for its answer. Never fails as a call: every
  /// failure is a Reply outcome. A successful prepare is remembered and replayed after restarts.
  virtual Reply call(Request const& request, double timeout_s);
  /// Workers started so far (1 + restarts).
  int starts() const { return starts_; }
  /// The running worker's pid, or -1.
  pid_t pid() const { return pid_; }

 private:
  core::Status start();
  Reply exchange(Request const& request, double timeout_s);
  /// Reaps the worker after EOF or a failed write: "signal 11 (SIGSEGV)" or "exit status 3".
  std::string reap();
  void kill_worker();

  WorkerOptions options_;
  pid_t pid_ = -1;
  int to_worker_ = -1;
  int from_worker_ = -1;
  std::string buffer_;
  int starts_ = 0;
  std::optional<Request> prepared_;
  std::optional<Response> hello_;
};

/// The worker's answer to one request with `bed` (what run_worker sends back): testbed errors
/// classified into outcomes, injected faults applied. crash and hang faults act on this process.
Response answer_request(kernels::Testbed& bed, Request const& request);

/// The worker side (`moetune worker`): answers requests read from `in_fd` on `out_fd` with a
/// testbed of `backend` until quit or EOF. Returns the process exit code (0).
int run_worker(std::string const& backend, int in_fd, int out_fd,
               kernels::FastPaths const& fast_paths = {});

/// "SIGSEGV"-style name of a signal ("signal 42" when unknown).
std::string signal_name(int signal);

}  // namespace moetune::tuner
