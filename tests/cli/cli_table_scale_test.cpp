// Scale (issue 57): `moetune resolve` on a table with tens of thousands of keys and a manifest.
// Reading it once held the whole text three times over, then a tree of every row: 100k keys took
// 490 MB without sources. The bounds here are wide and on CPU time and peak memory measured by
// wait4 for the child alone, so a loaded machine does not make them flaky: 10x the keys must cost
// well under 20x the CPU time (linear is 10x, quadratic 100x), and the memory it adds must stay
// within a small multiple of the bytes the files add (the text is held once while it is read).
#include <fcntl.h>
#include <spawn.h>
#include <sys/resource.h>
#include <sys/wait.h>

#include <algorithm>
#include <filesystem>
#include <iostream>
#include <string>
#include <vector>

#include "cli/cli_test_util.hpp"

extern char** environ;

namespace moetune::cli::testing {
namespace {

constexpr char const* kName = "E=8,N=128,device_name=cpu,family=cpu_tiled.json";

/// One GEMM's config as the manifest writes it.
std::string gemm_json(int block_m) {
  return "{\"tile\": {\"block_m\": " + std::to_string(block_m) +
         ", \"block_n\": 64, \"block_k\": 64, \"group_m\": 1}, \"pipeline\": {\"num_warps\": 4, "
         "\"num_stages\": 2, \"split_k\": 1}, \"launch\": {\"swap_ab\": false, \"cluster_m\": 1, "
         "\"cluster_n\": 1, \"schedule\": \"auto\", \"num_threads\": 0}}";
}

/// Writes a table of `num_keys` rows (M = 1..num_keys) and its manifest into `dir`; returns the
/// two files' bytes.
size_t write_table(std::filesystem::path const& dir, int num_keys) {
  std::string rows = "{\n", manifest =
                                "{\"manifest_version\": 1, \"key\": {\"num_experts\": 8, "
                                "\"intermediate_size\": 128, \"hidden_size\": 256, \"top_k\": 2, "
                                "\"activation\": \"silu\", \"dtype\": \"bf16\", \"dtype_tag\": "
                                "\"\", \"block_shape\": null, \"device_name\": \"cpu\", "
                                "\"family\": \"cpu_tiled\", \"family_version\": 1, "
                                "\"toolchain\": \"\"}, \"rows\": {\n";
  std::string const gemm = gemm_json(16);
  for (int m = 1; m <= num_keys; ++m) {
    std::string const sep = m < num_keys ? ",\n" : "\n";
    rows += "    \"" + std::to_string(m) +
            "\": {\"BLOCK_SIZE_M\": 16, \"BLOCK_SIZE_N\": 64, \"BLOCK_SIZE_K\": 64, "
            "\"GROUP_SIZE_M\": 1, \"num_warps\": 4, \"num_stages\": 2}" +
            sep;
    manifest += "  \"" + std::to_string(m) + "\": {\"config\": {\"gemm1\": " + gemm +
                ", \"gemm2\": " + gemm + "}, \"source\": null}" + sep;
  }
  rows += "}\n";
  manifest += "}}\n";
  write_text(dir / kName, rows);
  write_text(dir / (std::string(kName) + ".moetune"), manifest);
  return rows.size() + manifest.size();
}

/// What one child cost: CPU seconds (user + system) and peak resident bytes.
struct Cost {
  int exit_code = -1;
  double cpu_s = 0;
  double peak_bytes = 0;
};

Cost resolve_cost(std::filesystem::path const& table) {
  std::string const binary = std::string(MOETUNE_BINARY_DIR) + "/moetune";
  std::vector<std::string> args = {binary, "resolve", "--table", table.string(), "--m", "777"};
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 1, "/dev/null", O_WRONLY, 0);
  pid_t pid = 0;
  Cost cost;
  if (posix_spawn(&pid, binary.c_str(), &actions, nullptr, argv.data(), environ) != 0) return cost;
  posix_spawn_file_actions_destroy(&actions);
  int status = 0;
  rusage usage{};
  if (wait4(pid, &status, 0, &usage) != pid) return cost;
  cost.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  cost.cpu_s = usage.ru_utime.tv_sec + usage.ru_utime.tv_usec * 1e-6 + usage.ru_stime.tv_sec +
               usage.ru_stime.tv_usec * 1e-6;
  cost.peak_bytes = usage.ru_maxrss * 1024.0;  // Linux reports KiB
  return cost;
}

class TableScale : public CliTest {};

TEST_F(TableScale, ResolveOfA50kKeyTableIsLinearInTimeAndHoldsTheTextAtMostTwice) {
  size_t const small_bytes = write_table(path("small"), 5000);
  size_t const large_bytes = write_table(path("large"), 50000);
  Cost const small = resolve_cost(path("small") / kName);
  Cost const large = resolve_cost(path("large") / kName);
  ASSERT_EQ(small.exit_code, 0);
  ASSERT_EQ(large.exit_code, 0);
  double const added_mb = (large.peak_bytes - small.peak_bytes) / 1e6;
  double const file_mb = static_cast<double>(large_bytes - small_bytes) / 1e6;
  std::string const seen = "5k keys: " + std::to_string(small.cpu_s) + " s CPU, " +
                           std::to_string(small.peak_bytes / 1e6) +
                           " MB; 50k keys: " + std::to_string(large.cpu_s) + " s CPU, " +
                           std::to_string(large.peak_bytes / 1e6) + " MB; the files add " +
                           std::to_string(file_mb) + " MB";
  RecordProperty("costs", seen);
  std::cout << seen << "\n";
  EXPECT_LT(large.cpu_s, 20 * std::max(small.cpu_s, 0.02)) << seen;
  // The tree of every row took ~4x the text; the streamed read holds it about twice (the text,
  // then the two files' rows).
  EXPECT_LT(added_mb, 2.5 * file_mb) << seen;
}

}  // namespace
}  // namespace moetune::cli::testing
