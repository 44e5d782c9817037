// Tables: vLLM file names, a real-looking vLLM H200 file, manifest round trip and mismatches.
#include <sys/wait.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include "temp_dir.hpp"

#include <filesystem>
#include <fstream>

#include <sys/resource.h>
#include <unistd.h>

#include <csignal>

#include "core/atomic_file.hpp"
#include "core/engine_rows.hpp"
#include "core/resolver.hpp"
#include "core/table.hpp"
#include "test_values.hpp"

namespace moetune::core {
namespace {

namespace fs = std::filesystem;

std::string fresh_dir(std::string const& name) {
  return moetune::testing::unique_temp_dir("core_" + name);
}

constexpr char const* kVllmH200 = R"({
    "triton_version": "3.6.0",
    "1": {
        "BLOCK_SIZE_M": 16,
        "BLOCK_SIZE_N": 64,
        "BLOCK_SIZE_K": 128,
        "GROUP_SIZE_M": 1,
        "num_warps": 4,
        "num_stages": 4
    },
    "16": {
        "BLOCK_SIZE_M": 16,
        "BLOCK_SIZE_N": 64,
        "BLOCK_SIZE_K": 64,
        "GROUP_SIZE_M": 1,
        "num_warps": 4,
        "num_stages": 3
    },
    "1024": {
        "BLOCK_SIZE_M": 128,
        "BLOCK_SIZE_N": 256,
        "BLOCK_SIZE_K": 64,
        "GROUP_SIZE_M": 16,
        "num_warps": 8,
        "num_stages": 4,
        "SPLIT_K": 1
    }
}
)";

TEST(Table, FileNameParseFormatRoundTripsWithDtypeAndBlockShape) {
  for (char const* name :
       {"E=128,N=768,device_name=NVIDIA_H200.json",
        "E=128,N=1856,device_name=NVIDIA_H200,dtype=fp8_w8a8.json",
        "E=256,N=256,device_name=NVIDIA_H200,dtype=fp8_w8a8,block_shape=[128,128].json",
        "E=8,N=14336,device_name=NVIDIA_H100_80GB_HBM3,dtype=float32.json"}) {
    auto key = parse_vllm_file_name(name);
    ASSERT_TRUE(key.ok()) << key.error().to_string();
    EXPECT_EQ(vllm_file_name(*key), name);
  }
  auto k = parse_vllm_file_name(
      "E=256,N=256,device_name=NVIDIA_H200,dtype=fp8_w8a8,"
      "block_shape=[128,64].json");
  EXPECT_EQ(k->num_experts, 256);
  EXPECT_EQ(k->dtype_tag, "fp8_w8a8");
  EXPECT_EQ(k->block_shape, std::make_pair(128, 64));
  EXPECT_FALSE(parse_vllm_file_name("E=x,N=768,device_name=A.json").ok());
  EXPECT_FALSE(parse_vllm_file_name("E=1,N=768.json").ok());
}

// A malformed block_shape or an unknown item is refused naming it; the well-formed twin parses.
TEST(Table, FileNameWithAMalformedBlockShapeOrUnknownItemIsRefusedNamingIt) {
  const std::string head = "E=256,N=256,device_name=NVIDIA_H200,dtype=fp8_w8a8,";
  ASSERT_TRUE(parse_vllm_file_name(head + "block_shape=[128,128].json").ok());
  for (auto [item, says] :
       {std::pair{"block_shape=[128].json", "expected [bn,bk]"},
        std::pair{"block_shape=128,128.json", "block_shape='128'; expected [bn,bk]"},
        std::pair{"block_shape=[12x,128].json", "block_shape[0]"},
        std::pair{"block_shape=[128,].json", "block_shape[1]='' is not a positive integer"},
        std::pair{"bs=[128,128].json", "unknown name item 'bs=[128,128]'"}}) {
    auto key = parse_vllm_file_name(head + item);
    ASSERT_FALSE(key.ok()) << item;
    EXPECT_NE(key.error().message.find(says), std::string::npos) << key.error().message;
  }
}

