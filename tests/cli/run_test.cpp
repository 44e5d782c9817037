// moetune run | prewarm | pack on the cpu backend: the JSON names the rule (default, table,
// explicit, auto, cache), a stale cache entry is ignored with one warning, auto is refused during
// (simulated) capture and never re-tunes, a conflicting explicit config names config and problem.
#include <gtest/gtest.h>

#include "cli/cli_test_util.hpp"
#include "moetune/moe_runner.hpp"

namespace moetune::cli::testing {
namespace {

std::string const kProblem = "E=8,K=256,I=128,topk=2,act=silu,dtype=bf16";
std::string const kTables = std::string(MOETUNE_SOURCE_DIR) + "/tables/cpu";

class CliRun : public CliTest {
 protected:
  RunResult run_m(int64_t m, std::vector<std::string> extra) const {
    std::vector<std::string> args = {"run",
                                     "--backend",
                                     "cpu",
                                     "--problem",
                                     kProblem,
                                     "--m",
                                     std::to_string(m),
                                     "--cache",
                                     path("knobs.json").string(),
                                     "--json"};
    args.insert(args.end(), extra.begin(), extra.end());
    return run(args);
  }
};

bool has(std::string const& text, std::string const& part) {
  return text.find(part) != std::string::npos;
}

TEST_F(CliRun, JsonNamesTheDefaultRuleWithoutTablesAndTheTableRuleWithThem) {
  RunResult d = run_m(5, {});
  ASSERT_EQ(d.exit_code, 0) << d.err;
  EXPECT_TRUE(has(d.out, "\"rule\": \"default\"")) << d.out;
  EXPECT_TRUE(has(d.out, "\"passed\": true"));
  std::vector<std::string> const keys = {
      "m",           "bucket",       "rule",    "config", "config_short", "source",
      "explain",     "backend",      "problem", "cache",  "table",        "levers",
      "executed_by", "rel_l2_error", "digest",  "passed", "warnings"};
  EXPECT_EQ(top_level_keys(d.out), keys);
  RunResult t = run_m(5, {"--tables", kTables});
  ASSERT_EQ(t.exit_code, 0) << t.err;
  EXPECT_TRUE(has(t.out, "\"rule\": \"table\"")) << t.out;
  EXPECT_TRUE(has(t.out, "key 4 (nearest key"));
}

TEST_F(CliRun, Fp8ProblemsRunOnTheCpuAgainstTheirFp8Reference) {
  for (std::string q : {"fp8_block", "fp8_tensor"}) {
    RunResult r = run({"run", "--backend", "cpu", "--problem",
                       "E=8,K=256,I=128,topk=2,act=silu,dtype=bf16,quant=" + q, "--m", "9",
                       "--cache", path("knobs.json").string()});
    EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
    EXPECT_TRUE(has(r.out, "(passed) via runner (host buffers)")) << r.out;
  }
  // K = 192 is no multiple of the 128-wide scale groups: the problem itself is refused.
  RunResult bad = run({"run", "--backend", "cpu", "--problem",
                       "E=8,K=192,I=128,topk=2,act=silu,dtype=bf16,quant=fp8_block", "--m", "4",
                       "--cache", path("knobs.json").string()});
  EXPECT_EQ(bad.exit_code, 2) << bad.out << bad.err;
  EXPECT_TRUE(has(bad.err, "expected a multiple of 128 with quant = fp8_block")) << bad.err;
}

TEST_F(CliRun, ExplicitFileIsValidatedAndAConflictNamesConfigAndProblem) {
  write("ok.json", R"({"gemm1": {"tile": {"block_m": 16, "block_n": 32}}})");
  RunResult ok = run_m(5, {"--knobs", path("ok.json").string()});
  ASSERT_EQ(ok.exit_code, 0) << ok.err;
  EXPECT_TRUE(has(ok.out, "\"rule\": \"explicit\""));
  write("bad.json", R"({"gemm1": {"tile": {"block_m": 16}}, "gemm2": {"tile": {"block_m": 32}}})");
  RunResult bad = run_m(5, {"--knobs", path("bad.json").string()});
  EXPECT_EQ(bad.exit_code, 2);
  EXPECT_TRUE(has(bad.err,
                  "moetune run: explicit knobs: config m16n64k64g1w4s2|m32n64k64g1w4s2 "
                  "conflicts with MoeProblem(M=5, K=256, I=128, E=8, top_k=2, "
                  "act=silu, dtype=bf16, arch=cpu): "))
      << bad.err;
  RunResult missing = run_m(5, {"--knobs", "fast"});
  EXPECT_EQ(missing.exit_code, 2);
  EXPECT_TRUE(has(missing.err, "'fast' is not none, auto or a readable config file"))
      << missing.err;
}

TEST_F(CliRun, AutoIsRefusedDuringCaptureThenTunesOnceAndServesFromTheCache) {
  RunResult cap = run_m(3, {"--knobs", "auto", "--capturing", "--budget-s", "2"});
  EXPECT_EQ(cap.exit_code, 2);
  EXPECT_TRUE(has(cap.err, "during CUDA graph capture is refused")) << cap.err;
  EXPECT_FALSE(std::filesystem::exists(path("knobs.json")));
  RunResult tuned = run_m(3, {"--knobs", "auto", "--budget-s", "2", "--tables", kTables});
  ASSERT_EQ(tuned.exit_code, 0) << tuned.err;
  EXPECT_TRUE(has(tuned.out, "\"rule\": \"auto\"")) << tuned.out;
  std::string const cache = read("knobs.json");
  RunResult again = run_m(4, {"--knobs", "auto", "--capturing", "--tables", kTables});
  ASSERT_EQ(again.exit_code, 0) << again.err;
  EXPECT_TRUE(has(again.out, "\"rule\": \"cache\"")) << again.out;
  EXPECT_TRUE(has(again.out, "not re-tuned"));
  EXPECT_EQ(read("knobs.json"), cache);
  RunResult none = run_m(4, {"--tables", kTables});
  EXPECT_TRUE(has(none.out, "\"rule\": \"cache\"")) << none.out;  // outranks the table row
}

TEST_F(CliRun, EntryFromAnotherToolchainIsIgnoredWithOneWarning) {
  ASSERT_EQ(run_m(3, {"--knobs", "auto", "--budget-s", "1"}).exit_code, 0);
  std::string cache = read("knobs.json");
  size_t const at = cache.find("\"toolchain\": \"");
  ASSERT_NE(at, std::string::npos);
  cache.insert(at + 14, "other-");
  write("knobs.json", cache);
  RunResult r = run_m(3, {});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(has(r.out, "\"rule\": \"default\"")) << r.out;
  EXPECT_TRUE(has(r.out,
                  "ignored 1 knob cache entry for this problem made under another scope "
                  "(toolchain is 'other-"))
      << r.out;
  RunResult text = run({"run", "--backend", "cpu", "--problem", kProblem, "--m", "3", "--cache",
                        path("knobs.json").string()});
  EXPECT_EQ(count_lines(text.err), 1) << text.err;
  EXPECT_TRUE(has(text.err, "moetune: warning: "));
}

TEST_F(CliRun, EnvironmentNamesTheCacheWhenNoOptionDoes) {
  RunResult r = run({"run", "--backend", "cpu", "--problem", kProblem, "--m", "2", "--knobs",
                     "auto", "--budget-s", "1", "--json"},
                    "MOETUNE_CACHE=" + path("env-cache.json").string());
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(std::filesystem::exists(path("env-cache.json")));
}

TEST_F(CliRun, PrewarmValidatesEveryCpuRowAndPackWritesABundle) {
  RunResult p = run({"prewarm", "--tables", kTables, "--quiet"});
  ASSERT_EQ(p.exit_code, 0) << p.err;
  EXPECT_TRUE(has(p.out, " compiled, 0 already cached, ")) << p.out;
  RunResult pack = run({"pack", "--tables", kTables, "--out", path("bundle").string()});
  ASSERT_EQ(pack.exit_code, 0) << pack.err;
  EXPECT_TRUE(std::filesystem::exists(path("bundle/bundle.json")));
  RunResult served = run_m(5, {"--tables", path("bundle/tables").string()});
  EXPECT_TRUE(has(served.out, "\"rule\": \"table\"")) << served.out;
  RunResult missing = run({"prewarm", "--tables", path("nope").string()});
  EXPECT_EQ(missing.exit_code, 2);
}

TEST_F(CliRun, JsonReportsTheLeversTheRunnerTookAndWhatDecidedEach) {
  RunResult d = run_m(5, {});
  ASSERT_EQ(d.exit_code, 0) << d.err;
  EXPECT_TRUE(has(d.out, "\"executed_by\": \"runner (host buffers)\"")) << d.out;
  EXPECT_TRUE(has(d.out,
                  "\"levers\": {\"origin\": \"environment\", \"deployment\": "
                  "\"backend=cpu,arch=cpu,tp=1,ep=1,dtype=bf16,role=prefill\", \"on\": "
                  "\"cpu_register_tiles\", \"levers\": [{\"name\": "))
      << d.out;
  EXPECT_TRUE(has(d.out,
                  "{\"name\": \"cpu_register_tiles\", \"on\": true, \"decided_by\": "
                  "\"default\""))
      << d.out;
  RunResult env = run({"run", "--backend", "cpu", "--problem", kProblem, "--m", "5", "--cache",
                       path("knobs.json").string(), "--json"},
                      "MOETUNE_LEVER_CPU_REGISTER_TILES=off");
  ASSERT_EQ(env.exit_code, 0) << env.err;
  EXPECT_TRUE(has(env.out, "\"on\": \"\"")) << env.out;
  EXPECT_TRUE(has(env.out,
                  "{\"name\": \"cpu_register_tiles\", \"on\": false, "
                  "\"decided_by\": \"knob\""))
      << env.out;
  RunResult opt = run_m(5, {"--levers", "cpu_register_tiles=off"});
  ASSERT_EQ(opt.exit_code, 0) << opt.err;
  EXPECT_TRUE(has(opt.out, "\"decided_by\": \"knob\"")) << opt.out;
  // The lever is bitwise: the same digest with it on and off.
  auto digest = [](std::string const& json) {
    size_t const at = json.find("\"digest\": \"");
    return at == std::string::npos ? std::string("?") : json.substr(at + 11, 16);
  };
  EXPECT_EQ(digest(d.out), digest(opt.out));
}

TEST_F(CliRun, BadLeverVariableIsExitTwoBeforeAnythingRuns) {
  RunResult bad = run({"run", "--backend", "cpu", "--problem", kProblem, "--m", "5", "--cache",
                       path("knobs.json").string(), "--knobs", "auto"},
                      "MOETUNE_LEVER_CPU_REGISTER_TILES=maybe");
  EXPECT_EQ(bad.exit_code, 2);
  EXPECT_EQ(bad.err,
            "moetune run: MoeRunner: environment: MOETUNE_LEVER_CPU_REGISTER_TILES = 'maybe' is "
            "not a knob value; expected on or off\n");
  EXPECT_FALSE(std::filesystem::exists(path("knobs.json")));
  RunResult typo = run_m(5, {"--levers", "cpu_register_tiles=of"});
  EXPECT_EQ(typo.exit_code, 2);
  EXPECT_TRUE(has(typo.err, "'cpu_register_tiles=of' is not NAME=on or NAME=off")) << typo.err;
  RunResult cuda_lever = run_m(5, {"--levers", "pdl=off"});
  EXPECT_EQ(cuda_lever.exit_code, 2);
  EXPECT_TRUE(has(cuda_lever.err, "MOETUNE_LEVER_PDL=off is refused at backend=cpu"))
      << cuda_lever.err;
}

TEST_F(CliRun, RunnersKnownVariablesAreTheHelpsEnvironmentTable) {
  RunResult help = run({"--help"});
  ASSERT_EQ(help.exit_code, 0);
  std::vector<std::string> listed;
  for (size_t at = help.out.find("\n  MOETUNE_"); at != std::string::npos;
       at = help.out.find("\n  MOETUNE_", at + 1)) {
    std::string const name = help.out.substr(at + 3, help.out.find(' ', at + 3) - at - 3);
    if (name.find('<') == std::string::npos) listed.push_back(name);  // not the lever pattern
  }
  EXPECT_EQ(listed, project_env_vars());
}

TEST_F(CliRun, HelpAndReadmeListRunPrewarmPackAndTheCacheVariable) {
  std::string const readme = read_text(std::string(MOETUNE_SOURCE_DIR) + "/README.md");
  RunResult help = run({"--help"});
  ASSERT_EQ(help.exit_code, 0);
  for (char const* cmd : {"run", "prewarm", "pack"}) {
    EXPECT_TRUE(has(help.out, std::string("  ") + cmd)) << cmd;
    EXPECT_TRUE(has(readme, std::string("`moetune ") + cmd + " ")) << cmd;
  }
  EXPECT_TRUE(has(help.out, "MOETUNE_CACHE (default"));
  EXPECT_TRUE(has(readme, "| `MOETUNE_CACHE` |"));
}

}  // namespace
}  // namespace moetune::cli::testing
