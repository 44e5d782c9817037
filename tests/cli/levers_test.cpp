// moetune levers: list (and docs/levers.md), show, resolve under an environment, and diff as the
// verifier (exit 0 when two tables resolve to the same fast-path sets, 1 with the deployments
// that differ, 2 on bad input). Errors are one stderr line, asserted verbatim.
#include <string>

#include "cli/cli_test_util.hpp"

namespace moetune::cli::testing {
namespace {

std::string const kDecodeTp8 = "backend=cuda,arch=sm90,tp=8,ep=8,dtype=bf16,role=decode";

/// A lever table file with two cuda levers; `extra` is spliced in as more lever objects.
std::string table_json(std::string const& fast_default = R"([{"arch": ["sm90"]}])",
                       std::string const& extra = "") {
  auto lever = [](std::string const& name, std::string const& default_on) {
    return R"({"name": ")" + name + R"(", "description": "d", "lever_class": "bitwise",
      "served_at": [{"backend": ["cuda"]}], "default_on": )" +
           default_on + R"(,
      "evidence": {"check": "c", "runs_on": "gpu", "claim": "bits equal"}})";
  };
  return R"({"lever_table_version": 1,
  "deployments": [
    {"backend": "cuda", "arch": "sm90", "tp": 1, "ep": 1, "dtype": "bf16", "role": "decode"},
    {"backend": "cuda", "arch": "sm90", "tp": 8, "ep": 8, "dtype": "bf16", "role": "decode"},
    {"backend": "cpu", "arch": "cpu", "tp": 1, "ep": 1, "dtype": "fp32", "role": "decode"}],
  "levers": [)" +
         lever("fast", fast_default) + "," + lever("slow", "[]") + extra + R"(],
  "retired": [{"name": "MOETUNE_OLD_FAST", "replacement": "fast", "reason": "a lever now"}]})";
}

class CliLevers : public CliTest {};

TEST_F(CliLevers, ListMarkdownIsTheCheckedInDocsPage) {
  RunResult r = run({"levers", "list", "--markdown"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, read_text(std::string(MOETUNE_SOURCE_DIR) + "/docs/levers.md"))
      << "docs/levers.md is stale; regenerate: build/moetune levers list --markdown > "
         "docs/levers.md";
}

TEST_F(CliLevers, ListJsonIsATableFileThatDiffsCleanAgainstTheBuiltin) {
  RunResult list = run({"levers", "list", "--json"});
  ASSERT_EQ(list.exit_code, 0) << list.err;
  write("builtin.json", list.out);
  RunResult r = run({"levers", "diff", "builtin", "builtin.json"});
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_EQ(r.out,
            "0 of 8 deployments differ: identical fast-path sets with an empty environment (A = "
            "builtin, B = builtin.json)\n");
}

TEST_F(CliLevers, ResolvePrintsEveryLeverWithTheRuleThatDecidedIt) {
  RunResult r = run({"levers", "resolve", "--deployment", kDecodeTp8}, "MOETUNE_LEVER_PDL=off");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("  off  pdl                   knob: MOETUNE_LEVER_PDL=off\n"),
            std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("  off  cpu_register_tiles    not served here (served where backend=cpu)\n"),
            std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("fast paths: align_multi_cta, wgmma_mainloop\n"), std::string::npos)
      << r.out;
  RunResult j = run({"levers", "resolve", "--deployment", kDecodeTp8, "--json"});
  ASSERT_EQ(j.exit_code, 0) << j.err;
  EXPECT_EQ(top_level_keys(j.out), std::vector<std::string>({"deployment", "levers"}));
  EXPECT_NE(j.out.find("\"decided_by\": \"default\""), std::string::npos) << j.out;
}

