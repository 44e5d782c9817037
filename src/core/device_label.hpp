// Device labels: the one spelling of a device that table file names, recipes and runners compare
// ("NVIDIA_H200", "NVIDIA_H100_80GB_HBM3", "cpu"), so a table made on one device is never taken
// for another's without saying so (issue 51).
#pragma once

#include <string>
#include <string_view>

#include "core/device_info.hpp"
#include "core/result.hpp"

namespace moetune::core {

/// A device name as table file names spell it: "cpu" for "cpu" and any "cpu: <model>" name,
/// else vllm_device_name ("NVIDIA H100 80GB HBM3" -> "NVIDIA_H100_80GB_HBM3", any H200 ->
/// "NVIDIA_H200"). "" stays "" (unknown).
std::string device_label(std::string_view device_name);

/// The label of a device this process runs on: "cpu" for a CPU backend's device (arch "cpu"),
/// else device_label(device.name).
std::string device_label(DeviceInfo const& device);

/// Checks a device name given by hand (MOETUNE_DEVICE_NAME) and returns its label. It becomes part
/// of table file names, so only letters, digits, ' ', '_', '-', '.' and '(' ')' are accepted, at
/// most 128 of them; anything else (a ',' would add a field to the file name) is
/// kInvalidArgument at `where`.
Result<std::string> checked_device_label(std::string_view device_name, std::string const& where);
/// This machine's device label: $MOETUNE_DEVICE_NAME when set and not empty (checked by
/// checked_device_label; a bad value is kInvalidArgument naming the variable), else
/// device_label(device).
Result<std::string> local_device_label(DeviceInfo const& device);

/// True when a table labelled `table_device` was made on another device than `local` (both
/// compared as device_label). An unknown label ("") on either side is not another device.
bool is_other_device(std::string_view table_device, std::string_view local);

}  // namespace moetune::core
