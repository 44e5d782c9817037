// Issue 57's reproducers through the binary: hostile files and arguments end in exit 0, 1 or 2
// with one line on stderr, never a signal or exit 3, and a failing command changes no file.
#include <sys/stat.h>

#include <filesystem>
#include <string>

#include "cli/cli_test_util.hpp"
#include "cli/recipe_fixtures.hpp"

namespace moetune::cli::testing {
namespace {

namespace fs = std::filesystem;

constexpr char kProblem[] = "E=8,K=256,I=128,topk=2,act=silu,dtype=bf16";
/// Valid sizes (each within its limit) whose inputs no machine holds: ~300 TB of weights.
constexpr char kHugeProblem[] = "E=4096,K=65536,I=65536,topk=8,act=silu,dtype=bf16";

class CliHostileInput : public CliTest {
 protected:
  void SetUp() override {
    CliTest::SetUp();
    write("recipe.json", tiny_recipe_json());
    RunResult r = run({"materialize", "--recipe", "recipe.json", "--out", "tables"});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    table_ = "tables/" + std::string(kTinyTableName);
  }

  /// Exit 2, exactly one stderr line, holding every needle; and short, however long the input.
  static void expect_bad(RunResult const& r, std::vector<std::string> const& needles,
                         std::string const& what) {
    EXPECT_EQ(r.exit_code, 2) << what << ": " << r.err;
    EXPECT_EQ(count_lines(r.err), 1) << what << ": " << r.err;
    EXPECT_LT(r.err.size(), 1200u) << what;
    for (auto const& n : needles)
      EXPECT_NE(r.err.find(n), std::string::npos) << what << ": " << n << " in " << r.err;
  }

  std::string recipe_with(std::string const& from, std::string const& to) const {
    std::string text = tiny_recipe_json();
    replace_once(text, from, to);
    return text;
  }

