// The host CPU as a DeviceInfo: model name from /proc/cpuinfo, hardware threads, compiler.
#include "core/device_info.hpp"

#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <thread>

namespace moetune::core {

namespace {

std::string cpu_model_name() {
  std::ifstream in("/proc/cpuinfo");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("model name", 0) != 0) continue;
    size_t const colon = line.find(':');
    if (colon == std::string::npos) continue;
    size_t const start = line.find_first_not_of(" \t", colon + 1);
    return start == std::string::npos ? "" : line.substr(start);
  }
  return "unknown";
}

std::string compiler_version() {
#if defined(__clang__)
  return "clang++ " + std::to_string(__clang_major__) + "." + std::to_string(__clang_minor__) +
         "." + std::to_string(__clang_patchlevel__);
#elif defined(__GNUC__)
  return "g++ " + std::to_string(__GNUC__) + "." + std::to_string(__GNUC_MINOR__) + "." +
         std::to_string(__GNUC_PATCHLEVEL__);
#else
  return "unknown";
#endif
}

double read_l2_bytes() {
  // Linux exposes the cache size of cpu0 as e.g. "2048K".
  for (int idx = 0; idx < 8; ++idx) {
    std::string const base = "/sys/devices/system/cpu/cpu0/cache/index" + std::to_string(idx);
    std::ifstream level_in(base + "/level");
    int level = 0;
    if (!(level_in >> level) || level != 2) continue;
    std::ifstream size_in(base + "/size");
    std::string size;
    if (!(size_in >> size) || size.empty()) return 0;
    double scale = 1;
    if (size.back() == 'K') scale = 1024;
    if (size.back() == 'M') scale = 1024 * 1024;
    try {
      return std::stod(size) * scale;
    } catch (...) {
      return 0;
    }
  }
  return 0;
}

}  // namespace

DeviceInfo cpu_device_info() {
  DeviceInfo d;
  d.name = "cpu: " + cpu_model_name();
  d.arch = "cpu";
  d.sm_count = static_cast<int>(std::thread::hardware_concurrency());
  d.driver = "";
  d.toolchain = compiler_version();
  d.l2_bytes = read_l2_bytes();
  d.smem_per_block_bytes = 0;
  return d;
}

double host_memory_bytes() {
  long const pages = ::sysconf(_SC_PHYS_PAGES);
  long const page_bytes = ::sysconf(_SC_PAGE_SIZE);
  if (pages <= 0 || page_bytes <= 0) return 0;
  return static_cast<double>(pages) * static_cast<double>(page_bytes);
}

Status check_host_bytes(double bytes, std::string const& where, std::string const& what,
                        std::string const& advice) {
  double const have = host_memory_bytes();
  if (have <= 0 || bytes <= have) return Status::Ok();
  char text[128];
  std::snprintf(text, sizeof text,
                " needs %.1f GiB of host memory, more than this machine's %.1f GiB; ",
                bytes / 1073741824.0, have / 1073741824.0);
  return make_error(ErrorCode::kInvalidArgument, where, what + text + advice);
}

}  // namespace moetune::core
