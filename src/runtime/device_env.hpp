// The two environment variables that decide which device's tables serve (issue 51):
// MOETUNE_DEVICE_NAME (tests/CI: the device this machine is taken for) and
// MOETUNE_TABLES_SAME_DEVICE (1: a table made on another device is not used).
#pragma once

#include <string>

#include "core/device_info.hpp"
#include "core/result.hpp"

namespace moetune::runtime {

/// $MOETUNE_TABLES_SAME_DEVICE: unset, "" or "0" -> false, "1" -> true; anything else is
/// kInvalidArgument naming the variable and the two values it takes.
core::Result<bool> same_device_tables_from_env();

/// The sentence every user of a table from another device prints, e.g. "table T was made on
/// NVIDIA_H200, this device is NVIDIA_H100_80GB_HBM3".
std::string other_device_note(std::string const& table_path, std::string const& table_device,
                              std::string const& local);

}  // namespace moetune::runtime
