// Bad input to the moetune binary: each case ends in one stderr line that names the file (and the
// line or field), exit code 2, and leaves every existing file byte-identical.
#include <string>

#include "cli/cli_test_util.hpp"
#include "cli/recipe_fixtures.hpp"

namespace moetune::cli::testing {
namespace {

class CliBadInput : public CliTest {
 protected:
  /// Materializes the tiny recipe into tables/ and remembers both table files' bytes.
  void SetUp() override {
    CliTest::SetUp();
    write("recipe.json", tiny_recipe_json());
    RunResult r = run({"materialize", "--recipe", "recipe.json", "--out", "tables"});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    table_ = "tables/" + std::string(kTinyTableName);
    table_bytes_ = read(table_);
    manifest_bytes_ = read(table_ + ".moetune");
    ASSERT_FALSE(table_bytes_.empty());
  }

  /// Asserts exit 2, exactly one stderr line containing every needle, and untouched tables.
  void expect_bad(RunResult const& r, std::vector<std::string> const& needles) const {
    EXPECT_EQ(r.exit_code, 2) << r.err;
    EXPECT_EQ(count_lines(r.err), 1) << r.err;
    for (auto const& n : needles)
      EXPECT_NE(r.err.find(n), std::string::npos) << n << " in " << r.err;
    EXPECT_EQ(read(table_), table_bytes_);
    EXPECT_EQ(read(table_ + ".moetune"), manifest_bytes_);
  }

