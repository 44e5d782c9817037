// Runs one child process (an A/B arm) and captures its stdout; stderr passes through to ours so
// a failing arm's message reaches the person. A child past its deadline is killed (SIGKILL).
#pragma once

#include <string>
#include <vector>

#include "core/result.hpp"

namespace moetune::bench {

struct ChildResult {
  std::string out;
  int exit_code = -1;  ///< -1 when killed by a signal
  int signal = 0;      ///< the signal that ended it, 0 when none
  bool timed_out = false;
};

/// fork + execv(argv[0], argv). Fails (kIo) only when the process cannot be started; a child
/// that fails is a ChildResult with its exit code or signal.
core::Result<ChildResult> run_child(std::vector<std::string> const& argv, double timeout_s);

/// "exit status 2", "signal 11", "timed out after 600 s".
std::string describe(ChildResult const& r, double timeout_s);

}  // namespace moetune::bench
