// The repository's own artefacts through the binary: the shipped tables equal what the demo recipe
// generates and lint clean, and the README documents every subcommand and env var `--help` lists.
#include <filesystem>
#include <string>
#include <utility>

#include "cli/cli_test_util.hpp"

namespace moetune::cli::testing {
namespace {

using CliRepo = CliTest;

std::string const kSource = MOETUNE_SOURCE_DIR;

TEST_F(CliRepo, ShippedCpuTablesMatchTheDemoRecipe) {
  RunResult r = run(
      {"check", "--recipe", kSource + "/recipes/demo.json", "--tables", kSource + "/tables/cpu"});
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
}

TEST_F(CliRepo, ShippedCpuTablesLintClean) {
  RunResult r = run(
      {"lint", "--tables", kSource + "/tables/cpu", "--recipe", kSource + "/recipes/demo.json"});
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
}

TEST_F(CliRepo, ShippedGpuTablesLintCleanAgainstTheirRecipes) {
  for (auto const& [tables, recipe] :
       {std::pair<std::string, std::string>{"NVIDIA_H200", "h200.json"},
        std::pair<std::string, std::string>{"NVIDIA_H100_80GB_HBM3", "h100-fp8.json"}}) {
    RunResult r = run({"lint", "--tables", kSource + "/tables/" + tables, "--recipe",
                       kSource + "/recipes/" + recipe});
    EXPECT_EQ(r.exit_code, 0) << tables << ": " << r.out << r.err;
  }
}

// Every shipped recipe is read by the recipe parser the tuner uses (materialize writes its
// pinned rows, and a file per shape), so a recipe no command could take never ships.
TEST_F(CliRepo, EveryShippedRecipeParsesAndMaterializes) {
  int recipes = 0;
  for (auto const& e : std::filesystem::directory_iterator(kSource + "/recipes")) {
    if (e.path().extension() != ".json") continue;
    const std::string out = path("out-" + e.path().stem().string()).string();
    RunResult r = run({"materialize", "--recipe", e.path().string(), "--out", out});
    EXPECT_EQ(r.exit_code, 0) << e.path() << ": " << r.out << r.err;
    EXPECT_TRUE(std::filesystem::exists(out) && !std::filesystem::is_empty(out))
        << e.path() << ": nothing written";
    ++recipes;
  }
  EXPECT_GE(recipes, 9);
}

TEST_F(CliRepo, ReadmeDocumentsEverySubcommandAndEnvVarInHelp) {
  std::string const readme = read_text(kSource + "/README.md");
  ASSERT_EQ(readme.rfind("```sh\n./scripts/demo.sh", 0), 0u) << "README must start with the demo";
  RunResult help = run({"--help"});
  ASSERT_EQ(help.exit_code, 0);
  for (char const* cmd : {"tune", "resolve", "materialize", "check", "lint", "show"}) {
    EXPECT_NE(help.out.find(cmd), std::string::npos) << cmd;
    EXPECT_NE(readme.find(std::string("moetune ") + cmd), std::string::npos) << cmd;
  }
  for (char const* var : {"MOETUNE_BACKEND", "MOETUNE_CACHE_DIR"}) {
    EXPECT_NE(help.out.find(var), std::string::npos) << var;
    EXPECT_NE(readme.find(var), std::string::npos) << var;
  }
}

}  // namespace
}  // namespace moetune::cli::testing