  std::string table_;
  std::string table_bytes_;
  std::string manifest_bytes_;
};

TEST_F(CliBadInput, UnknownSubcommandSuggestsTheClosestOne) {
  RunResult r = run({"tunee", "--recipe", "recipe.json"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.err,
            "moetune: unknown subcommand 'tunee'; expected one of tune, resolve, materialize, "
            "check, lint, show, defaults, levers, run, prewarm, pack, bench, ab, report; did you "
            "mean 'tune'?\n");
}

TEST_F(CliBadInput, MissingRequiredOptionIsAUsageError) {
  RunResult r = run({"resolve", "--table", table_});
  expect_bad(r, {"moetune resolve:", "--m", "--help"});
}

TEST_F(CliBadInput, HelpWorksForEverySubcommand) {
  for (char const* cmd : {"tune", "resolve", "materialize", "check", "lint", "show"}) {
    RunResult r = run({cmd, "--help"});
    EXPECT_EQ(r.exit_code, 0) << cmd;
    EXPECT_NE(r.out.find("--"), std::string::npos) << cmd;
  }
}

TEST_F(CliBadInput, AbsurdMIsRejectedVerbatim) {
  RunResult r = run({"resolve", "--table", table_, "--m", "99999999999"});
  expect_bad(r, {});
  EXPECT_EQ(r.err,
            "moetune resolve: --m 99999999999 is out of range; expected a token count in "
            "[0, 16777216]\n");
}

TEST_F(CliBadInput, NegativeMIsRejected) {
  expect_bad(run({"resolve", "--table", table_, "--m=-3"}), {"--m -3 is out of range"});
}

TEST_F(CliBadInput, MissingTableFileIsNamed) {
  expect_bad(run({"resolve", "--table", "tables/nope.json", "--m", "4"}), {"tables/nope.json"});
}

TEST_F(CliBadInput, MalformedTableJsonNamesFileAndLine) {
  write("broken/E=8,N=128,device_name=cpu.json", "{\n  \"1\": {\"BLOCK_SIZE_M\": 16,\n}\n");
  RunResult r = run({"resolve", "--table", "broken/E=8,N=128,device_name=cpu.json", "--m", "4"});
  expect_bad(r, {"broken/E=8,N=128,device_name=cpu.json:"});
}

TEST_F(CliBadInput, MalformedRecipeJsonNamesFileAndLine) {
  write("bad.json", "{\n  \"version\": 1,\n  \"name\": \"x\"\n  \"shapes\": []\n}\n");
  expect_bad(run({"materialize", "--recipe", "bad.json", "--out", "tables"}), {"bad.json:4"});
}

TEST_F(CliBadInput, UnknownRecipeFieldSuggestsTheClosestOne) {
  std::string text = tiny_recipe_json();
  replace_once(text, "\"buckets\"", "\"bukets\"");
  write("bad.json", text);
  expect_bad(run({"materialize", "--recipe", "bad.json", "--out", "tables"}),
             {"bad.json", "bukets", "did you mean 'buckets'?"});
}

TEST_F(CliBadInput, WrongTypeNamesTheField) {
  std::string text = tiny_recipe_json();
  replace_once(text, "\"buckets\": [1, 4, 16]", "\"buckets\": \"1,4,16\"");
  write("bad.json", text);
  expect_bad(run({"tune", "--recipe", "bad.json", "--out", "tables", "--merge"}),
             {"bad.json", "buckets"});
}

TEST_F(CliBadInput, ZeroSizeIsRejected) {
  std::string text = tiny_recipe_json();
  replace_once(text, "\"hidden_size\": 64", "\"hidden_size\": 0");
  write("bad.json", text);
  expect_bad(run({"materialize", "--recipe", "bad.json", "--out", "tables"}),
             {"bad.json", "hidden_size"});
}

TEST_F(CliBadInput, NegativeSizeIsRejected) {
  std::string text = tiny_recipe_json();
  replace_once(text, "\"num_experts\": 4", "\"num_experts\": -4");
  write("bad.json", text);
  expect_bad(run({"tune", "--recipe", "bad.json", "--out", "tables"}), {"bad.json", "num_experts"});
}

TEST_F(CliBadInput, MissingRecipeFileIsNamed) {
  expect_bad(run({"check", "--recipe", "missing.json", "--tables", "tables"}), {"missing.json"});
}

TEST_F(CliBadInput, UnwritableOutDirIsNamedAndNothingIsWritten) {
  // A path below a regular file can never be created, even as root.
  write("plain-file", "x");
  expect_bad(run({"materialize", "--recipe", "recipe.json", "--out", "plain-file/tables"}),
             {"plain-file/tables"});
  expect_bad(run({"tune", "--recipe", "recipe.json", "--out", "plain-file/tables"}),
             {"plain-file/tables"});
}

TEST_F(CliBadInput, BadProblemSpecNamesTheKey) {
  expect_bad(run({"resolve", "--table", table_, "--m", "4", "--problem", "E=4,K=64,I=32,topkk=2"}),
             {"--problem", "did you mean 'topk'?"});
}

TEST_F(CliBadInput, ProblemThatDoesNotMatchTheTableIsRejected) {
  expect_bad(run({"resolve", "--table", table_, "--m", "4", "--problem",
                  "E=4,K=128,I=32,topk=2,act=silu,dtype=bf16"}),
             {"hidden_size"});
}

TEST_F(CliBadInput, UnknownBackendSuggestsTheClosestOneVerbatim) {
  RunResult r = run({"tune", "--recipe", "recipe.json", "--out", "tables", "--backend", "cpuu"});
  expect_bad(r, {});
  EXPECT_EQ(
      r.err,
      "moetune tune: --backend: unknown backend 'cpuu'; expected cpu, cuda or triton; did you "
      "mean 'cpu'?\n");
}

TEST_F(CliBadInput, BadBucketListIsRejectedVerbatim) {
  RunResult r = run({"tune", "--recipe", "recipe.json", "--out", "tables", "--buckets", "1,x"});
  expect_bad(r, {});
  EXPECT_EQ(r.err,
            "moetune tune: --buckets '1,x': 'x' is not a token count in [1, 16777216]; write e.g. "
            "1,4,16\n");
}

TEST_F(CliBadInput, Stage2Gemm1sOutOfRangeIsRejectedVerbatim) {
  RunResult r = run({"tune", "--recipe", "recipe.json", "--out", "tables", "--stage2-gemm1s", "0"});
  expect_bad(r, {});
  EXPECT_EQ(r.err, "moetune tune: --stage2-gemm1s 0 is out of range; use 1..4\n");
}

TEST_F(CliBadInput, CorruptExistingTableFailsTuneMergeBeforeAnyRun) {
  write(table_, "{\"1\": [1, 2]}\n");
  table_bytes_ = read(table_);
  expect_bad(run({"tune", "--recipe", "recipe.json", "--out", "tables", "--merge"}), {table_});
}

}  // namespace
}  // namespace moetune::cli::testing
