// Seeded routing generators. Everything random comes from std::mt19937_64 (its output sequence
// is fixed by the standard) through our own uniform/normal transforms, never std::*_distribution
// (their algorithms differ between standard libraries), so a seed gives bitwise the same ids.
#include "core/routing.hpp"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <numeric>
#include <random>

#include "core/atomic_file.hpp"
#include "core/names.hpp"
#include "core/problem.hpp"

namespace moetune::core {

namespace {

struct KindName {
  RoutingKind kind;
  const char* name;
};
constexpr KindName kKindNames[] = {{RoutingKind::kUniform, "uniform"},
                                   {RoutingKind::kBalanced, "balanced"},
                                   {RoutingKind::kBlockPermutation, "block_permutation"},
                                   {RoutingKind::kZipf, "zipf"},
                                   {RoutingKind::kTrace, "trace"},
                                   {RoutingKind::kSingleExpert, "single_expert"}};

class Rng {
 public:
  explicit Rng(uint64_t seed) : gen_(seed) {}
  /// Uniform in [0, 1) with 53 random bits.
  double uniform() { return static_cast<double>(gen_() >> 11) * 0x1.0p-53; }
  /// Standard normal by Box-Muller (both outputs used).
  double normal() {
    if (has_spare_) {
      has_spare_ = false;
      return spare_;
    }
    double const u1 = 1.0 - uniform();  // (0, 1]: log is finite
    double const u2 = uniform();
    double const r = std::sqrt(-2.0 * std::log(u1));
    double const theta = 2.0 * 3.14159265358979323846 * u2;
    spare_ = r * std::sin(theta);
    has_spare_ = true;
    return r * std::cos(theta);
  }
  /// Uniform integer in [0, n) without modulo bias (rejection).
  uint64_t below(uint64_t n) {
    uint64_t const limit = UINT64_MAX - UINT64_MAX % n;
    uint64_t x = gen_();
    while (x >= limit) x = gen_();
    return x % n;
  }

