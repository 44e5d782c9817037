// A tiny cpu recipe for CLI tests (E=4, K=64, I=32, top_k=2; tunes in well under a second), the
// name of its table, and small text edits to derive broken variants from it.
#pragma once

#include <string>

#include <gtest/gtest.h>

namespace moetune::cli::testing {

inline constexpr char kTinyTableName[] = "E=4,N=32,device_name=cpu,family=cpu_tiled.json";

/// The tiny recipe. Bucket 1 is pinned (with a full source); 4 and 16 are left to the tuner.
inline std::string tiny_recipe_json() {
  return R"({
  "recipe_version": 1,
  "name": "tiny",
  "shapes": [
    {
      "name": "tiny",
      "problem": {"hidden_size": 64, "intermediate_size": 32, "num_experts": 4, "top_k": 2,
                  "activation": "silu", "dtype": "bf16", "arch": "cpu"},
      "device": "cpu",
      "backend": "cpu",
      "family": "cpu_tiled",
      "family_version": 1,
      "buckets": [1, 4, 16],
      "routing": {"kind": "uniform", "seed": 7},
      "pinned_rows": {
        "1": {
          "config": {"gemm1": {"tile": {"block_m": 8, "block_n": 32, "block_k": 64, "group_m": 1}}},
          "source": {"kind": "measured", "date": "2026-11-29", "device": "cpu",
                     "protocol": "test fixture", "numbers": {"time_us": 1.5, "default_us": 2.0},
                     "digest": "00ff", "command": "moetune tune --recipe recipe.json --buckets 1"}
        }
      }
    }
  ]
}
)";
}

/// Replaces the first occurrence of `from` in `text` (the test fails if there is none).
inline void replace_once(std::string& text, std::string const& from, std::string const& to) {
  size_t at = text.find(from);
  ASSERT_NE(at, std::string::npos) << "fixture lacks " << from;
  text.replace(at, from.size(), to);
}

}  // namespace moetune::cli::testing
