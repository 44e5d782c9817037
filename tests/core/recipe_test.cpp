// Recipes: strict loading errors, materialize with and without merge, check.
#include <gtest/gtest.h>

#include "temp_dir.hpp"

#include <filesystem>

#include "core/atomic_file.hpp"
#include "core/engine_rows.hpp"
#include "core/recipe.hpp"
#include "core/scoped_env.hpp"

namespace moetune::core {
namespace {

namespace fs = std::filesystem;

std::string fresh_dir(std::string const& name) {
  return moetune::testing::unique_temp_dir("recipe_" + name);
}

constexpr char const* kSource = R"({"kind": "measured", "date": "2026-09-19",
  "device": "NVIDIA H200", "protocol": "moetune-bench-v1", "numbers": {"time_us": 30.0,
  "default_us": 35.0}, "digest": "ab12", "command": "moetune tune"})";

std::string recipe_text(std::string const& pinned_16, std::string const& extra_shape_field = "") {
  return std::string(R"({"recipe_version": 1, "name": "demo", "shapes": [{
    "name": "demo", "device": "NVIDIA H200", "backend": "cuda", "family": "sm90_gather",
    "family_version": 1, "buckets": [1, 16, 64],
    "problem": {"hidden_size": 2048, "intermediate_size": 768, "num_experts": 128, "top_k": 8},
    "policy": {"tiny_m_threshold": null, "beyond_range_factor": null},)") +
         extra_shape_field + R"(
    "pinned_rows": {"16": )" +
         pinned_16 + "}}]}";
}

std::string pinned(int block_n) {
  return R"({"config": {"gemm1": {"tile": {"block_m": 16, "block_n": )" + std::to_string(block_n) +
         R"(}}}, "source": )" + kSource + "}";
}

Result<Recipe> load_text(std::string const& text, std::string const& name = "demo.json") {
  std::string const path = fresh_dir("load") + "/" + name;
  EXPECT_TRUE(write_file_atomic(path, text).ok());
  return load_recipe(path);
}

TEST(Recipe, LoadsAndRoundTripsThroughJson) {
  auto r = load_text(recipe_text(pinned(64)));
  ASSERT_TRUE(r.ok()) << r.error().to_string();
  ASSERT_EQ(r->shapes.size(), 1u);
  EXPECT_EQ(r->shapes[0].pinned_rows.at(16).config.gemm2.tile.block_n, 64);
  auto back = load_text(recipe_to_json(*r));
  ASSERT_TRUE(back.ok()) << back.error().to_string();
  back->path = r->path;
  EXPECT_EQ(*back, *r);
}

TEST(Recipe, PinnedRowWithoutSourceNamesFileShapeAndBucket) {
  std::string const dir = fresh_dir("nosource");
  std::string const path = dir + "/demo.json";
  ASSERT_TRUE(write_file_atomic(path, recipe_text(R"({"config": {}})")).ok());
  auto r = load_recipe(path);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().to_string(),
            path +
                ": shapes[0] (demo) pinned_rows[16]: missing 'source'; a pinned row must "
                "carry the measurement behind it (kind, date, device, protocol, numbers, digest)");
}

TEST(Recipe, UnknownFieldGetsDidYouMean) {
  auto r = load_text(recipe_text(pinned(64), R"("bucket": [1],)"));
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().to_string().find("demo.json: shapes[0] (demo): unknown field 'bucket'"),
            std::string::npos);
  EXPECT_NE(r.error().message.find("did you mean 'buckets'?"), std::string::npos);
}

TEST(Recipe, WrongTypeNamesTheFieldPath) {
  std::string text = recipe_text(pinned(64));
  text.replace(text.find("\"top_k\": 8"), 10, "\"top_k\": \"8\"");
  auto r = load_text(text);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().to_string().find(
                "demo.json: shapes[0] (demo) problem.top_k: expected an integer, got string \"8\""),
            std::string::npos);
}

