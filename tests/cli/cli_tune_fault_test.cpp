// `moetune tune --inject-fault` (test only) on the cpu backend: a faulty candidate costs itself,
// never the run; when every candidate fails the run exits 1 within --timeout-s + 5 s with one
// summary line naming the outcomes, and writes no row for that bucket.
#include <chrono>
#include <string>

#include "cli/cli_test_util.hpp"
#include "cli/recipe_fixtures.hpp"
#include "core/table.hpp"

namespace moetune::cli::testing {
namespace {

struct Timed {
  RunResult r;
  double seconds = 0;
};

class CliTuneFault : public CliTest {
 protected:
  Timed run_timed(std::vector<std::string> const& args) const {
    auto const start = std::chrono::steady_clock::now();
    Timed out;
    out.r = run(args);
    out.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    return out;
  }
};

std::vector<std::string> tune_args(std::string const& faults, std::string const& timeout) {
  return {"tune",      "--recipe",    "recipe.json", "--out",  "tables",
          "--buckets", "4",           "--reps",      "3",      "--warmup",
          "0",         "--timeout-s", timeout,       "--json", "--inject-fault",
          faults};
}

TEST_F(CliTuneFault, ACrashingIncumbentCostsOneCandidateNotTheRun) {
  write("recipe.json", tiny_recipe_json());
  Timed t = run_timed(tune_args("crash@0,hang@1", "1"));
  ASSERT_EQ(t.r.exit_code, 0) << t.r.err;
  EXPECT_NE(t.r.out.find("\"crashed\": 1"), std::string::npos) << t.r.out;
  EXPECT_NE(t.r.out.find("\"timed_out\": 1"), std::string::npos) << t.r.out;
  EXPECT_NE(t.r.out.find("\"verdict\": \"no_incumbent\""), std::string::npos) << t.r.out;
  auto table = core::load_table(path(std::string("tables/") + kTinyTableName).string());
  ASSERT_TRUE(table.ok()) << table.error().to_string();
  EXPECT_EQ(table->rows.count(4), 1u);
}

TEST_F(CliTuneFault, AllCandidatesCrashingExitsOneInTimeWithASummary) {
  write("recipe.json", tiny_recipe_json());
  Timed t = run_timed(tune_args("crash@all", "1"));
  EXPECT_EQ(t.r.exit_code, 1) << t.r.err;
  EXPECT_LT(t.seconds, 1 + 5);
  EXPECT_EQ(count_lines(t.r.err), 1) << t.r.err;
  EXPECT_NE(t.r.err.find("bucket 4: every candidate failed ("), std::string::npos) << t.r.err;
  EXPECT_NE(t.r.err.find(" crashed"), std::string::npos) << t.r.err;
  EXPECT_NE(t.r.out.find("\"outcome\": \"all_failed\""), std::string::npos) << t.r.out;
}

TEST_F(CliTuneFault, AllCandidatesHangingExitsOneWithinTimeoutPlusFiveSeconds) {
  write("recipe.json", tiny_recipe_json());
  Timed t = run_timed(tune_args("hang@all", "2"));
  EXPECT_EQ(t.r.exit_code, 1) << t.r.err;
  EXPECT_LT(t.seconds, 2 + 5);
  EXPECT_NE(t.r.err.find("timed_out"), std::string::npos) << t.r.err;
  EXPECT_NE(t.r.err.find("none passed within --timeout-s + 3 s"), std::string::npos) << t.r.err;
}

TEST_F(CliTuneFault, WrongAndNanEverywhereLeaveNoRowBehind) {
  write("recipe.json", tiny_recipe_json());
  for (char const* kind : {"wrong@all", "nan@all", "compile@all", "launch@all", "oom@all"}) {
    SCOPED_TRACE(kind);
    Timed t = run_timed(tune_args(kind, "1"));
    EXPECT_EQ(t.r.exit_code, 1) << t.r.err;
    EXPECT_LT(t.seconds, 1 + 5);
    auto table = core::load_table(path(std::string("tables/") + kTinyTableName).string());
    ASSERT_TRUE(table.ok()) << table.error().to_string();
    EXPECT_EQ(table->rows.count(4), 0u);  // only the pinned row
  }
}

}  // namespace
}  // namespace moetune::cli::testing