TEST(Table, DeviceNameFollowsVllmsH200Rule) {
  EXPECT_EQ(vllm_device_name("NVIDIA H200"), "NVIDIA_H200");
  EXPECT_EQ(vllm_device_name("NVIDIA H200 NVL"), "NVIDIA_H200");
  EXPECT_EQ(vllm_device_name("NVIDIA H100 80GB HBM3"), "NVIDIA_H100_80GB_HBM3");
  EXPECT_EQ(vllm_device_name("NVIDIA GH200 480GB"), "NVIDIA_GH200_480GB");  // not a token "H200"
}

TEST(Table, LoadsARealVllmH200FileAndResolves) {
  std::string const dir = fresh_dir("vllm");
  std::string const path = dir + "/E=128,N=768,device_name=NVIDIA_H200.json";
  ASSERT_TRUE(write_file_atomic(path, kVllmH200).ok());
  auto t = load_table(path);
  ASSERT_TRUE(t.ok()) << t.error().to_string();
  EXPECT_FALSE(t->has_manifest);
  EXPECT_EQ(t->extra.at("triton_version"), "\"3.6.0\"");
  EXPECT_EQ(t->key.num_experts, 128);
  EXPECT_EQ(t->key.device_name, "NVIDIA_H200");
  ASSERT_EQ(t->rows.size(), 3u);
  EXPECT_EQ(t->rows.at(1024).config.gemm1.tile.block_n, 256);
  EXPECT_EQ(t->rows.at(1024).config.gemm2, t->rows.at(1024).config.gemm1);
  Resolution const r = resolve(*t, 520, nullptr);
  EXPECT_EQ(r.key, 16);  // |16-520| == |1024-520| == 504: the tie goes to the smaller key
  EXPECT_EQ(resolve(*t, 521, nullptr).key, 1024);
}

TEST(Table, WritesVllmFilesExactlyLikeSaveConfigs) {
  auto t = parse_vllm_table(kVllmH200, "E=128,N=768,device_name=NVIDIA_H200.json");
  ASSERT_TRUE(t.ok());
  std::string expected = kVllmH200;
  // SPLIT_K = 1 is vLLM's forced value and is not written back.
  std::string const split_k = ",\n        \"SPLIT_K\": 1";
  expected.replace(expected.find(split_k), split_k.size(), "");
  EXPECT_EQ(format_vllm_table(*t), expected);
}

TEST(Table, KeepsEveryEngineRowFieldAndRejectsNearMissesOfKnownOnes) {
  auto t = parse_vllm_table(R"({"2": {"BLOCK_SIZE_M": 16, "BLOCK_SIZE_N": 32, "BLOCK_SIZE_K": 64,
      "GROUP_SIZE_M": 1, "num_warps": 4, "num_stages": 2, "waves_per_eu": 0, "kpack": 2,
      "USE_TMA": true, "grf_mode": "large", "num_ctas": 1}})",
                            "x.json");
  ASSERT_TRUE(t.ok()) << t.error().to_string();
  EXPECT_EQ(t->rows.at(2).vllm_extra, (std::map<std::string, std::string>{{"USE_TMA", "true"},
                                                                          {"grf_mode", "\"large\""},
                                                                          {"kpack", "2"},
                                                                          {"num_ctas", "1"},
                                                                          {"waves_per_eu", "0"}}));
  auto back = parse_vllm_table(format_vllm_table(*t), "x.json");
  EXPECT_EQ(*back, *t);
  auto bad = parse_vllm_table(R"({"2": {"BLOCK_SIZE_MM": 16}})", "x.json");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().to_string().find("x.json: \"2\": unknown field 'BLOCK_SIZE_MM'"),
            std::string::npos);
  EXPECT_NE(bad.error().message.find("did you mean 'BLOCK_SIZE_M'?"), std::string::npos);
}

