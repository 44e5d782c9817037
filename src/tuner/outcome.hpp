// Outcome: the one result every tuner candidate ends in (STYLE 17, DESIGN "Tuner process model"),
// and the test-only fault plan (--inject-fault) that makes chosen candidates end in each failure.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>

#include "core/result.hpp"

namespace moetune::tuner {

/// Exactly one per candidate. kRejected comes from can_implement (the candidate never runs);
/// kCrashed and kTimedOut are decided by the parent from the worker's exit, the rest by the worker
/// (compile/launch/oom) or by the parent's correctness gate (kWrongResult).
enum class Outcome {
  kOk,
  kRejected,
  kCompileFailed,
  kLaunchFailed,
  kCrashed,
  kTimedOut,
  kWrongResult,
  kOom,
};
inline constexpr int kNumOutcomes = 8;

/// "ok", "rejected", "compile_failed", "launch_failed", "crashed", "timed_out", "wrong_result",
/// "oom".
std::string_view to_string(Outcome o);
/// The inverse of to_string; kParse naming the text otherwise.
core::Result<Outcome> parse_outcome(std::string_view text);

/// A fault the worker injects (test only). kNone = run the candidate as it is.
enum class FaultKind { kNone, kCompile, kLaunch, kCrash, kWrong, kNan, kHang, kOom };
/// "", "compile", "launch", "crash", "wrong", "nan", "hang", "oom".
std::string_view to_string(FaultKind f);
core::Result<FaultKind> parse_fault_kind(std::string_view text);

/// `--inject-fault KIND@N[,KIND@N...]`: N is a candidate index in creation order (0 = the
/// incumbent) or `all`. Test only: it exists so CI can prove each failure is handled (README, tune
/// --help).
struct FaultPlan {
  std::map<int, FaultKind> by_index;
  std::optional<FaultKind> all;  ///< every candidate, when set (an index entry still wins)

  /// The fault for candidate `index`, kNone when none.
  FaultKind at(int index) const;
  bool empty() const { return by_index.empty() && !all; }
  bool operator==(FaultPlan const&) const = default;
};

/// Parses "crash@3,hang@all". Errors (kInvalidArgument) name the item, what was seen and the
/// allowed kinds, with "did you mean".
core::Result<FaultPlan> parse_fault_plan(std::string_view spec);
/// The spec text again ("" when empty); parse(format(p)) == p.
std::string format_fault_plan(FaultPlan const& plan);

}  // namespace moetune::tuner
