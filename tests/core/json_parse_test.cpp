// Hostile JSON through every reader (issue 57): nesting 100k levels deep, a UTF-8 BOM, a NUL byte
// and duplicate keys are refused with a message naming the file and the spot, never a crash;
// vLLM's own files keep json.load's last-wins rule for duplicates; values echoed in messages are
// clipped; reading is linear in the number of keys.
#include <gtest/gtest.h>

#include <chrono>
#include <functional>
#include <string>

#include "core/engine_rows.hpp"
#include "core/flat_json.hpp"
#include "core/json_bytes.hpp"
#include "core/json_io.hpp"
#include "core/json_text.hpp"
#include "core/lever_io.hpp"
#include "core/names.hpp"
#include "core/table.hpp"

namespace moetune::core {
namespace {

using Reader = std::function<Status(std::string const&)>;

/// Every JSON reader of core, each given the text of one file.
std::vector<std::pair<std::string, Reader>> readers() {
  auto status = [](auto r) { return r.ok() ? Status::Ok() : Status(r.error()); };
  return {
      {"vllm table",
       [=](auto& t) { return status(parse_vllm_table(t, "E=8,N=128,device_name=cpu.json")); }},
      {"manifest", [=](auto& t) { return status(parse_manifest(t, "m.json.moetune")); }},
      {"lever table", [=](auto& t) { return status(parse_lever_table_json(t, "levers.json")); }},
      {"problem", [=](auto& t) { return status(parse_moe_problem_json(t, "p.json")); }},
      {"config", [=](auto& t) { return status(parse_moe_config_json(t, "c.json")); }},
      {"routing", [=](auto& t) { return status(parse_routing_profile_json(t, "r.json")); }},
      {"flat json", [=](auto& t) { return status(FlatJson::parse(t, "f.json")); }},
  };
}

std::string deep(int levels) { return std::string(levels, '[') + std::string(levels, ']'); }

TEST(JsonParse, NestingDeeperThanTheLimitIsRefusedByEveryReaderWithoutRecursion) {
  for (std::string const& text : {deep(100000), "{\"a\": " + deep(kMaxJsonDepth) + "}"}) {
    for (auto const& [name, read] : readers()) {
      Status const st = read(text);
      ASSERT_FALSE(st.ok()) << name;
      EXPECT_NE(st.error().message.find("nested deeper than 64 levels"), std::string::npos)
          << name << ": " << st.error().to_string();
      EXPECT_LT(st.error().to_string().size(), 400u) << name;
    }
  }
  // The limit itself parses.
  EXPECT_TRUE(parse_json(deep(kMaxJsonDepth), "ok.json").ok());
}

TEST(JsonParse, DescribingADeepOrHugeValueStaysShortAndDoesNotRecurse) {
  // The crash of issue 57: an error message printed a 58k-level value recursively.
  Json v = Json::array();
  for (int i = 0; i < 100000; ++i) v = Json::array({std::move(v)});
  EXPECT_EQ(describe_json(v), "array [[...]]");
  Json wide = Json::array();
  for (int i = 0; i < 100000; ++i) wide.push_back(i);
  EXPECT_LE(describe_json(wide).size(), 50u);
  EXPECT_LE(describe_json(Json(std::string(100000, 'x'))).size(), 50u);
}

TEST(JsonParse, ByteOrderMarkAndNulAreRefusedNamingTheSpot) {
  std::string const good = R"({"num_experts": 8, "top_k": 2})";
  ASSERT_TRUE(parse_moe_problem_json(good, "p.json").ok());
  auto bom = parse_moe_problem_json("\xEF\xBB\xBF" + good, "p.json");
  ASSERT_FALSE(bom.ok());
  EXPECT_EQ(bom.error().to_string(),
            "p.json:1: a UTF-8 byte order mark (EF BB BF) at column 1 (byte 0); JSON files have "
            "none: save it as UTF-8 without a BOM");
  auto nul = parse_moe_problem_json(good + "\n" + std::string(1, '\0'), "p.json");
  ASSERT_FALSE(nul.ok());
  EXPECT_EQ(nul.error().to_string(),
            "p.json:2: a NUL byte at column 1 (byte 31); JSON has no NUL bytes: remove it (a "
            "padded or corrupt file?)");
  for (auto const& [name, read] : readers()) {
    EXPECT_FALSE(read("\xEF\xBB\xBF{}").ok()) << name;
    EXPECT_FALSE(read(std::string("{}\0", 3)).ok()) << name;
  }
}

TEST(JsonParse, DuplicateKeysAreErrorsInOurFormatsNamingTheObjectAndKey) {
  auto p = parse_moe_problem_json(R"({"top_k": 2, "num_experts": 8, "top_k": 1})", "p.json");
  ASSERT_FALSE(p.ok());
  EXPECT_EQ(p.error().to_string(),
            "p.json: key 'top_k' appears twice in one object; keep one (JSON readers disagree on "
            "which wins)");
  auto nested =
      parse_moe_config_json(R"({"gemm1": {"tile": {"block_m": 16, "block_m": 32}}})", "c.json");
  ASSERT_FALSE(nested.ok());
  EXPECT_EQ(nested.error().where, "c.json: gemm1.tile");
  for (auto const& [name, read] : readers()) {
    if (name == "vllm table") continue;
    EXPECT_FALSE(read(R"({"a": 1, "a": 1})").ok()) << name;
  }
}

TEST(JsonParse, VllmFilesKeepJsonLoadsLastWinsForDuplicateKeys) {
  std::string const row = R"({"BLOCK_SIZE_M": %d, "BLOCK_SIZE_N": 64, "BLOCK_SIZE_K": 64,
      "GROUP_SIZE_M": 1, "num_warps": 4, "num_stages": 2})";
  auto with_m = [&](int m) {
    std::string r = row;
    r.replace(r.find("%d"), 2, std::to_string(m));
    return r;
  };
  auto t = parse_vllm_table("{\"16\": " + with_m(16) + ", \"16\": " + with_m(32) + "}",
                            "E=8,N=128,device_name=cpu.json");
  ASSERT_TRUE(t.ok()) << t.error().to_string();
  ASSERT_EQ(t->rows.size(), 1u);
  EXPECT_EQ(t->rows.at(16).config.gemm1.tile.block_m, 32);  // Python's json.load: the later wins

