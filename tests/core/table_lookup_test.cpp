// TableLookup: the answer for every M is the whole table's (manifest of version 2 or 1, a plain
// vLLM file with keys out of order, repeated keys and engine fields), and a broken table gives
// load_table's error word for word.
#include <gtest/gtest.h>

#include <functional>
#include <string>
#include <vector>

#include "core/atomic_file.hpp"
#include "core/engine_rows.hpp"
#include "core/json_io.hpp"
#include "core/json_text.hpp"
#include "core/resolver.hpp"
#include "core/table.hpp"
#include "core/table_lookup.hpp"
#include "temp_dir.hpp"
#include "test_values.hpp"

namespace moetune::core {
namespace {

std::string fresh_dir(std::string const& name) {
  return moetune::testing::unique_temp_dir("lookup_" + name);
}

/// A table of our own family with sources on most rows, two of them from one run.
Table sourced_table() {
  Table t;
  t.key.num_experts = 8;
  t.key.intermediate_size = 128;
  t.key.hidden_size = 256;
  t.key.top_k = 2;
  t.key.activation = Activation::kSiluGated;
  t.key.device_name = "cpu";
  t.key.family = "cpu_tiled";
  t.key.family_version = 1;
  t.has_manifest = true;
  t.extra["triton_version"] = "\"3.6.0\"";
  for (int64_t m : {1, 2, 4, 8, 16, 24, 32, 48, 64, 96, 128, 256, 512, 1024}) {
    TableRow& row = t.rows[m];
    row.config = m % 3 == 0 ? testing::odd_moe_config() : uniform_config(KernelConfig{});
    row.config.gemm1.tile.block_n = static_cast<int>(16 + m % 5 * 16);
    if (m != 4) row.source = testing::measured_source(static_cast<double>(m), 50.0);
    if (m == 64) row.source->protocol = "another run";
  }
  return t;
}

MoeConfig default_config(int64_t m) {
  MoeConfig c;
  c.gemm1.tile.block_m = static_cast<int>(16 + m % 7);
  return c;
}

/// The whole table's answers and the lookup's, as JSON text, for M in [0, 1100] and a far M.
void expect_same_answers(std::string const& path) {
  auto whole = load_table(path);
  ASSERT_TRUE(whole.ok()) << whole.error().to_string();
  auto lookup = TableLookup::open(path);
  ASSERT_TRUE(lookup.ok()) << lookup.error().to_string();
  Table head = *whole;
  head.rows.clear();
  EXPECT_EQ(lookup->head(), head) << path;
  std::vector<int64_t> keys;
  for (auto const& [m, row] : whole->rows) keys.push_back(m);
  EXPECT_EQ(lookup->keys(), keys) << path;
  std::vector<int64_t> ms;
  for (int64_t m = 0; m <= 1100; ++m) ms.push_back(m);
  ms.push_back(int64_t{1} << 40);
  for (int64_t const m : ms) {
    auto r = resolve(*lookup, m, default_config);
    ASSERT_TRUE(r.ok()) << path << " M=" << m << ": " << r.error().to_string();
    ASSERT_EQ(to_json_text(*r), to_json_text(resolve(*whole, m, default_config)))
        << path << " M=" << m;
  }
}

TEST(TableLookup, ServesEveryMAsTheWholeTableDoes) {
  std::string const dir = fresh_dir("same");
  Table t = sourced_table();
  auto path = save_table(t, dir);
  ASSERT_TRUE(path.ok()) << path.error().to_string();
  expect_same_answers(*path);

  t.policy = ResolverPolicy{.tiny_m_threshold = 3, .beyond_range_factor = 1.5};
  path = save_table(t, fresh_dir("policy"));
  ASSERT_TRUE(path.ok());
  expect_same_answers(*path);

  // A manifest as moetune wrote it before version 2: indented, every source whole.
  Json rows = Json::object();
  for (auto const& [m, row] : t.rows) {
    rows[std::to_string(m)] = Json{{"config", to_json(row.config)},
                                   {"source", row.source ? to_json(*row.source) : Json(nullptr)}};
  }
  Json const v1{{"manifest_version", 1},
                {"key", to_json(t.key)},
                {"policy", to_json(t.policy)},
                {"rows", rows}};
  ASSERT_TRUE(write_file_atomic(manifest_path(*path), print_json(v1, 2)).ok());
  expect_same_answers(*path);

  // An engine's file: keys out of order, a key given twice (the later row wins, in the earlier
  // one's place), a top-level value and a row's fields moetune does not model; no manifest.
  std::string const plain = fresh_dir("plain") + "/E=8,N=128,device_name=NVIDIA_H200.json";
  ASSERT_TRUE(write_file_atomic(plain, R"({"triton_version": "3.6.0",
    "64": {"BLOCK_SIZE_M": 64, "BLOCK_SIZE_N": 64, "BLOCK_SIZE_K": 64, "GROUP_SIZE_M": 1},
    "1": {"BLOCK_SIZE_M": 16, "BLOCK_SIZE_N": 32, "BLOCK_SIZE_K": 64, "GROUP_SIZE_M": 1,
          "num_warps": 4, "num_stages": 2, "kpack": 2},
    "32": {"BLOCK_SIZE_M": 32, "BLOCK_SIZE_N": 32, "BLOCK_SIZE_K": 64, "GROUP_SIZE_M": 1},
    "16": {"BLOCK_SIZE_M": 16, "BLOCK_SIZE_N": 64, "BLOCK_SIZE_K": 64, "GROUP_SIZE_M": 1},
    "1": {"BLOCK_SIZE_M": 16, "BLOCK_SIZE_N": 128, "BLOCK_SIZE_K": 64, "GROUP_SIZE_M": 8,
          "SPLIT_K": 2, "waves_per_eu": 0}})")
                  .ok());
  expect_same_answers(plain);

