// Knob cache: format round trip, strict parsing with a negative twin, scope selection (other
// layers skipped silently, stale scopes warned once), and merge-on-write across processes.
#include "runtime/knob_cache.hpp"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <future>

#include <gtest/gtest.h>

#include "core/atomic_file.hpp"
#include "core/temp_dir.hpp"

namespace moetune::runtime {
namespace {

CacheEntry sample_entry(int64_t bucket, std::string const& driver = "") {
  core::DeviceInfo d;
  d.name = "cpu: Test CPU";
  d.sm_count = 4;
  d.driver = driver;
  d.toolchain = "g++ 12.2.0";
  core::MoeProblem p;
  p.hidden_size = 256;
  p.intermediate_size = 128;
  p.num_experts = 8;
  p.top_k = 2;
  p.arch = "cpu";
  CacheEntry e;
  e.scope = make_scope(d, "cpu_tiled", 1, p, core::RoutingProfile{});
  e.bucket = bucket;
  e.config.gemm1.tile.block_m = 16;
  e.config.gemm2.tile.block_m = 16;
  e.config.gemm2.tile.block_n = 32;
  e.source.kind = "tuned";
  e.source.date = "2026-11-29";
  e.source.numbers = {{"time_us", 12.5}};
  return e;
}

TEST(KnobCache, ParseOfFormatIsIdentity) {
  KnobCacheFile f{{sample_entry(1), sample_entry(8, "580.1")}};
  auto back = parse_knob_cache(format_knob_cache(f), "c.json");
  ASSERT_TRUE(back.ok()) << back.error().to_string();
  EXPECT_EQ(back->entries, f.entries);
  auto empty = parse_knob_cache(format_knob_cache({}), "c.json");
  ASSERT_TRUE(empty.ok());
  EXPECT_TRUE(empty->entries.empty());
}

TEST(KnobCache, CorruptFieldIsAParseErrorNamingFileAndEntry) {
  std::string text = format_knob_cache({{sample_entry(4)}});
  text.replace(text.find("\"bucket\": 4"), 11, "\"bucket\": \"4\"");
  auto r = parse_knob_cache(text, "c.json");
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().to_string().find("c.json: entries[0]"), std::string::npos)
      << r.error().to_string();
}

TEST(KnobCache, TooNewVersionIsRefusedByName) {
  std::string text = format_knob_cache({});
  text.replace(text.find("\"cache_version\": 1"), 18, "\"cache_version\": 9");
  auto r = parse_knob_cache(text, "c.json");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code, core::ErrorCode::kVersion);
  EXPECT_NE(r.error().message.find("cache_version 9 is not readable"), std::string::npos);
}

TEST(KnobCache, MissingFileIsAnEmptyCache) {
  auto r = load_knob_cache("/nonexistent/dir/knobs.json");
  ASSERT_TRUE(r.ok());
  EXPECT_TRUE(r->entries.empty());
}

TEST(KnobCache, StaleScopeOfSameProblemIsWarnedOnceAndNeverUsed) {
  CacheEntry ours = sample_entry(8, "580.1");
  CacheEntry stale1 = sample_entry(8, "550.0");
  CacheEntry stale2 = sample_entry(16, "550.0");
  CacheEntry other_layer = sample_entry(8, "580.1");
  other_layer.scope.problem = "E=16,K=256,I=128,topk=2,act=silu,dtype=bf16,M=0,arch=cpu";
  auto sel = select_entries({{stale1, ours, stale2, other_layer}}, ours.scope, "c.json");
  ASSERT_EQ(sel.usable.size(), 1u);
  EXPECT_EQ(sel.usable[0], ours);
  EXPECT_EQ(sel.warning,
            "c.json: ignored 2 knob cache entries for this problem made under another scope "
            "(driver is '550.0' in the cache but '580.1' here); they are never used: re-run with "
            "--knobs auto here to tune this device");
  auto clean = select_entries({{ours, other_layer}}, ours.scope, "c.json");
  EXPECT_EQ(clean.warning, "");
}

TEST(KnobCache, MergeReplacesTheSameKeyAndKeepsOthers) {
  std::string const dir = moetune::testing::unique_temp_dir("knobcache");
  std::string const path = dir + "/sub/knobs.json";
  ASSERT_TRUE(merge_into_knob_cache(path, sample_entry(1)).ok());
  ASSERT_TRUE(merge_into_knob_cache(path, sample_entry(2)).ok());
  CacheEntry replaced = sample_entry(1);
  replaced.config.gemm1.tile.block_n = 128;
  auto r = merge_into_knob_cache(path, replaced);
  ASSERT_TRUE(r.ok());
  auto back = load_knob_cache(path);
  ASSERT_TRUE(back.ok());
  ASSERT_EQ(back->entries.size(), 2u);
  EXPECT_EQ(back->entries[0], replaced);
  std::filesystem::remove_all(dir);
}

TEST(KnobCache, MergeRefusesToOverwriteACorruptCache) {
  std::string const dir = moetune::testing::unique_temp_dir("knobcache");
  std::string const path = dir + "/knobs.json";
  ASSERT_TRUE(core::write_file_atomic(path, "{not json").ok());
  EXPECT_FALSE(merge_into_knob_cache(path, sample_entry(1)).ok());
  EXPECT_EQ(*core::read_file(path), "{not json");
  std::filesystem::remove_all(dir);
}

