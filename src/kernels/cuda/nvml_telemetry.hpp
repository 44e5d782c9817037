// NVML telemetry (SM clock, power, driver) loaded with dlopen, so binaries run where NVML is
// missing (they report "unavailable") and build where nvml.h is not installed.
#pragma once

#include <atomic>
#include <string>
#include <thread>
#include <vector>

namespace moetune::kernels::cuda {

class NvmlTelemetry {
 public:
  /// Loads libnvidia-ml.so.1 and opens GPU `index`; available() says whether it worked.
  explicit NvmlTelemetry(unsigned index = 0);
  bool available() const { return dev_ != nullptr; }
  std::string driver_version() const;  ///< "580.159.04", or "" when unavailable
  unsigned sm_clock_mhz() const;       ///< 0 when unavailable
  double power_w() const;              ///< 0 when unavailable

  /// Samples clock and power every `period_ms` on a background thread until stop().
  void start(int period_ms = 10);
  void stop();
  double median_sm_clock_mhz() const;
  double max_power_w() const;

 private:
  void* lib_ = nullptr;
  void* dev_ = nullptr;
  std::atomic<bool> running_{false};
  std::thread sampler_;
  std::vector<double> clocks_, powers_;
};

}  // namespace moetune::kernels::cuda
