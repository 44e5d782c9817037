// Clock and power telemetry per series. On the GPU: NVML (SM clock median, power max) sampled on a
// background thread while a series runs; on the CPU: the mean "cpu MHz" of /proc/cpuinfo at start
// and stop (no power counter is read). Either way the record says what it is.
#pragma once

#include <memory>
#include <string>

namespace moetune::bench {

/// What one series saw.
struct SeriesTelemetry {
  double sm_clock_mhz = 0;  ///< GPU: median SM clock; CPU: mean core MHz; 0 when unavailable
  double power_w = 0;       ///< GPU: max board power; 0 when unavailable (always on the CPU)
};

class TelemetrySampler {
 public:
  virtual ~TelemetrySampler() = default;
  virtual void start() = 0;
  virtual SeriesTelemetry stop() = 0;
  /// A one-off reading (env.json's clocks).
  virtual SeriesTelemetry now() const = 0;
  /// "nvml", "/proc/cpuinfo", or why there is nothing.
  virtual std::string source() const = 0;
  /// GPU driver version, "" on the CPU.
  virtual std::string driver() const = 0;
};

/// The sampler for a backend ("cpu" | "cuda"). For cuda without NVML, a sampler that reports 0
/// and says why.
std::unique_ptr<TelemetrySampler> make_telemetry(std::string const& backend_name);

}  // namespace moetune::bench