  // Rows are read one at a time: a broken row that a later one replaces is no error, and the key
  // keeps its first place in file order, as in a Python dict.
  auto replaced = parse_vllm_table(
      "{\"16\": {\"BLOCK_SIZE_M\": \"x\"}, \"8\": " + with_m(8) + ", \"16\": " + with_m(64) + "}",
      "E=8,N=128,device_name=cpu.json");
  ASSERT_TRUE(replaced.ok()) << replaced.error().to_string();
  EXPECT_EQ(replaced->rows.at(16).config.gemm1.tile.block_m, 64);
  EXPECT_EQ(keys_in_file_order(*replaced), (std::vector<int64_t>{16, 8}));
  auto broken = parse_vllm_table("{\"16\": {\"BLOCK_SIZE_M\": \"x\"}, \"8\": " + with_m(8) + "}",
                                 "E=8,N=128,device_name=cpu.json");
  ASSERT_FALSE(broken.ok());
  EXPECT_NE(broken.error().to_string().find("\"16\".BLOCK_SIZE_M"), std::string::npos)
      << broken.error().to_string();
}

TEST(JsonParse, StreamedMembersGoToTheCallbackAndTheRestOfTheTreeStays) {
  std::vector<std::string> seen;
  auto j = parse_json_streamed(
      R"({"v": 1, "rows": {"1": {"a": [1, 2]}, "2": 3}, "after": {"rows": {"x": 1}}})", "f.json",
      DuplicateKeys::kError, {"rows"}, [&](std::string const& key, Json& value, bool repeats) {
        seen.push_back(key + "=" + value.dump() + (repeats ? " again" : ""));
        return Status::Ok();
      });
  ASSERT_TRUE(j.ok()) << j.error().to_string();
  EXPECT_EQ(seen, (std::vector<std::string>{"1={\"a\":[1,2]}", "2=3"}));
  EXPECT_EQ(j->dump(), R"({"v":1,"rows":{},"after":{"rows":{"x":1}}})");  // only the path's object
  auto dup = parse_json_streamed(R"({"rows": {"1": 1, "1": 2}})", "f.json", DuplicateKeys::kError,
                                 {"rows"}, [](auto const&, Json&, bool) { return Status::Ok(); });
  ASSERT_FALSE(dup.ok());
  EXPECT_NE(dup.error().to_string().find("f.json: rows: key '1' appears twice"), std::string::npos)
      << dup.error().to_string();
}

