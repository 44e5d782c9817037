// WorkerClient: fork + exec of the worker, framed lines over pipes, deadlines by poll(); see
// worker.hpp. The worker side is worker_main.cpp.
#include "tuner/worker.hpp"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstring>
#include <thread>

namespace moetune::tuner {
namespace {

using Clock = std::chrono::steady_clock;

bool write_all(int fd, std::string const& data) {
  size_t done = 0;
  while (done < data.size()) {
    ssize_t const n = ::write(fd, data.data() + done, data.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    done += static_cast<size_t>(n);
  }
  return true;
}

std::string seconds_text(double s) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%g s", s);
  return buf;
}

}  // namespace

std::string signal_name(int signal) {
  switch (signal) {
    case SIGSEGV: return "SIGSEGV";
    case SIGBUS: return "SIGBUS";
    case SIGABRT: return "SIGABRT";
    case SIGFPE: return "SIGFPE";
    case SIGILL: return "SIGILL";
    case SIGKILL: return "SIGKILL";
    case SIGTERM: return "SIGTERM";
    case SIGINT: return "SIGINT";
  }
  return "signal " + std::to_string(signal);
}

WorkerClient::WorkerClient(WorkerOptions options) : options_(std::move(options)) {
  // NOTE: a write to a worker that just died must fail with EPIPE, not kill the parent.
  ::signal(SIGPIPE, SIG_IGN);
}

WorkerClient::~WorkerClient() {
  if (pid_ <= 0) return;
  (void)write_all(to_worker_, encode(Request{.op = "quit"}) + "\n");
  ::close(to_worker_);
  to_worker_ = -1;
  // A worker exits on quit or EOF at once; one that does not within a second is killed.
  for (int i = 0; i < 100; ++i) {
    if (::waitpid(pid_, nullptr, WNOHANG) == pid_) {
      pid_ = -1;
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  kill_worker();
}

void WorkerClient::kill_worker() {
  if (pid_ > 0) {
    ::kill(pid_, SIGKILL);
    ::waitpid(pid_, nullptr, 0);
  }
  pid_ = -1;
  if (to_worker_ >= 0) ::close(to_worker_);
  if (from_worker_ >= 0) ::close(from_worker_);
  to_worker_ = from_worker_ = -1;
  buffer_.clear();
}

std::string WorkerClient::reap() {
  int status = 0;
  pid_t const pid = pid_;
  std::string why = "worker " + std::to_string(pid) + " ended";
  if (pid > 0 && ::waitpid(pid, &status, 0) == pid) {
    pid_ = -1;
    if (WIFSIGNALED(status)) {
      int const sig = WTERMSIG(status);
      why = "signal " + std::to_string(sig) + " (" + signal_name(sig) + ")";
    } else if (WIFEXITED(status)) {
      why = "exit status " + std::to_string(WEXITSTATUS(status));
    }
  }
  kill_worker();  // closes the pipes; the process is already reaped
  return why;
}

namespace {

/// A worker process and this side's ends of its pipes.
struct Spawned {
  pid_t pid = -1;
  int to_worker = -1;
  int from_worker = -1;
};

/// Forks `exe worker --backend B` with its request pipe on fd 3 and its answer pipe on fd 4 (its
/// stdout goes to stderr, no core files, killed when the parent dies).
core::Result<Spawned> spawn_worker(std::string const& exe, std::string const& backend) {
  int to_child[2];
  int from_child[2];
  if (::pipe2(to_child, O_CLOEXEC) != 0) {
    return core::make_error(core::ErrorCode::kIo, "worker",
                            std::string("pipe2: ") + strerror(errno));
  }
  if (::pipe2(from_child, O_CLOEXEC) != 0) {
    ::close(to_child[0]);
    ::close(to_child[1]);
    return core::make_error(core::ErrorCode::kIo, "worker",
                            std::string("pipe2: ") + strerror(errno));
  }
  std::vector<std::string> args = {exe,       "worker", "--backend", backend,
                                   "--fd-in", "3",      "--fd-out",  "4"};
  std::vector<char*> argv;
  for (std::string& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  pid_t const pid = ::fork();
  if (pid == 0) {
    // Child: async-signal-safe calls only until exec.
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);
    struct rlimit no_core = {0, 0};
    ::setrlimit(RLIMIT_CORE, &no_core);  // a crashing candidate must not write a core file
    int const in = ::fcntl(to_child[0], F_DUPFD_CLOEXEC, 10);
    int const out = ::fcntl(from_child[1], F_DUPFD_CLOEXEC, 10);
    ::dup2(in, 3);
    ::dup2(out, 4);
    ::dup2(2, 1);  // stray prints of the backend go to stderr, never into the protocol
    ::execv(argv[0], argv.data());
    ::_exit(127);
  }
  ::close(to_child[0]);
  ::close(from_child[1]);
  if (pid < 0) {
    ::close(to_child[1]);
    ::close(from_child[0]);
    return core::make_error(core::ErrorCode::kIo, "worker",
                            std::string("fork: ") + strerror(errno));
  }
  return Spawned{.pid = pid, .to_worker = to_child[1], .from_worker = from_child[0]};
}

}  // namespace

core::Status WorkerClient::start() {
  auto spawned = spawn_worker(options_.exe, options_.backend);
  if (!spawned.ok()) return spawned.error();
  pid_ = spawned->pid;
  to_worker_ = spawned->to_worker;
  from_worker_ = spawned->from_worker;
  buffer_.clear();
  ++starts_;
  // Handshake: the worker's hello (same protocol version), then the last prepare replayed.
  Reply hello = exchange(Request{.op = "hello"}, options_.start_timeout_s);
  if (!hello.ok()) {
    kill_worker();
    return core::make_error(core::ErrorCode::kUnsupported, "worker (" + options_.exe + ")",
                            "did not start: " + hello.reason);
  }
  if (hello.response.protocol_version != kProtocolVersion) {
    kill_worker();
    return core::make_error(core::ErrorCode::kVersion, "worker (" + options_.exe + ")",
                            "speaks protocol " + std::to_string(hello.response.protocol_version) +
                                ", this moetune " + std::to_string(kProtocolVersion) +
                                "; run a worker from the same build");
  }
  hello_ = hello.response;
  if (prepared_) {
    Reply again = exchange(*prepared_, options_.start_timeout_s);
    if (!again.ok()) {
      kill_worker();
      return core::make_error(core::ErrorCode::kInternal, "worker",
                              "restarted, but the replayed prepare failed: " + again.reason);
    }
  }
  return core::Status::Ok();
}

core::Result<Response> WorkerClient::hello() {
  if (pid_ <= 0) MOETUNE_RETURN_IF_ERROR(start());
  return *hello_;
}

Reply WorkerClient::call(Request const& request, double timeout_s) {
  if (request.op == "prepare") prepared_.reset();  // a new prepare replaces the one to replay
  if (pid_ <= 0) {
    if (core::Status s = start(); !s.ok()) {
      return Reply{.outcome = Outcome::kLaunchFailed, .reason = s.error().to_string()};
    }
  }
  Reply reply = exchange(request, timeout_s);
  if (reply.ok() && request.op == "prepare") prepared_ = request;
  if (reply.outcome == Outcome::kLaunchFailed || reply.outcome == Outcome::kOom) kill_worker();
  return reply;
}

Reply WorkerClient::exchange(Request const& request, double timeout_s) {
  if (!write_all(to_worker_, encode(request) + "\n")) {
    return Reply{.outcome = Outcome::kCrashed, .reason = reap()};
  }
  auto const deadline =
      Clock::now() + std::chrono::microseconds(static_cast<int64_t>(timeout_s * 1e6));
  while (true) {
    size_t const eol = buffer_.find('\n');
    if (eol != std::string::npos) {
      std::string const line = buffer_.substr(0, eol);
      buffer_.erase(0, eol + 1);
      auto response = decode_response(line, "worker answer to " + request.op);
      if (!response.ok()) {
        kill_worker();
        return Reply{.outcome = Outcome::kLaunchFailed, .reason = response.error().to_string()};
      }
      if (!response->ok) {
        return Reply{.outcome = response->outcome, .reason = response->message};
      }
      return Reply{.response = std::move(response).value()};
    }
    auto const left =
        std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
    if (left <= 0) {
      kill_worker();
      return Reply{.outcome = Outcome::kTimedOut,
                   .reason = "no answer to " + request.op + " within " + seconds_text(timeout_s) +
                             "; the worker was killed"};
    }
    pollfd p{.fd = from_worker_, .events = POLLIN, .revents = 0};
    int const ready = ::poll(&p, 1, static_cast<int>(std::min<int64_t>(left, 1 << 30)));
    if (ready < 0 && errno == EINTR) continue;
    if (ready <= 0) continue;
    char chunk[65536];
    ssize_t const n = ::read(from_worker_, chunk, sizeof(chunk));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return Reply{.outcome = Outcome::kCrashed, .reason = reap()};
    buffer_.append(chunk, static_cast<size_t>(n));
  }
}

}  // namespace moetune::tuner
