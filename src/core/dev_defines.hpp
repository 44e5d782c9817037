// The developers' kernel-variant knob $MOETUNE_DEV_NVRTC_DEFINES, parsed once for every reader:
// the JIT (kernels/cuda/jit.cpp, which turns each token into an NVRTC -D option) and `moetune ab`'s
// defines: arm item (bench/arm.cpp, which checks an arm before any process runs).
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "core/result.hpp"

namespace moetune::core {

/// The tokens of a MOETUNE_DEV_NVRTC_DEFINES value: whitespace-separated NAME or NAME=VALUE (NAME
/// a C identifier, VALUE letters, digits, '_', '.', '-'); an empty or blank value has none.
/// Anything else is kInvalidArgument at "MOETUNE_DEV_NVRTC_DEFINES" naming the token and ending
/// in `what_to_do`, so the knob cannot carry another compiler option.
Result<std::vector<std::string>> parse_dev_defines(
    std::string_view value, std::string_view what_to_do = "fix or unset the variable");

}  // namespace moetune::core
