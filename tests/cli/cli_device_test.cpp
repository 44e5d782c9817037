// Device labels that hold (issue 51) through the binary on the cpu backend: `tune` refuses a
// recipe of another device (exit 2, both names) unless --retarget-device, which names the table
// for the device measured and says so in each row's source; MOETUNE_DEVICE_NAME stands in for a
// GPU in CI; `run` and `bench` say other_device for a table of another device, and
// --same-device-tables / MOETUNE_TABLES_SAME_DEVICE=1 forbid it.
#include <filesystem>
#include <string>

#include "cli/cli_test_util.hpp"
#include "cli/recipe_fixtures.hpp"
#include "core/device_info.hpp"
#include "core/table.hpp"

namespace moetune::cli::testing {
namespace {

namespace fs = std::filesystem;

constexpr char kH200TableName[] = "E=4,N=32,device_name=NVIDIA_H200,family=cpu_tiled.json";
constexpr char kTinyProblem[] = "E=4,K=64,I=32,topk=2,act=silu,dtype=bf16";

/// The tiny recipe with its shape's device set to `device` (the pinned row's source stays cpu).
std::string recipe_for(std::string const& device) {
  std::string text = tiny_recipe_json();
  replace_once(text, "\"device\": \"cpu\",\n      \"backend\"",
               "\"device\": \"" + device + "\",\n      \"backend\"");
  return text;
}

std::vector<std::string> tune_args(std::vector<std::string> extra = {}) {
  std::vector<std::string> a = {"tune",   "--recipe", "recipe.json", "--out", "tables",
                                "--reps", "1",        "--warmup",    "0"};
  a.insert(a.end(), extra.begin(), extra.end());
  return a;
}

int json_files(fs::path const& dir) {
  int n = 0;
  std::error_code ec;
  for (auto const& e : fs::directory_iterator(dir, ec)) n += e.path().extension() == ".json";
  return n;
}

using CliDevice = CliTest;

TEST_F(CliDevice, TuneRefusesARecipeOfAnotherDeviceNamingBoth) {
  write("recipe.json", recipe_for("NVIDIA H200"));
  RunResult r = run(tune_args());
  EXPECT_EQ(r.exit_code, 2) << r.out << r.err;
  EXPECT_EQ(r.err,
            "moetune tune: recipe.json: shapes[0] (tiny): the recipe's device is "
            "NVIDIA_H200 but this device is cpu (" +
                core::cpu_device_info().name +
                "); a table is named for the device it was measured on: tune on "
                "NVIDIA_H200, or pass --retarget-device to tune the recipe for cpu "
                "(tables named device_name=cpu)\n");
  EXPECT_EQ(json_files(path("tables")), 0);
  // The injected device name is checked the same way: a cpu recipe on an "H200" is refused.
  write("recipe.json", tiny_recipe_json());
  RunResult h = run(tune_args(), "MOETUNE_DEVICE_NAME=NVIDIA_H200");
  EXPECT_EQ(h.exit_code, 2) << h.out << h.err;
  EXPECT_NE(h.err.find("the recipe's device is cpu but this device is NVIDIA_H200"),
            std::string::npos)
      << h.err;
  EXPECT_EQ(json_files(path("tables")), 0);
}

TEST_F(CliDevice, RetargetNamesTheTableForTheDeviceMeasuredAndSaysSo) {
  write("recipe.json", recipe_for("NVIDIA H200"));
  RunResult r = run(tune_args({"--retarget-device"}));
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("retargeted from NVIDIA_H200 to cpu (--retarget-device)"), std::string::npos)
      << r.out;
  EXPECT_FALSE(fs::exists(path(std::string("tables/") + kH200TableName)));
  auto table = core::load_table(path(std::string("tables/") + kTinyTableName).string());
  ASSERT_TRUE(table.ok()) << table.error().to_string();
  EXPECT_EQ(table->key.device_name, "cpu");
  ASSERT_EQ(table->rows.size(), 3u);
  for (auto const& [bucket, row] : table->rows) {
    ASSERT_TRUE(row.source.has_value()) << bucket;
    // The pin was measured on the recipe's device: bucket 1 is tuned here too.
    EXPECT_EQ(row.source->kind, "tuned") << bucket;
    EXPECT_NE(row.source->protocol.find("retargeted (--retarget-device): the recipe's device is "
                                        "NVIDIA_H200, measured on cpu"),
              std::string::npos)
        << row.source->protocol;
    EXPECT_NE(row.source->command.find("--retarget-device"), std::string::npos);
  }
}

TEST_F(CliDevice, DeviceNameVariableLetsCiTuneAGpuRecipeOnTheCpu) {
  write("recipe.json", recipe_for("NVIDIA H200"));
  RunResult r = run(tune_args(), "MOETUNE_DEVICE_NAME=NVIDIA_H200");
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  auto table = core::load_table(path(std::string("tables/") + kH200TableName).string());
  ASSERT_TRUE(table.ok()) << table.error().to_string();
  EXPECT_EQ(table->rows.at(1).source->kind, "measured");  // not retargeted: the pin stays
  RunResult bad = run(tune_args(), "MOETUNE_DEVICE_NAME='NVIDIA_H200,family=x'");
  EXPECT_EQ(bad.exit_code, 2);
  EXPECT_NE(bad.err.find("MOETUNE_DEVICE_NAME: 'NVIDIA_H200,family=x' is not a device name"),
            std::string::npos)
      << bad.err;
}

TEST_F(CliDevice, RunSaysOtherDeviceAndSameDeviceTablesFallsBackToTheDefault) {
  write("recipe.json", recipe_for("NVIDIA H200"));
  ASSERT_EQ(run(tune_args(), "MOETUNE_DEVICE_NAME=NVIDIA_H200").exit_code, 0);
  std::vector<std::string> const args = {"run",        "--backend", "cpu",    "--problem",
                                         kTinyProblem, "--m",       "4",      "--tables",
                                         "tables",     "--cache",   "k.json", "--json"};
  RunResult r = run(args);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("\"rule\": \"other_device\""), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("other_device: made on NVIDIA_H200, this device is cpu"), std::string::npos)
      << r.out;
  std::vector<std::string> forbid = args;
  forbid.push_back("--same-device-tables");
  for (auto const& [a, env] : {std::pair{forbid, std::string()},
                               std::pair{args, std::string("MOETUNE_TABLES_SAME_DEVICE=1")}}) {
    RunResult f = run(a, env);
    ASSERT_EQ(f.exit_code, 0) << f.err;
    EXPECT_NE(f.out.find("\"rule\": \"default\""), std::string::npos) << env << f.out;
    EXPECT_NE(f.out.find("was made on NVIDIA_H200, this device is cpu; not used"),
              std::string::npos)
        << env << f.out;
  }
  RunResult bad = run(args, "MOETUNE_TABLES_SAME_DEVICE=yes");
  EXPECT_EQ(bad.exit_code, 2) << bad.out;
  EXPECT_NE(bad.err.find("MOETUNE_TABLES_SAME_DEVICE: 'yes' is not 0 or 1"), std::string::npos)
      << bad.err;
}

