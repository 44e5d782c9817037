// Device labels: the one spelling tables, recipes and runners compare (core/device_label.hpp).
#include "core/device_label.hpp"

#include <gtest/gtest.h>

namespace moetune::core {
namespace {

TEST(DeviceLabel, CpuNamesAreCpuAndGpuNamesAreVllmsSpelling) {
  EXPECT_EQ(device_label("cpu"), "cpu");
  EXPECT_EQ(device_label("cpu: Intel(R) Xeon(R) Processor"), "cpu");
  EXPECT_EQ(device_label("NVIDIA H100 80GB HBM3"), "NVIDIA_H100_80GB_HBM3");
  EXPECT_EQ(device_label("NVIDIA H200 NVL"), "NVIDIA_H200");
  EXPECT_EQ(device_label("NVIDIA_H200"), "NVIDIA_H200");
  EXPECT_EQ(device_label(""), "");
}

TEST(DeviceLabel, ADeviceOfArchCpuIsCpuWhateverItsName) {
  DeviceInfo d = cpu_device_info();
  EXPECT_EQ(device_label(d), "cpu");
  d.arch = "sm_90a";
  d.name = "NVIDIA H100 80GB HBM3";
  EXPECT_EQ(device_label(d), "NVIDIA_H100_80GB_HBM3");
}

TEST(DeviceLabel, OtherDeviceComparesLabelsAndUnknownIsNeverOther) {
  EXPECT_TRUE(is_other_device("NVIDIA_H200", "NVIDIA_H100_80GB_HBM3"));
  EXPECT_TRUE(is_other_device("NVIDIA_H200", "cpu"));
  EXPECT_FALSE(is_other_device("NVIDIA_H200", "NVIDIA H200 NVL"));  // vLLM's H200 family
  EXPECT_FALSE(is_other_device("cpu", "cpu: AMD EPYC"));
  EXPECT_FALSE(is_other_device("", "cpu"));
  EXPECT_FALSE(is_other_device("NVIDIA_H200", ""));
}

TEST(DeviceLabel, AHandGivenNameThatWouldAddAFileNameFieldIsRefused) {
  auto ok = checked_device_label("NVIDIA H100 80GB HBM3", "MOETUNE_DEVICE_NAME");
  ASSERT_TRUE(ok.ok());
  EXPECT_EQ(*ok, "NVIDIA_H100_80GB_HBM3");
  for (char const* bad : {"", "NVIDIA_H200,family=x", "a/b", "x\ny"}) {
    auto r = checked_device_label(bad, "MOETUNE_DEVICE_NAME");
    ASSERT_FALSE(r.ok()) << bad;
    EXPECT_EQ(r.error().where, "MOETUNE_DEVICE_NAME");
    EXPECT_NE(r.error().message.find("is not a device name"), std::string::npos);
  }
}

}  // namespace
}  // namespace moetune::core
