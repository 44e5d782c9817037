// Outcome and FaultPlan names and parsing; see outcome.hpp.
#include "tuner/outcome.hpp"

#include <array>
#include <charconv>
#include <vector>

#include "core/names.hpp"

namespace moetune::tuner {
namespace {

constexpr std::array<std::string_view, kNumOutcomes> kOutcomeNames = {
    "ok",      "rejected",  "compile_failed", "launch_failed",
    "crashed", "timed_out", "wrong_result",   "oom"};
constexpr std::array<std::string_view, 8> kFaultNames = {"",      "compile", "launch", "crash",
                                                         "wrong", "nan",     "hang",   "oom"};

core::Error bad_fault(std::string_view spec, std::string_view item, std::string message) {
  return core::make_error(core::ErrorCode::kInvalidArgument,
                          "--inject-fault '" + std::string(spec) + "'",
                          "'" + std::string(item) + "' " + message);
}

}  // namespace

std::string_view to_string(Outcome o) { return kOutcomeNames[static_cast<size_t>(o)]; }

core::Result<Outcome> parse_outcome(std::string_view text) {
  for (size_t i = 0; i < kOutcomeNames.size(); ++i) {
    if (kOutcomeNames[i] == text) return static_cast<Outcome>(i);
  }
  return core::make_error(core::ErrorCode::kParse, "outcome",
                          "unknown outcome '" + std::string(text) +
                              "'; expected ok, rejected, compile_failed, launch_failed, crashed, "
                              "timed_out, wrong_result or oom");
}

std::string_view to_string(FaultKind f) { return kFaultNames[static_cast<size_t>(f)]; }

core::Result<FaultKind> parse_fault_kind(std::string_view text) {
  for (size_t i = 1; i < kFaultNames.size(); ++i) {
    if (kFaultNames[i] == text) return static_cast<FaultKind>(i);
  }
  std::vector<std::string> const names(kFaultNames.begin() + 1, kFaultNames.end());
  return core::make_error(core::ErrorCode::kInvalidArgument, "fault",
                          "unknown fault kind '" + std::string(text) +
                              "'; expected compile, launch, crash, wrong, nan, hang or oom" +
                              core::did_you_mean(text, names));
}

FaultKind FaultPlan::at(int index) const {
  auto it = by_index.find(index);
  if (it != by_index.end()) return it->second;
  return all.value_or(FaultKind::kNone);
}

core::Result<FaultPlan> parse_fault_plan(std::string_view spec) {
  FaultPlan plan;
  size_t start = 0;
  while (start <= spec.size()) {
    size_t const comma = std::min(spec.find(',', start), spec.size());
    std::string_view const item = spec.substr(start, comma - start);
    start = comma + 1;
    if (item.empty() && spec.empty()) break;
    size_t const at = item.find('@');
    if (at == std::string_view::npos) {
      return bad_fault(spec, item, "has no '@'; write KIND@N or KIND@all, e.g. crash@3");
    }
    auto kind = parse_fault_kind(item.substr(0, at));
    if (!kind.ok()) return bad_fault(spec, item, "names " + kind.error().message);
    std::string_view const where = item.substr(at + 1);
    if (where == "all") {
      plan.all = *kind;
      continue;
    }
    int index = -1;
    auto [end, ec] = std::from_chars(where.data(), where.data() + where.size(), index);
    if (ec != std::errc() || end != where.data() + where.size() || index < 0) {
      return bad_fault(spec, item,
                       "has index '" + std::string(where) +
                           "', not a candidate index >= 0 or 'all'; e.g. crash@3");
    }
    plan.by_index[index] = *kind;
  }
  return plan;
}

std::string format_fault_plan(FaultPlan const& plan) {
  std::string out;
  for (auto const& [index, kind] : plan.by_index) {
    out += (out.empty() ? "" : ",") + std::string(to_string(kind)) + "@" + std::to_string(index);
  }
  if (plan.all) out += (out.empty() ? "" : ",") + std::string(to_string(*plan.all)) + "@all";
  return out;
}

}  // namespace moetune::tuner