TEST(Recipe, RejectsZeroNegativeSizesAndAbsurdM) {
  std::string zero = recipe_text(pinned(64));
  zero.replace(zero.find("\"hidden_size\": 2048"), 19, "\"hidden_size\": 0");
  auto z = load_text(zero);
  ASSERT_FALSE(z.ok());
  EXPECT_NE(z.error().to_string().find("shapes[0] (demo) problem: hidden_size (K) = 0"),
            std::string::npos);
  std::string neg = recipe_text(pinned(64));
  neg.replace(neg.find("\"num_experts\": 128"), 18, "\"num_experts\": -4");
  EXPECT_FALSE(load_text(neg).ok());
  std::string absurd = recipe_text(pinned(64));
  absurd.replace(absurd.find("[1, 16, 64]"), 11, "[1, 16, 99999999999]");
  auto a = load_text(absurd);
  ASSERT_FALSE(a.ok());
  EXPECT_NE(a.error().to_string().find("shapes[0] (demo) buckets[2]: M = 99999999999 is out of "
                                       "range; expected 1 <= M <= 2^24"),
            std::string::npos);
  std::string unsorted = recipe_text(pinned(64));
  unsorted.replace(unsorted.find("[1, 16, 64]"), 11, "[1, 64, 16]");
  EXPECT_FALSE(load_text(unsorted).ok());
  // 100 is neither a power of two nor a multiple of 8 (96 would be a valid wgmma width).
  std::string bad_tile = recipe_text(pinned(100));
  EXPECT_FALSE(load_text(bad_tile).ok());
  EXPECT_TRUE(load_text(recipe_text(pinned(96))).ok());
}

TEST(Recipe, MaterializeWithAndWithoutMerge) {
  auto recipe = load_text(recipe_text(pinned(64)));
  ASSERT_TRUE(recipe.ok());
  std::string const out = fresh_dir("materialize");
  // An existing table with rows the recipe does not pin.
  Table existing;
  existing.key = table_key_for(recipe->shapes[0]);
  existing.has_manifest = true;
  existing.rows[16].config = uniform_config(KernelConfig{});
  existing.rows[512].config = uniform_config(KernelConfig{});
  ASSERT_TRUE(save_table(existing, out).ok());

  auto merged = materialize(*recipe, out, /*merge=*/true);
  ASSERT_TRUE(merged.ok()) << merged.error().to_string();
  auto t = load_table(merged->at(0));
  ASSERT_TRUE(t.ok()) << t.error().to_string();
  EXPECT_EQ(t->rows.size(), 2u);
  EXPECT_EQ(t->rows.at(16).config.gemm1.tile.block_n, 64);
  EXPECT_EQ(t->rows.at(16).source->kind, "measured");
  EXPECT_TRUE(t->rows.count(512));

  auto replaced = materialize(*recipe, out, /*merge=*/false);
  ASSERT_TRUE(replaced.ok());
  auto only = load_table(replaced->at(0));
  EXPECT_EQ(only->rows.size(), 1u);
  EXPECT_EQ(only->rows.count(512), 0u);
}

TEST(Recipe, CheckPassesWhenEqualAndCatchesAChangedRow) {
  auto recipe = load_text(recipe_text(pinned(64)));
  ASSERT_TRUE(recipe.ok());
  std::string const tables = fresh_dir("check");
  auto missing = check_recipe(*recipe, tables);
  ASSERT_TRUE(missing.ok());
  ASSERT_EQ(missing->size(), 1u);
  EXPECT_EQ(missing->at(0).what, "missing file");

  ASSERT_TRUE(materialize(*recipe, tables, false).ok());
  auto clean = check_recipe(*recipe, tables);
  ASSERT_TRUE(clean.ok()) << clean.error().to_string();
  EXPECT_TRUE(clean->empty());

  // Negative twin: the recipe now pins another block_n for bucket 16.
  auto changed = load_text(recipe_text(pinned(128)));
  auto diffs = check_recipe(*changed, tables);
  ASSERT_TRUE(diffs.ok());
  ASSERT_EQ(diffs->size(), 1u);
  EXPECT_EQ(diffs->at(0).bucket, 16);
  EXPECT_EQ(diffs->at(0).what, "config differs: m16n64k64g1w4s2 vs m16n128k64g1w4s2");
}

// A recipe states every size of its problem: without top_k it used to write a table for
// top_k 1 and lint clean.
TEST(Recipe, AProblemWithoutTopKIsAnErrorNamingTheField) {
  std::string text = recipe_text(pinned(64));
  text.replace(text.find(", \"top_k\": 8"), 12, "");
  auto r = load_text(text);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().to_string(),
            r.error().where +
                ": missing field 'top_k'; a recipe's problem states num_experts, "
                "hidden_size, intermediate_size and top_k (nothing defaults)");
  EXPECT_EQ(r.error().where.substr(r.error().where.size() - 24), "shapes[0] (demo) problem");
}

TEST(Recipe, SizesTooLargeToAllocateAreRefused) {
  std::string text = recipe_text(pinned(64));
  text.replace(text.find("\"num_experts\": 128"), 18, "\"num_experts\": 9223372036854775807");
  auto r = load_text(text);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message.find("num_experts (E) = 9223372036854775807 is out of range; "
                                   "expected 1 <= E <= 65536 (2^16)"),
            std::string::npos)
      << r.error().to_string();
}

