// The worker side of the protocol (`moetune worker`): one testbed, one request at a time. Testbed
// errors are classified into outcomes here (compile_failed, launch_failed, oom, rejected); a
// crash or a hang is left to the parent to observe. Injected faults (test only, --inject-fault)
// act here, at the boundary the real failures cross:
//   compile, launch -> the error a failed NVRTC compile / kernel launch returns;
//   oom             -> std::bad_alloc thrown inside the request (caught like a real one);
//   crash           -> raise(SIGSEGV) (a real segfault of the worker process);
//   hang            -> the worker sleeps forever (the parent's timeout must fire);
//   wrong, nan      -> the kernel runs, then the testbed writes a wrong value (1e4) or a NaN
//                      into its real output (device memory on the GPU) before the comparison, so
//                      the check itself must catch it; its timing is reported 100x faster, so a
//                      gate that let it through would make it win. (A testbed that cannot corrupt
//                      its output gets a corrupted check result instead.)
// precompile compiles a round's configs before their checks (concurrently on the cuda testbed); a
// config's failure there (its own compile error, or an injected compile fault) is answered as that
// config's outcome, so it still costs only that candidate. With "background" it answers at once and
// compiles while the checks are answered (background_compile.hpp): a check waits for its own
// config, any other request first stops the compile, so timings never share the host with NVRTC.
#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <cmath>
#include <memory>
#include <new>
#include <optional>

#include "kernels/testbed.hpp"
#include "tuner/background_compile.hpp"
#include "tuner/worker.hpp"

