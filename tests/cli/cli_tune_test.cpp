// `moetune tune` on the cpu backend: the table it writes loads, pinned rows win, tuned rows carry
// their measurement, --merge keeps rows a run does not tune, and the result passes `check`.
#include <cstdint>
#include <string>

#include "cli/cli_test_util.hpp"
#include "cli/recipe_fixtures.hpp"
#include "core/table.hpp"

namespace moetune::cli::testing {
namespace {

using CliTune = CliTest;

TEST_F(CliTune, TuneOnCpuWritesATableThatLoads) {
  write("recipe.json", tiny_recipe_json());
  RunResult r = run({"tune", "--recipe", "recipe.json", "--backend", "cpu", "--out", "tables",
                     "--reps", "2", "--warmup", "1"});
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("bucket 1: pinned"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("bucket 4: "), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("bucket 16: "), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("table tables/"), std::string::npos) << r.out;  // the table at the end

  auto table = core::load_table(path(std::string("tables/") + kTinyTableName).string());
  ASSERT_TRUE(table.ok()) << table.error().to_string();
  ASSERT_EQ(table->rows.size(), 3u);
  EXPECT_TRUE(table->has_manifest);
  EXPECT_EQ(table->key.hidden_size, 64);
  EXPECT_EQ(table->key.top_k, 2);
  EXPECT_EQ(table->key.family, "cpu_tiled");
  ASSERT_TRUE(table->rows.at(1).source.has_value());
  EXPECT_EQ(table->rows.at(1).source->kind, "measured");  // the pinned row wins
  EXPECT_EQ(table->rows.at(1).config.gemm1.tile.block_m, 8);
  for (int64_t bucket : {4, 16}) {
    auto const& source = table->rows.at(bucket).source;
    ASSERT_TRUE(source.has_value()) << bucket;
    EXPECT_EQ(source->kind, "tuned");
    EXPECT_EQ(source->device.rfind("cpu", 0), 0u) << source->device;
    for (char const* n :
         {"time_us", "ci_low_us", "ci_high_us", "default_us", "tie", "candidates", "rejected"}) {
      EXPECT_EQ(source->numbers.count(n), 1u) << bucket << " lacks " << n;
    }
    EXPECT_GT(source->numbers.at("time_us"), 0);
    EXPECT_FALSE(source->digest.empty());
    EXPECT_NE(source->command.find("--buckets " + std::to_string(bucket)), std::string::npos);
  }

  RunResult c = run({"check", "--recipe", "recipe.json", "--tables", "tables"});
  EXPECT_EQ(c.exit_code, 0) << c.out << c.err;
  RunResult resolve =
      run({"resolve", "--table", std::string("tables/") + kTinyTableName, "--m", "5"});
  EXPECT_EQ(resolve.exit_code, 0) << resolve.err;
  EXPECT_NE(resolve.out.find("M=5 -> key 4"), std::string::npos) << resolve.out;
}

TEST_F(CliTune, MergeKeepsRowsTheRunDoesNotTune) {
  write("recipe.json", tiny_recipe_json());
  std::string const table = std::string("tables/") + kTinyTableName;
  ASSERT_EQ(run({"tune", "--recipe", "recipe.json", "--out", "tables", "--reps", "1", "--warmup",
                 "0", "--buckets", "16"})
                .exit_code,
            0);
  RunResult r = run({"tune", "--recipe", "recipe.json", "--out", "tables", "--reps", "1",
                     "--warmup", "0", "--buckets", "4", "--merge", "--json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(top_level_keys(r.out),
            (std::vector<std::string>{"shapes", "store", "run", "elapsed_s"}))
      << r.out;
  auto merged = core::load_table(path(table).string());
  ASSERT_TRUE(merged.ok()) << merged.error().to_string();
  EXPECT_EQ(merged->rows.count(16), 1u);
  EXPECT_EQ(merged->rows.count(4), 1u);
  EXPECT_EQ(merged->rows.count(1), 1u);  // pinned rows are always written

  ASSERT_EQ(run({"tune", "--recipe", "recipe.json", "--out", "tables", "--reps", "1", "--warmup",
                 "0", "--buckets", "4"})
                .exit_code,
            0);
  auto replaced = core::load_table(path(table).string());
  ASSERT_TRUE(replaced.ok());
  EXPECT_EQ(replaced->rows.count(16), 0u);  // without --merge the table holds only this run
}

TEST_F(CliTune, CudaRecipeWithoutAGpuSaysSo) {
  std::string text = tiny_recipe_json();
  replace_once(text, "\"backend\": \"cpu\"", "\"backend\": \"cuda\"");
  replace_once(text, "\"family\": \"cpu_tiled\"", "\"family\": \"sm90_gather\"");
  write("cuda.json", text);
  RunResult probe = run({"tune", "--recipe", "cuda.json", "--out", "tables", "--buckets", "4",
                         "--reps", "1", "--warmup", "0"});
  if (probe.exit_code == 0) GTEST_SKIP() << "a GPU is visible; the no-GPU message cannot show";
  EXPECT_EQ(probe.exit_code, 2) << probe.err;
  EXPECT_EQ(count_lines(probe.err), 1) << probe.err;
  EXPECT_NE(probe.err.find("cuda.json: shapes[0] (tiny): the recipe's backend is cuda, which is "
                           "unavailable here"),
            std::string::npos)
      << probe.err;
}

TEST_F(CliTune, EachRowCarriesTheCommandThatReproducesIt) {
  write("recipe.json", tiny_recipe_json());
  RunResult r = run({"tune", "--recipe", "recipe.json", "--out", "tables", "--buckets", "4",
                     "--reps", "3", "--warmup", "0"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto table = core::load_table(path(std::string("tables/") + kTinyTableName).string());
  ASSERT_TRUE(table.ok());
  EXPECT_EQ(table->rows.at(4).source->command,
            "moetune tune --recipe recipe.json --buckets 4 --backend cpu --out tables --merge "
            "--reps 3 --warmup 0 --margin 0.01 --timeout-s 10");
  // One result line per bucket: winner, its time and CI, the incumbent's, the verdict.
  EXPECT_NE(r.out.find("bucket 4: "), std::string::npos) << r.out;
  EXPECT_NE(r.out.find(" incumbent "), std::string::npos) << r.out;
  EXPECT_NE(r.out.find(" us ["), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("pruned "), std::string::npos) << r.out;
}

/// The number after `"key": ` in a JSON text, -1 when absent.
int64_t json_int(std::string const& text, std::string const& key) {
  size_t const at = text.find("\"" + key + "\": ");
  return at == std::string::npos ? -1 : std::stoll(text.substr(at + key.size() + 4));
}

TEST_F(CliTune, ExhaustiveMeasuresMoreAndSaysSoInTheReproduceCommand) {
  write("recipe.json", tiny_recipe_json());
  RunResult quick = run({"tune", "--recipe", "recipe.json", "--out", "quick", "--buckets", "4",
                         "--reps", "2", "--warmup", "0", "--json"});
  ASSERT_EQ(quick.exit_code, 0) << quick.err;
  RunResult full = run({"tune", "--recipe", "recipe.json", "--out", "full", "--buckets", "4",
                        "--reps", "2", "--warmup", "0", "--json", "--exhaustive"});
  ASSERT_EQ(full.exit_code, 0) << full.err;
  EXPECT_NE(quick.out.find("\"per_gemm\": true"), std::string::npos) << quick.out;
  EXPECT_GT(json_int(quick.out, "joint_product"), json_int(quick.out, "measured"));
  EXPECT_GT(json_int(full.out, "measured"), json_int(quick.out, "measured")) << full.out;
  auto table = core::load_table(path(std::string("full/") + kTinyTableName).string());
  ASSERT_TRUE(table.ok()) << table.error().to_string();
  std::string const& command = table->rows.at(4).source->command;
  EXPECT_EQ(command.substr(command.size() - 13), " --exhaustive");
  EXPECT_NE(table->rows.at(4).source->protocol.find("exhaustive"), std::string::npos);
}

TEST_F(CliTune, PairedPassesIsTheDefaultAndTurningItOffKeysItsOwnMeasurements) {
  write("recipe.json", tiny_recipe_json());
  RunResult paired = run({"tune", "--recipe", "recipe.json", "--out", "paired", "--store", "s.db",
                          "--buckets", "4", "--reps", "4", "--warmup", "0", "--json"});
  ASSERT_EQ(paired.exit_code, 0) << paired.err;
  auto table = core::load_table(path(std::string("paired/") + kTinyTableName).string());
  ASSERT_TRUE(table.ok()) << table.error().to_string();
  std::string const& command = table->rows.at(4).source->command;
  EXPECT_EQ(command.find("paired-passes"), std::string::npos) << command;
  EXPECT_NE(table->rows.at(4).source->protocol.find("paired t-test over the passes"),
            std::string::npos);
  // --no-paired-passes: in the reproduce command and the protocol, and the same store holds
  // nothing of this tune's (another tune hash).
  RunResult plain =
      run({"tune", "--recipe", "recipe.json", "--out", "plain", "--store", "s.db", "--buckets", "4",
           "--reps", "4", "--warmup", "0", "--json", "--no-paired-passes"});
  ASSERT_EQ(plain.exit_code, 0) << plain.err;
  EXPECT_NE(plain.out.find("\"resumed\": 0,"), std::string::npos) << plain.out;
  auto off = core::load_table(path(std::string("plain/") + kTinyTableName).string());
  ASSERT_TRUE(off.ok()) << off.error().to_string();
  std::string const& off_command = off->rows.at(4).source->command;
  EXPECT_EQ(off_command.substr(off_command.size() - 19), " --no-paired-passes") << off_command;
  EXPECT_EQ(off->rows.at(4).source->protocol.find("paired t-test"), std::string::npos);
}

TEST_F(CliTune, ARerunOnTheSameStoreReadsItsMeasurementsBack) {
  write("recipe.json", tiny_recipe_json());
  std::vector<std::string> args = {"tune",   "--recipe", "recipe.json", "--out",
                                   "tables", "--store",  "s.db",        "--buckets",
                                   "4",      "--reps",   "3",           "--json"};
  RunResult first = run(args);
  ASSERT_EQ(first.exit_code, 0) << first.err;
  EXPECT_NE(first.out.find("\"resumed\": 0,"), std::string::npos) << first.out;
  RunResult second = run(args);
  ASSERT_EQ(second.exit_code, 0) << second.err;
  EXPECT_EQ(second.out.find("\"resumed\": 0,"), std::string::npos) << second.out;
  EXPECT_NE(second.out.find("\"run\": 2"), std::string::npos) << second.out;
}

TEST_F(CliTune, BadFaultSpecIsAUsageErrorBeforeAnyRun) {
  write("recipe.json", tiny_recipe_json());
  RunResult r =
      run({"tune", "--recipe", "recipe.json", "--out", "tables", "--inject-fault", "segv@1"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.err,
            "moetune tune: --inject-fault 'segv@1': 'segv@1' names unknown fault kind 'segv'; "
            "expected compile, launch, crash, wrong, nan, hang or oom\n");
  EXPECT_FALSE(std::filesystem::exists(path("tables")));
}

TEST_F(CliTune, WorkerIsHiddenFromHelp) {
  RunResult r = run({"--help"});
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_NE(r.out.find("tune"), std::string::npos);
  EXPECT_EQ(r.out.find("worker"), std::string::npos) << r.out;
}

}  // namespace
}  // namespace moetune::cli::testing
