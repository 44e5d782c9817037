// fork/exec with a captured stdout and a deadline; see child_process.hpp.
#include "bench/child_process.hpp"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>

namespace moetune::bench {

core::Result<ChildResult> run_child(std::vector<std::string> const& argv, double timeout_s) {
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0) {
    return core::make_error(core::ErrorCode::kIo, "ab", std::string("pipe: ") + strerror(errno));
  }
  std::vector<char*> args;
  for (auto const& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  pid_t const pid = ::fork();
  if (pid < 0) {
    ::close(fds[0]);
    ::close(fds[1]);
    return core::make_error(core::ErrorCode::kIo, "ab", std::string("fork: ") + strerror(errno));
  }
  if (pid == 0) {
    // Child: async-signal-safe calls only until exec.
    ::dup2(fds[1], STDOUT_FILENO);
    ::execv(args[0], args.data());
    char const msg[] = "moetune ab: exec of the arm's binary failed\n";
    (void)!::write(STDERR_FILENO, msg, sizeof(msg) - 1);
    ::_exit(127);
  }
  ::close(fds[1]);
  ChildResult result;
  auto const deadline = std::chrono::steady_clock::now() +
                        std::chrono::milliseconds(static_cast<int64_t>(timeout_s * 1000));
  char buf[65536];
  while (true) {
    auto const left = std::chrono::duration_cast<std::chrono::milliseconds>(
                          deadline - std::chrono::steady_clock::now())
                          .count();
    if (left <= 0) {
      ::kill(pid, SIGKILL);
      result.timed_out = true;
      break;
    }
    pollfd p{.fd = fds[0], .events = POLLIN, .revents = 0};
    int const ready = ::poll(&p, 1, static_cast<int>(std::min<int64_t>(left, 1 << 30)));
    if (ready < 0 && errno == EINTR) continue;
    if (ready <= 0) continue;
    ssize_t const n = ::read(fds[0], buf, sizeof(buf));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    result.out.append(buf, static_cast<size_t>(n));
  }
  ::close(fds[0]);
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (WIFEXITED(status)) result.exit_code = WEXITSTATUS(status);
  if (WIFSIGNALED(status)) result.signal = WTERMSIG(status);
  return result;
}

std::string describe(ChildResult const& r, double timeout_s) {
  if (r.timed_out) return "timed out after " + std::to_string(int(timeout_s)) + " s";
  if (r.signal != 0) return "signal " + std::to_string(r.signal);
  return "exit status " + std::to_string(r.exit_code);
}

}  // namespace moetune::bench