TEST_F(CliDevice, BenchRuleIsOtherDeviceUnlessSameDeviceTables) {
  write("recipe.json", recipe_for("NVIDIA H200"));
  ASSERT_EQ(run(tune_args(), "MOETUNE_DEVICE_NAME=NVIDIA_H200").exit_code, 0);
  for (bool forbid : {false, true}) {
    std::vector<std::string> args = {"bench",
                                     "--backend",
                                     "cpu",
                                     "--problem",
                                     kTinyProblem,
                                     "--m",
                                     "4",
                                     "--repeats",
                                     "1",
                                     "--warmup",
                                     "0",
                                     "--ceiling-mib",
                                     "1",
                                     "--tables",
                                     "tables",
                                     "--out",
                                     forbid ? "runs-same" : "runs"};
    if (forbid) args.push_back("--same-device-tables");
    RunResult r = run(args);
    ASSERT_EQ(r.exit_code, 0) << r.err;
    fs::path dir;
    for (auto const& e : fs::directory_iterator(path(forbid ? "runs-same" : "runs"))) {
      dir = e.path();
    }
    std::string const csv = read_text(dir / "bench.csv");
    EXPECT_NE(csv.find(forbid ? ",ok,default," : ",ok,other_device,"), std::string::npos) << csv;
    EXPECT_NE(r.err.find(forbid ? "on this device (cpu; not used: "
                                : "was made on NVIDIA_H200, this device is cpu; its rows serve "
                                  "with rule other_device"),
              std::string::npos)
        << r.err;
  }
}

}  // namespace
}  // namespace moetune::cli::testing
