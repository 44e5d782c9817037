// `moetune lint`: finds the seed-000 shadowing (a stale tiny-M row with no measurement, in a plain
// vLLM file) and is quiet on a clean, tuned table.
#include <string>

#include "cli/cli_test_util.hpp"
#include "cli/recipe_fixtures.hpp"

namespace moetune::cli::testing {
namespace {

/// The tiny shape's table as vLLM would ship it: a tiny-M key 16 carried over from an older map
/// (not the default, no measurement), and one large-M key.
std::string stale_vllm_table() {
  return "{\n"
         "    \"16\": {\"BLOCK_SIZE_M\": 32, \"BLOCK_SIZE_N\": 64, \"BLOCK_SIZE_K\": 64, "
         "\"GROUP_SIZE_M\": 16, \"num_warps\": 4, \"num_stages\": 2},\n"
         "    \"512\": {\"BLOCK_SIZE_M\": 64, \"BLOCK_SIZE_N\": 64, \"BLOCK_SIZE_K\": 64, "
         "\"GROUP_SIZE_M\": 1, \"num_warps\": 4, \"num_stages\": 2}\n"
         "}\n";
}

using CliLint = CliTest;

TEST_F(CliLint, FindsTheStaleTinyMRowThatShadowsTheDefault) {
  write("recipe.json", tiny_recipe_json());
  write(std::string("shipped/") + kTinyTableName, stale_vllm_table());
  RunResult r = run({"lint", "--tables", "shipped", "--recipe", "recipe.json"});
  EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
  EXPECT_NE(r.out.find(std::string("shipped/") + kTinyTableName + ": M=16: tiny_m_shadow:"),
            std::string::npos)
      << r.out;
  EXPECT_EQ(r.out.find("M=512: tiny_m_shadow"), std::string::npos) << r.out;

  RunResult j = run({"lint", "--tables", "shipped", "--recipe", "recipe.json", "--json"});
  EXPECT_EQ(j.exit_code, 1);
  EXPECT_NE(j.out.find("\"kind\": \"tiny_m_shadow\", \"file\": \"shipped/"), std::string::npos)
      << j.out;
}

TEST_F(CliLint, WithoutARecipeAPlainVllmFileIsNotJudgedAgainstAGuessedDefault) {
  write("shipped/E=4,N=32,device_name=cpu.json", stale_vllm_table());  // the engines' name
  RunResult r = run({"lint", "--tables", "shipped"});
  EXPECT_EQ(r.out.find("tiny_m_shadow"), std::string::npos) << r.out;
  EXPECT_NE(r.err.find("pass --recipe"), std::string::npos) << r.err;
}

TEST_F(CliLint, IsQuietOnACleanTunedTable) {
  write("recipe.json", tiny_recipe_json());
  RunResult t =
      run({"tune", "--recipe", "recipe.json", "--out", "tables", "--reps", "1", "--warmup", "0"});
  ASSERT_EQ(t.exit_code, 0) << t.err;
  RunResult r = run({"lint", "--tables", "tables", "--recipe", "recipe.json"});
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_EQ(r.out, "lint: tables: no findings\n");
  EXPECT_EQ(r.err, "");
}

TEST_F(CliLint, MissingDirectoryIsBadInput) {
  RunResult r = run({"lint", "--tables", "nowhere"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.err,
            "moetune lint: nowhere: not a directory; pass the folder that holds the tables (e.g. "
            "--tables tables/cpu)\n");
}

}  // namespace
}  // namespace moetune::cli::testing
