// Engine files: our own families' names no engine asks for, engine families' exact names, and the
// engine kernel's limits checked by rule before an engine-format file is written.
#include <gtest/gtest.h>

#include "temp_dir.hpp"

#include <filesystem>

#include "core/engine_rows.hpp"
#include "core/table.hpp"

namespace moetune::core {
namespace {

TableKey key_of(std::string family) {
  return TableKey{.num_experts = 128,
                  .intermediate_size = 1856,
                  .hidden_size = 4096,
                  .top_k = 8,
                  .activation = Activation::kSiluGated,
                  .device_name = "NVIDIA_H200",
                  .family = std::move(family),
                  .family_version = 1};
}

MoeConfig row(int bm, int bn, int bk, int warps, int stages) {
  KernelConfig k;
  k.tile = {.block_m = bm, .block_n = bn, .block_k = bk, .group_m = 1};
  k.pipeline.num_warps = warps;
  k.pipeline.num_stages = stages;
  return uniform_config(k);
}

TEST(EngineRows, OurFamiliesGetANameNoEngineOpens) {
  EXPECT_EQ(table_file_name(key_of("sm90_gather")),
            "E=128,N=1856,device_name=NVIDIA_H200,family=sm90_gather.json");
  EXPECT_EQ(table_file_name(key_of("cpu_tiled")),
            "E=128,N=1856,device_name=NVIDIA_H200,family=cpu_tiled.json");
  // The engines' family, and a file of unknown family, keep the engines' exact name.
  EXPECT_EQ(table_file_name(key_of("triton_vllm")), "E=128,N=1856,device_name=NVIDIA_H200.json");
  EXPECT_EQ(table_file_name(key_of("")), vllm_file_name(key_of("")));
  auto parsed = parse_vllm_file_name(table_file_name(key_of("sm90_gather")));
  ASSERT_TRUE(parsed.ok()) << parsed.error().to_string();
  EXPECT_EQ(parsed->family, "sm90_gather");
  EXPECT_EQ(table_file_name(*parsed), table_file_name(key_of("sm90_gather")));
}

TEST(EngineRows, ARowOfPowersOfTwoWithinSharedMemoryPasses) {
  EXPECT_TRUE(check_engine_row(key_of("triton_vllm"), 16, row(16, 64, 128, 4, 4), "f").ok());
  EXPECT_TRUE(check_engine_row(key_of("triton_vllm"), 16, row(64, 256, 64, 1, 1), "f").ok());
}

TEST(EngineRows, EachLimitIsCaughtWithTheRowAndField) {
  TableKey const key = key_of("triton_vllm");
  auto message = [&](MoeConfig const& c) {
    Status const st = check_engine_row(key, 1024, c, "E.json");
    return st.ok() ? std::string("ok") : st.error().to_string();
  };
  // The rows the engine's kernel refused when our sm90 tables were named for it.
  EXPECT_EQ(message(row(64, 232, 64, 4, 3)),
            "E.json: rows[1024]: BLOCK_SIZE_N = 232 is not a power of two >= 16 (Triton's "
            "tl.arange needs a power of two, tl.dot at least 16); the engine's Triton kernel "
            "cannot run this row, so no engine-format file is written: re-tune it within the "
            "family's space");
  EXPECT_NE(message(row(64, 128, 64, 12, 3))
                .find("num_warps = 12 is not one of Triton's 1, 2, "
                      "4, 8, 16, 32"),
            std::string::npos);
  EXPECT_NE(message(row(8, 128, 64, 4, 3)).find("BLOCK_SIZE_M = 8 is not a power of two >= 16"),
            std::string::npos);
  EXPECT_NE(message(row(64, 64, 64, 64, 3)).find("num_warps = 64"), std::string::npos);
  // (256 + 256) * 256 * 2 bytes * 3 stages in flight = 786432 > 232448.
  EXPECT_NE(message(row(256, 256, 256, 8, 4))
                .find("shared memory >= 786432 bytes is past the "
                      "232448"),
            std::string::npos);
  MoeConfig split = row(64, 128, 64, 4, 3);
  split.gemm2.tile.block_n = 64;
  EXPECT_NE(message(split).find("(the engine runs the file's one row for both GEMMs)"),
            std::string::npos);
}

TEST(EngineRows, AnEngineFamilysTableIsWrittenOnlyWhenEveryRowPasses) {
  std::string const dir = moetune::testing::unique_temp_dir("engine_rows");
  Table t;
  t.key = key_of("triton_vllm");
  t.has_manifest = true;
  t.rows[16].config = row(16, 64, 128, 4, 4);
  t.rows[1024].config = row(64, 232, 64, 4, 3);
  auto refused = save_table(t, dir);
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.error().code, ErrorCode::kUnsupported);
  EXPECT_NE(refused.error().where.find("rows[1024]"), std::string::npos);
  EXPECT_TRUE(std::filesystem::is_empty(dir));  // nothing was written
  // Twin: the same rows in our own family are written, under a name no engine opens.
  t.key.family = "sm90_gather";
  auto ours = save_table(t, dir);
  ASSERT_TRUE(ours.ok()) << ours.error().to_string();
  EXPECT_EQ(*ours, dir + "/E=128,N=1856,device_name=NVIDIA_H200,family=sm90_gather.json");
  t.key.family = "triton_vllm";
  t.rows[1024].config = row(64, 256, 64, 4, 3);
  auto engine = save_table(t, dir);
  ASSERT_TRUE(engine.ok()) << engine.error().to_string();
  EXPECT_EQ(*engine, dir + "/E=128,N=1856,device_name=NVIDIA_H200.json");
  std::filesystem::remove_all(dir);
}

TEST(EngineRows, NoShippedTableIsEngineNamedAndUnrunnable) {
  int tables = 0;
  for (auto const& entry :
       std::filesystem::recursive_directory_iterator(std::string(MOETUNE_SOURCE_DIR) + "/tables")) {
    if (entry.path().extension() != ".json") continue;
    auto t = load_table(entry.path().string());
    ASSERT_TRUE(t.ok()) << t.error().to_string();
    ++tables;
    std::string const name = entry.path().filename().string();
    EXPECT_EQ(name, table_file_name(t->key)) << entry.path();
    if (name == vllm_file_name(t->key)) {  // an engine would open it: it must run there
      EXPECT_TRUE(is_engine_family(t->key.family)) << entry.path();
      Status const st = check_engine_rows(*t, entry.path().string());
      EXPECT_TRUE(st.ok()) << st.error().to_string();
    }
  }
  EXPECT_GE(tables, 4);
}

}  // namespace
}  // namespace moetune::core
