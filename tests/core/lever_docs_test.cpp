// docs/levers.md is generated (`moetune levers list --markdown`); this fails when it is stale.
#include "core/lever_docs.hpp"

#include <fstream>
#include <sstream>

#include <gtest/gtest.h>

#include "core/lever_fixtures.hpp"
#include "core/lever_io.hpp"

namespace moetune::core {
namespace {

TEST(LeverDocs, CheckedInPageEqualsTheGeneratedOne) {
  auto const& t = builtin_lever_table();
  ASSERT_TRUE(t.ok()) << t.error().to_string();
  std::ifstream in(std::string(MOETUNE_SOURCE_DIR) + "/" + kLeverDocsPath);
  ASSERT_TRUE(in.good()) << kLeverDocsPath << " is missing";
  std::stringstream s;
  s << in.rdbuf();
  EXPECT_EQ(s.str(), lever_markdown(*t))
      << kLeverDocsPath
      << " is stale; regenerate it: build/moetune levers list --markdown > docs/levers.md";
}

TEST(LeverDocs, GenerationIsDeterministicAndSeesEveryField) {
  LeverTable t = moetune::testing::rule_table();
  std::string const page = lever_markdown(t);
  EXPECT_EQ(page, lever_markdown(t));
  // Negative twin: one changed field must change the page.
  t.levers[1].evidence.result = "max rel error 1.2e-3";
  EXPECT_NE(lever_markdown(t), page);
  EXPECT_NE(lever_markdown(t).find("- result: max rel error 1.2e-3"), std::string::npos);
  EXPECT_NE(page.find("| `MOETUNE_OLD_B` | `MOETUNE_LEVER_B` | renamed to lever b |"),
            std::string::npos);
  EXPECT_NE(page.find("| `backend=cuda,arch=sm90,tp=8,ep=8,dtype=bf16,role=decode` | a, c |"),
            std::string::npos);
}

}  // namespace
}  // namespace moetune::core