TEST(Table, RowsWithoutLaunchFieldsRunWithTritonsDefaultsAndStayWithout) {
  std::string const text = R"({
    "256": {
        "BLOCK_SIZE_M": 16,
        "BLOCK_SIZE_N": 32,
        "BLOCK_SIZE_K": 64,
        "GROUP_SIZE_M": 1
    },
    "512": {
        "BLOCK_SIZE_M": 32,
        "BLOCK_SIZE_N": 128,
        "BLOCK_SIZE_K": 128,
        "GROUP_SIZE_M": 32,
        "num_warps": 8,
        "num_stages": 3
    }
}
)";
  auto t = parse_vllm_table(text, "E=256,N=512,device_name=NVIDIA_H200.json");
  ASSERT_TRUE(t.ok()) << t.error().to_string();
  EXPECT_EQ(t->rows.at(256).absent_fields, (std::vector<std::string>{"num_warps", "num_stages"}));
  EXPECT_EQ(t->rows.at(256).config.gemm1.pipeline.num_warps, kTritonDefaultWarps);
  EXPECT_EQ(t->rows.at(256).config.gemm1.pipeline.num_stages, kTritonDefaultStages);
  EXPECT_TRUE(t->rows.at(512).absent_fields.empty());
  EXPECT_EQ(format_vllm_table(*t), text);
  auto bad = parse_vllm_table(R"({"2": {"BLOCK_SIZE_M": 16, "BLOCK_SIZE_N": 16,
      "BLOCK_SIZE_K": 64}})",
                              "x.json");
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.error().message,
            "missing field 'GROUP_SIZE_M'; an engine row needs BLOCK_SIZE_M/N/K and GROUP_SIZE_M");
}

TEST(Table, KeysOutOfOrderAreKeptAndWrittenBackInFileOrder) {
  std::string const text = R"({
    "512": {
        "BLOCK_SIZE_M": 64,
        "BLOCK_SIZE_N": 128,
        "BLOCK_SIZE_K": 128,
        "GROUP_SIZE_M": 1,
        "num_warps": 4,
        "num_stages": 3
    },
    "256": {
        "BLOCK_SIZE_M": 32,
        "BLOCK_SIZE_N": 128,
        "BLOCK_SIZE_K": 128,
        "GROUP_SIZE_M": 1,
        "num_warps": 4,
        "num_stages": 3
    }
}
)";
  auto t = parse_vllm_table(text, "x.json");
  ASSERT_TRUE(t.ok()) << t.error().to_string();
  EXPECT_EQ(t->key_order, (std::vector<int64_t>{512, 256}));
  EXPECT_EQ(format_vllm_table(*t), text);
  EXPECT_EQ(resolve(*t, 384, nullptr).key, 512);  // the engines' min() keeps the first of a tie
  auto sorted = parse_vllm_table(kVllmH200, "x.json");
  EXPECT_TRUE(sorted->key_order.empty());  // ascending files need no record of their order
}

TEST(Table, EveryFileOfTheEngineSampleRoundTripsUnchangedInMeaning) {
  int files = 0;
  std::string const sample = std::string(MOETUNE_SOURCE_DIR) + "/tests/cli/engine_configs";
  for (auto const& entry : fs::recursive_directory_iterator(sample)) {
    if (entry.path().extension() != ".json") continue;
    auto text = read_file(entry.path().string());
    ASSERT_TRUE(text.ok());
    auto t = parse_vllm_table(*text, entry.path().string());
    ASSERT_TRUE(t.ok()) << t.error().to_string();
    auto back = parse_vllm_table(format_vllm_table(*t), entry.path().string());
    ASSERT_TRUE(back.ok()) << back.error().to_string();
    EXPECT_EQ(*back, *t) << entry.path();
    ++files;
  }
  EXPECT_GE(files, 12);
}

TEST(Table, FilesOfAnotherLoaderAreRefusedByName) {
  auto t = parse_vllm_table(R"({"1": {"tile_m": 16}})",
                            "E=384,N=256,device_name=AMD_Instinct_MI355X,dtype=int4_w4a16,"
                            "backend=flydsl.json");
  ASSERT_FALSE(t.ok());
  EXPECT_NE(t.error().message.find("the name says backend=flydsl: a config file of another MoE "
                                   "loader"),
            std::string::npos);
}

