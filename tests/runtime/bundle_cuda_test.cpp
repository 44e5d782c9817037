// prewarm and pack on a cuda (sm90_gather) table: NVRTC compiles each row into the cubin cache
// with no GPU, and a packed bundle serves every row from its own cubins (nothing compiles).
// Needs only NVRTC: skips in builds without CUDA.
#include <cstdlib>
#include <filesystem>
#include <set>

#include <gtest/gtest.h>

#include "core/scoped_env.hpp"
#include "core/table.hpp"
#include "core/temp_dir.hpp"
#include "runtime/bundle.hpp"

namespace moetune::runtime {
namespace {

TEST(PrewarmCuda, CompilesRowsAndTheBundleServesThemWithoutCompiling) {
#if !defined(MOETUNE_HAVE_CUDA)
  GTEST_SKIP() << "built without CUDA: the sm90_gather prewarm needs NVRTC";
#else
  std::string const dir = moetune::testing::unique_temp_dir("prewarm_cuda");
  auto files = core::list_table_files(std::string(MOETUNE_SOURCE_DIR) + "/tables/NVIDIA_H200");
  ASSERT_TRUE(files.ok());
  auto t = core::load_table(files->front());
  ASSERT_TRUE(t.ok());
  while (t->rows.size() > 2) t->rows.erase(std::prev(t->rows.end()));  // two rows keep CI quick
  ASSERT_TRUE(core::save_table(*t, dir + "/tables").ok());
  moetune::testing::ScopedEnv cache_dir("MOETUNE_CACHE_DIR", (dir + "/cache").c_str());
  auto first = prewarm_tables(dir + "/tables");
  ASSERT_TRUE(first.ok()) << first.error().to_string();
  ASSERT_EQ(first->items.size(), 2u);
  for (auto const& it : first->items) {
    EXPECT_TRUE(it.outcome == "compiled" || it.outcome == "cached") << it.outcome;
    // GEMM1, GEMM2 and (not for the decode kernels) align + combine.
    EXPECT_EQ(it.cubins.size(), it.config.find("swap") != std::string::npos ? 2u : 3u) << it.config;
    for (auto const& cubin : it.cubins) EXPECT_TRUE(std::filesystem::exists(cubin)) << cubin;
  }
  ASSERT_TRUE(pack_bundle(dir + "/tables", dir + "/bundle").ok());
  {
    moetune::testing::ScopedEnv bundle_dir("MOETUNE_CACHE_DIR", (dir + "/bundle").c_str());
    auto served = prewarm_tables(dir + "/bundle/tables");
    ASSERT_TRUE(served.ok()) << served.error().to_string();
    for (auto const& it : served->items) EXPECT_EQ(it.outcome, "cached") << it.config;
  }
  std::filesystem::remove_all(dir);
#endif
}

}  // namespace
}  // namespace moetune::runtime
