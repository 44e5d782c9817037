// jit: compiles sm90 kernel instantiations with NVRTC into a cubin, cached on disk.
// The cache key hashes everything that changes the artefact (STYLE 16): the embedded sources, the
// name expressions, the compile options, the arch and the NVRTC version. Cache files are
// published by atomic rename, so concurrent compilers (tuner workers) never see a torn file.
// Needs no GPU: CI compiles every config a shipped table names.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "core/result.hpp"

namespace moetune::kernels::cuda {

/// A compiled module: cubin bytes and the lowered (mangled) name of each name expression.
struct JitModule {
  std::string cubin;
  std::map<std::string, std::string> lowered;  ///< name expression -> mangled symbol
  std::string cache_path;                      ///< file it came from or was written to
  bool from_cache = false;
  double compile_ms = 0;  ///< 0 when loaded from the cache
  std::string ptxas_log;  ///< registers/smem per kernel (ptxas -v)
};

/// Where cubins are cached: $MOETUNE_CACHE_DIR/cubin, else $XDG_CACHE_HOME/moetune/cubin, else
/// ~/.cache/moetune/cubin.
std::string cubin_cache_dir();

/// Compiles (or loads from the cache) one module holding every kernel in `name_exprs`
/// (e.g. "&moetune_dev::moe_combine_kernel") for `arch` ("sm_90a"). Errors carry the NVRTC log.
core::Result<JitModule> compile_module(std::vector<std::string> const& name_exprs,
                                       std::string const& arch = "sm_90a");

/// The extra NVRTC options of $MOETUNE_DEV_NVRTC_DEFINES, given its value (null or empty: none):
/// whitespace-separated NAME or NAME=VALUE, each one "-DNAME[=VALUE]" (NAME a C identifier, VALUE
/// letters, digits, '_', '.', '-'). A developer's knob for A/B-ing a source variant the kernels
/// select by macro (e.g. MOETUNE_TMA_WEIGHT_L2=1, sm90_tma.cuh) without a rebuild; compile_module
/// adds them to every compile and to the cache key, so each variant gets its own cubins. Anything
/// else is refused (kInvalidArgument naming the token), so the knob cannot pass other options.
core::Result<std::vector<std::string>> dev_nvrtc_defines(const char* value);

/// NVRTC's version as "13.0".
std::string nvrtc_version();

}  // namespace moetune::kernels::cuda
