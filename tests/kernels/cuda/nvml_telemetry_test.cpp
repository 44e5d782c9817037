// NvmlTelemetry (label gpu: the sampled parts need NVML, which only the device machine has; without
// it the test checks what the bench then reports: clock 0, reasons unknown = -1).
#include "kernels/cuda/nvml_telemetry.hpp"

#include <gtest/gtest.h>

#include <chrono>
#include <thread>

namespace moetune::kernels::cuda {
namespace {

TEST(NvmlTelemetry, SampledClockReasonsAreAShareOfSamplesOrMinusOneWhenUnknown) {
  NvmlTelemetry t;
  t.start(1);
  std::this_thread::sleep_for(std::chrono::milliseconds(30));
  t.stop();
  const double power = t.fraction_with(NvmlTelemetry::kPowerReasons);
  const double thermal = t.fraction_with(NvmlTelemetry::kThermalReasons);
  const NvmlTelemetry::Reading r = t.reading();  // the same interval in one value
  EXPECT_EQ(r.power_capped, power);
  EXPECT_EQ(r.thermal_capped, thermal);
  EXPECT_EQ(r.reasons, t.reasons_seen());
  EXPECT_EQ(r.min_mhz, t.min_sm_clock_mhz());
  if (!t.available() || !t.reasons_available()) {
    EXPECT_EQ(power, -1) << "no reasons sampled must read as unknown, not as 'never capped'";
    EXPECT_EQ(thermal, -1);
    if (!t.available()) {
      EXPECT_EQ(t.min_sm_clock_mhz(), 0);
    }
    return;
  }
  EXPECT_GE(power, 0);
  EXPECT_LE(power, 1);
  EXPECT_GE(thermal, 0);
  EXPECT_LE(thermal, 1);
  // No mask bit set: no sample can match.
  EXPECT_EQ(t.fraction_with(0), 0);
  EXPECT_GT(t.min_sm_clock_mhz(), 0);
  EXPECT_LE(t.min_sm_clock_mhz(), t.median_sm_clock_mhz());
  std::printf("nvml: SM clock median %.0f MHz, min %.0f; power-capped %.2f, thermal %.2f; 0x%llx\n",
              t.median_sm_clock_mhz(), t.min_sm_clock_mhz(), power, thermal,
              t.clock_event_reasons());
}

TEST(NvmlTelemetry, NothingSampledReadsAsUnknown) {
  NvmlTelemetry t;
  EXPECT_EQ(t.fraction_with(NvmlTelemetry::kPowerReasons), -1);  // never started
}

}  // namespace
}  // namespace moetune::kernels::cuda
