// A fresh, unique temporary directory per call (mkdtemp), so tests never collide when ctest runs
// them in parallel or two checkouts test at once.
#pragma once

#include <stdlib.h>

#include <filesystem>
#include <string>

namespace moetune::testing {

inline std::string unique_temp_dir(std::string const& name) {
  std::string tmpl =
      (std::filesystem::temp_directory_path() / ("moetune_" + name + "_XXXXXX")).string();
  if (mkdtemp(tmpl.data()) == nullptr) return {};
  return tmpl;
}

}  // namespace moetune::testing