TEST(JsonParse, AManifestTooNewFailsOnItsVersionEvenWhenItsRowsComeFirst) {
  auto m = parse_manifest(R"({"rows": {"16": {"config": 7}}, "manifest_version": 99, "key": {}})",
                          "t.json.moetune");
  ASSERT_FALSE(m.ok());
  EXPECT_EQ(m.error().code, ErrorCode::kVersion) << m.error().to_string();
}

TEST(JsonParse, ADeviceNameThatIsNotUtf8NamesOneFileAndPrintsAsValidJson) {
  EXPECT_EQ(vllm_device_name("NVIDIA\xFF GPU"), "NVIDIA__GPU");
  EXPECT_EQ(vllm_device_name("a/b\nc"), "a_b_c");
  EXPECT_EQ(vllm_device_name("caf\xC3\xA9 GPU"), "caf\xC3\xA9_GPU");  // valid UTF-8 stays
  EXPECT_EQ(json_string("cpu\xFF"), "\"cpu\\ufffd\"");
  EXPECT_EQ(json_string("caf\xC3\xA9"), "\"caf\xC3\xA9\"");
  // The manifest's key and the file name spell the same device, so the pair loads.
  Table table;
  table.key = TableKey{.num_experts = 8,
                       .intermediate_size = 128,
                       .hidden_size = 256,
                       .top_k = 2,
                       .activation = Activation::kSiluGated,
                       .device_name = vllm_device_name("cpu\xFF"),
                       .family = "cpu_tiled",
                       .family_version = 1};
  table.has_manifest = true;
  table.rows[16] = TableRow{};
  auto back = parse_manifest(format_manifest(table), "t.json.moetune");
  ASSERT_TRUE(back.ok()) << back.error().to_string();
  EXPECT_EQ(back->key.device_name, "cpu_");
  EXPECT_TRUE(manifest_mismatches(*back, table, table_file_name(table.key), "m").empty());
}

TEST(JsonParse, MessagesClipAHugeKeyOrValue) {
  std::string const key(100000, 'k');
  auto p = parse_moe_problem_json("{\"" + key + "\": 1}", "p.json");
  ASSERT_FALSE(p.ok());
  EXPECT_LT(p.error().to_string().size(), 400u);
  EXPECT_NE(p.error().message.find("kkk... (100000 bytes)"), std::string::npos);
  EXPECT_EQ(clip("short"), "short");
  EXPECT_EQ(clip("\xC3\xA9\xC3\xA9", 3), "\xC3\xA9... (4 bytes)");  // never half a character
}

TEST(JsonParse, ReadingIsLinearInTheNumberOfKeys) {
  // ordered_json's inserts search every earlier key: 100k keys took minutes. Time 20k and 80k
  // keys; linear is ~4x, the quadratic parse was ~16x.
  auto table_text = [](int n) {
    std::string t = "{";
    for (int m = 1; m <= n; ++m) {
      t += (m > 1 ? ",\"" : "\"") + std::to_string(m) +
           "\": {\"BLOCK_SIZE_M\": 16, \"BLOCK_SIZE_N\": 64, \"BLOCK_SIZE_K\": 64, "
           "\"GROUP_SIZE_M\": 1, \"num_warps\": 4, \"num_stages\": 2}";
    }
    return t + "}";
  };
  auto seconds = [&](std::string const& text) {
    auto const t0 = std::chrono::steady_clock::now();
    auto t = parse_vllm_table(text, "E=8,N=128,device_name=cpu.json");
    EXPECT_TRUE(t.ok());
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  };
  std::string const small = table_text(20000), large = table_text(80000);
  double const t_small = std::max(seconds(small), 1e-3);
  double const t_large = seconds(large);
  EXPECT_LT(t_large, 8 * t_small) << t_small << " s for 20k keys, " << t_large << " s for 80k";
  EXPECT_LT(t_large, 5.0);
}

}  // namespace
}  // namespace moetune::core