namespace moetune::tuner {
namespace {

Response failure(Outcome outcome, std::string message) {
  Response r;
  r.ok = false;
  r.outcome = outcome;
  r.message = std::move(message);
  return r;
}

/// The outcome of a testbed error: compile (NVRTC, the jit), rejected (can_implement), oom,
/// else launch_failed.
Response classify(core::Error const& e) {
  std::string const text = e.to_string();
  if (e.where == "jit" || text.find("NVRTC") != std::string::npos) {
    return failure(Outcome::kCompileFailed, text);
  }
  if (text.find("MemoryAllocation") != std::string::npos ||
      text.find("out of memory") != std::string::npos) {
    return failure(Outcome::kOom, text);
  }
  if (e.code == core::ErrorCode::kUnsupported) return failure(Outcome::kRejected, text);
  return failure(Outcome::kLaunchFailed, text);
}

std::string injected(FaultKind f) {
  return "injected " + std::string(to_string(f)) + " fault (test-only --inject-fault)";
}

/// Faults that act before the kernel runs; returns true with *out set when one did.
bool inject_before(FaultKind fault, Response* out) {
  switch (fault) {
    case FaultKind::kCompile: *out = failure(Outcome::kCompileFailed, injected(fault)); return true;
    case FaultKind::kLaunch: *out = failure(Outcome::kLaunchFailed, injected(fault)); return true;
    case FaultKind::kOom: throw std::bad_alloc();
    case FaultKind::kCrash: ::raise(SIGSEGV); return false;
    case FaultKind::kHang:
      while (true) ::pause();
    default: return false;
  }
}

/// Compiles the configs of a round ahead of their checks; an injected compile fault answers for
/// its config without compiling it. reasons[i] = "" and outcomes[i] = ok when config i compiled.
Response precompile(kernels::Testbed& bed, Request const& req) {
  Response r;
  std::vector<core::MoeConfig> configs;
  std::vector<size_t> where;
  for (size_t i = 0; i < req.configs.size(); ++i) {
    FaultKind const f = i < req.faults.size() ? req.faults[i] : FaultKind::kNone;
    if (f == FaultKind::kCompile) continue;
    configs.push_back(req.configs[i]);
    where.push_back(i);
  }
  r.reasons.assign(req.configs.size(), injected(FaultKind::kCompile));
  r.outcomes.assign(req.configs.size(), Outcome::kCompileFailed);
  std::vector<core::Status> const done = bed.precompile(configs);
  for (size_t k = 0; k < where.size(); ++k) {
    Response const one = k < done.size() && !done[k].ok() ? classify(done[k].error()) : Response{};
    r.reasons[where[k]] = one.ok ? "" : one.message;
    r.outcomes[where[k]] = one.ok ? Outcome::kOk : one.outcome;
  }
  return r;
}

/// check: the config's gate inputs; fault wrong / nan corrupt the real output where the testbed
/// can (else the reported result), so the gate must catch it.
Response answer_check(kernels::Testbed& bed, Request const& req) {
  Response r;
  bool const corrupt = req.fault == FaultKind::kWrong || req.fault == FaultKind::kNan;
  bool const armed = corrupt && bed.corrupt_next_output(req.fault == FaultKind::kNan
                                                            ? kernels::OutputFault::kNan
                                                            : kernels::OutputFault::kWrong);
  auto check = bed.check(req.config);
  if (!check.ok()) return classify(check.error());
  r.has_check = true;
  r.check = *check;
  if (armed) return r;  // the output itself was corrupted: the gate must see it
  if (req.fault == FaultKind::kWrong) {
    r.check.rel_l2_error += 1.0;
    r.check.first_bad = 0;
    r.check.digest += "-corrupt";
  } else if (req.fault == FaultKind::kNan) {
    r.check.rel_l2_error = NAN;
    r.check.all_finite = false;
    r.check.first_bad = 0;
    r.check.digest += "-nan";
  }
  return r;
}

/// time: the samples; fault wrong / nan report them 100x faster (a corrupt config must not win).
Response answer_time(kernels::Testbed& bed, Request const& req) {
  Response r;
  auto timing = bed.time(req.config, req.warmup, req.reps);
  if (!timing.ok()) return classify(timing.error());
  r.samples_us = timing->samples_us;
  if (req.fault == FaultKind::kWrong || req.fault == FaultKind::kNan) {
    for (double& s : r.samples_us) s *= 0.01;
  }
  return r;
}

}  // namespace

Response answer_request(kernels::Testbed& bed, Request const& req) {
  Response r;
  core::Backend const& backend = bed.backend();
  if (req.op == "hello") {
    r.backend = backend.name();
    r.family = backend.family();
    r.family_version = backend.family_version();
    r.device = backend.device();
    return r;
  }
  if (req.op == "space") {
    r.default_config = backend.default_config(req.problem);
    r.configs = backend.search_space(req.problem);
    r.gemm_spaces = backend.gemm_search_space(req.problem);
    return r;
  }
  if (req.op == "feasible") {
    for (core::MoeConfig const& c : req.configs) {
      core::Status s = backend.can_implement(req.problem, c);
      r.reasons.push_back(s.ok() ? "" : s.error().message);
    }
    return r;
  }
  if (req.op == "prepare") {
    core::Status s = bed.prepare(req.problem, req.routing, req.seed);
    return s.ok() ? r : classify(s.error());
  }
  if (req.op == "precompile") return precompile(bed, req);
  if (req.op == "check" || req.op == "time") {
    if (inject_before(req.fault, &r)) return r;
    return req.op == "check" ? answer_check(bed, req) : answer_time(bed, req);
  }
  return failure(Outcome::kLaunchFailed, "unknown request op '" + req.op + "'");
}

namespace {

bool read_line(int fd, std::string& buffer, std::string* line) {
  while (true) {
    size_t const eol = buffer.find('\n');
    if (eol != std::string::npos) {
      *line = buffer.substr(0, eol);
      buffer.erase(0, eol + 1);
      return true;
    }
    char chunk[65536];
    ssize_t const n = ::read(fd, chunk, sizeof(chunk));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    buffer.append(chunk, static_cast<size_t>(n));
  }
}

bool write_line(int fd, std::string text) {
  text += "\n";
  size_t done = 0;
  while (done < text.size()) {
    ssize_t const n = ::write(fd, text.data() + done, text.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    done += static_cast<size_t>(n);
  }
  return true;
}

/// A background precompile: queues the configs (an injected compile fault is left to its check,
/// which answers it) and answers every config ok at once.
Response start_background(BackgroundCompile& compile, Request const& req) {
  std::vector<core::MoeConfig> configs;
  for (size_t i = 0; i < req.configs.size(); ++i) {
    bool const faulty = i < req.faults.size() && req.faults[i] == FaultKind::kCompile;
    if (!faulty) configs.push_back(req.configs[i]);
  }
  compile.start(std::move(configs));
  Response r;
  r.reasons.assign(req.configs.size(), "");
  r.outcomes.assign(req.configs.size(), Outcome::kOk);
  return r;
}

}  // namespace

int run_worker(std::string const& backend, int in_fd, int out_fd,
               kernels::FastPaths const& fast_paths) {
  auto bed = kernels::make_testbed(backend);
  if (bed.ok()) (*bed)->set_fast_paths(fast_paths);
  std::optional<BackgroundCompile> compile;
  if (bed.ok()) compile.emplace(**bed, background_compile_threads());
  std::string buffer;
  std::string line;
  while (read_line(in_fd, buffer, &line)) {
    auto req = decode_request(line, "worker request");
    Response r;
    if (req.ok() && compile) {
      // Only a check runs beside the background compile (once its own config is compiled).
      if (req->op == "check") {
        compile->wait_for(req->config);
      } else if (!(req->op == "precompile" && req->background)) {
        compile->stop();
      }
    }
    if (!req.ok()) {
      r = failure(Outcome::kLaunchFailed, req.error().to_string());
    } else if (req->op == "quit") {
      return 0;
    } else if (!bed.ok()) {
      r = failure(Outcome::kLaunchFailed, bed.error().to_string());
    } else if (req->op == "precompile" && req->background) {
      r = start_background(*compile, *req);
    } else {
      try {
        r = answer_request(**bed, *req);
      } catch (std::bad_alloc const&) {
        r = failure(Outcome::kOom, req->fault == FaultKind::kOom
                                       ? injected(FaultKind::kOom)
                                       : "std::bad_alloc: host memory exhausted");
      } catch (std::exception const& e) {
        r = failure(Outcome::kLaunchFailed, std::string("exception: ") + e.what());
      }
    }
    if (!write_line(out_fd, encode(r))) return 0;
  }
  return 0;
}

}  // namespace moetune::tuner