Table full_table() {
  Table t;
  t.key = TableKey{.num_experts = 128,
                   .intermediate_size = 768,
                   .hidden_size = 2048,
                   .top_k = 8,
                   .activation = Activation::kSiluGated,
                   .dtype = DType::kBf16,
                   .dtype_tag = "",
                   .block_shape = std::nullopt,
                   .device_name = "NVIDIA_H200",
                   .family = "sm90_gather",
                   .family_version = 2,
                   .toolchain = "nvcc 13.0"};
  t.policy.tiny_m_threshold = 4;
  t.has_manifest = true;
  t.extra["triton_version"] = "\"3.6.0\"";
  t.rows[16].config = testing::odd_moe_config();
  t.rows[16].source = testing::measured_source();
  t.rows[256].config = uniform_config(KernelConfig{});
  return t;
}

TEST(Table, SaveLoadRoundTripsEveryFieldThroughTheManifest) {
  std::string const dir = fresh_dir("roundtrip");
  Table const t = full_table();
  auto path = save_table(t, dir);
  ASSERT_TRUE(path.ok()) << path.error().to_string();
  EXPECT_EQ(*path, dir + "/E=128,N=768,device_name=NVIDIA_H200,family=sm90_gather.json");
  auto back = load_table(*path);
  ASSERT_TRUE(back.ok()) << back.error().to_string();
  EXPECT_EQ(*back, t);
  auto files = list_table_files(dir);
  EXPECT_EQ(*files, std::vector<std::string>{*path});
}

TEST(Table, ManifestRowConfigMismatchNamesTheField) {
  std::string const dir = fresh_dir("mismatch");
  auto path = save_table(full_table(), dir);
  ASSERT_TRUE(path.ok());
  auto vllm = read_file(*path);
  std::string text = *vllm;
  text.replace(text.find("\"BLOCK_SIZE_N\": 128"), 19, "\"BLOCK_SIZE_N\": 64");
  ASSERT_TRUE(write_file_atomic(*path, text).ok());
  auto t = load_table(*path);
  ASSERT_FALSE(t.ok());
  EXPECT_EQ(t.error().code, ErrorCode::kMismatch);
  EXPECT_EQ(
      t.error().to_string(),
      *path +
          ".moetune: rows[16].config.gemm1.tile.block_n is 128 in the manifest but 64 "
          "in the vLLM file; the pair is out of step (an interrupted write, a rename or an "
          "edit): regenerate it with `moetune materialize` (or the `moetune tune` that made it) "
          "or delete the stale manifest");
}

TEST(Table, ManifestRowSetAndKeyMismatchesAreNamed) {
  Table const m = full_table();
  Table v = m;
  v.rows.erase(256);
  v.rows[512] = m.rows.at(256);
  auto errs = manifest_mismatches(m, v, "E=64,N=768,device_name=NVIDIA_H200.json", "M");
  ASSERT_EQ(errs.size(), 3u);
  EXPECT_EQ(errs[0].message,
            "key.num_experts is 128 in the manifest but 64 in the file name "
            "'E=64,N=768,device_name=NVIDIA_H200.json'; the pair is out of step (an "
            "interrupted write, a rename or an edit): regenerate it with `moetune materialize` "
            "(or the `moetune tune` that made it) or delete the stale manifest");
  EXPECT_EQ(errs[1].message.substr(0, 48), "rows[256] is in the manifest but not in the vLLM");
  EXPECT_EQ(errs[2].message.substr(0, 48), "rows[512] is in the vLLM file but not in the man");
  EXPECT_TRUE(manifest_mismatches(m, m, table_file_name(m.key), "M").empty());
}

