// DeviceInfo: the facts about the machine a table, measurement or cache entry was made on.
#pragma once

#include <string>

#include "core/result.hpp"

namespace moetune::core {

struct DeviceInfo {
  std::string name;       ///< "NVIDIA H200" or "cpu: <model name>"
  std::string arch;       ///< "sm_90a" or "cpu"
  int sm_count = 0;       ///< SMs, or hardware threads on the CPU
  std::string driver;     ///< driver version ("580.159.04"), "" on the CPU
  std::string toolchain;  ///< "nvcc 13.0" / "g++ 12.2.0"
  double l2_bytes = 0;
  double smem_per_block_bytes = 0;

  bool operator==(DeviceInfo const&) const = default;
};

/// The host CPU as a DeviceInfo (name from /proc/cpuinfo, threads, compiler version).
DeviceInfo cpu_device_info();

/// This machine's physical memory in bytes (sysconf), 0 when unknown.
double host_memory_bytes();

/// Refuses, before anything is allocated, a host buffer set of `bytes` (computed in double, so
/// no size overflows) larger than this machine's memory: kInvalidArgument at `where`, naming
/// `what`, both sizes in GiB and `advice`. Ok when the memory is unknown.
Status check_host_bytes(double bytes, std::string const& where, std::string const& what,
                        std::string const& advice);

}  // namespace moetune::core