  std::string const empty = fresh_dir("empty") + "/E=8,N=128,device_name=cpu.json";
  ASSERT_TRUE(write_file_atomic(empty, "{}").ok());
  expect_same_answers(empty);
}

/// `text` with the first `from` after `anchor` replaced by `to` (both must be there).
std::string edited(std::string text, std::string const& from, std::string const& to,
                   std::string const& anchor = "") {
  size_t const at = text.find(from, text.find(anchor));
  EXPECT_NE(at, std::string::npos) << from;
  return at == std::string::npos ? text : text.replace(at, from.size(), to);
}

/// Opens the table at `path` for lookups and resolves `m`: the first error, if any.
Status resolve_at(std::string const& path, int64_t m) {
  auto lookup = TableLookup::open(path);
  if (!lookup.ok()) return lookup.error();
  auto r = resolve(*lookup, m, default_config);
  return r.ok() ? Status::Ok() : Status(r.error());
}

// Each case breaks the served row (M=16) or the table as a whole; a lookup reads the other rows
// only as JSON (table_lookup.hpp).
TEST(TableLookup, ABrokenTableGivesLoadTablesErrorWordForWord) {
  Table const t = sourced_table();
  std::string const name = table_file_name(t.key);
  std::string const rows_text = format_vllm_table(t), manifest_text = format_manifest(t);
  std::string const row16 = "\"16\":{\"config\":";
  struct Case {
    char const* what;
    std::string rows;
    std::string manifest;
  };
  std::vector<Case> const cases = {
      {"a version this build does not read", rows_text,
       edited(manifest_text, "\"manifest_version\":2", "\"manifest_version\":99")},
      {"a byte order mark", rows_text, "\xEF\xBB\xBF" + manifest_text},
      {"a row key given twice", rows_text,
       edited(manifest_text, row16, "\"16\":{\"config\":{},\"source\":null},\n" + row16)},
      {"M written twice", rows_text,
       edited(manifest_text, row16, "\"016\":{\"config\":{},\"source\":null},\n" + row16)},
      {"a misspelt field in the served row", rows_text,
       edited(manifest_text, row16, "\"16\":{\"konfig\":")},
      {"a source index out of range", rows_text,
       edited(manifest_text, "\"source\":{\"index\":0", "\"source\":{\"index\":7", row16)},
      {"sources in a version 1 manifest", rows_text,
       edited(manifest_text, "\"manifest_version\":2", "\"manifest_version\":1")},
      {"a GEMM1 field the files disagree on",
       edited(rows_text, "\"16\": {\n        \"BLOCK_SIZE_M\": 64,\n        \"BLOCK_SIZE_N\": 32",
              "\"16\": {\n        \"BLOCK_SIZE_M\": 64,\n        \"BLOCK_SIZE_N\": 48"),
       manifest_text},
      {"a row only in the manifest", edited(rows_text, "\"1024\"", "\"1025\""), manifest_text},
      {"a key that is not the file name's", rows_text,
       edited(manifest_text, "\"num_experts\":8", "\"num_experts\":16")},
      {"malformed JSON far from the served row", edited(rows_text, "\n}\n", ",\n}\n"),
       manifest_text},
      {"a rows file that is not an object", "[]", manifest_text},
  };
  for (Case const& c : cases) {
    std::string const path = fresh_dir("broken") + "/" + name;
    ASSERT_TRUE(write_file_atomic(path, c.rows).ok());
    ASSERT_TRUE(write_file_atomic(manifest_path(path), c.manifest).ok());
    auto whole = load_table(path);
    ASSERT_FALSE(whole.ok()) << c.what;
    Status const served = resolve_at(path, 16);
    ASSERT_FALSE(served.ok()) << c.what;
    EXPECT_EQ(served.error().to_string(), whole.error().to_string()) << c.what;
  }
}

TEST(TableLookup, AMissingRowIsNotFound) {
  auto path = save_table(sourced_table(), fresh_dir("missing"));
  ASSERT_TRUE(path.ok());
  auto lookup = TableLookup::open(*path);
  ASSERT_TRUE(lookup.ok());
  EXPECT_TRUE(lookup->row(16).ok());
  EXPECT_EQ(lookup->row(17).error().code, ErrorCode::kNotFound);
  EXPECT_EQ(TableLookup::open(fresh_dir("none") + "/E=8,N=128,device_name=cpu.json").error().code,
            ErrorCode::kNotFound);
}

}  // namespace
}  // namespace moetune::core
