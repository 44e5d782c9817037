// tuner/background_compile with a testbed whose compile takes 40 ms and records when and on
// which thread it ran: start returns at once and compiles on several threads, a wait covers
// exactly its own config, and stop drops what has not started and leaves nothing running.
#include "tuner/background_compile.hpp"

#include <sched.h>

#include <algorithm>
#include <chrono>
#include <mutex>
#include <set>
#include <thread>

#include <gtest/gtest.h>

#include "tuner/cpu_precompile_testbed.hpp"

namespace moetune::tuner {
namespace {

using Clock = std::chrono::steady_clock;

/// The cpu testbed, except that precompile sleeps 40 ms per call and records the call.
class SlowCompileTestbed : public testing::CpuPrecompileTestbed {
 public:
  struct Call {
    core::MoeConfig config;
    Clock::time_point begin, end;
    std::thread::id thread;
  };
  std::vector<core::Status> precompile(std::vector<core::MoeConfig> const& configs) override {
    Call call{.begin = Clock::now(), .thread = std::this_thread::get_id()};
    std::this_thread::sleep_for(std::chrono::milliseconds(40));
    call.end = Clock::now();
    std::lock_guard<std::mutex> lock(mutex_);
    for (core::MoeConfig const& c : configs) {
      call.config = c;
      calls_.push_back(call);
    }
    return std::vector<core::Status>(configs.size(), core::Status::Ok());
  }
  std::vector<Call> calls() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return calls_;
  }

 private:
  mutable std::mutex mutex_;
  std::vector<Call> calls_;
};

std::vector<core::MoeConfig> distinct_configs(int n) {
  std::vector<core::MoeConfig> out(n);
  for (int i = 0; i < n; ++i) out[i].gemm1.tile.block_n = 16 * (i + 1);
  return out;
}

TEST(BackgroundCompile, StartReturnsAtOnceAndCompilesOnSeveralThreads) {
  SlowCompileTestbed bed;
  BackgroundCompile compile(bed, 4);
  auto const configs = distinct_configs(8);
  auto const before = Clock::now();
  compile.start(configs);
  EXPECT_LT(Clock::now() - before, std::chrono::milliseconds(30));  // one compile takes 40
  compile.wait_for(configs.back());
  compile.stop();
  auto const calls = bed.calls();
  ASSERT_EQ(calls.size(), 8u);
  EXPECT_EQ(compile.finished(), 8);
  std::set<std::thread::id> threads;
  for (auto const& c : calls) threads.insert(c.thread);
  EXPECT_GE(threads.size(), 2u);
  EXPECT_EQ(threads.count(std::this_thread::get_id()), 0u);  // never on the answering thread
}

TEST(BackgroundCompile, AWaitReturnsOnlyOnceItsOwnConfigIsCompiled) {
  SlowCompileTestbed bed;
  BackgroundCompile compile(bed, 2);
  auto const configs = distinct_configs(6);
  compile.start(configs);
  compile.wait_for(configs[3]);
  auto const now = Clock::now();
  bool seen = false;
  for (auto const& c : bed.calls()) {
    if (c.config == configs[3]) {
      seen = true;
      EXPECT_LE(c.end, now);
    }
  }
  EXPECT_TRUE(seen) << "wait_for returned before its config was compiled";
  auto const before = Clock::now();
  compile.wait_for(core::MoeConfig{});  // never queued: no wait
  EXPECT_LT(Clock::now() - before, std::chrono::milliseconds(20));
}

TEST(BackgroundCompile, StopDropsWhatHasNotStartedAndLeavesNothingRunning) {
  SlowCompileTestbed bed;
  BackgroundCompile compile(bed, 2);
  compile.start(distinct_configs(20));
  std::this_thread::sleep_for(std::chrono::milliseconds(10));
  compile.stop();
  auto const stopped = Clock::now();
  auto const calls = bed.calls();
  EXPECT_GE(calls.size(), 1u);   // what was compiling finished
  EXPECT_LT(calls.size(), 20u);  // the rest was dropped
  for (auto const& c : calls) EXPECT_LE(c.end, stopped);
  std::this_thread::sleep_for(std::chrono::milliseconds(60));
  EXPECT_EQ(bed.calls().size(), calls.size());  // and nothing started after stop
}

TEST(BackgroundCompile, UsesTheCpusThisProcessMayRunOnLessOne) {
  unsigned const threads = background_compile_threads();
  cpu_set_t set;
  ASSERT_EQ(sched_getaffinity(0, sizeof(set), &set), 0);
  EXPECT_EQ(threads, static_cast<unsigned>(std::max(1, CPU_COUNT(&set) - 1)));
}

}  // namespace
}  // namespace moetune::tuner
