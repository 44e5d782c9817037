// Levers: named kernel fast paths with a class, a per-deployment default rule, dependencies,
// exclusions, where they are served, an environment knob, retired names and the evidence behind
// the class. This file holds the data types and the rules over a Deployment; resolution (the
// environment) is lever_resolve.hpp, the table file and docs are lever_io.hpp. The table itself
// is levers/levers.json, compiled into the binary (DESIGN.md "Lever"; docs/levers.md).
#pragma once

#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "core/result.hpp"

namespace moetune::core {

/// What a lever may change about the output.
enum class LeverClass {
  kBitwise,      ///< output bits equal the lever-off path's (a test compares them)
  kNumeric,      ///< output differs within a recorded band (max relative error measured)
  kCorrectness,  ///< output differs; states what must match across ranks or runs
  /// output may differ between runs of the same inputs (float atomics in arrival order), each run
  /// within a recorded band of the reference; never on by default (validate refuses default_on)
  kNondeterministic,
};
std::string_view to_string(LeverClass c);
Result<LeverClass> parse_lever_class(std::string_view text);

/// Where a kernel runs and in which role: the input of every lever rule. Written
/// "backend=cuda,arch=sm90,tp=8,ep=8,dtype=bf16,role=decode" (every key required).
struct Deployment {
  std::string backend = "cuda";  ///< cpu | cuda
  std::string arch = "sm90";     ///< cpu | sm80 | sm90 | sm100 (cpu exactly when backend = cpu)
  int tp = 1;                    ///< tensor-parallel ranks, >= 1
  int ep = 1;                    ///< expert-parallel ranks, >= 1
  std::string dtype = "bf16";    ///< bf16 | fp16 | fp32
  std::string role = "decode";   ///< prefill | decode

  bool operator==(Deployment const&) const = default;
};

/// The keys of a Deployment, in print order.
std::vector<std::string> const& deployment_keys();
/// "backend=cuda,arch=sm90,tp=1,ep=1,dtype=bf16,role=decode"; parse_deployment(to_string(d)) == d.
std::string to_string(Deployment const& d);
/// The value of `key` in `d` as text ("8" for tp = 8); "" for an unknown key.
std::string deployment_value(Deployment const& d, std::string_view key);
/// Parses KEY=VAL,... (all six keys, each once). Fails (kInvalidArgument, where = `where`) on an
/// unknown key (did you mean), a missing or repeated key, or a value outside its set.
Result<Deployment> parse_deployment(std::string_view text, std::string const& where);
/// Ok, or why `d` is not a deployment (value outside its set, backend/arch mismatch).
Status validate(Deployment const& d, std::string const& where);

/// A conjunction: every listed key's value must be one of its alternatives. An alternative is a
/// literal ("sm90", "8") or, for tp and ep, a bound ">=8" / "<=2". The empty clause matches all.
using LeverClause = std::map<std::string, std::vector<std::string>>;
/// A disjunction of clauses: [] matches nowhere, [{}] everywhere.
using LeverCondition = std::vector<LeverClause>;

/// True when some clause of `c` matches `d`.
bool matches(LeverCondition const& c, Deployment const& d);
/// Index of the first clause of `c` matching `d`, or -1.
int matching_clause(LeverCondition const& c, Deployment const& d);
/// "backend=cuda and tp in {>=8}"; "everywhere" for {}.
std::string to_string(LeverClause const& c);
/// Clauses joined by " or "; "nowhere" for [], "everywhere" when a clause is empty.
std::string to_string(LeverCondition const& c);

/// The check that backs a lever's class.
struct LeverEvidence {
  std::string check;    ///< "path: Suite.Test" of the test that runs
  std::string runs_on;  ///< cpu (CI) | gpu (device runs)
  std::string claim;    ///< what the check asserts (bits equal, max rel error <= x, ...)
  std::string result;   ///< the recorded numbers of the last reported run; "" until reported

  bool operator==(LeverEvidence const&) const = default;
};

/// One lever. `name` is also the FastPaths field it sets and, upper-cased, its knob suffix.
struct Lever {
  std::string name;
  std::string description;
  LeverClass lever_class = LeverClass::kBitwise;
  LeverCondition served_at;   ///< where the code path exists; elsewhere the knob is refused
  LeverCondition default_on;  ///< where it is on with no knob (within served_at)
  std::vector<std::string> depends_on;      ///< levers that must be on for this one to be on
  std::vector<std::string> exclusive_with;  ///< levers that may not be on together with it
  LeverEvidence evidence;

  bool operator==(Lever const&) const = default;
};

/// An environment variable that used to switch a path and now fails loudly.
struct RetiredName {
  std::string name;         ///< the full variable, "MOETUNE_..."
  std::string replacement;  ///< the lever that replaces it; "" = removed without one
  std::string reason;       ///< why it was retired (one clause)

  bool operator==(RetiredName const&) const = default;
};

/// The whole table: levers in resolution-independent order, retired names and the deployment
/// matrix `moetune levers diff` and docs/levers.md resolve at.
struct LeverTable {
  static constexpr int kSchemaVersion = 1;
  static constexpr int kOldestSupported = 1;
  int lever_table_version = kSchemaVersion;
  std::vector<Deployment> deployments;
  std::vector<Lever> levers;
  std::vector<RetiredName> retired;

  bool operator==(LeverTable const&) const = default;
  /// The lever called `name`, or nullptr.
  Lever const* find(std::string_view name) const;
};

/// "MOETUNE_LEVER_" + upper-case name: the lever's environment knob.
std::string knob_name(std::string_view lever_name);
inline constexpr char kLeverKnobPrefix[] = "MOETUNE_LEVER_";

/// Ok, or the first inconsistency of `t` (where = `where`): a name not [a-z][a-z0-9_]*, a
/// duplicate, a depends_on/exclusive_with naming no lever (did you mean) or itself, a dependency
/// cycle, a condition key a Deployment lacks (did you mean) or a malformed tp/ep alternative, a
/// retired name that is not MOETUNE_* or is a live knob, a replacement that is no lever, an invalid
/// matrix deployment.
Status validate(LeverTable const& t, std::string const& where);

/// Lever names in an order where every lever comes after those it depends on (table order
/// otherwise). Assumes validate() passed.
std::vector<std::string> dependency_order(LeverTable const& t);

}  // namespace moetune::core