TEST(KnobCache, ConcurrentWritersInSeveralProcessesLoseNothing) {
  std::string const dir = moetune::testing::unique_temp_dir("knobcache");
  std::string const path = dir + "/knobs.json";
  constexpr int kProcs = 4, kEach = 8;
  std::vector<pid_t> kids;
  for (int p = 0; p < kProcs; ++p) {
    pid_t pid = fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
      for (int i = 0; i < kEach; ++i) {
        if (!merge_into_knob_cache(path, sample_entry(1 + p * 100 + i)).ok()) _exit(1);
      }
      _exit(0);
    }
    kids.push_back(pid);
  }
  for (pid_t pid : kids) {
    int status = 0;
    waitpid(pid, &status, 0);
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  }
  auto back = load_knob_cache(path);
  ASSERT_TRUE(back.ok()) << back.error().to_string();
  EXPECT_EQ(back->entries.size(), static_cast<size_t>(kProcs * kEach));
  std::filesystem::remove_all(dir);
}

// Issue 57: `run --knobs auto` waited with no limit and no word behind another process's lock.
// Now the wait is announced once and bounded; the cache is not touched when it runs out.
TEST(KnobCache, ALockHeldElsewhereIsWaitedForWithANoticeAndABound) {
  std::string const dir = moetune::testing::unique_temp_dir("knobcache");
  std::string const path = dir + "/knobs.json";
  // flock locks belong to an open file description: this one conflicts with the merge's own.
  int const held = ::open((path + ".lock").c_str(), O_CREAT | O_RDWR, 0644);
  ASSERT_GE(held, 0);
  ASSERT_EQ(::flock(held, LOCK_EX), 0);
  std::vector<std::string> notices;
  LockWait wait{.timeout_s = 0.4, .notice_s = 0.1, .waiting = [&](std::string const& line) {
                  notices.push_back(line);
                }};
  auto merge = std::async(std::launch::async,
                          [&] { return merge_into_knob_cache(path, sample_entry(1), wait); });
  bool const finished = merge.wait_for(std::chrono::seconds(20)) == std::future_status::ready;
  ::close(held);  // lets a merge that would wait forever finish, so the test can end
  ASSERT_TRUE(finished) << "the merge waited on the lock without a bound";
  auto r = merge.get();
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code, core::ErrorCode::kIo);
  EXPECT_EQ(r.error().where, path + ".lock");
  EXPECT_NE(r.error().message.find("another process has held this lock for 0 s; the tuned entry "
                                   "is not saved"),
            std::string::npos)
      << r.error().message;
  ASSERT_EQ(notices.size(), 1u);
  EXPECT_EQ(notices[0], "waiting for " + path + ".lock, held by another process (up to 0 s)");
  EXPECT_FALSE(std::filesystem::exists(path));
  std::filesystem::remove_all(dir);
}

TEST(KnobCache, ByteOrderMarkNulAndDuplicateKeysAreRefused) {
  std::string const good = format_knob_cache({{sample_entry(4)}});
  ASSERT_TRUE(parse_knob_cache(good, "c.json").ok());
  auto bom = parse_knob_cache("\xEF\xBB\xBF" + good, "c.json");
  ASSERT_FALSE(bom.ok());
  EXPECT_NE(bom.error().message.find("byte order mark"), std::string::npos);
  auto nul = parse_knob_cache(good + std::string(1, '\0'), "c.json");
  ASSERT_FALSE(nul.ok());
  EXPECT_NE(nul.error().message.find("a NUL byte"), std::string::npos);
  std::string dup = good;
  dup.replace(dup.find("\"bucket\": 4"), 11, "\"bucket\": 4, \"bucket\": 8");
  auto twice = parse_knob_cache(dup, "c.json");
  ASSERT_FALSE(twice.ok());
  EXPECT_EQ(twice.error().to_string(), "c.json: entries[0]: duplicate key 'bucket'");
}

// Found by the fuzz target (tests/fuzz/): a number outside int64 in an integer field was cast
// anyway (undefined behaviour, UBSan's float-cast-overflow). Now it is a parse error naming it.
TEST(KnobCache, AnIntegerFieldOutOfRangeIsAParseError) {
  std::string const good = format_knob_cache({{sample_entry(4)}});
  for (auto [from, to] : {std::pair{"\"bucket\": 4", "\"bucket\": 1e300"},
                          {"\"bucket\": 4", "\"bucket\": -4"},
                          {"\"sm_count\": 4", "\"sm_count\": 1e12"},
                          {"\"family_version\": 1", "\"family_version\": 2.5"}}) {
    std::string text = good;
    text.replace(text.find(from), std::string(from).size(), to);
    auto r = parse_knob_cache(text, "c.json");
    ASSERT_FALSE(r.ok()) << to;
    EXPECT_NE(r.error().message.find("; expected an integer in [0, "), std::string::npos)
        << r.error().to_string();
  }
}

}  // namespace
}  // namespace moetune::runtime
