// prewarm and pack on the cpu tables: every row is validated, a row the family cannot run is an
// error naming the table and row, and a bundle holds the tables and its manifest.
#include "runtime/bundle.hpp"

#include <filesystem>

#include <gtest/gtest.h>

#include "core/atomic_file.hpp"
#include "core/table.hpp"
#include "core/temp_dir.hpp"

namespace moetune::runtime {
namespace {

std::string const kTables = std::string(MOETUNE_SOURCE_DIR) + "/tables/cpu";

TEST(Prewarm, ValidatesEveryRowOfTheCpuTables) {
  auto r = prewarm_tables(kTables);
  ASSERT_TRUE(r.ok()) << r.error().to_string();
  auto files = core::list_table_files(kTables);
  size_t rows = 0;
  for (auto const& f : *files) rows += core::load_table(f)->rows.size();
  EXPECT_EQ(r->tables, static_cast<int>(files->size()));
  ASSERT_EQ(r->items.size(), rows);
  for (auto const& it : r->items) EXPECT_EQ(it.outcome, "validated");
}

TEST(Prewarm, ARowTheFamilyCannotRunIsAnErrorNamingTableAndRow) {
  std::string const dir = moetune::testing::unique_temp_dir("prewarm");
  auto files = core::list_table_files(kTables);
  auto t = core::load_table(files->front());
  ASSERT_TRUE(t.ok());
  t->rows.begin()->second.config.gemm1.pipeline.num_warps = 8;  // cpu_tiled has no warps knob
  auto saved = core::save_table(*t, dir);
  ASSERT_TRUE(saved.ok());
  auto r = prewarm_tables(dir);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().where.find(*saved + ": rows[" + std::to_string(t->rows.begin()->first) + "]"),
            std::string::npos)
      << r.error().to_string();
  std::filesystem::remove_all(dir);
}

TEST(Pack, WritesTablesManifestsAndTheBundleManifest) {
  std::string const dir = moetune::testing::unique_temp_dir("pack");
  auto r = pack_bundle(kTables, dir + "/bundle");
  ASSERT_TRUE(r.ok()) << r.error().to_string();
  auto const files = core::list_table_files(kTables);
  ASSERT_TRUE(files.ok());
  for (auto const& f : *files) {
    auto name = std::filesystem::path(f).filename().string();
    EXPECT_EQ(*core::read_file(dir + "/bundle/tables/" + name), *core::read_file(f));
    EXPECT_EQ(*core::read_file(dir + "/bundle/tables/" + name + ".moetune"),
              *core::read_file(f + ".moetune"));
  }
  auto manifest = core::read_file(dir + "/bundle/bundle.json");
  ASSERT_TRUE(manifest.ok());
  EXPECT_NE(manifest->find("\"bundle_version\": 2"), std::string::npos);
  EXPECT_NE(manifest->find("\"outcome\": \"validated\""), std::string::npos);
  // The bundle's tables serve: prewarming them again succeeds.
  EXPECT_TRUE(prewarm_tables(dir + "/bundle/tables").ok());
  std::filesystem::remove_all(dir);
}

// Progress: one call per config as it is done, numbered against the total known up front (the
// CLI prints a line per compiled config from it, so a long cuda prewarm shows it is moving).
TEST(Prewarm, ReportsProgressOncePerConfigAgainstTheTotal) {
  std::vector<std::pair<size_t, size_t>> seen;
  auto r = prewarm_tables(kTables, [&](PrewarmItem const& it, size_t index, size_t total) {
    EXPECT_EQ(it.outcome, "validated");
    seen.emplace_back(index, total);
  });
  ASSERT_TRUE(r.ok()) << r.error().to_string();
  ASSERT_EQ(seen.size(), r->items.size());
  for (size_t i = 0; i < seen.size(); ++i) {
    EXPECT_EQ(seen[i], std::make_pair(i + 1, r->items.size()));
  }
  core::MoeProblem p = *core::parse_problem_spec("E=8,K=256,I=128,topk=2,act=silu,arch=cpu");
  size_t calls = 0;
  ASSERT_TRUE(prewarm_defaults(p, {1, 16}, [&](PrewarmItem const&, size_t, size_t total) {
                EXPECT_EQ(total, 2u);
                ++calls;
              }).ok());
  EXPECT_EQ(calls, 2u);
}

}  // namespace
}  // namespace moetune::runtime