TEST(Table, TooNewManifestIsAVersionError) {
  auto t = parse_manifest(R"({"manifest_version": 99, "key": {}, "rows": {}})", "f.moetune");
  ASSERT_FALSE(t.ok());
  EXPECT_EQ(t.error().code, ErrorCode::kVersion);
  EXPECT_EQ(t.error().to_string(),
            "f.moetune: manifest_version 99 is not readable by this build (reads 1..2); "
            "regenerate it with `moetune materialize` or update moetune");
  // A newer manifest's new fields do not hide that it is newer.
  auto newer = parse_manifest(R"({"manifest_version": 3, "key": {}, "rows": {}, "shards": []})",
                              "f.moetune");
  ASSERT_FALSE(newer.ok());
  EXPECT_EQ(newer.error().code, ErrorCode::kVersion);
  auto unknown = parse_manifest(R"({"manifest_version": 2, "key": {}, "rows": {}, "shards": []})",
                                "f.moetune");
  ASSERT_FALSE(unknown.ok());
  EXPECT_EQ(unknown.error().to_string(),
            "f.moetune: unknown field 'shards'; expected one of manifest_version, key, policy, "
            "sources, rows");
}

// Version 2: the fields a run shares are written once under "sources", each row names its entry
// and keeps its own numbers and digest; one line per source and per row, nothing indented.
TEST(Table, ManifestWritesWhatARunSharesOnceAndARowALine) {
  Table t = full_table();
  t.rows[16].source = testing::measured_source(31.25, 40.5);
  t.rows[256].source = testing::measured_source(12.5, 13.0);
  t.rows[256].source->digest = "";
  t.rows[512].config = uniform_config(KernelConfig{});
  t.rows[512].source = testing::measured_source();
  t.rows[512].source->protocol = "another protocol";
  t.rows[1024].config = uniform_config(KernelConfig{});
  std::string const text = format_manifest(t);
  EXPECT_EQ(text.substr(0, 23), "{\"manifest_version\":2,\n");
  size_t const rows_at = text.find("\"rows\":{\n");
  ASSERT_NE(rows_at, std::string::npos);
  size_t const sources_at = text.find("\"sources\":[");
  std::string const sources = text.substr(sources_at, rows_at - sources_at);
  EXPECT_EQ(std::count(sources.begin(), sources.end(), '\n'), 4) << sources;  // 2 entries
  EXPECT_EQ(sources.find("\"numbers\""), std::string::npos) << sources;
  std::string const rows = text.substr(rows_at);
  EXPECT_EQ(std::count(rows.begin(), rows.end(), '\n'), 6) << rows;  // "rows":{, 4 rows, }}
  EXPECT_NE(rows.find("\"256\":{\"config\":"), std::string::npos) << rows;
  EXPECT_NE(
      rows.find("\"source\":{\"index\":0,\"numbers\":{\"default_us\":13.0,\"time_us\":12.5}}"),
      std::string::npos)
      << rows;
  EXPECT_NE(rows.find("\"source\":{\"index\":1,"), std::string::npos) << rows;
  EXPECT_NE(rows.find("\"1024\":{\"config\":{\"gemm1\":"), std::string::npos) << rows;
  EXPECT_EQ(text.find("  "), std::string::npos);  // no indentation anywhere
  auto back = parse_manifest(text, "t.json.moetune");
  ASSERT_TRUE(back.ok()) << back.error().to_string();
  EXPECT_EQ(back->rows, t.rows);
}

// A manifest written before version 2 (indented, every source whole) reads as it always did.
TEST(Table, ManifestOfVersion1StillReads) {
  auto t = parse_manifest(R"({
  "manifest_version": 1,
  "key": {"num_experts": 8, "intermediate_size": 128, "device_name": "cpu"},
  "rows": {
    "16": {
      "config": {"gemm1": {"tile": {"block_m": 16}}},
      "source": {"kind": "measured", "date": "2026-09-19", "numbers": {"time_us": 3.5},
                 "digest": "ab", "command": "moetune tune"}
    },
    "32": {"config": {"gemm1": {"tile": {"block_m": 32}}}, "source": null}
  }
})",
                          "t.json.moetune");
  ASSERT_TRUE(t.ok()) << t.error().to_string();
  ASSERT_EQ(t->rows.size(), 2u);
  EXPECT_EQ(t->rows.at(16).config.gemm2.tile.block_m, 16);
  EXPECT_EQ(t->rows.at(16).source->numbers.at("time_us"), 3.5);
  EXPECT_EQ(t->rows.at(16).source->command, "moetune tune");
  EXPECT_FALSE(t->rows.at(32).source.has_value());
}

