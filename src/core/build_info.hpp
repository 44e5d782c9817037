// What build this is: the git commit the build was configured at, the provenance every
// measurement, table row and bundle records. Defined in a source CMake generates at configure time
// (src/core/build_info.cpp.in), so a new commit recompiles that one file, not every object that
// includes a core header.
#pragma once

#include <string>

namespace moetune::core {

/// `git rev-parse --short=12 HEAD` when the build was configured, or "unknown" outside a checkout.
std::string const& git_commit();

}  // namespace moetune::core
