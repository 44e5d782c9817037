// FreshCubinCache: a test's own cubin cache folder for its scope (the JIT compile tests);
// ScopedDefines: $MOETUNE_DEV_NVRTC_DEFINES for a scope (kernel source variants).
#pragma once

#include <cstdlib>
#include <filesystem>
#include <string>

#include "../../core/temp_dir.hpp"

namespace moetune::kernels::cuda::testing {

/// Points MOETUNE_CACHE_DIR at a fresh folder for the scope (the ptxas report comes only with a
/// real compile, not from the cubin cache) and restores the old value after.
class FreshCubinCache {
 public:
  explicit FreshCubinCache(std::string const& tag) : dir_(moetune::testing::unique_temp_dir(tag)) {
    const char* old = std::getenv("MOETUNE_CACHE_DIR");
    had_ = old != nullptr;
    if (had_) saved_ = old;
    ::setenv("MOETUNE_CACHE_DIR", dir_.c_str(), 1);
  }
  ~FreshCubinCache() {
    std::error_code ec;
    std::filesystem::remove_all(dir_, ec);
    if (had_)
      ::setenv("MOETUNE_CACHE_DIR", saved_.c_str(), 1);
    else
      ::unsetenv("MOETUNE_CACHE_DIR");
  }
  bool ok() const { return !dir_.empty(); }

 private:
  std::string dir_, saved_;
  bool had_ = false;
};

/// Sets MOETUNE_DEV_NVRTC_DEFINES for the scope and restores the old value after.
class ScopedDefines {
 public:
  explicit ScopedDefines(const char* value) {
    const char* old = std::getenv("MOETUNE_DEV_NVRTC_DEFINES");
    had_ = old != nullptr;
    if (had_) saved_ = old;
    ::setenv("MOETUNE_DEV_NVRTC_DEFINES", value, 1);
  }
  ~ScopedDefines() {
    if (had_)
      ::setenv("MOETUNE_DEV_NVRTC_DEFINES", saved_.c_str(), 1);
    else
      ::unsetenv("MOETUNE_DEV_NVRTC_DEFINES");
  }

 private:
  std::string saved_;
  bool had_ = false;
};

}  // namespace moetune::kernels::cuda::testing