// A source that says no kind (the reader takes a missing kind) is written without one and reads
// back; it was written as "kind": "", which the reader refuses (found by the json fuzzer).
TEST(Table, ASourceWithoutKindRoundTripsThroughBothManifestVersions) {
  Table t = full_table();
  t.rows[16].source = testing::measured_source(31.25, 40.5);
  t.rows[16].source->kind = "";
  std::string const text = format_manifest(t);
  EXPECT_EQ(text.find("\"kind\":\"\""), std::string::npos) << text;
  auto back = parse_manifest(text, "t.json.moetune");
  ASSERT_TRUE(back.ok()) << back.error().to_string();
  EXPECT_EQ(back->rows, t.rows);
  auto v1 = parse_manifest(R"({"manifest_version": 1, "key": {"num_experts": 8,
      "intermediate_size": 128, "device_name": "cpu"}, "rows": {"16": {"config": {"gemm1":
      {"tile": {"block_m": 16}}}, "source": {"protocol": "p", "numbers": {"time_us": 3.5}}}}})",
                           "t.json.moetune");
  ASSERT_TRUE(v1.ok()) << v1.error().to_string();
  auto again = parse_manifest(format_manifest(*v1), "t.json.moetune");
  ASSERT_TRUE(again.ok()) << again.error().to_string();
  EXPECT_EQ(again->rows, v1->rows);
}

