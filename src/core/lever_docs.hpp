// docs/levers.md, generated from a lever table (`moetune levers list --markdown`). CI compares
// the checked-in file with this text (tests/core/lever_docs_test.cpp).
#pragma once

#include <string>

#include "core/lever.hpp"

namespace moetune::core {

/// Path of the generated page, relative to the repository root.
inline constexpr char kLeverDocsPath[] = "docs/levers.md";

/// The whole page: how levers resolve, one summary table, one section per lever (description,
/// knob, rules, evidence), the retired names, and the fast paths each matrix deployment resolves
/// to with an empty environment. Deterministic: the same table gives the same bytes.
std::string lever_markdown(LeverTable const& table);

}  // namespace moetune::core
