// Positive paths of materialize, check, show and resolve through the built binary.
#include <algorithm>
#include <cstdlib>
#include <string>
#include <vector>

#include "cli/cli_test_util.hpp"
#include "cli/recipe_fixtures.hpp"

namespace moetune::cli::testing {
namespace {

/// The seed-000 table: eight keys, written by hand as vLLM writes them (no manifest).
std::string seed000_vllm_table() {
  std::string text = "{\n";
  std::vector<int> keys = {16, 49, 80, 113, 144, 511, 512, 513};
  for (size_t i = 0; i < keys.size(); ++i) {
    text += "    \"" + std::to_string(keys[i]) +
            "\": {\"BLOCK_SIZE_M\": 32, \"BLOCK_SIZE_N\": 64, \"BLOCK_SIZE_K\": 64, "
            "\"GROUP_SIZE_M\": 16, \"num_warps\": 8, \"num_stages\": 2}" +
            (i + 1 < keys.size() ? ",\n" : "\n");
  }
  return text + "}\n";
}

/// vLLM's get_moe_configs lookup: min(keys, key=lambda x: abs(x - M)) over keys in file order
/// (ascending), so ties go to the smaller key.
int vllm_nearest(std::vector<int> const& keys, int m) {
  int best = keys.front();
  for (int k : keys) {
    if (std::abs(k - m) < std::abs(best - m)) best = k;
  }
  return best;
}

/// The value of a top-level number field in a one-object JSON text ("key": 113).
std::string json_field(std::string const& text, std::string const& name) {
  size_t at = text.find("\"" + name + "\":");
  if (at == std::string::npos) return "";
  at = text.find_first_not_of(" ", at + name.size() + 3);
  size_t end = text.find_first_of(",\n}", at);
  return text.substr(at, end - at);
}

using CliTables = CliTest;

TEST_F(CliTables, MaterializeThenCheckRoundTrips) {
  write("recipe.json", tiny_recipe_json());
  RunResult m = run({"materialize", "--recipe", "recipe.json", "--out", "tables"});
  ASSERT_EQ(m.exit_code, 0) << m.err;
  EXPECT_NE(m.out.find(kTinyTableName), std::string::npos) << m.out;
  RunResult c = run({"check", "--recipe", "recipe.json", "--tables", "tables"});
  EXPECT_EQ(c.exit_code, 0) << c.out << c.err;
  EXPECT_EQ(c.err, "");
}

TEST_F(CliTables, CheckFindsAChangedRowAndNamesFileAndBucket) {
  write("recipe.json", tiny_recipe_json());
  ASSERT_EQ(run({"materialize", "--recipe", "recipe.json", "--out", "tables"}).exit_code, 0);
  std::string changed = tiny_recipe_json();
  replace_once(changed, "\"block_n\": 32", "\"block_n\": 64");
  write("changed.json", changed);
  std::string const before = read(std::string("tables/") + kTinyTableName);
  RunResult c = run({"check", "--recipe", "changed.json", "--tables", "tables"});
  EXPECT_EQ(c.exit_code, 1) << c.out << c.err;
  EXPECT_NE(c.out.find(kTinyTableName), std::string::npos) << c.out;
  EXPECT_NE(c.out.find("bucket 1"), std::string::npos) << c.out;
  EXPECT_EQ(count_lines(c.err), 1) << c.err;
  EXPECT_EQ(read(std::string("tables/") + kTinyTableName), before);  // check never writes
}

TEST_F(CliTables, MaterializeWithoutMergeDropsUnpinnedRowsAndWithMergeKeepsThem) {
  write("recipe.json", tiny_recipe_json());
  std::string const table = std::string("tables/") + kTinyTableName;
  write(table,
        "{\"64\": {\"BLOCK_SIZE_M\": 16, \"BLOCK_SIZE_N\": 32, \"BLOCK_SIZE_K\": 64, "
        "\"GROUP_SIZE_M\": 1, \"num_warps\": 4, \"num_stages\": 2}}\n");
  ASSERT_EQ(run({"materialize", "--recipe", "recipe.json", "--out", "tables", "--merge"}).exit_code,
            0);
  EXPECT_NE(read(table).find("\"64\""), std::string::npos);
  EXPECT_NE(read(table).find("\"1\""), std::string::npos);
  ASSERT_EQ(run({"materialize", "--recipe", "recipe.json", "--out", "tables"}).exit_code, 0);
  EXPECT_EQ(read(table).find("\"64\""), std::string::npos);
}

TEST_F(CliTables, ResolveJsonHasExactlyTheContractFields) {
  write("recipe.json", tiny_recipe_json());
  ASSERT_EQ(run({"materialize", "--recipe", "recipe.json", "--out", "tables"}).exit_code, 0);
  RunResult r =
      run({"resolve", "--table", std::string("tables/") + kTinyTableName, "--m", "3", "--json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(top_level_keys(r.out),
            (std::vector<std::string>{"m", "key", "rule", "config", "source", "explain",
                                      "engine_fields", "absent_fields"}))
      << r.out;
  EXPECT_EQ(json_field(r.out, "m"), "3");
  EXPECT_EQ(json_field(r.out, "key"), "1");
  EXPECT_EQ(json_field(r.out, "rule"), "\"nearest_key\"");
}

TEST_F(CliTables, ResolveAgreesWithVllmNearestKeyRule) {
  std::string const table = "vllm/E=128,N=1856,device_name=MTT_S5000.json";
  write(table, seed000_vllm_table());
  std::vector<int> const keys = {16, 49, 80, 113, 144, 511, 512, 513};
  std::vector<int> ms = {0,   1,   7,   14,  21,  28,  32,  33,  64,  65,  96,  97,
                         115, 120, 128, 129, 327, 328, 511, 512, 513, 514, 4096};
  for (int m : ms) {
    RunResult r = run({"resolve", "--table", table, "--m", std::to_string(m), "--json"});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_EQ(json_field(r.out, "key"), std::to_string(vllm_nearest(keys, m))) << "M=" << m;
  }
  RunResult text = run({"resolve", "--table", table, "--m", "115"});
  EXPECT_EQ(text.exit_code, 0) << text.err;
  EXPECT_NE(text.out.find("M=115 -> key 113"), std::string::npos) << text.out;
}

TEST_F(CliTables, PolicyDefaultsComeFromTheBackendOfTheTablesFamily) {
  std::string text = tiny_recipe_json();
  replace_once(text, "\"buckets\": [1, 4, 16],",
               "\"buckets\": [1, 4, 16], \"policy\": {\"tiny_m_threshold\": 2},");
  write("recipe.json", text);
  ASSERT_EQ(run({"materialize", "--recipe", "recipe.json", "--out", "tables"}).exit_code, 0);
  RunResult r =
      run({"resolve", "--table", std::string("tables/") + kTinyTableName, "--m", "1", "--json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(json_field(r.out, "rule"), "\"tiny_m_gate\"") << r.out;
  EXPECT_EQ(json_field(r.out, "key"), "null") << r.out;
  // cpu_tiled's documented default at M=1, E=4, top_k=2: one pair per expert -> block_m 8.
  EXPECT_NE(r.out.find("\"block_m\": 8"), std::string::npos) << r.out;
}

TEST_F(CliTables, ShowPrintsEveryRowAsTextAndJson) {
  write("recipe.json", tiny_recipe_json());
  ASSERT_EQ(run({"materialize", "--recipe", "recipe.json", "--out", "tables"}).exit_code, 0);
  std::string const table = std::string("tables/") + kTinyTableName;
  RunResult t = run({"show", "--table", table});
  ASSERT_EQ(t.exit_code, 0) << t.err;
  EXPECT_NE(t.out.find("measured 2026-11-29"), std::string::npos) << t.out;
  RunResult j = run({"show", "--table", table, "--json"});
  ASSERT_EQ(j.exit_code, 0) << j.err;
  EXPECT_EQ(top_level_keys(j.out),
            (std::vector<std::string>{"file", "key", "policy", "has_manifest", "rows"}));
}

}  // namespace
}  // namespace moetune::cli::testing