TEST_F(CliLevers, ResolveErrorsAreOneLineWithExitCode2) {
  struct Case {
    std::vector<std::string> args;
    std::string env;
    std::string err;
  };
  std::vector<Case> const cases = {
      {{"levers", "resolve", "--deployment", kDecodeTp8},
       "MOETUNE_LEVER_CPU_REGISTER_TILES=on",
       "moetune levers: environment: MOETUNE_LEVER_CPU_REGISTER_TILES=on is refused at " +
           kDecodeTp8 +
           ": lever 'cpu_register_tiles' is served only where backend=cpu; unset "
           "MOETUNE_LEVER_CPU_REGISTER_TILES\n"},
      {{"levers", "resolve", "--deployment", kDecodeTp8},
       "MOETUNE_LEVER_WGMMA_MAINLOP=off",
       "moetune levers: environment: MOETUNE_LEVER_WGMMA_MAINLOP is not a lever knob; expected "
       "one of MOETUNE_LEVER_ALIGN_MULTI_CTA, MOETUNE_LEVER_WGMMA_MAINLOOP, MOETUNE_LEVER_PDL, "
       "MOETUNE_LEVER_CPU_REGISTER_TILES, MOETUNE_LEVER_BATCH_INVARIANT (moetune levers list); "
       "unset it; did you mean 'MOETUNE_LEVER_WGMMA_MAINLOOP'?\n"},
      {{"levers", "resolve", "--deployment", kDecodeTp8},
       "MOETUNE_LEVER_DECODE_FUSED=on",
       "moetune levers: environment: MOETUNE_LEVER_DECODE_FUSED is retired (removed: slower than "
       "off on the H200 at the one point it took (S2 M=1 31.0 vs 26.2 us)); the lever is gone: "
       "unset MOETUNE_LEVER_DECODE_FUSED\n"},
      {{"levers", "resolve", "--deployment", kDecodeTp8},
       "MOETUNE_CACHEDIR=/tmp",
       "moetune levers: environment: MOETUNE_CACHEDIR is not a moetune variable; expected a lever "
       "knob MOETUNE_LEVER_<NAME> or one of MOETUNE_BACKEND, MOETUNE_CACHE_DIR, MOETUNE_CACHE, "
       "MOETUNE_DEV_NVRTC_DEFINES, MOETUNE_TEST_SEED, MOETUNE_BUILD_DIR, MOETUNE_CUDA, "
       "MOETUNE_JOBS, MOETUNE_DEMO_OUT, MOETUNE_DEMO_RECIPE, MOETUNE_CI_FORMAT, MOETUNE_TABLES, "
       "MOETUNE_PYTHON, "
       "MOETUNE_TORCH_VERSION, MOETUNE_DEVICE_NAME, MOETUNE_TABLES_SAME_DEVICE; unset it; did you "
       "mean 'MOETUNE_CACHE_DIR'?\n"},
      {{"levers", "resolve", "--deployment", kDecodeTp8},
       "MOETUNE_LEVER_PDL=true",
       "moetune levers: environment: MOETUNE_LEVER_PDL = 'true' is not a knob value; expected on "
       "or off\n"},
      {{"levers", "resolve", "--deployment", "backend=cuda,arch=sm90,tp=8"},
       "",
       "moetune levers: --deployment: deployment lacks key 'ep'; give all of backend, arch, tp, "
       "ep, dtype, role, e.g. backend=cuda,arch=sm90,tp=1,ep=1,dtype=bf16,role=decode\n"},
      {{"levers", "show", "wgmma"},
       "",
       "moetune levers: no lever 'wgmma' in builtin; expected one of align_multi_cta, "
       "wgmma_mainloop, pdl, cpu_register_tiles, batch_invariant\n"},
      {{"levers", "show", "pdll"},
       "",
       "moetune levers: no lever 'pdll' in builtin; expected one of align_multi_cta, "
       "wgmma_mainloop, pdl, cpu_register_tiles, batch_invariant; did you mean 'pdl'?\n"},
  };
  for (auto const& c : cases) {
    RunResult r = run(c.args, c.env);
    EXPECT_EQ(r.exit_code, 2) << c.env << " " << r.err;
    EXPECT_EQ(r.err, c.err);
    EXPECT_TRUE(r.out.empty()) << r.out;
  }
}

TEST_F(CliLevers, ProjectVariablesDoNotDisturbResolution) {
  RunResult r = run({"levers", "resolve", "--deployment", kDecodeTp8},
                    "MOETUNE_BACKEND=cpu MOETUNE_CACHE_DIR=/tmp MOETUNE_TEST_SEED=3 "
                    "MOETUNE_DEV_NVRTC_DEFINES=MOETUNE_TMA_WEIGHT_L2=1");
  EXPECT_EQ(r.exit_code, 0) << r.err;
}

TEST_F(CliLevers, RetiredNameAndExclusiveLeversFailFromATableFile) {
  write("t.json", table_json());
  RunResult retired = run({"levers", "resolve", "--table", "t.json", "--deployment", kDecodeTp8},
                          "MOETUNE_OLD_FAST=1");
  EXPECT_EQ(retired.exit_code, 2);
  EXPECT_EQ(retired.err,
            "moetune levers: environment: MOETUNE_OLD_FAST is retired (a lever now); set "
            "MOETUNE_LEVER_FAST=on|off instead and unset MOETUNE_OLD_FAST\n");
  write("x.json", table_json(R"([{"arch": ["sm90"]}])",
                             R"(, {"name": "fast_alt", "description": "d", "lever_class": "numeric",
      "served_at": [{}], "default_on": [], "exclusive_with": ["fast"],
      "evidence": {"check": "c", "runs_on": "gpu", "claim": "band"}})"));
  RunResult both = run({"levers", "resolve", "--table", "x.json", "--deployment", kDecodeTp8},
                       "MOETUNE_LEVER_FAST_ALT=on");
  EXPECT_EQ(both.exit_code, 2);
  EXPECT_EQ(both.err, "moetune levers: levers at " + kDecodeTp8 +
                          ": 'fast_alt' (knob: MOETUNE_LEVER_FAST_ALT=on) and 'fast' (default: on "
                          "where arch=sm90) are both on but exclusive; set "
                          "MOETUNE_LEVER_FAST_ALT=off or MOETUNE_LEVER_FAST=off\n");
}

