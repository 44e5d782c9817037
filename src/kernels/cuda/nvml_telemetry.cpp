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
using ReasonsFn = int (*)(void*, unsigned long long*);
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

namespace {
ReasonsFn reasons_fn(void* lib) {
  auto f = sym<ReasonsFn>(lib, "nvmlDeviceGetCurrentClocksEventReasons");
  return f ? f : sym<ReasonsFn>(lib, "nvmlDeviceGetCurrentClocksThrottleReasons");
}
}  // namespace

bool NvmlTelemetry::reasons_available() const { return dev_ && reasons_fn(lib_); }

unsigned long long NvmlTelemetry::clock_event_reasons() const {
  auto f = reasons_fn(lib_);
  unsigned long long v = 0;
  if (!dev_ || !f || f(dev_, &v) != 0) return 0;
  return v;
}

void NvmlTelemetry::start(int period_ms) {
  stop();
  clocks_.clear();
  powers_.clear();
  reasons_.clear();
  if (!available()) return;
  running_ = true;
  const bool reasons = reasons_available();
  sampler_ = std::thread([this, period_ms, reasons] {
    while (running_) {
      clocks_.push_back(sm_clock_mhz());
      powers_.push_back(power_w());
      if (reasons) reasons_.push_back(clock_event_reasons());
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

double NvmlTelemetry::min_sm_clock_mhz() const {
  if (clocks_.empty()) return sm_clock_mhz();
  return *std::min_element(clocks_.begin(), clocks_.end());
}

double NvmlTelemetry::fraction_with(unsigned long long mask) const {
  if (reasons_.empty()) return -1;
  const auto hits = std::count_if(reasons_.begin(), reasons_.end(),
                                  [mask](unsigned long long r) { return (r & mask) != 0; });
  return static_cast<double>(hits) / static_cast<double>(reasons_.size());
}

unsigned long long NvmlTelemetry::reasons_seen() const {
  unsigned long long all = 0;
  for (auto r : reasons_) all |= r;
  return all;
}

NvmlTelemetry::Reading NvmlTelemetry::reading() const {
  return {.median_mhz = median_sm_clock_mhz(),
          .min_mhz = min_sm_clock_mhz(),
          .max_power_w = max_power_w(),
          .power_capped = fraction_with(kPowerReasons),
          .thermal_capped = fraction_with(kThermalReasons),
          .reasons = reasons_seen()};
}

double NvmlTelemetry::max_power_w() const {
  if (powers_.empty()) return power_w();
  return *std::max_element(powers_.begin(), powers_.end());
}

}  // namespace moetune::kernels::cuda
