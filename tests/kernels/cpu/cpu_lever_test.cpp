// Lever evidence on the cpu backend (docs/levers.md): cpu_register_tiles is bitwise, so its
// output bits equal the plain loop's on random problems; and the adapter from a lever
// resolution to FastPaths covers every field at every deployment of the built-in matrix.
#include <gtest/gtest.h>

#include <cstdio>
#include <cstring>
#include <random>

#include "core/lever_io.hpp"
#include "cpu_test_util.hpp"
#include "kernels/cpu/cpu_testbed.hpp"
#include "kernels/fast_paths_from_levers.hpp"

namespace moetune::kernels::cpu {
namespace {

/// The bytes of the last run's output.
std::vector<unsigned char> output_bytes(CpuTestbed const& tb) {
  core::MoeProblem const& p = tb.data().problem;
  size_t const n = static_cast<size_t>(p.num_tokens * p.hidden_size * core::dtype_bytes(p.dtype));
  auto const* bytes = static_cast<unsigned char const*>(tb.output());
  return {bytes, bytes + n};
}

/// Index of the first differing byte, or -1 when equal (sizes must match).
int64_t first_difference(std::vector<unsigned char> const& a, std::vector<unsigned char> const& b) {
  if (a.size() != b.size()) return 0;
  for (size_t i = 0; i < a.size(); ++i) {
    if (a[i] != b[i]) return static_cast<int64_t>(i);
  }
  return -1;
}

TEST(CpuLevers, RegisterTilesGiveTheSameBitsAsThePlainLoop) {
  uint64_t const seed = testing::test_seed();
  std::printf("lever cpu_register_tiles: seed %llu\n", static_cast<unsigned long long>(seed));
  std::mt19937_64 rng(seed);
  auto pick = [&](std::vector<int64_t> const& v) { return v[rng() % v.size()]; };
  int const kCases = 24;
  for (int i = 0; i < kCases; ++i) {
    core::MoeProblem const p =
        testing::small_problem(pick({1, 3, 7, 16, 17, 33, 64, 65}), pick({4, 6, 8}),
                               pick({64, 96, 128, 200}), pick({32, 64, 72, 96}), pick({1, 2, 3}),
                               i % 3 == 0 ? core::Activation::kRelu2 : core::Activation::kSiluGated,
                               i % 2 == 0 ? core::DType::kBf16 : core::DType::kFp32);
    int const bm = static_cast<int>(pick({8, 16, 32}));
    int const split = static_cast<int>(pick({1, 2}));
    core::MoeConfig const c{
        testing::cpu_kernel(bm, static_cast<int>(pick({16, 32, 64})), 16, split, 2),
        testing::cpu_kernel(bm, static_cast<int>(pick({16, 64})), 16, split, 2)};
    core::RoutingProfile routing;
    routing.seed = seed + i;
    CpuTestbed tb;
    ASSERT_TRUE(tb.prepare(p, routing, seed + i).ok());
    std::string const what = testing::describe(p, routing, seed + i, c);
    tb.set_fast_paths({.cpu_register_tiles = true});
    auto on = tb.check(c);
    ASSERT_TRUE(on.ok()) << on.error().to_string() << " " << what;
    auto const bits_on = output_bytes(tb);
    tb.set_fast_paths({.cpu_register_tiles = false});
    auto off = tb.check(c);
    ASSERT_TRUE(off.ok()) << off.error().to_string() << " " << what;
    EXPECT_EQ(first_difference(bits_on, output_bytes(tb)), -1) << what;
    EXPECT_EQ(on->digest, off->digest) << what;
    EXPECT_LE(off->rel_l2_error, tolerance_for(p.dtype).rel_l2) << what;
  }
}

TEST(CpuLevers, BitComparisonCatchesOneFlippedBit) {
  // Negative twin of the check above: one flipped bit in one element must be found.
  core::MoeProblem const p = testing::small_problem(9, 4, 64, 32, 2, core::Activation::kSiluGated);
  CpuTestbed tb;
  ASSERT_TRUE(tb.prepare(p, {}, testing::test_seed()).ok());
  ASSERT_TRUE(tb.check(cpu_tiled_default_config(p)).ok());
  auto const bits = output_bytes(tb);
  auto flipped = bits;
  flipped[37] ^= 1;
  EXPECT_EQ(first_difference(bits, flipped), 37);
}

TEST(CpuLevers, EveryFastPathFieldIsALeverAtEveryMatrixDeployment) {
  auto const& table = core::builtin_lever_table();
  ASSERT_TRUE(table.ok()) << table.error().to_string();
  std::vector<std::string> lever_names;
  for (auto const& l : table->levers) lever_names.push_back(l.name);
  std::vector<std::string> fields = fast_path_names();
  std::sort(lever_names.begin(), lever_names.end());
  std::sort(fields.begin(), fields.end());
  EXPECT_EQ(lever_names, fields) << "levers/levers.json and FastPaths name different sets";
  FastPaths const defaults;
  for (auto const& d : table->deployments) {
    auto fp = resolve_fast_paths(d, {}, {});
    ASSERT_TRUE(fp.ok()) << fp.error().to_string();
    // The struct's defaults are the table's defaults where the path is served.
    if (d.backend == "cuda") {
      EXPECT_EQ(fp->align_multi_cta, defaults.align_multi_cta) << core::to_string(d);
      EXPECT_EQ(fp->wgmma_mainloop, defaults.wgmma_mainloop) << core::to_string(d);
      EXPECT_EQ(fp->pdl, defaults.pdl) << core::to_string(d);
    } else {
      EXPECT_EQ(fp->cpu_register_tiles, defaults.cpu_register_tiles) << core::to_string(d);
    }
  }
}

TEST(CpuLevers, KnobSwitchesTheFastPathTheKernelReads) {
  core::Deployment const cpu{.backend = "cpu", .arch = "cpu", .dtype = "fp32"};
  auto fp = resolve_fast_paths(cpu, {{"MOETUNE_LEVER_CPU_REGISTER_TILES", "off"}}, {});
  ASSERT_TRUE(fp.ok()) << fp.error().to_string();
  EXPECT_FALSE(fp->cpu_register_tiles);
  auto refused = resolve_fast_paths(cpu, {{"MOETUNE_LEVER_PDL", "off"}}, {});
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.error().to_string(),
            "environment: MOETUNE_LEVER_PDL=off is refused at "
            "backend=cpu,arch=cpu,tp=1,ep=1,dtype=fp32,role=decode: lever 'pdl' is served only "
            "where backend=cuda and arch=sm90; unset MOETUNE_LEVER_PDL");
}

TEST(CpuLevers, AdapterRefusesATableThatDoesNotMatchFastPaths) {
  auto r = core::resolve_levers(*core::builtin_lever_table(), core::Deployment{}, {}, {});
  ASSERT_TRUE(r.ok());
  core::LeverResolution missing = *r;
  missing.levers.erase(missing.levers.begin());
  EXPECT_EQ(fast_paths_from_levers(missing).error().to_string(),
            "levers/levers.json: no lever 'align_multi_cta' for FastPaths::align_multi_cta; "
            "declare it in the lever table");
  core::LeverResolution extra = *r;
  extra.levers.push_back({.name = "tiny_m_single_launch"});
  EXPECT_EQ(fast_paths_from_levers(extra).error().to_string(),
            "levers/levers.json: lever 'tiny_m_single_launch' is no FastPaths field, so it "
            "switches no code; add the field to src/kernels/fast_paths.hpp or remove the lever");
}

}  // namespace
}  // namespace moetune::kernels::cpu
