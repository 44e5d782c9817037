// RoutingProfile: how tokens pick experts in a generated workload, seeded and deterministic.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/result.hpp"

namespace moetune::core {

enum class RoutingKind {
  kUniform,           ///< top-k of softmax(randn(M, E)) per token (the baseline's protocol)
  kBalanced,          ///< round-robin: every expert gets M*k/E pairs (+-1)
  kBlockPermutation,  ///< tokens in blocks share a permuted expert set (seed 004's realistic
                      ///< routing)
  kZipf,              ///< expert popularity ~ 1/rank^s
  kTrace,             ///< recorded top-k ids from a file
  kSingleExpert,      ///< every token's first choice is expert 0 (the "all to one expert" case)
};
std::string_view to_string(RoutingKind k);  ///< "uniform", "balanced", "block_permutation", "zipf",
                                            ///< "trace", "single_expert"

/// A routing profile. Spec form: "uniform", "balanced", "block_permutation[:block=64]",
/// "zipf[:s=1.2]", "trace:PATH", "single_expert", each optionally ",seed=N".
struct RoutingProfile {
  RoutingKind kind = RoutingKind::kUniform;
  uint64_t seed = 0;
  double zipf_s = 1.2;
  int64_t block = 64;      ///< block_permutation: tokens per block
  std::string trace_path;  ///< trace: file of rows "id id ... id" (top_k per line) or JSON [[..]]

  bool operator==(RoutingProfile const&) const = default;
};

/// The one check of a profile's values, shared by parse_routing (the CLI) and the JSON readers
/// (recipes): zipf_s finite and >= 0, block >= 1, a trace with a path. kInvalidArgument names
/// the field, the value and the range.
Status validate(RoutingProfile const& r);

/// Parses a spec (the form above) and validates it.
Result<RoutingProfile> parse_routing(std::string_view spec);
std::string format_routing(RoutingProfile const& r);  ///< parse(format(r)) == r

/// Top-k routing of M tokens over E experts: ids [M*top_k] (distinct per token) and fp32 weights
/// [M*top_k] (softmax probabilities of the chosen experts, not renormalised, as in the baseline).
struct Routing {
  int64_t num_tokens = 0;
  int64_t top_k = 0;
  std::vector<int32_t> topk_ids;
  std::vector<float> topk_weights;
};

/// Generates routing; the same (profile, M, E, top_k) gives bitwise the same result. Fails on an
/// invalid profile (validate) or sizes. Every id is in [0, E) and distinct per token, whatever
/// the profile (a zipf_s so large that every weight but the first underflows included).
Result<Routing> generate_routing(RoutingProfile const& profile, int64_t num_tokens,
                                 int64_t num_experts, int64_t top_k);

/// Number of distinct experts with at least one token.
int64_t experts_hit(Routing const& r, int64_t num_experts);

}  // namespace moetune::core