TEST_F(CliLevers, DiffIgnoresANewLeverThatIsOffByDefault) {
  write("a.json", table_json());
  write("b.json", table_json(R"([{"arch": ["sm90"]}])",
                             R"(, {"name": "proving", "description": "d", "lever_class": "numeric",
      "served_at": [{"backend": ["cuda"]}], "default_on": [], "depends_on": ["fast"],
      "evidence": {"check": "c", "runs_on": "gpu", "claim": "band"}})"));
  RunResult r = run({"levers", "diff", "a.json", "b.json"});
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_EQ(r.out,
            "0 of 3 deployments differ: identical fast-path sets with an empty environment (A = "
            "a.json, B = b.json)\n");
}

TEST_F(CliLevers, DiffListsEachDeploymentWhoseFastPathsDiffer) {
  write("a.json", table_json());
  write("b.json", table_json(R"([{"tp": ["<=2"]}])"));
  RunResult r = run({"levers", "diff", "a.json", "b.json", "--deployments", "all"});
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_EQ(r.out, kDecodeTp8 +
                       ": only in A: fast; only in B: -\n"
                       "1 of 3 deployments differ (A = a.json, B = b.json)\n");
  RunResult some = run({"levers", "diff", "a.json", "b.json", "--deployments",
                        "backend=cuda,arch=sm90,tp=1,ep=1,dtype=bf16,role=prefill;" + kDecodeTp8});
  EXPECT_EQ(some.exit_code, 1);
  EXPECT_EQ(count_lines(some.out), 2) << some.out;
}

TEST_F(CliLevers, DiffRejectsABrokenTableWithExitCode2) {
  write("a.json", table_json());
  std::string broken = table_json();
  broken.replace(broken.find("\"lever_class\""), 13, "\"lever_klass\"");
  write("b.json", broken);
  RunResult r = run({"levers", "diff", "a.json", "b.json"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(count_lines(r.err), 1) << r.err;
  EXPECT_NE(r.err.find("b.json: levers[0]: unknown field 'lever_klass'"), std::string::npos)
      << r.err;
  EXPECT_NE(r.err.find("did you mean 'lever_class'?"), std::string::npos) << r.err;
  RunResult missing = run({"levers", "diff", "a.json", "nope.json"});
  EXPECT_EQ(missing.exit_code, 2);
  EXPECT_EQ(missing.err,
            "moetune levers: nope.json: no such lever table file; write one with moetune levers "
            "list --json\n");
}

TEST_F(CliLevers, ShowPrintsRulesEvidenceAndEveryMatrixDeployment) {
  RunResult r = run({"levers", "show", "wgmma_mainloop"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("wgmma_mainloop (numeric)\n"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("  knob: MOETUNE_LEVER_WGMMA_MAINLOOP=on|off\n"), std::string::npos);
  EXPECT_NE(r.out.find("WgmmaLeverStaysWithinTheBf16BandOfTheMmaSyncPath"), std::string::npos);
  EXPECT_NE(r.out.find("  at " + kDecodeTp8 + ": on (default: on where arch=sm90)\n"),
            std::string::npos)
      << r.out;
}

}  // namespace
}  // namespace moetune::cli::testing

namespace moetune::cli::testing {
namespace {

class CliLeversInTune : public CliTest {};

// The tuner's workers take the environment's lever knobs; a bad MOETUNE_* variable stops `tune`
// before anything runs.
TEST_F(CliLeversInTune, ABadVariableStopsTuneBeforeAnyRunAndAGoodKnobIsAccepted) {
  std::string const recipe = std::string(MOETUNE_SOURCE_DIR) + "/recipes/demo.json";
  RunResult bad = run({"tune", "--recipe", recipe, "--buckets", "4", "--out", "t"},
                      "MOETUNE_LEVER_CPU_REGISTER_TILE=off");
  EXPECT_EQ(bad.exit_code, 2);
  EXPECT_NE(bad.err.find("MOETUNE_LEVER_CPU_REGISTER_TILE "), std::string::npos) << bad.err;
  EXPECT_NE(bad.err.find("did you mean 'MOETUNE_LEVER_CPU_REGISTER_TILES'"), std::string::npos)
      << bad.err;
  EXPECT_FALSE(std::filesystem::exists(path("t"))) << "nothing may be written on bad input";
  RunResult ok = run({"tune", "--recipe", recipe, "--buckets", "4", "--reps", "3", "--out", "t"},
                     "MOETUNE_LEVER_CPU_REGISTER_TILES=off");
  EXPECT_EQ(ok.exit_code, 0) << ok.err;
}

}  // namespace
}  // namespace moetune::cli::testing
