// NVML telemetry (SM clock, power, clock event reasons, driver) loaded with dlopen, so binaries run
// where NVML is missing (they report "unavailable") and build where nvml.h is not installed.
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

  /// Why the SM clock is below its maximum now: NVML's clock event reasons (the kReason* bits;
  /// nvmlDeviceGetCurrentClocksEventReasons, or ...ThrottleReasons on older drivers); 0 when
  /// nothing holds it down or NVML is unavailable. reasons_available() says which.
  unsigned long long clock_event_reasons() const;
  bool reasons_available() const;
  static constexpr unsigned long long kReasonSwPowerCap = 0x4;     ///< at the board power limit
  static constexpr unsigned long long kReasonHwSlowdown = 0x8;     ///< HW slowdown (power, heat)
  static constexpr unsigned long long kReasonSwThermal = 0x20;     ///< driver thermal slowdown
  static constexpr unsigned long long kReasonHwThermal = 0x40;     ///< HW thermal slowdown
  static constexpr unsigned long long kReasonHwPowerBrake = 0x80;  ///< external power brake
  /// The power reasons (power limit, power brake) and the thermal ones (SW / HW thermal, HW
  /// slowdown).
  static constexpr unsigned long long kPowerReasons = kReasonSwPowerCap | kReasonHwPowerBrake;
  static constexpr unsigned long long kThermalReasons =
      kReasonSwThermal | kReasonHwThermal | kReasonHwSlowdown;

  /// Samples clock, power and clock event reasons every `period_ms` on a background thread until
  /// stop(); the accessors below read the samples of the last start()..stop().
  void start(int period_ms = 10);
  void stop();
  double median_sm_clock_mhz() const;
  double min_sm_clock_mhz() const;  ///< the lowest sample; the clock now without samples
  double max_power_w() const;
  /// Share of the samples whose reasons include a bit of `mask`, in [0, 1]; -1 when the reasons
  /// are unavailable or nothing was sampled.
  double fraction_with(unsigned long long mask) const;
  /// Every reason any sample gave, OR-ed (0: none, or unavailable).
  unsigned long long reasons_seen() const;

  /// The last start()..stop() in one value: what the benchmark records per timed interval.
  struct Reading {
    double median_mhz = 0, min_mhz = 0, max_power_w = 0;
    double power_capped = -1, thermal_capped = -1;  ///< fraction_with(kPower / kThermalReasons)
    unsigned long long reasons = 0;                 ///< reasons_seen()
  };
  Reading reading() const;

 private:
  void* lib_ = nullptr;
  void* dev_ = nullptr;
  std::atomic<bool> running_{false};
  std::thread sampler_;
  std::vector<double> clocks_, powers_;
  std::vector<unsigned long long> reasons_;
};

}  // namespace moetune::kernels::cuda
