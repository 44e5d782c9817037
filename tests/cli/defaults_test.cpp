// moetune defaults: the backend's default rule through the binary. On cuda (no GPU needed) it
// prints tests/kernels/cuda/default_rule_grid.csv verbatim from the grid's shapes and M, so the
// tools that price the rule (bench/fit_defaults.py, bench/defaults_table.py) read the rule the
// binary has; bad input ends in exit 2 with one line.
#include <string>
#include <vector>

#include "cli/cli_test_util.hpp"

namespace moetune::cli::testing {
namespace {

std::string const kGrid =
    std::string(MOETUNE_SOURCE_DIR) + "/tests/kernels/cuda/default_rule_grid.csv";

bool has(std::string const& text, std::string const& part) {
  return text.find(part) != std::string::npos;
}

class CliDefaults : public CliTest {};

TEST_F(CliDefaults, CpuPrintsOneCsvLinePerProblemAndM) {
  RunResult r = run({"defaults", "--backend", "cpu", "--problem", "E=8,K=256,I=128,topk=2,act=silu",
                     "--problem", "E=4,K=64,I=32,topk=1,act=relu2", "--m", "1,64"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  std::vector<std::string> lines;
  for (size_t at = 0, nl; (nl = r.out.find('\n', at)) != std::string::npos; at = nl + 1)
    lines.push_back(r.out.substr(at, nl - at));
  ASSERT_EQ(lines.size(), 5u) << r.out;
  EXPECT_EQ(lines[0], "E,K,I,top_k,act,M,gemm1,gemm2");
  EXPECT_EQ(lines[1].rfind("8,256,128,2,silu,1,", 0), 0u) << lines[1];
  EXPECT_EQ(lines[4].rfind("4,64,32,1,relu2,64,", 0), 0u) << lines[4];
}

TEST_F(CliDefaults, JsonNamesBackendProblemAndBothGemms) {
  RunResult r = run({"defaults", "--backend", "cpu", "--problem", "E=8,K=256,I=128,topk=2,act=silu",
                     "--m", "16", "--json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(top_level_keys(r.out),
            (std::vector<std::string>{"backend", "problem", "m", "gemm1", "gemm2", "config"}));
  EXPECT_TRUE(has(r.out, "\"backend\": \"cpu\"")) << r.out;
  EXPECT_TRUE(has(r.out, "\"m\": 16")) << r.out;
}

TEST_F(CliDefaults, RefusesABadProblemAnEmptyMAndAnUnknownBackend) {
  RunResult p = run({"defaults", "--backend", "cpu", "--problem", "E=8,K=256", "--m", "1"});
  EXPECT_EQ(p.exit_code, 2);
  EXPECT_TRUE(has(p.err, "--problem")) << p.err;
  RunResult m = run(
      {"defaults", "--backend", "cpu", "--problem", "E=8,K=256,I=128,topk=2,act=silu", "--m", "0"});
  EXPECT_EQ(m.exit_code, 2);
  EXPECT_TRUE(has(m.err, "is not a token count")) << m.err;
  RunResult b = run({"defaults", "--backend", "cudda", "--problem",
                     "E=8,K=256,I=128,topk=2,act=silu", "--m", "1"});
  EXPECT_EQ(b.exit_code, 2);
  EXPECT_TRUE(has(b.err, "did you mean 'cuda'")) << b.err;
}

#if defined(MOETUNE_HAVE_CUDA)
TEST_F(CliDefaults, CudaPrintsTheDefaultRuleGridVerbatim) {
  // The grid's shapes and M (S1-S3, an E = 40 gelu_tanh shape whose K is not a multiple of 128,
  // DeepSeek-V3-like and Mixtral-8x22B; M from decode through every band of pairs per expert):
  // regenerate the grid with this command after a change of the rule.
  std::vector<std::string> args = {"defaults", "--backend", "cuda"};
  for (char const* p :
       {"E=128,K=2688,I=1856,topk=6,act=relu2", "E=128,K=2048,I=768,topk=8,act=silu",
        "E=8,K=4096,I=14336,topk=2,act=silu", "E=40,K=2752,I=1408,topk=4,act=gelu_tanh",
        "E=256,K=7168,I=2048,topk=8,act=silu", "E=8,K=6144,I=16384,topk=2,act=silu"}) {
    args.push_back("--problem");
    args.push_back(p);
  }
  args.push_back("--m");
  args.push_back(
      "1,2,3,4,8,16,32,64,96,128,256,384,512,768,1024,1536,2048,2560,3072,4096,8192,16384");
  RunResult r = run(args);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, read_text(kGrid));
}
#endif

}  // namespace
}  // namespace moetune::cli::testing
