// BackgroundCompile: see background_compile.hpp.
#include "tuner/background_compile.hpp"

#include <sched.h>

#include <algorithm>
#include <exception>

namespace moetune::tuner {

BackgroundCompile::BackgroundCompile(kernels::Testbed& bed, unsigned threads)
    : bed_(bed), threads_(std::max(1u, threads)) {}

void BackgroundCompile::start(std::vector<core::MoeConfig> configs) {
  stop();
  {
    std::lock_guard<std::mutex> lock(mutex_);
    queue_.assign(configs.begin(), configs.end());
  }
  size_t const n = std::min<size_t>(threads_, configs.size());
  for (size_t i = 0; i < n; ++i) pool_.emplace_back([this] { work(); });
}

void BackgroundCompile::work() {
  std::unique_lock<std::mutex> lock(mutex_);
  while (!queue_.empty()) {
    core::MoeConfig const config = queue_.front();
    queue_.pop_front();
    running_.push_back(config);
    lock.unlock();
    try {
      (void)bed_.precompile({config});  // a failure is found again by the config's own check
    } catch (std::exception const&) {
      // Same: the check compiles it again and answers the error as its outcome.
    }
    lock.lock();
    running_.erase(std::find(running_.begin(), running_.end(), config));
    ++finished_;
    changed_.notify_all();
  }
}

void BackgroundCompile::wait_for(core::MoeConfig const& config) {
  std::unique_lock<std::mutex> lock(mutex_);
  changed_.wait(lock, [&] {
    return std::find(queue_.begin(), queue_.end(), config) == queue_.end() &&
           std::find(running_.begin(), running_.end(), config) == running_.end();
  });
}

void BackgroundCompile::stop() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    queue_.clear();
  }
  for (std::thread& t : pool_) t.join();
  pool_.clear();
}

int BackgroundCompile::finished() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return finished_;
}

unsigned background_compile_threads() {
  cpu_set_t set;
  CPU_ZERO(&set);
  int cpus = 0;
  if (sched_getaffinity(0, sizeof(set), &set) == 0) cpus = CPU_COUNT(&set);
  if (cpus <= 0) cpus = static_cast<int>(std::thread::hardware_concurrency());
  return static_cast<unsigned>(std::max(1, cpus - 1));
}

}  // namespace moetune::tuner
