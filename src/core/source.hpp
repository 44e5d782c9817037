// Source: the provenance of a table row or pinned row, i.e. the measurement behind it.
#pragma once

#include <map>
#include <string>

namespace moetune::core {

/// Where a row came from. A pinned row must carry one (seed 000: a row nobody can trace goes
/// stale).
struct Source {
  std::string kind;    ///< "measured" | "tuned" | "default" | "imported" (a vLLM file) | "e2e"
  std::string date;    ///< ISO date (YYYY-MM-DD) of the measurement
  std::string device;  ///< device name it was measured on ("NVIDIA H200", "cpu")
  std::string
      protocol;  ///< how it was measured ("moetune-bench-v1: graph replay, L2 flush, median")
  std::map<std::string, double> numbers;  ///< e.g. {"time_us": 31.2, "incumbent_us": 33.0}
  std::string digest;                     ///< output digest of the measured run (hex), "" when none
  std::string command;                    ///< the command that reproduces the row, "" when none

  bool operator==(Source const&) const = default;
};

/// Kinds a Source may carry; anything else is rejected with "did you mean".
inline const char* const kSourceKinds[] = {"measured", "tuned", "default", "imported", "e2e"};

}  // namespace moetune::core