/// Two shapes (two table files): the second's out-of-range routing block is fixed up below so
/// the recipe loads, and each test breaks the second shape's table file its own way.
std::string two_shape_recipe() {
  std::string text = recipe_text(pinned(64));
  std::string const first_shape_start = "{\n    \"name\": \"demo\"";
  size_t const start = text.find(first_shape_start);
  std::string shape = text.substr(start, text.rfind("}]}") + 1 - start);
  std::string second = shape;
  second.replace(second.find("\"name\": \"demo\""), 14, "\"name\": \"other\"");
  second.replace(second.find("\"num_experts\": 128"), 18, "\"num_experts\": 64");
  return text.substr(0, text.rfind("}]}") + 1) + ", " + second + "]}";
}

// Issue 57: materialize wrote shapes one at a time, so a failure at shape 2 (here its table's
// path is a directory; under --merge, a corrupt table) left shape 1's table rewritten.
TEST(Recipe, MaterializeChangesNoFileWhenALaterShapeFails) {
  auto recipe = load_text(two_shape_recipe());
  ASSERT_TRUE(recipe.ok()) << recipe.error().to_string();
  ASSERT_EQ(recipe->shapes.size(), 2u);
  std::string const out = fresh_dir("all_or_nothing");
  Table first;
  first.key = table_key_for(recipe->shapes[0]);
  first.has_manifest = true;
  first.rows[512].config = uniform_config(KernelConfig{});
  auto first_path = save_table(first, out);
  ASSERT_TRUE(first_path.ok());
  std::string const vllm_before = *read_file(*first_path);
  std::string const manifest_before = *read_file(manifest_path(*first_path));
  std::string const second = out + "/" + table_file_name(table_key_for(recipe->shapes[1]));
  fs::create_directories(second + "/blocker");  // the rename onto it fails
  EXPECT_FALSE(materialize(*recipe, out, /*merge=*/false).ok());
  fs::remove_all(second);
  ASSERT_TRUE(write_file_atomic(second, "{\"16\": [").ok());  // corrupt: --merge cannot read it
  auto merged = materialize(*recipe, out, /*merge=*/true);
  ASSERT_FALSE(merged.ok());
  EXPECT_EQ(merged.error().where, second + ":1");
  EXPECT_EQ(*read_file(*first_path), vllm_before);
  EXPECT_EQ(*read_file(manifest_path(*first_path)), manifest_before);
}

// check works in a temp directory and removes it on every path, failures included.
TEST(Recipe, CheckLeavesNoTempDirectoryWhenItFails) {
  auto recipe = load_text(recipe_text(pinned(64)));
  ASSERT_TRUE(recipe.ok());
  std::string const tables = fresh_dir("check_fail");
  std::string const tmp = fresh_dir("check_tmp");
  std::string const name = table_file_name(table_key_for(recipe->shapes[0]));
  ASSERT_TRUE(write_file_atomic(tables + "/" + name, std::string(100000, '[')).ok());
  auto diffs = [&] {
    moetune::testing::ScopedEnv tmpdir("TMPDIR", tmp.c_str());
    return check_recipe(*recipe, tables);
  }();
  ASSERT_FALSE(diffs.ok());
  EXPECT_EQ(diffs.error().where, tables + "/" + name + ":1");  // the shipped file, not a copy
  EXPECT_TRUE(fs::is_empty(tmp));
}

TEST(Recipe, AnFp8ProblemNamesItsTablesAsTheEnginesDo) {
  std::string text = recipe_text(pinned(64));
  text.replace(text.find(R"("top_k": 8})"), 11, R"("top_k": 8, "quant": "fp8_block"})");
  auto r = load_text(text);
  ASSERT_TRUE(r.ok()) << r.error().to_string();
  EXPECT_EQ(r->shapes[0].problem.quant, Quant::kFp8Block);
  auto back = load_text(recipe_to_json(*r));  // the quant survives the round trip
  ASSERT_TRUE(back.ok()) << back.error().to_string();
  EXPECT_EQ(back->shapes[0].problem.quant, Quant::kFp8Block);
  TableKey const key = table_key_for(r->shapes[0]);
  EXPECT_EQ(table_file_name(key),
            "E=128,N=768,device_name=NVIDIA_H200,dtype=fp8_w8a8,block_shape=[128,128],"
            "family=sm90_gather.json");
  MoeProblem p = r->shapes[0].problem;
  EXPECT_TRUE(check_key_matches(key, p, "t").ok());
  p.quant = Quant::kNone;  // a bf16 problem must not take the fp8 table
  EXPECT_FALSE(check_key_matches(key, p, "t").ok());
  text.replace(text.find("fp8_block"), 9, "fp4");
  auto bad = load_text(text);
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().message.find("quant"), std::string::npos) << bad.error().to_string();
}

}  // namespace
}  // namespace moetune::core
