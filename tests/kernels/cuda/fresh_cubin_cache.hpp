// FreshCubinCache: a test's own cubin cache folder for its scope (the JIT compile tests);
// ScopedDefines: $MOETUNE_DEV_NVRTC_DEFINES for a scope (kernel source variants).
#pragma once

#include <filesystem>
#include <string>

#include "../../core/scoped_env.hpp"
#include "../../core/temp_dir.hpp"

namespace moetune::kernels::cuda::testing {

/// Points MOETUNE_CACHE_DIR at a fresh folder for the scope (the ptxas report comes only with a
/// real compile, not from the cubin cache) and restores the old value after.
class FreshCubinCache {
 public:
  explicit FreshCubinCache(std::string const& tag)
      : dir_(moetune::testing::unique_temp_dir(tag)), env_("MOETUNE_CACHE_DIR", dir_.c_str()) {}
  ~FreshCubinCache() {
    std::error_code ec;
    std::filesystem::remove_all(dir_, ec);
  }
  bool ok() const { return !dir_.empty(); }

 private:
  std::string dir_;
  moetune::testing::ScopedEnv env_;
};

/// Sets MOETUNE_DEV_NVRTC_DEFINES for the scope and restores the old value after.
struct ScopedDefines : moetune::testing::ScopedEnv {
  explicit ScopedDefines(const char* value) : ScopedEnv("MOETUNE_DEV_NVRTC_DEFINES", value) {}
};

}  // namespace moetune::kernels::cuda::testing
