// tuner/worker against the real `moetune worker` on the cpu backend: requests are answered, and a
// segfault, a hang, an injected compile/launch/oom failure each cost one request and a restart,
// never the client (crash-isolation tests: they assert the exit class).
#include "tuner/worker.hpp"

#include <signal.h>

#include <chrono>

#include <gtest/gtest.h>

#include "tuner/tuner_test_util.hpp"

namespace moetune::tuner {
namespace {

using testing::cpu_worker;
using testing::tiny_problem;

Request prepare_request() { return Request{.op = "prepare", .problem = tiny_problem(), .seed = 3}; }

core::MoeConfig default_like() {
  core::KernelConfig k;
  k.tile = {.block_m = 8, .block_n = 32, .block_k = 64, .group_m = 1};
  k.launch.num_threads = 1;
  return core::uniform_config(k);
}

TEST(Worker, HelloPrepareCheckAndTimeAreAnswered) {
  WorkerClient worker(cpu_worker());
  auto hello = worker.hello();
  ASSERT_TRUE(hello.ok()) << hello.error().to_string();
  EXPECT_EQ(hello->backend, "cpu");
  EXPECT_EQ(hello->family, "cpu_tiled");
  EXPECT_EQ(hello->device.arch, "cpu");
  ASSERT_TRUE(worker.call(prepare_request(), 30).ok());
  Reply check = worker.call(Request{.op = "check", .config = default_like()}, 10);
  ASSERT_TRUE(check.ok()) << check.reason;
  EXPECT_TRUE(check.response.has_check);
  EXPECT_LT(check.response.check.rel_l2_error, 1e-2);
  EXPECT_FALSE(check.response.check.digest.empty());
  Reply time = worker.call(Request{.op = "time", .config = default_like(), .reps = 4}, 10);
  ASSERT_TRUE(time.ok()) << time.reason;
  EXPECT_EQ(time.response.samples_us.size(), 4u);
  EXPECT_EQ(worker.starts(), 1);
}

TEST(Worker, ASegfaultIsCrashedWithItsSignalAndTheNextRequestRestartsTheWorker) {
  WorkerClient worker(cpu_worker());
  ASSERT_TRUE(worker.call(prepare_request(), 30).ok());
  Reply crash =
      worker.call(Request{.op = "check", .config = default_like(), .fault = FaultKind::kCrash}, 10);
  EXPECT_EQ(crash.outcome, Outcome::kCrashed);
  EXPECT_EQ(crash.reason, "signal 11 (SIGSEGV)");
  Reply after = worker.call(Request{.op = "check", .config = default_like()}, 10);
  ASSERT_TRUE(after.ok()) << after.reason;  // the prepare was replayed in the new worker
  EXPECT_EQ(worker.starts(), 2);
}

TEST(Worker, AHangIsKilledAtTheTimeoutAsTimedOut) {
  WorkerClient worker(cpu_worker());
  ASSERT_TRUE(worker.call(prepare_request(), 30).ok());
  pid_t const hung = worker.pid();
  auto const start = std::chrono::steady_clock::now();
  Reply hang =
      worker.call(Request{.op = "check", .config = default_like(), .fault = FaultKind::kHang}, 0.5);
  double const took =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  EXPECT_EQ(hang.outcome, Outcome::kTimedOut);
  EXPECT_EQ(hang.reason, "no answer to check within 0.5 s; the worker was killed");
  EXPECT_LT(took, 2.0);
  EXPECT_NE(::kill(hung, 0), 0);  // the hung worker is gone (killed and reaped)
  EXPECT_TRUE(worker.call(Request{.op = "check", .config = default_like()}, 10).ok());
}

TEST(Worker, InjectedCompileLaunchAndOomFailuresKeepTheirClass) {
  WorkerClient worker(cpu_worker());
  ASSERT_TRUE(worker.call(prepare_request(), 30).ok());
  for (auto [fault, outcome] : {std::pair{FaultKind::kCompile, Outcome::kCompileFailed},
                                std::pair{FaultKind::kLaunch, Outcome::kLaunchFailed},
                                std::pair{FaultKind::kOom, Outcome::kOom}}) {
    Reply r = worker.call(Request{.op = "check", .config = default_like(), .fault = fault}, 10);
    EXPECT_EQ(r.outcome, outcome) << to_string(fault) << ": " << r.reason;
    EXPECT_NE(r.reason.find("injected"), std::string::npos) << r.reason;
  }
}

TEST(Worker, WrongAndNanFaultsCorruptTheRealOutputForOneCheck) {
  WorkerClient worker(cpu_worker());
  ASSERT_TRUE(worker.call(prepare_request(), 30).ok());
  Reply clean = worker.call(Request{.op = "check", .config = default_like()}, 10);
  Reply wrong =
      worker.call(Request{.op = "check", .config = default_like(), .fault = FaultKind::kWrong}, 10);
  Reply nan =
      worker.call(Request{.op = "check", .config = default_like(), .fault = FaultKind::kNan}, 10);
  Reply again = worker.call(Request{.op = "check", .config = default_like()}, 10);
  ASSERT_TRUE(clean.ok() && wrong.ok() && nan.ok() && again.ok());
  EXPECT_LT(clean.response.check.rel_l2_error, 1e-2);
  // Element 0 holds 1e12 in the output the check read (a faked result would read ~1.0 here), and
  // the digest is that of the corrupted bits.
  EXPECT_GT(wrong.response.check.rel_l2_error, 100.0);
  EXPECT_EQ(wrong.response.check.first_bad, 0);
  EXPECT_EQ(wrong.response.check.digest.size(), clean.response.check.digest.size());
  EXPECT_NE(wrong.response.check.digest, clean.response.check.digest);
  EXPECT_FALSE(nan.response.check.all_finite);
  EXPECT_EQ(nan.response.check.first_bad, 0);
  EXPECT_NE(nan.response.check.digest, clean.response.check.digest);
  // Only the one check was armed.
  EXPECT_EQ(again.response.check.digest, clean.response.check.digest);
}

TEST(Worker, PrecompileAnswersEachConfigAndAnInjectedCompileFaultOnlyItsOwn) {
  WorkerClient worker(cpu_worker());
  ASSERT_TRUE(worker.call(prepare_request(), 30).ok());
  core::MoeConfig other = default_like();
  other.gemm2.tile.block_n = 64;
  Request req{.op = "precompile", .configs = {default_like(), other, default_like()}};
  req.faults = {FaultKind::kNone, FaultKind::kCompile, FaultKind::kNone};
  Reply r = worker.call(req, 10);
  ASSERT_TRUE(r.ok()) << r.reason;
  EXPECT_EQ(r.response.outcomes,
            (std::vector<Outcome>{Outcome::kOk, Outcome::kCompileFailed, Outcome::kOk}));
  ASSERT_EQ(r.response.reasons.size(), 3u);
  EXPECT_EQ(r.response.reasons[0], "");
  EXPECT_EQ(r.response.reasons[1], "injected compile fault (test-only --inject-fault)");
  EXPECT_EQ(worker.starts(), 1);  // a compile failure needs no restart
}

TEST(Worker, ABackgroundPrecompileAnswersAtOnceAndTheCheckAnswersAnInjectedCompileFault) {
  WorkerClient worker(cpu_worker());
  ASSERT_TRUE(worker.call(prepare_request(), 30).ok());
  core::MoeConfig other = default_like();
  other.gemm2.tile.block_n = 64;
  Request req{.op = "precompile", .configs = {default_like(), other}, .background = true};
  req.faults = {FaultKind::kNone, FaultKind::kCompile};
  Reply r = worker.call(req, 10);
  ASSERT_TRUE(r.ok()) << r.reason;
  EXPECT_EQ(r.response.outcomes, (std::vector<Outcome>{Outcome::kOk, Outcome::kOk}));
  // The fault is the config's own again at its check; the other config checks and times.
  Reply faulty =
      worker.call(Request{.op = "check", .config = other, .fault = FaultKind::kCompile}, 10);
  EXPECT_EQ(faulty.outcome, Outcome::kCompileFailed);
  EXPECT_EQ(faulty.reason, "injected compile fault (test-only --inject-fault)");
  Reply check = worker.call(Request{.op = "check", .config = default_like()}, 10);
  ASSERT_TRUE(check.ok()) << check.reason;
  EXPECT_TRUE(check.response.has_check);
  Reply time = worker.call(Request{.op = "time", .config = default_like(), .reps = 2}, 10);
  ASSERT_TRUE(time.ok()) << time.reason;
  EXPECT_EQ(time.response.samples_us.size(), 2u);
  EXPECT_EQ(worker.starts(), 1);
}

TEST(Worker, AnUnavailableBackendFailsHelloWithTheReason) {
  WorkerOptions options = cpu_worker();
  options.backend = "cuda";
  WorkerClient worker(options);
  auto hello = worker.hello();
  if (hello.ok()) GTEST_SKIP() << "the cuda backend works here";
  EXPECT_NE(hello.error().message.find("did not start"), std::string::npos)
      << hello.error().to_string();
  EXPECT_NE(hello.error().message.find("cuda"), std::string::npos) << hello.error().to_string();
}

}  // namespace
}  // namespace moetune::tuner
