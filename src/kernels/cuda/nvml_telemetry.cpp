#include "kernels/cuda/nvml_telemetry.hpp"

#include <dlfcn.h>

#include <algorithm>
#include <chrono>

namespace moetune::kernels::cuda {
namespace {
using InitFn = int (*)();
using HandleFn = int (*)(unsigned, void**);
using ClockFn = int (*)(void*, int, unsigned*);
using PowerFn = int (*)(void*, unsigned*);
using DriverFn = int (*)(char*, unsigned);
constexpr int kNvmlClockSm = 1;

template <class F>
F sym(void* lib, const char* name) {
  return lib ? reinterpret_cast<F>(dlsym(lib, name)) : nullptr;
}
}  // namespace

NvmlTelemetry::NvmlTelemetry(unsigned index) {
  lib_ = dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
  auto init = sym<InitFn>(lib_, "nvmlInit_v2");
  auto handle = sym<HandleFn>(lib_, "nvmlDeviceGetHandleByIndex_v2");
  if (init && handle && init() == 0) {
    void* d = nullptr;
    if (handle(index, &d) == 0) dev_ = d;
  }
}

std::string NvmlTelemetry::driver_version() const {
  auto f = sym<DriverFn>(lib_, "nvmlSystemGetDriverVersion");
  char buf[96] = {0};
  if (!dev_ || !f || f(buf, sizeof(buf)) != 0) return "";
  return buf;
}

unsigned NvmlTelemetry::sm_clock_mhz() const {
  auto f = sym<ClockFn>(lib_, "nvmlDeviceGetClockInfo");
  unsigned v = 0;
  if (!dev_ || !f || f(dev_, kNvmlClockSm, &v) != 0) return 0;
  return v;
}

double NvmlTelemetry::power_w() const {
  auto f = sym<PowerFn>(lib_, "nvmlDeviceGetPowerUsage");
  unsigned mw = 0;
  if (!dev_ || !f || f(dev_, &mw) != 0) return 0;
  return mw / 1000.0;
}

void NvmlTelemetry::start(int period_ms) {
  stop();
  clocks_.clear();
  powers_.clear();
  if (!available()) return;
  running_ = true;
  sampler_ = std::thread([this, period_ms] {
    while (running_) {
      clocks_.push_back(sm_clock_mhz());
      powers_.push_back(power_w());
      std::this_thread::sleep_for(std::chrono::milliseconds(period_ms));
    }
  });
}

void NvmlTelemetry::stop() {
  running_ = false;
  if (sampler_.joinable()) sampler_.join();
}

double NvmlTelemetry::median_sm_clock_mhz() const {
  if (clocks_.empty()) return sm_clock_mhz();
  std::vector<double> v = clocks_;
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

double NvmlTelemetry::max_power_w() const {
  if (powers_.empty()) return power_w();
  return *std::max_element(powers_.begin(), powers_.end());
}

}  // namespace moetune::kernels::cuda