TEST(Table, ManifestSourceIndexAndSpellingErrorsNameTheField) {
  std::string const head =
      R"({"manifest_version": 2, "key": {}, "sources": [{"kind": "tuned", "command": "c"}],
          "rows": {"16": {"config": {}, "source": {"index": )";
  ASSERT_TRUE(parse_manifest(head + "0}}}}", "m").ok());
  auto far = parse_manifest(head + "1}}}}", "m");
  ASSERT_FALSE(far.ok());
  EXPECT_EQ(far.error().to_string(),
            "m: rows[16].source.index: 1 names no entry of sources (it has 1); regenerate the "
            "table with `moetune materialize` or the `moetune tune` that made it");
  auto stray = parse_manifest(head + "0, \"kind\": \"tuned\"}}}}", "m");
  ASSERT_FALSE(stray.ok());
  EXPECT_EQ(stray.error().to_string(),
            "m: rows[16].source: unknown field 'kind'; expected one of index, numbers, digest");
  auto shared_numbers = parse_manifest(
      R"({"manifest_version": 2, "key": {}, "sources": [{"numbers": {}}], "rows": {}})", "m");
  ASSERT_FALSE(shared_numbers.ok());
  EXPECT_EQ(shared_numbers.error().to_string(),
            "m: sources[0]: unknown field 'numbers'; expected one of kind, date, device, "
            "protocol, command");
  auto old =
      parse_manifest(R"({"manifest_version": 1, "key": {}, "sources": [], "rows": {}})", "m");
  ASSERT_FALSE(old.ok());
  EXPECT_EQ(old.error().to_string(),
            "m: field 'sources' is new in manifest_version 2, but this file says 1; set "
            "manifest_version to 2");
  auto twice = parse_manifest(
      R"({"manifest_version": 2, "key": {}, "rows": {"16": {"config": {}}, "016": {"config": {}}}})",
      "m");
  ASSERT_FALSE(twice.ok());
  EXPECT_EQ(twice.error().to_string(), "m: rows: key '016' is M=16 again; keep one row per M");
}

TEST(Table, CheckKeyMatchesNamesTheFirstDifferingField) {
  Table const t = full_table();
  MoeProblem p{.num_tokens = 1,
               .hidden_size = 2048,
               .intermediate_size = 768,
               .num_experts = 128,
               .top_k = 8};
  EXPECT_TRUE(check_key_matches(t.key, p, "X").ok());
  p.hidden_size = 4096;
  Status const st = check_key_matches(t.key, p, "E=128,N=768,...");
  ASSERT_FALSE(st.ok());
  EXPECT_EQ(st.error().to_string(),
            "table E=128,N=768,...: hidden_size (K) is 2048 in the table but 4096 in the problem; "
            "use a table tuned for K=4096 or run `moetune tune`");
  p.hidden_size = 2048;
  p.top_k = 6;
  EXPECT_FALSE(check_key_matches(t.key, p, "X").ok());
}

TEST(Table, Fp8ProblemsTakeOnlyTablesNamedForTheirQuantisation) {
  Table const t = full_table();  // a bf16 table
  MoeProblem p{.num_tokens = 1,
               .hidden_size = 2048,
               .intermediate_size = 768,
               .num_experts = 128,
               .top_k = 8,
               .quant = Quant::kFp8Block};
  Status const st = check_key_matches(t.key, p, "X");
  ASSERT_FALSE(st.ok());
  EXPECT_NE(
      st.error().message.find("dtype is bf16 in the table but fp8_w8a8,block_shape=[128,128]"),
      std::string::npos)
      << st.error().message;
  TableKey fp8 = t.key;
  fp8.dtype_tag = "fp8_w8a8";
  fp8.block_shape = std::pair{128, 128};
  EXPECT_TRUE(check_key_matches(fp8, p, "X").ok());
  p.quant = Quant::kFp8Tensor;
  EXPECT_FALSE(check_key_matches(fp8, p, "X").ok());
  fp8.block_shape.reset();
  EXPECT_TRUE(check_key_matches(fp8, p, "X").ok());
  p.quant = Quant::kNone;
  EXPECT_FALSE(check_key_matches(fp8, p, "X").ok());
}

TEST(AtomicFile, FailedWriteLeavesTheOldFile) {
  std::string const dir = fresh_dir("atomic");
  std::string const path = dir + "/t.json";
  ASSERT_TRUE(write_file_atomic(path, "old").ok());
  fs::permissions(dir, fs::perms::owner_read | fs::perms::owner_exec);
  Status const st = write_file_atomic(path, "new");
  fs::permissions(dir, fs::perms::owner_all);
  if (::geteuid() == 0) GTEST_SKIP() << "root ignores directory permissions";
  ASSERT_FALSE(st.ok());
  EXPECT_EQ(st.error().code, ErrorCode::kIo);
  EXPECT_EQ(st.error().where, path);
  EXPECT_EQ(*read_file(path), "old");
  EXPECT_EQ(std::distance(fs::directory_iterator(dir), fs::directory_iterator()), 1);
}

TEST(AtomicFile, WriteThatRunsOutOfSpaceLeavesTheOldFile) {
  // A file-size limit makes write() fail mid-way (EFBIG), as a full disk would; works as root.
  std::string const dir = fresh_dir("atomic_efbig");
  std::string const path = dir + "/t.json";
  ASSERT_TRUE(write_file_atomic(path, "old").ok());
  struct rlimit saved;
  ASSERT_EQ(::getrlimit(RLIMIT_FSIZE, &saved), 0);
  auto const old_handler = std::signal(SIGXFSZ, SIG_IGN);
  struct rlimit small = saved;
  small.rlim_cur = 8;
  ASSERT_EQ(::setrlimit(RLIMIT_FSIZE, &small), 0);
  Status const st = write_file_atomic(path, std::string(4096, 'x'));
  ::setrlimit(RLIMIT_FSIZE, &saved);
  std::signal(SIGXFSZ, old_handler);
  ASSERT_FALSE(st.ok());
  EXPECT_EQ(st.error().code, ErrorCode::kIo);
  EXPECT_NE(st.error().message.find("write of"), std::string::npos);
  EXPECT_EQ(*read_file(path), "old");
  EXPECT_EQ(std::distance(fs::directory_iterator(dir), fs::directory_iterator()), 1);
}

TEST(AtomicFile, WriteReplacesAndMissingFileIsNotFound) {
  std::string const dir = fresh_dir("atomic2");
  ASSERT_TRUE(write_file_atomic(dir + "/a", "1").ok());
  ASSERT_TRUE(write_file_atomic(dir + "/a", "22").ok());
  EXPECT_EQ(*read_file(dir + "/a"), "22");
  EXPECT_EQ(read_file(dir + "/missing").error().code, ErrorCode::kNotFound);
  EXPECT_FALSE(write_file_atomic(dir + "/no/such/dir/a", "1").ok());
}

// A table's two files change together or not at all: when the vLLM file cannot be written (its
// path is a non-empty directory), the manifest is not replaced either (it used to be, first).
TEST(Table, SaveThatFailsChangesNeitherFileOfThePair) {
  std::string const dir = fresh_dir("pair_fail");
  Table t = full_table();
  auto path = save_table(t, dir);
  ASSERT_TRUE(path.ok());
  std::string const manifest_before = *read_file(manifest_path(*path));
  std::filesystem::remove(*path);
  std::filesystem::create_directories(*path + "/blocker");
  t.rows[16].config = uniform_config(KernelConfig{});
  ASSERT_FALSE(save_table(t, dir).ok());
  EXPECT_EQ(*read_file(manifest_path(*path)), manifest_before);
}

// Two processes saving the same table at the same moment never leave a manifest that disagrees
// with its vLLM file: each pair's renames run under the directory's lock. (Before, the manifest
// and the vLLM file were renamed one write apart, and the race tore about every other round.)
TEST(Table, ConcurrentWritersNeverTearThePair) {
  std::string const dir = fresh_dir("pair_race");
  std::string const path = dir + "/" + table_file_name(full_table().key);
  for (int round = 0; round < 12; ++round) {
    int go[2];
    ASSERT_EQ(pipe(go), 0);
    std::vector<pid_t> kids;
    for (int w = 0; w < 2; ++w) {
      pid_t const pid = fork();
      if (pid == 0) {
        close(go[1]);
        char c;
        (void)!read(go[0], &c, 1);  // both start when the parent closes the pipe
        Table t = full_table();
        t.rows.clear();
        for (int m = 1; m <= 1 + w; ++m) t.rows[m].config = uniform_config(KernelConfig{});
        _exit(save_table(t, dir).ok() ? 0 : 1);
      }
      kids.push_back(pid);
    }
    close(go[0]);
    close(go[1]);
    for (pid_t pid : kids) {
      int status = 0;
      waitpid(pid, &status, 0);
      EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    }
    auto t = load_table(path);
    ASSERT_TRUE(t.ok()) << "round " << round << ": " << t.error().to_string();
  }
}

// A symlink loop among a directory's tables is an entry that cannot be read, named as such; it
// is neither skipped silently nor an exception.
TEST(Table, ASymlinkLoopIsAnUnreadableEntryNotAnException) {
  std::string const dir = fresh_dir("loop");
  std::filesystem::create_symlink("b.json", dir + "/a.json");
  std::filesystem::create_symlink("a.json", dir + "/b.json");
  auto files = list_table_files(dir);
  ASSERT_TRUE(files.ok()) << files.error().to_string();
  ASSERT_EQ(files->size(), 2u);
  auto t = load_table(files->front());
  ASSERT_FALSE(t.ok());
  EXPECT_EQ(t.error().code, ErrorCode::kIo);
  EXPECT_EQ(t.error().to_string(),
            dir +
                "/a.json: cannot read: Too many levels of symbolic links; fix the path or "
                "remove it");
}

}  // namespace
}  // namespace moetune::core
