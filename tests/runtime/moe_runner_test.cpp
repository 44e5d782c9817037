// MoeRunner on the cpu backend: every knob rule (default, table, cache, explicit, auto), scope
// validation of the cache, capture refusal, tune-once, the workspace bound, thread safety, and
// run() against the fp64 reference.
#include "moetune/moe_runner.hpp"

#include <filesystem>
#include <fstream>
#include <thread>

#include <gtest/gtest.h>

#include "core/table.hpp"
#include "core/temp_dir.hpp"
#include "kernels/cpu/cpu_backend.hpp"
#include "kernels/cpu/moe_data.hpp"
#include "kernels/cpu/output_check.hpp"
#include "kernels/cpu/reference.hpp"
#include "kernels/testbed.hpp"
#include "runtime/knob_cache.hpp"

namespace moetune {
namespace {

std::string const kTables = std::string(MOETUNE_SOURCE_DIR) + "/tables/cpu";

/// The demo shape of tables/cpu.
core::MoeProblem demo_problem() {
  return *core::parse_problem_spec("E=8,K=256,I=128,topk=2,act=silu,dtype=bf16,arch=cpu");
}

class RunnerTest : public ::testing::Test {
 protected:
  void SetUp() override { dir_ = moetune::testing::unique_temp_dir("runner"); }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  RunnerOptions options(bool tables) const {
    RunnerOptions o;
    o.tables_dir = tables ? kTables : "";
    o.cache_path = dir_ + "/knobs.json";
    o.max_tokens = 256;
    o.auto_budget_s = 2;
    o.warn = [](std::string const&) {};
    return o;
  }
  std::unique_ptr<MoeRunner> make(bool tables) const {
    auto r = MoeRunner::create(demo_problem(), "cpu", options(tables));
    EXPECT_TRUE(r.ok()) << r.error().to_string();
    return std::move(*r);
  }
  runtime::CacheEntry entry_for(MoeRunner const& r, int64_t bucket, core::MoeConfig c) const {
    kernels::cpu::CpuBackend b;
    runtime::CacheEntry e;
    e.scope = runtime::make_scope(b.device(), b.family(), b.family_version(), r.problem(), {});
    e.bucket = bucket;
    e.config = c;
    e.source.kind = "tuned";
    return e;
  }
  std::string dir_;
};

core::MoeConfig tile_config(int block_m, int block_n) {
  core::KernelConfig k;
  k.tile.block_m = block_m;
  k.tile.block_n = block_n;
  return core::uniform_config(k);
}

TEST_F(RunnerTest, NoTableNoCacheServesTheBackendDefault) {
  auto r = make(false);
  auto c = r->choose(5);
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(c->rule, ChoiceRule::kDefault);
  core::MoeProblem p = r->problem();
  p.num_tokens = 5;
  EXPECT_EQ(c->config, kernels::cpu::cpu_tiled_default_config(p));
  EXPECT_EQ(c->bucket, 8);
  EXPECT_EQ(r->table_path(), "");
}

TEST_F(RunnerTest, TableRowServesWhenTheCacheHasNoEntry) {
  auto r = make(true);
  auto table = core::load_table(r->table_path());
  ASSERT_TRUE(table.ok());
  auto c = r->choose(5);
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(c->rule, ChoiceRule::kTable);
  EXPECT_EQ(c->config, table->rows.at(4).config);  // nearest key to 5
  EXPECT_NE(c->explain.find("key 4"), std::string::npos) << c->explain;
}

TEST_F(RunnerTest, CacheEntryOutranksTheTableForItsBucketOnly) {
  auto probe = make(true);
  ASSERT_TRUE(runtime::merge_into_knob_cache(dir_ + "/knobs.json",
                                             entry_for(*probe, 8, tile_config(16, 32)))
                  .ok());
  auto r = make(true);
  auto c = r->choose(7);
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(c->rule, ChoiceRule::kCache);
  EXPECT_EQ(c->config, tile_config(16, 32));
  EXPECT_EQ(r->choose(9)->rule, ChoiceRule::kTable);  // bucket 16: no entry
}

TEST_F(RunnerTest, EntryFromAnotherDriverIsIgnoredWithOneWarning) {
  auto probe = make(true);
  runtime::CacheEntry stale = entry_for(*probe, 8, tile_config(16, 32));
  stale.scope.driver = "550.54";
  ASSERT_TRUE(runtime::merge_into_knob_cache(dir_ + "/knobs.json", stale).ok());
  auto r = make(true);
  EXPECT_EQ(r->choose(7)->rule, ChoiceRule::kTable);
  ASSERT_EQ(r->warnings().size(), 1u);
  EXPECT_NE(r->warnings()[0].find("driver is '550.54' in the cache but '' here"), std::string::npos)
      << r->warnings()[0];
}

TEST_F(RunnerTest, AWarningEchoingBytesFromTheCacheIsOnePrintableLine) {
  auto probe = make(true);
  runtime::CacheEntry stale = entry_for(*probe, 8, tile_config(16, 32));
  stale.scope.driver = "550\n\xff" + std::string(5000, 'x');  // a newline, a stray byte, 5 KB
  ASSERT_TRUE(runtime::merge_into_knob_cache(dir_ + "/knobs.json", stale).ok());
  auto r = make(true);
  ASSERT_EQ(r->warnings().size(), 1u);
  std::string const w = r->warnings()[0];
  EXPECT_EQ(w.find('\n'), std::string::npos) << w;
  EXPECT_EQ(w.find('\xff'), std::string::npos) << w;
  EXPECT_LT(w.size(), 1200u);
  EXPECT_NE(w.find("550\\n"), std::string::npos) << w;  // written as an escape
}

TEST_F(RunnerTest, CorruptCacheIsAnErrorNamingTheFile) {
  std::filesystem::create_directories(dir_);
  { std::ofstream(dir_ + "/knobs.json") << "{\"cache_version\": 1, \"entries\": [{}]}"; }
  auto r = MoeRunner::create(demo_problem(), "cpu", options(false));
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().to_string().find(dir_ + "/knobs.json: entries[0]"), std::string::npos)
      << r.error().to_string();
}

TEST_F(RunnerTest, ExplicitConfigIsValidatedAndConflictsNameConfigAndProblem) {
  auto r = make(true);
  auto ok = r->choose(5, Knobs::explicit_config(tile_config(16, 64)));
  ASSERT_TRUE(ok.ok());
  EXPECT_EQ(ok->rule, ChoiceRule::kExplicit);
  core::MoeConfig bad = tile_config(16, 64);
  bad.gemm2.tile.block_m = 32;  // align pads per expert to one block_m
  auto refused = r->choose(5, Knobs::explicit_config(bad));
  ASSERT_FALSE(refused.ok());
  std::string const msg = refused.error().message;
  EXPECT_EQ(msg.rfind("config m16n64k64g1w4s2|m32n64k64g1w4s2 conflicts with MoeProblem(M=5, "
                      "K=256, I=128, E=8, top_k=2, act=silu, dtype=bf16, arch=cpu): ",
                      0),
            0u)
      << msg;
  EXPECT_FALSE(r->run(nullptr, nullptr, nullptr, nullptr, nullptr, nullptr, nullptr, 5,
                      Knobs::explicit_config(bad))
                   .ok());
}

TEST_F(RunnerTest, AutoTunesOncePersistsAndIsNeverRetuned) {
  {
    auto r = make(true);
    auto c = r->choose(3, Knobs::auto_tune());
    ASSERT_TRUE(c.ok()) << c.error().to_string();
    EXPECT_EQ(c->rule, ChoiceRule::kAuto);
    EXPECT_EQ(c->bucket, 4);
    auto again = r->choose(3, Knobs::auto_tune());
    EXPECT_EQ(again->rule, ChoiceRule::kCache);
    EXPECT_EQ(again->config, c->config);
    EXPECT_EQ(r->choose(4, Knobs::none())->rule, ChoiceRule::kCache);  // outranks table now
  }
  auto const before = std::filesystem::last_write_time(dir_ + "/knobs.json");
  auto r2 = make(true);  // a new process would see the same file
  auto c2 = r2->choose(4, Knobs::auto_tune());
  ASSERT_TRUE(c2.ok());
  EXPECT_EQ(c2->rule, ChoiceRule::kCache);
  EXPECT_EQ(std::filesystem::last_write_time(dir_ + "/knobs.json"), before);
  EXPECT_EQ(runtime::load_knob_cache(dir_ + "/knobs.json")->entries.size(), 1u);
}

TEST_F(RunnerTest, AutoIsRefusedDuringCaptureUnlessTheCacheHoldsTheBucket) {
  auto r = make(false);
  {
    ScopedCapture capture(*r);
    auto c = r->choose(3, Knobs::auto_tune());
    ASSERT_FALSE(c.ok());
    EXPECT_EQ(c.error().code, core::ErrorCode::kUnsupported);
    EXPECT_NE(c.error().message.find("during CUDA graph capture is refused"), std::string::npos);
    EXPECT_EQ(r->choose(3, Knobs::none())->rule, ChoiceRule::kDefault);  // none never tunes
  }
  EXPECT_FALSE(r->capturing());
  ASSERT_TRUE(r->choose(3, Knobs::auto_tune()).ok());
  ScopedCapture capture(*r);
  EXPECT_EQ(r->choose(3, Knobs::auto_tune())->rule, ChoiceRule::kCache);
}

TEST_F(RunnerTest, RunMatchesTheReferenceForEveryRule) {
  auto r = make(true);
  for (int64_t m : {0, 1, 7, 33, 256}) {
    core::MoeProblem p = r->problem();
    p.num_tokens = m;
    auto data = kernels::cpu::generate_moe_data(p, {}, 7);
    ASSERT_TRUE(data.ok());
    std::vector<uint16_t> out(static_cast<size_t>(m * p.hidden_size) + 1);
    kernels::cpu::poison_output(p.dtype, out.data(), m * p.hidden_size);
    for (Knobs k : {Knobs::none(), Knobs::explicit_config(tile_config(8, 32))}) {
      Choice chosen;
      auto s = r->run(nullptr, data->x_data(), data->routing.topk_ids.data(),
                      data->routing.topk_weights.data(), data->w1_data(), data->w2_data(),
                      out.data(), m, k, &chosen);
      ASSERT_TRUE(s.ok()) << s.error().to_string();
      EXPECT_EQ(chosen.m, m);
      if (m == 0) continue;
      auto ref = kernels::cpu::reference_moe(p, data->view());
      auto tol = kernels::tolerance_for(p.dtype);
      auto chk = kernels::cpu::check_output(p.dtype, out.data(), *ref, tol);
      EXPECT_TRUE(kernels::cpu::check_passed(chk, tol)) << "M=" << m << " rel " << chk.rel_l2_error;
      // Negative twin: one corrupted element must be caught by the same check.
      uint16_t const saved = out[0];
      out[0] ^= 0x4000;
      EXPECT_FALSE(kernels::cpu::check_passed(
          kernels::cpu::check_output(p.dtype, out.data(), *ref, tol), tol));
      out[0] = saved;
    }
  }
  EXPECT_GT(r->workspace_bytes(), 0u);
}

TEST_F(RunnerTest, MBeyondMaxTokensIsRefused) {
  auto r = make(false);
  auto c = r->choose(257);
  ASSERT_FALSE(c.ok());
  EXPECT_NE(c.error().message.find("M = 257 is outside [0, max_tokens = 256]"), std::string::npos);
  EXPECT_FALSE(r->choose(-1).ok());
}

TEST_F(RunnerTest, ConcurrentLookupsGiveTheSingleThreadedAnswers) {
  auto reference = make(true);
  std::vector<core::MoeConfig> expected;
  for (int64_t m = 0; m <= 256; ++m) expected.push_back(reference->choose(m)->config);
  auto r = make(true);
  std::vector<std::thread> threads;
  std::atomic<int> wrong{0};
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      for (int rep = 0; rep < 3; ++rep) {
        for (int64_t m = 0; m <= 256; ++m) {
          int64_t const mm = (m * 7 + t * 13) % 257;
          if (r->choose(mm)->config != expected[mm]) ++wrong;
        }
      }
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(wrong.load(), 0);
}

TEST_F(RunnerTest, UnknownBackendAndInvalidProblemAreRefused) {
  EXPECT_FALSE(MoeRunner::create(demo_problem(), "tpu", options(false)).ok());
  core::MoeProblem bad = demo_problem();
  bad.top_k = 9;
  EXPECT_FALSE(MoeRunner::create(bad, "cpu", options(false)).ok());
}

TEST_F(RunnerTest, LookupsPastTheMemoArrayAreMemoisedToo) {
  RunnerOptions o = options(true);
  o.max_tokens = 65600;  // the array holds M < 65536
  auto r = MoeRunner::create(demo_problem(), "cpu", o);
  ASSERT_TRUE(r.ok());
  auto first = (*r)->lookup(65599);
  ASSERT_TRUE(first.ok());
  EXPECT_EQ(*(*r)->lookup(65599), *first);  // the same slot: not resolved again
  EXPECT_EQ((*first)->rule, ChoiceRule::kTable);
  EXPECT_FALSE((*r)->lookup(5, Knobs::explicit_config(tile_config(8, 32))).ok());
}

TEST(RuntimeBucket, IsTheNextPowerOfTwo) {
  EXPECT_EQ(runtime_bucket(0), 0);
  EXPECT_EQ(runtime_bucket(1), 1);
  EXPECT_EQ(runtime_bucket(5), 8);
  EXPECT_EQ(runtime_bucket(8), 8);
  EXPECT_EQ(runtime_bucket(9), 16);
}

// A role names the cache file knobs-<role>.json; "../../x" would have put it outside the cache
// directory. Refused at create, naming the role; nothing is written.
TEST_F(RunnerTest, ARoleWithAPathSeparatorIsRefused) {
  for (char const* role : {"../../escape", "a/b", "..", "x\\y"}) {
    RunnerOptions o = options(false);
    o.cache_path = "";
    o.role = role;
    auto r = MoeRunner::create(demo_problem(), "cpu", o);
    ASSERT_FALSE(r.ok()) << role;
    EXPECT_EQ(r.error().code, core::ErrorCode::kInvalidArgument);
    EXPECT_NE(r.error().message.find("is not a file-name word"), std::string::npos) << role;
  }
  RunnerOptions o = options(false);
  o.role = "decode-2.tp8_x";
  EXPECT_TRUE(MoeRunner::create(demo_problem(), "cpu", o).ok());
}

// Issue 57: a row with split_k 65536 that no M is served from still sized the workspace
// (terabytes: bad_alloc, exit 3). Rows outside the config ranges never run, so they size nothing.
TEST_F(RunnerTest, ARowOutsideTheConfigRangesDoesNotSizeTheWorkspace) {
  core::Table t;
  t.key = {.num_experts = 8,
           .intermediate_size = 128,
           .hidden_size = 256,
           .top_k = 2,
           .activation = core::Activation::kSiluGated,
           .dtype = core::DType::kBf16,
           .device_name = "cpu",
           .family = "cpu_tiled",
           .family_version = 1};
  t.has_manifest = true;
  t.rows[4096].config = tile_config(16, 32);
  t.rows[4096].config.gemm1.pipeline.split_k = 65536;
  t.rows[4096].config.gemm2.pipeline.split_k = 65536;
  std::string const tables = dir_ + "/tables";
  ASSERT_TRUE(core::save_table(t, tables).ok());
  RunnerOptions o = options(false);
  o.tables_dir = tables;
  o.max_tokens = 4096;
  auto r = MoeRunner::create(demo_problem(), "cpu", o);
  ASSERT_TRUE(r.ok()) << r.error().to_string();
  EXPECT_LT((*r)->workspace_bytes(), size_t{1} << 30);
}

// A max_tokens whose workspace cannot fit this machine is refused before allocating, not a
// bad_alloc.
TEST_F(RunnerTest, AWorkspaceLargerThanTheMachineIsRefused) {
  RunnerOptions o = options(false);
  o.max_tokens = core::kMaxTokens;
  auto big = *core::parse_problem_spec("E=4096,K=65536,I=65536,topk=64,act=silu,arch=cpu");
  auto r = MoeRunner::create(big, "cpu", o);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code, core::ErrorCode::kInvalidArgument);
  EXPECT_NE(r.error().message.find("GiB of host memory, more than this machine's"),
            std::string::npos)
      << r.error().to_string();
}

}  // namespace
}  // namespace moetune
