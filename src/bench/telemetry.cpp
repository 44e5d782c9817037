// Telemetry samplers; see telemetry.hpp.
#include "bench/telemetry.hpp"

#include <fstream>
#include <sstream>

#if MOETUNE_HAVE_CUDA
#include "kernels/cuda/nvml_telemetry.hpp"
#endif

namespace moetune::bench {
namespace {

double mean_cpu_mhz() {
  std::ifstream in("/proc/cpuinfo");
  std::string line;
  double sum = 0;
  int n = 0;
  while (std::getline(in, line)) {
    if (line.rfind("cpu MHz", 0) != 0) continue;
    auto colon = line.find(':');
    if (colon == std::string::npos) continue;
    sum += std::strtod(line.c_str() + colon + 1, nullptr);
    ++n;
  }
  return n > 0 ? sum / n : 0;
}

class CpuTelemetry final : public TelemetrySampler {
 public:
  void start() override { start_mhz_ = mean_cpu_mhz(); }
  SeriesTelemetry stop() override {
    double const end = mean_cpu_mhz();
    return {.sm_clock_mhz = start_mhz_ > 0 && end > 0 ? 0.5 * (start_mhz_ + end) : end,
            .power_w = 0};
  }
  SeriesTelemetry now() const override { return {.sm_clock_mhz = mean_cpu_mhz(), .power_w = 0}; }
  std::string source() const override {
    return "/proc/cpuinfo cpu MHz (mean over cores, start and stop of a series); no power";
  }
  std::string driver() const override { return ""; }

 private:
  double start_mhz_ = 0;
};

#if MOETUNE_HAVE_CUDA
class NvmlSampler final : public TelemetrySampler {
 public:
  void start() override { nvml_.start(5); }
  SeriesTelemetry stop() override {
    nvml_.stop();
    return {.sm_clock_mhz = nvml_.median_sm_clock_mhz(), .power_w = nvml_.max_power_w()};
  }
  SeriesTelemetry now() const override {
    return {.sm_clock_mhz = static_cast<double>(nvml_.sm_clock_mhz()), .power_w = nvml_.power_w()};
  }
  std::string source() const override {
    return nvml_.available() ? "nvml: SM clock median and power max, sampled every 5 ms"
                             : "nvml unavailable (libnvidia-ml.so.1 not loaded)";
  }
  std::string driver() const override { return nvml_.driver_version(); }

 private:
  kernels::cuda::NvmlTelemetry nvml_;
};
#endif

}  // namespace

std::unique_ptr<TelemetrySampler> make_telemetry(std::string const& backend_name) {
#if MOETUNE_HAVE_CUDA
  if (backend_name == "cuda") return std::make_unique<NvmlSampler>();
#endif
  (void)backend_name;
  return std::make_unique<CpuTelemetry>();
}

}  // namespace moetune::bench