 private:
  std::mt19937_64 gen_;
  bool has_spare_ = false;
  double spare_ = 0;
};

/// softmax(randn(E)) for one token, in double.
void softmax_of_randn(Rng& rng, std::vector<double>& probs) {
  double max_logit = -INFINITY;
  for (double& p : probs) {
    p = rng.normal();
    max_logit = std::max(max_logit, p);
  }
  double sum = 0;
  for (double& p : probs) {
    p = std::exp(p - max_logit);
    sum += p;
  }
  for (double& p : probs) p /= sum;
}

/// Indices of the k largest probs, descending; ties go to the lower index.
void pick_top_k(std::vector<double> const& probs, int64_t k, std::vector<int32_t>& ids) {
  ids.resize(probs.size());
  std::iota(ids.begin(), ids.end(), 0);
  std::partial_sort(ids.begin(), ids.begin() + k, ids.end(), [&](int32_t a, int32_t b) {
    return probs[a] != probs[b] ? probs[a] > probs[b] : a < b;
  });
  ids.resize(static_cast<size_t>(k));
}

std::string format_double(double v) {
  char buf[64];
  for (int prec = 1; prec <= 17; ++prec) {
    std::snprintf(buf, sizeof buf, "%.*g", prec, v);
    if (std::strtod(buf, nullptr) == v) break;
  }
  return buf;
}

Result<std::vector<std::vector<int32_t>>> read_trace(std::string const& path) {
  auto text = read_file(path);
  if (!text.ok()) return text.error();
  // Both forms reduce to rows of integers: JSON [[..],[..]] rows are the inner brackets,
  // the plain form's rows are lines.
  bool const json = text->find('[') != std::string::npos;
  std::vector<std::vector<int32_t>> rows;
  std::vector<int32_t> row;
  int depth = 0;
  std::string const& s = *text;
  for (size_t i = 0; i < s.size();) {
    char const c = s[i];
    if ((c >= '0' && c <= '9') || c == '-') {
      int64_t v = 0;
      auto [ptr, ec] = std::from_chars(s.data() + i, s.data() + s.size(), v);
      if (ec != std::errc() || v < 0 || v > INT32_MAX) {
        return make_error(
            ErrorCode::kParse, path,
            "bad expert id near byte " + std::to_string(i) + "; expected non-negative integers");
      }
      row.push_back(static_cast<int32_t>(v));
      i = static_cast<size_t>(ptr - s.data());
      continue;
    }
    bool const row_end = json ? (c == ']' && depth == 2) : c == '\n';
    if (c == '[') ++depth;
    if (c == ']') --depth;
    if (row_end && !row.empty()) rows.push_back(std::move(row)), row.clear();
    if (!(c == ' ' || c == '\t' || c == '\r' || c == '\n' || c == ',' || c == '[' || c == ']')) {
      return make_error(ErrorCode::kParse, path,
                        std::string("unexpected character '") + c + "' at byte " +
                            std::to_string(i) + "; expected rows of expert ids");
    }
    ++i;
  }
  if (!row.empty()) rows.push_back(std::move(row));
  if (rows.empty()) return make_error(ErrorCode::kParse, path, "trace has no rows");
  return rows;
}

}  // namespace

std::string_view to_string(RoutingKind k) {
  for (auto const& n : kKindNames) {
    if (n.kind == k) return n.name;
  }
  return "uniform";
}

namespace {

/// One "key=value" parameter of a routing spec into r (s for zipf, block for block_permutation).
Status parse_routing_param(std::string const& param, std::string const& where, RoutingProfile& r) {
  size_t const eq = param.find('=');
  std::string const key = param.substr(0, eq);
  std::string const value = eq == std::string::npos ? "" : param.substr(eq + 1);
  char* end = nullptr;
  if (key == "s") {
    r.zipf_s = std::strtod(value.c_str(), &end);
    if (value.empty() || *end != '\0' || !validate(r).ok()) {
      return make_error(ErrorCode::kInvalidArgument, where,
                        "s='" + clip(value) + "' is not a finite number >= 0");
    }
    return Status::Ok();
  }
  if (key == "block") {
    r.block = std::strtoll(value.c_str(), &end, 10);
    if (value.empty() || *end != '\0' || r.block < 1) {
      return make_error(ErrorCode::kInvalidArgument, where,
                        "block='" + clip(value) + "' is not an integer >= 1");
    }
    return Status::Ok();
  }
  return make_error(ErrorCode::kInvalidArgument, where,
                    "unknown parameter '" + clip(key) + "'; expected s=X or block=N" +
                        did_you_mean(key, {"s", "block"}));
}

/// The spec's trailing ",seed=N" into r.seed; `body` becomes the spec without it.
Status take_routing_seed(std::string_view spec, std::string const& where, RoutingProfile& r,
                         std::string_view& body) {
  body = spec;
  size_t const seed_pos = spec.rfind(",seed=");
  if (seed_pos == std::string_view::npos) return Status::Ok();
  std::string_view const seed = spec.substr(seed_pos + 6);
  auto [ptr, ec] = std::from_chars(seed.data(), seed.data() + seed.size(), r.seed);
  if (ec != std::errc() || ptr != seed.data() + seed.size() || seed.empty()) {
    return make_error(ErrorCode::kInvalidArgument, where,
                      "seed '" + clip(seed) + "' is not a non-negative integer");
  }
  body = spec.substr(0, seed_pos);
  return Status::Ok();
}

}  // namespace

Result<RoutingProfile> parse_routing(std::string_view spec) {
  std::string const where = "routing '" + clip(spec) + "'";
  RoutingProfile r;
  std::string_view body;
  MOETUNE_RETURN_IF_ERROR(take_routing_seed(spec, where, r, body));
  size_t const colon = body.find(':');
  std::string const kind(body.substr(0, colon));
  std::vector<std::string> names;
  bool found = false;
  for (auto const& n : kKindNames) {
    names.emplace_back(n.name);
    if (kind == n.name) r.kind = n.kind, found = true;
  }
  if (!found) {
    return make_error(ErrorCode::kInvalidArgument, where,
                      "unknown routing '" + clip(kind) +
                          "'; expected uniform, balanced, block_permutation[:block=N], "
                          "zipf[:s=X], trace:PATH or single_expert" +
                          did_you_mean(kind, names));
  }
  std::string_view rest = colon == std::string_view::npos ? "" : body.substr(colon + 1);
  if (r.kind == RoutingKind::kTrace) {
    if (rest.empty()) {
      return make_error(ErrorCode::kInvalidArgument, where, "trace needs a path: trace:PATH");
    }
    r.trace_path = std::string(rest);
    return r;
  }
  while (!rest.empty()) {
    size_t const next = std::min(rest.find(':'), rest.size());
    MOETUNE_RETURN_IF_ERROR(parse_routing_param(std::string(rest.substr(0, next)), where, r));
    rest = next < rest.size() ? rest.substr(next + 1) : "";
  }
  return r;
}

Status validate(RoutingProfile const& r) {
  if (!std::isfinite(r.zipf_s) || r.zipf_s < 0) {
    return make_error(ErrorCode::kInvalidArgument, "routing",
                      "zipf_s = " + format_double(r.zipf_s) +
                          " is out of range; expected a finite number >= 0 (1.2 is typical)");
  }
  if (r.block < 1) {
    return make_error(
        ErrorCode::kInvalidArgument, "routing",
        "block = " + std::to_string(r.block) + " is out of range; expected tokens per block >= 1");
  }
  if (r.kind == RoutingKind::kTrace && r.trace_path.empty()) {
    return make_error(ErrorCode::kInvalidArgument, "routing",
                      "trace_path is empty; a trace routing names its file");
  }
  return Status::Ok();
}

std::string format_routing(RoutingProfile const& r) {
  RoutingProfile const d;
  std::string s(to_string(r.kind));
  if (r.kind == RoutingKind::kTrace) {
    s += ":" + r.trace_path;
  } else {
    if (r.kind == RoutingKind::kZipf || r.zipf_s != d.zipf_s) s += ":s=" + format_double(r.zipf_s);
    if (r.kind == RoutingKind::kBlockPermutation || r.block != d.block) {
      s += ":block=" + std::to_string(r.block);
    }
  }
  return s + ",seed=" + std::to_string(r.seed);
}

namespace {

/// Zipf: top_k experts drawn in sequence without replacement, weights 1/rank^s (`zipf_w`). Only
/// experts with a positive remaining weight are ever picked; when every remaining weight has
/// underflowed to 0 (s in the hundreds), the best-ranked expert not yet chosen is taken, the
/// distribution's limit as s grows. One uniform draw per pick either way (determinism).
void zipf_ids(Rng& rng, std::vector<double> const& zipf_w, int64_t top_k,
              std::vector<int32_t>& ids) {
  std::vector<double> w = zipf_w;
  std::vector<char> chosen(w.size(), 0);
  int64_t const num_experts = static_cast<int64_t>(w.size());
  ids.clear();
  for (int64_t j = 0; j < top_k; ++j) {
    double const total = std::accumulate(w.begin(), w.end(), 0.0);
    double x = rng.uniform() * total;
    int64_t pick = -1;
    for (int64_t e = 0; e < num_experts && total > 0; ++e) {
      if (!(w[e] > 0)) continue;
      pick = e;  // the last positive weight takes any rounding at the end of the range
      if (x < w[e]) break;
      x -= w[e];
    }
    if (pick < 0) pick = std::find(chosen.begin(), chosen.end(), 0) - chosen.begin();
    ids.push_back(static_cast<int32_t>(pick));
    w[pick] = 0;
    chosen[pick] = 1;
  }
}

/// Block permutation: a fresh shuffle of the experts every `block` tokens (at token t), whose
/// first top_k are every token's ids in the block.
void block_permutation_ids(Rng& rng, int64_t t, int64_t block, int64_t top_k,
                           std::vector<int32_t>& perm, std::vector<int32_t>& ids) {
  if (t % block == 0) {
    std::iota(perm.begin(), perm.end(), 0);
    for (int64_t i = static_cast<int64_t>(perm.size()) - 1; i > 0; --i) {
      std::swap(perm[i], perm[rng.below(static_cast<uint64_t>(i + 1))]);
    }
  }
  ids.assign(perm.begin(), perm.begin() + top_k);
}

/// Trace: token t takes row t mod rows; a row must hold top_k distinct ids below E.
Status trace_ids(std::vector<std::vector<int32_t>> const& trace, std::string const& path, int64_t t,
                 int64_t top_k, int64_t num_experts, std::vector<int32_t>& ids) {
  auto const& row = trace[static_cast<size_t>(t) % trace.size()];
  std::string const row_where =
      path + ": row " + std::to_string(static_cast<size_t>(t) % trace.size());
  if (static_cast<int64_t>(row.size()) != top_k) {
    return make_error(ErrorCode::kMismatch, row_where,
                      "has " + std::to_string(row.size()) + " ids but top_k is " +
                          std::to_string(top_k) + "; record the trace with this top_k");
  }
  ids = row;
  for (size_t j = 0; j < ids.size(); ++j) {
    if (ids[j] >= num_experts || std::count(ids.begin(), ids.end(), ids[j]) != 1) {
      return make_error(ErrorCode::kMismatch, row_where,
                        "expert id " + std::to_string(ids[j]) +
                            " is repeated or >= E=" + std::to_string(num_experts));
    }
  }
  return Status::Ok();
}

}  // namespace

Result<Routing> generate_routing(RoutingProfile const& profile, int64_t num_tokens,
                                 int64_t num_experts, int64_t top_k) {
  MOETUNE_RETURN_IF_ERROR(validate(profile));
  std::string const where = "routing " + format_routing(profile);
  if (num_tokens < 0 || num_tokens > kMaxTokens || num_experts < 1 || top_k < 1 ||
      top_k > num_experts || num_experts > INT32_MAX) {
    return make_error(ErrorCode::kInvalidArgument, where,
                      "M=" + std::to_string(num_tokens) + ", E=" + std::to_string(num_experts) +
                          ", top_k=" + std::to_string(top_k) +
                          " is not a valid routing; expected 0 <= M <= 2^24 and 1 <= top_k <= E");
  }
  std::vector<std::vector<int32_t>> trace;
  if (profile.kind == RoutingKind::kTrace) {
    auto t = read_trace(profile.trace_path);
    if (!t.ok()) return t.error();
    trace = std::move(*t);
  }
  Rng rng(profile.seed);
  Routing out{num_tokens, top_k, {}, {}};
  out.topk_ids.reserve(static_cast<size_t>(num_tokens * top_k));
  out.topk_weights.reserve(static_cast<size_t>(num_tokens * top_k));
  std::vector<double> probs(static_cast<size_t>(num_experts));
  std::vector<int32_t> ids;
  std::vector<int32_t> block_perm(static_cast<size_t>(num_experts));
  std::vector<double> zipf_w(static_cast<size_t>(num_experts));
  for (int64_t e = 0; e < num_experts; ++e) {
    zipf_w[e] = 1.0 / std::pow(static_cast<double>(e + 1), profile.zipf_s);
  }
  for (int64_t t = 0; t < num_tokens; ++t) {
    // Every kind draws the token's logits first, so weights are softmax probabilities always.
    softmax_of_randn(rng, probs);
    switch (profile.kind) {
      case RoutingKind::kUniform: pick_top_k(probs, top_k, ids); break;
      case RoutingKind::kBalanced:
        ids.clear();
        for (int64_t j = 0; j < top_k; ++j) ids.push_back((t * top_k + j) % num_experts);
        break;
      case RoutingKind::kBlockPermutation:
        block_permutation_ids(rng, t, profile.block, top_k, block_perm, ids);
        break;
      case RoutingKind::kZipf: zipf_ids(rng, zipf_w, top_k, ids); break;
      case RoutingKind::kTrace:
        MOETUNE_RETURN_IF_ERROR(trace_ids(trace, profile.trace_path, t, top_k, num_experts, ids));
        break;
      case RoutingKind::kSingleExpert: {
        std::vector<double> forced = probs;
        forced[0] = 2.0;  // above every probability: expert 0 is always the first choice
        pick_top_k(forced, top_k, ids);
        break;
      }
    }
    for (int32_t id : ids) {
      out.topk_ids.push_back(id);
      out.topk_weights.push_back(static_cast<float>(probs[id]));
    }
  }
  return out;
}

int64_t experts_hit(Routing const& r, int64_t num_experts) {
  std::vector<char> hit(static_cast<size_t>(std::max<int64_t>(num_experts, 0)), 0);
  for (int32_t id : r.topk_ids) {
    if (id >= 0 && id < num_experts) hit[id] = 1;
  }
  return std::count(hit.begin(), hit.end(), 1);
}

}  // namespace moetune::core