  std::string table_;
};

TEST_F(CliHostileInput, ZipfWithAHugeExponentRunsAndANegativeOneIsRefusedEverywhere) {
  for (char const* s : {"1100", "1e308"}) {
    RunResult r = run({"run", "--backend", "cpu", "--problem", kProblem, "--m", "4", "--routing",
                       std::string("zipf:s=") + s});
    EXPECT_EQ(r.exit_code, 0) << s << ": " << r.err;
  }
  expect_bad(run({"run", "--backend", "cpu", "--problem", kProblem, "--m", "4", "--routing",
                  "zipf:s=inf"}),
             {"s='inf' is not a finite number >= 0"}, "s=inf");
  write("neg.json", recipe_with("\"routing\": {\"kind\": \"uniform\", \"seed\": 7}",
                                "\"routing\": {\"kind\": \"zipf\", \"zipf_s\": -2}"));
  expect_bad(run({"materialize", "--recipe", "neg.json", "--out", "neg"}),
             {"neg.json: shapes[0] (tiny) routing: zipf_s = -2 is out of range"}, "recipe");
  write("big.json", recipe_with("\"routing\": {\"kind\": \"uniform\", \"seed\": 7}",
                                "\"routing\": {\"kind\": \"zipf\", \"zipf_s\": 2000}"));
  RunResult tune = run({"tune", "--recipe", "big.json", "--buckets", "4", "--out", "big", "--reps",
                        "2", "--warmup", "0"});
  EXPECT_EQ(tune.exit_code, 0) << tune.err;
}

// A JSON value nested 100k levels deep crashed every reading command (a recursive dump in an
// error message); check then left its temp directory behind.
TEST_F(CliHostileInput, DeeplyNestedJsonIsOneLineOfBadInputForEveryReader) {
  std::string const deep = std::string(100000, '[') + std::string(100000, ']');
  write("deep.json", deep);
  write("deep/" + std::string(kTinyTableName), deep);
  fs::create_directories(path("tmp"));
  std::string const env = "TMPDIR=" + path("tmp").string();
  std::vector<std::vector<std::string>> const commands = {
      {"resolve", "--table", "deep/" + std::string(kTinyTableName), "--m", "4"},
      {"show", "--table", "deep/" + std::string(kTinyTableName)},
      {"check", "--recipe", "recipe.json", "--tables", "deep"},
      {"materialize", "--recipe", "deep.json", "--out", "out"},
      {"materialize", "--recipe", "recipe.json", "--out", "deep", "--merge"},
      {"tune", "--recipe", "deep.json", "--out", "out"},
      {"bench", "--recipe", "deep.json", "--backend", "cpu"},
      {"run", "--backend", "cpu", "--problem", kProblem, "--m", "4", "--knobs", "deep.json"},
      {"run", "--backend", "cpu", "--problem", "E=4,K=64,I=32,topk=2,act=silu", "--m", "4",
       "--tables", "deep"},
      {"levers", "diff", "deep.json", "deep.json"},
      {"prewarm", "--tables", "deep"},
      {"pack", "--tables", "deep", "--out", "bundle"}};
  for (auto const& cmd : commands) {
    expect_bad(run(cmd, env), {"nested deeper than 64 levels"}, cmd[0] + " " + cmd[1]);
  }
  RunResult lint = run({"lint", "--tables", "deep"});
  EXPECT_EQ(lint.exit_code, 1) << lint.err;  // a table that does not load is a lint finding
  EXPECT_NE(lint.out.find("load_error"), std::string::npos) << lint.out;
  EXPECT_TRUE(fs::is_empty(path("tmp")));  // check removed its temp directory
}

// materialize changed shapes 1..k-1 before failing on shape k; now it changes nothing.
TEST_F(CliHostileInput, MaterializeThatFailsChangesNoFile) {
  std::string text = tiny_recipe_json();
  std::string const shapes_end = "\n  ]\n}\n";
  std::string second = text.substr(text.find("    {\n      \"name\": \"tiny\""));
  second = second.substr(0, second.size() - shapes_end.size());
  replace_once(second, "\"name\": \"tiny\"", "\"name\": \"second\"");
  replace_once(second, "\"num_experts\": 4", "\"num_experts\": 8");
  text = text.substr(0, text.size() - shapes_end.size()) + ",\n" + second + shapes_end;
  write("two.json", text);
  std::string const second_table = "tables/E=8,N=32,device_name=cpu,family=cpu_tiled.json";
  write(second_table + ".moetune", "{\"manifest_version\": 1, \"key\": {}, \"rows\": {},}");
  write(second_table, "{}");
  std::string const first_before = read(table_), manifest_before = read(table_ + ".moetune");
  write(table_, first_before + " ");  // the recipe would rewrite this file if it ran first
  expect_bad(run({"materialize", "--recipe", "two.json", "--out", "tables", "--merge"}),
             {second_table + ".moetune"}, "merge over a corrupt manifest");
  EXPECT_EQ(read(table_), first_before + " ");
  EXPECT_EQ(read(table_ + ".moetune"), manifest_before);
}

TEST_F(CliHostileInput, SymlinkLoopsAndUnservedRowsAreNotInternalErrors) {
  fs::create_directories(path("loop"));
  fs::create_symlink("b.json", path("loop/a.json"));
  fs::create_symlink("a.json", path("loop/b.json"));
  char const* small = "E=4,K=64,I=32,topk=2,act=silu";
  for (auto const& cmd : std::vector<std::vector<std::string>>{
           {"run", "--backend", "cpu", "--problem", small, "--m", "4", "--tables", "loop"},
           {"prewarm", "--tables", "loop"},
           {"pack", "--tables", "loop", "--out", "bundle"},
           {"bench", "--backend", "cpu", "--problem", small, "--m", "1", "--tables", "loop"}}) {
    expect_bad(run(cmd), {"Too many levels of symbolic links"}, cmd[0]);
  }
  RunResult lint = run({"lint", "--tables", "loop"});
  EXPECT_EQ(lint.exit_code, 1) << lint.err;
  EXPECT_NE(lint.out.find("Too many levels of symbolic links"), std::string::npos) << lint.out;
  // A row with split_k 65536 that the call does not use (M=4 snaps to key 1) sizes nothing.
  std::string vllm = read(table_);
  write(table_,
        vllm.substr(0, vllm.rfind('}')) +
            ",\n    \"4096\": {\"BLOCK_SIZE_M\": 8, \"BLOCK_SIZE_N\": 32, \"BLOCK_SIZE_K\": "
            "64, \"GROUP_SIZE_M\": 1, \"num_warps\": 4, \"num_stages\": 2, \"SPLIT_K\": "
            "65536}\n}\n");
  fs::remove(path(table_ + ".moetune"));
  RunResult r =
      run({"run", "--backend", "cpu", "--problem", small, "--m", "4", "--tables", "tables"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
}

TEST_F(CliHostileInput, ProblemsTooBigToAllocateAreBadInput) {
  for (char const* p : {"E=8,K=2147483648,I=128,topk=2,act=silu",
                        "E=9223372036854775807,K=256,I=128,topk=2,act=silu"}) {
    expect_bad(run({"run", "--backend", "cpu", "--problem", p, "--m", "4"}), {"is out of range"},
               p);
    expect_bad(run({"bench", "--backend", "cpu", "--problem", p, "--m", "4"}), {"is out of range"},
               p);
  }
  expect_bad(run({"run", "--backend", "cpu", "--problem", kHugeProblem, "--m", "16777216"}),
             {"--m: M=16777216 of", "GiB of host memory, more than this machine's"}, "run");
  expect_bad(run({"bench", "--backend", "cpu", "--problem", kHugeProblem, "--m", "1,16777216"}),
             {"GiB of host memory"}, "bench");
  expect_bad(run({"ab", "--backend", "cpu", "--problem", kHugeProblem, "--m", "16777216", "--arm",
                  "A=default", "--arm", "B=default"}),
             {"GiB of host memory"}, "ab");
  write("huge.json",
        recipe_with("\"hidden_size\": 64, \"intermediate_size\": 32, \"num_experts\": 4",
                    "\"hidden_size\": 65536, \"intermediate_size\": 65536, "
                    "\"num_experts\": 4096"));
  expect_bad(run({"tune", "--recipe", "huge.json", "--buckets", "16777216", "--out", "huge"}),
             {"bucket M=16777216", "GiB of host memory"}, "tune");
  write("e.json", recipe_with("\"num_experts\": 4", "\"num_experts\": 9223372036854775807"));
  expect_bad(run({"materialize", "--recipe", "e.json", "--out", "e"}),
             {"num_experts (E) = 9223372036854775807 is out of range"}, "materialize");
  expect_bad(run({"lint", "--tables", "tables", "--recipe", "e.json"}),
             {"num_experts (E) = 9223372036854775807 is out of range"}, "lint");
}

TEST_F(CliHostileInput, AbArmsAndOptionsThatAreUserErrorsAreExit2InOneLine) {
  std::vector<std::string> const base = {"ab", "--backend", "cpu", "--problem", kProblem,   "--m",
                                         "1",  "--rounds",  "1",   "--arm",     "A=default"};
  auto ab = [&](std::vector<std::string> more) {
    std::vector<std::string> args = base;
    args.insert(args.end(), more.begin(), more.end());
    return run(args);
  };
  expect_bad(ab({"--arm", "B=levers:nosuch=on"}),
             {"--arm B=levers:nosuch=on:", "MOETUNE_LEVER_NOSUCH is not a lever knob"}, "lever");
  expect_bad(ab({"--arm", "B=binary:/bin/false"}), {"it is not a moetune build"}, "binary");
  for (char const* t : {"0", "-1", "nan"}) {
    expect_bad(ab({"--arm", "B=default", std::string("--timeout-s=") + t}),
               {"--timeout-s: '" + std::string(t) + "' is not a finite number in (0, 86400]"}, t);
  }
  expect_bad(ab({"--arm", "B=default", "--margin", "nan"}),
             {"--margin: 'nan' is not a finite number in [0, 1]"}, "margin");
  expect_bad(run({"bench", "--backend", "cpu", "--problem", kProblem, "--m", "1", "--nvrtc-defines",
                  "A=1 -Xptxas"}),
             {"--nvrtc-defines: '-Xptxas' is not NAME or NAME=VALUE", "fix the option"}, "defines");
  EXPECT_FALSE(fs::exists(path("build/results")));
}

// Each of these was accepted and did something else than asked.
TEST_F(CliHostileInput, AcceptedButWrongInputIsRefused) {
  write("notopk.json", recipe_with(", \"top_k\": 2", ""));
  expect_bad(run({"materialize", "--recipe", "notopk.json", "--out", "o"}),
             {"notopk.json: shapes[0] (tiny) problem: missing field 'top_k'"}, "top_k");
  write("bom.json", "\xEF\xBB\xBF" + tiny_recipe_json());
  expect_bad(run({"materialize", "--recipe", "bom.json", "--out", "o"}),
             {"bom.json:1: a UTF-8 byte order mark"}, "bom");
  write("nul.json", tiny_recipe_json() + std::string(1, '\0'));
  expect_bad(run({"materialize", "--recipe", "nul.json", "--out", "o"}), {"a NUL byte"}, "nul");
  write("dup.json", recipe_with("\"name\": \"tiny\",\n  \"shapes\"",
                                "\"name\": \"tiny\", \"name\": \"other\",\n  \"shapes\""));
  expect_bad(run({"materialize", "--recipe", "dup.json", "--out", "o"}),
             {"dup.json: key 'name' appears twice"}, "dup");
  EXPECT_FALSE(fs::exists(path("o")));
  std::vector<std::string> const call = {"run", "--backend", "cpu", "--problem", kProblem};
  auto run_with = [&](std::vector<std::string> more, std::string const& env = "") {
    std::vector<std::string> args = call;
    args.insert(args.end(), more.begin(), more.end());
    return run(args, env);
  };
  expect_bad(run_with({"--m", "4", "--knobs", "auto", "--role", "../../escape"},
                      "XDG_CACHE_HOME=" + path("cache/x/y").string()),
             {"role '../../escape' is not a file-name word"}, "role");
  EXPECT_FALSE(fs::exists(path("cache")));
  expect_bad(run_with({"--m", "4", "--tables", "/nonexistent"}),
             {"--tables '/nonexistent' is not a directory"}, "tables");
  expect_bad(run_with({"--m", ""}), {"--m: '' is not a decimal integer"}, "empty m");
  expect_bad(run_with({"--m", "0x10"}), {"--m: '0x10' is not a decimal integer"}, "hex m");
  expect_bad(run({"run", "--backend", "cpu", "--problem", std::string(kProblem) + ",", "--m", "4"}),
             {"ends with a comma; remove it"}, "comma");
  for (char const* c : {"-1", "nan"}) {
    expect_bad(
        run({"bench", "--backend", "cpu", "--problem", kProblem, "--m", "1", "--cooldown", c}),
        {"--cooldown: '" + std::string(c) + "' is not a finite number in [0, 3600]"}, c);
  }
  std::string const huge(100000, '9');
  expect_bad(run({"run", "--backend", "cpu", "--problem", "E=" + huge, "--m", "4"}),
             {"... (100002 bytes)"}, "100 KB value");
  expect_bad(run({"resolve", "--table", table_, "--m", huge}), {"is out of range"}, "100 KB --m");
  // Whatever no reader clips, the CLI cuts in the middle: where at the start, advice at the end.
  std::string const long_path = "tables/" + std::string(100000, 'x') + ".json";
  RunResult missing = run({"resolve", "--table", long_path, "--m", "4"});
  expect_bad(missing,
             {"moetune resolve: tables/xxx", " bytes left out) ...",
              "xxx.json: cannot read: File name too long"},
             "100 KB path");
  expect_bad(run({std::string(100000, 'y')}), {"unknown subcommand 'yyy"}, "100 KB subcommand");
}

TEST_F(CliHostileInput, PrewarmPointedAtAFileOrANonTableNamesItAndWhatItExpected) {
  expect_bad(
      run({"prewarm", "--tables", table_}, "MOETUNE_BACKEND=cpu"),
      {table_ + ": is a file, not a directory", "give the directory that holds them (tables)"},
      "a table file as --tables");
  write("results/bench.json", "{\"shapes\": [1, 2], \"note\": \"not a table\"}\n");
  expect_bad(run({"prewarm", "--tables", "results"}, "MOETUNE_BACKEND=cpu"),
             {"results/bench.json: holds no rows keyed by M (its keys: note, shapes)",
              "move other files out of the tables directory"},
             "a JSON that is not a table");
}

TEST_F(CliHostileInput, ArgumentsWithNewlinesOrBinaryBytesGiveOneEscapedStderrLine) {
  RunResult r = run({"show", "--table", "a\nb\xFF.json"});
  expect_bad(r, {"a\\nb\\xFF.json"}, "a path with a newline and 0xFF");
}

TEST_F(CliHostileInput, ADeviceNameWith0xFFInATableNameStillPrintsValidJson) {
  std::string const name = "E=4,N=32,device_name=cpu\xFF,family=cpu_tiled.json";
  fs::create_directories(path("ff"));
  fs::copy_file(path(table_), path("ff/" + name));
  for (std::vector<std::string> args :
       {std::vector<std::string>{"show", "--json", "--table", "ff/" + name},
        std::vector<std::string>{"resolve", "--json", "--m", "4", "--table", "ff/" + name}}) {
    RunResult r = run(args);
    EXPECT_EQ(r.exit_code, 0) << args[0] << ": " << r.err;
    EXPECT_EQ(r.out.find('\xFF'), std::string::npos) << args[0] << ": invalid UTF-8 in JSON";
  }
  RunResult show = run({"show", "--json", "--table", "ff/" + name});
  EXPECT_NE(show.out.find("device_name=cpu\\ufffd"), std::string::npos) << show.out;
}

}  // namespace
}  // namespace moetune::cli::testing
