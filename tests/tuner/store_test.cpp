// tuner/store: measurements round-trip with their key, decisions with their ties, a schema-1 store
// is upgraded in place, an unknown schema version is refused by name, a non-database file is an
// error, two writers on one store lose nothing, and commits skip the per-measurement fsync without
// a killed writer losing any of them.
#include "tuner/store.hpp"

#include <signal.h>
#include <sqlite3.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <thread>

#include <gtest/gtest.h>

namespace moetune::tuner {
namespace {

class StoreTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string tmpl = (std::filesystem::temp_directory_path() / "moetune-store-XXXXXX").string();
    ASSERT_NE(mkdtemp(tmpl.data()), nullptr);
    dir_ = tmpl;
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  std::string path(char const* name) const { return (dir_ / name).string(); }
  std::filesystem::path dir_;
};

Measurement sample_measurement(int64_t run, int round) {
  Measurement m;
  m.run = run;
  m.key.tune_hash = "abc";
  m.key.bucket = 16;
  m.key.round = round;
  m.key.config.gemm1.tile.block_m = 32;
  m.key.config.gemm2.tile.block_m = 32;
  m.key.seed = 7;
  m.key.device = "cpu";
  m.shape = "E=4,N=32,device_name=cpu,family=cpu_tiled.json";
  m.outcome = Outcome::kOk;
  m.samples_us = {10.5, 11, 10.75};
  m.median_us = 10.75;
  m.ci_low_us = 10.5;
  m.ci_high_us = 11;
  m.digest = "feed";
  m.rel_err = 1e-3;
  return m;
}

TEST_F(StoreTest, AMeasurementIsFoundByItsKeyAndOnlyByIt) {
  auto store = Store::open(path("s.db"));
  ASSERT_TRUE(store.ok()) << store.error().to_string();
  auto run = (*store)->begin_run(RunInfo{.recipe_path = "r.json", .seed = 7});
  ASSERT_TRUE(run.ok());
  Measurement const m = sample_measurement(*run, 0);
  ASSERT_TRUE((*store)->record(m).ok());
  auto found = (*store)->find(m.key);
  ASSERT_TRUE(found.ok());
  ASSERT_TRUE(found->has_value());
  EXPECT_EQ((**found).samples_us, m.samples_us);
  EXPECT_EQ((**found).key.config, m.key.config);
  EXPECT_EQ((**found).digest, "feed");
  EXPECT_EQ((**found).outcome, Outcome::kOk);
  EXPECT_FALSE((**found).created.empty());
  // Negative twins: one key field changed each time finds nothing.
  MeasurementKey k = m.key;
  k.seed = 8;
  EXPECT_FALSE((*store)->find(k)->has_value());
  k = m.key;
  k.fault = "crash";
  EXPECT_FALSE((*store)->find(k)->has_value());
  k = m.key;
  k.config.gemm2.pipeline.split_k = 2;
  EXPECT_FALSE((*store)->find(k)->has_value());
  // A measurement made on another device is never resumed from.
  k = m.key;
  k.device = m.key.device + " (another)";
  EXPECT_FALSE((*store)->find(k)->has_value());
  k = m.key;
  k.bucket += 1;
  EXPECT_FALSE((*store)->find(k)->has_value());
  k = m.key;
  k.round += 1;
  EXPECT_FALSE((*store)->find(k)->has_value());
  k = m.key;
  k.tune_hash += "0";
  EXPECT_FALSE((*store)->find(k)->has_value());
}

TEST_F(StoreTest, ReopeningKeepsEverythingAndWritesWal) {
  {
    auto store = Store::open(path("s.db"));
    ASSERT_TRUE(store.ok());
    ASSERT_TRUE((*store)->record(sample_measurement(0, 0)).ok());
    ASSERT_TRUE((*store)->record_decision(Decision{.bucket = 16, .verdict = "tie"}).ok());
    EXPECT_TRUE(std::filesystem::exists(path("s.db-wal")));
  }
  auto store = Store::open(path("s.db"));
  ASSERT_TRUE(store.ok());
  EXPECT_EQ((*store)->measurements()->size(), 1u);
  ASSERT_EQ((*store)->decisions()->size(), 1u);
  EXPECT_EQ((*store)->decisions()->front().verdict, "tie");
}

TEST_F(StoreTest, ANewerSchemaVersionIsRefusedByName) {
  ASSERT_TRUE(Store::open(path("s.db")).ok());
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open(path("s.db").c_str(), &db), SQLITE_OK);
  ASSERT_EQ(sqlite3_exec(db, "UPDATE schema_version SET version = 3", nullptr, nullptr, nullptr),
            SQLITE_OK);
  sqlite3_close(db);
  auto store = Store::open(path("s.db"));
  ASSERT_FALSE(store.ok());
  EXPECT_EQ(store.error().code, core::ErrorCode::kVersion);
  EXPECT_EQ(store.error().message, "store " + path("s.db") +
                                       " has schema version 3; this moetune reads 1..2; use a "
                                       "newer moetune or a new --store");
}

TEST_F(StoreTest, ADecisionKeepsTheFinalistsTiedWithItsWinner) {
  auto store = Store::open(path("s.db"));
  ASSERT_TRUE(store.ok());
  Decision d{.bucket = 64, .verdict = "challenger_wins"};
  d.winner.gemm1.tile.block_n = 64;
  d.tied.resize(2);
  d.tied[0].gemm1.tile.block_n = 128;
  d.tied[1].gemm2.pipeline.num_stages = 5;
  ASSERT_TRUE((*store)->record_decision(d).ok());
  ASSERT_TRUE((*store)->record_decision(Decision{.bucket = 128}).ok());
  auto read = (*store)->decisions();
  ASSERT_TRUE(read.ok());
  ASSERT_EQ(read->size(), 2u);
  EXPECT_EQ((*read)[0].winner, d.winner);
  EXPECT_EQ((*read)[0].tied, d.tied);
  EXPECT_TRUE((*read)[1].tied.empty());
}

// A store written by schema 1 (no decisions.tied) is upgraded in place on open: its rows stay,
// its version reads 2, and new decisions carry their ties.
TEST_F(StoreTest, ASchemaOneStoreIsUpgradedInPlaceAndKeepsItsRows) {
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open(path("old.db").c_str(), &db), SQLITE_OK);
  char const* v1 =
      "CREATE TABLE schema_version (version INTEGER NOT NULL);"
      "INSERT INTO schema_version(version) VALUES (1);"
      "CREATE TABLE runs (id INTEGER PRIMARY KEY, started TEXT, recipe_path TEXT, recipe_hash "
      "TEXT, git_commit TEXT, device TEXT, driver TEXT, toolchain TEXT, seed INTEGER, routing "
      "TEXT, command TEXT);"
      "CREATE TABLE measurements (id INTEGER PRIMARY KEY, run INTEGER, tune_hash TEXT, shape TEXT,"
      " bucket INTEGER, round INTEGER, config TEXT, seed INTEGER, fault TEXT, device TEXT, outcome"
      " TEXT, reason TEXT, samples TEXT, median_us REAL, ci_low_us REAL, ci_high_us REAL, digest "
      "TEXT, rel_err REAL, clocks TEXT, created TEXT);"
      "CREATE TABLE decisions (id INTEGER PRIMARY KEY, run INTEGER, tune_hash TEXT, shape TEXT, "
      "bucket INTEGER, winner TEXT, incumbent TEXT, challenger TEXT, verdict TEXT, winner_us REAL,"
      " incumbent_us REAL, challenger_us REAL, agreement REAL, created TEXT);"
      "INSERT INTO decisions(bucket, verdict, winner_us) VALUES (16, 'tie', 12.5);";
  ASSERT_EQ(sqlite3_exec(db, v1, nullptr, nullptr, nullptr), SQLITE_OK);
  sqlite3_close(db);
  {
    auto store = Store::open(path("old.db"));
    ASSERT_TRUE(store.ok()) << store.error().to_string();
    Decision d{.bucket = 32};
    d.tied.resize(1);
    ASSERT_TRUE((*store)->record_decision(d).ok());
  }
  auto store = Store::open(path("old.db"));
  ASSERT_TRUE(store.ok());
  auto read = (*store)->decisions();
  ASSERT_TRUE(read.ok());
  ASSERT_EQ(read->size(), 2u);
  EXPECT_EQ((*read)[0].verdict, "tie");
  EXPECT_EQ((*read)[0].winner_us, 12.5);
  EXPECT_TRUE((*read)[0].tied.empty());
  EXPECT_EQ((*read)[1].tied.size(), 1u);
  ASSERT_EQ(sqlite3_open(path("old.db").c_str(), &db), SQLITE_OK);
  sqlite3_stmt* s = nullptr;
  ASSERT_EQ(sqlite3_prepare_v2(db, "SELECT max(version) FROM schema_version", -1, &s, nullptr),
            SQLITE_OK);
  ASSERT_EQ(sqlite3_step(s), SQLITE_ROW);
  EXPECT_EQ(sqlite3_column_int(s, 0), 2);
  sqlite3_finalize(s);
  sqlite3_close(db);
}

TEST_F(StoreTest, AFileThatIsNotADatabaseIsAnError) {
  std::ofstream(path("junk.db")) << "this is not sqlite, just text long enough to have a header";
  auto store = Store::open(path("junk.db"));
  ASSERT_FALSE(store.ok());
  EXPECT_EQ(store.error().code, core::ErrorCode::kIo);
  EXPECT_NE(store.error().to_string().find("junk.db"), std::string::npos);
}

TEST_F(StoreTest, TwoWritersOnOneStoreLoseNothing) {
  constexpr int kPerWriter = 150;
  auto writer = [&](int id) {
    auto store = Store::open(path("shared.db"));  // its own connection
    ASSERT_TRUE(store.ok()) << store.error().to_string();
    for (int i = 0; i < kPerWriter; ++i) {
      Measurement m = sample_measurement(id, i);
      ASSERT_TRUE((*store)->record(m).ok());
    }
  };
  std::thread a(writer, 1);
  std::thread b(writer, 2);
  a.join();
  b.join();
  auto store = Store::open(path("shared.db"));
  ASSERT_TRUE(store.ok());
  EXPECT_EQ((*store)->measurements(1)->size(), size_t{kPerWriter});
  EXPECT_EQ((*store)->measurements(2)->size(), size_t{kPerWriter});
}

/// Forks a child that opens `db`, records `count` measurements of `run` and then exits 0 (or, with
/// `killed`, dies by SIGKILL with the store open: no close, no checkpoint); 1 if a record failed.
pid_t fork_writer(std::string const& db, int64_t run, int count, bool killed) {
  pid_t const child = fork();
  if (child != 0) return child;
  auto store = Store::open(db);
  bool ok = store.ok();
  for (int i = 0; ok && i < count; ++i) ok = (*store)->record(sample_measurement(run, i)).ok();
  if (ok && killed) ::raise(SIGKILL);
  _exit(ok ? 0 : 1);
}

TEST_F(StoreTest, TwoProcessesWritingOneStoreLoseNothing) {
  constexpr int kPerWriter = 100;
  pid_t const child = fork_writer(path("shared.db"), 2, kPerWriter, false);
  ASSERT_GE(child, 0);
  auto store = Store::open(path("shared.db"));
  ASSERT_TRUE(store.ok()) << store.error().to_string();
  for (int i = 0; i < kPerWriter; ++i) ASSERT_TRUE((*store)->record(sample_measurement(1, i)).ok());
  int status = 0;
  ASSERT_EQ(waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  EXPECT_EQ((*store)->measurements()->size(), size_t{2 * kPerWriter});
}

TEST_F(StoreTest, CommitsWithoutAnFsyncPerMeasurement) {
  auto store = Store::open(path("s.db"));
  ASSERT_TRUE(store.ok()) << store.error().to_string();
  auto level = (*store)->synchronous();
  ASSERT_TRUE(level.ok()) << level.error().to_string();
  EXPECT_EQ(*level, 1) << "PRAGMA synchronous should be NORMAL (1), not FULL (2)";
}

TEST_F(StoreTest, AWriterKilledMidRunLosesNoCommittedMeasurement) {
  // What --store resume relies on: `timeout` or a crash kills the tuner with the store open.
  constexpr int kRecorded = 50;
  pid_t const child = fork_writer(path("killed.db"), 1, kRecorded, true);
  ASSERT_GE(child, 0);
  int status = 0;
  ASSERT_EQ(waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL) << "the child failed to record";
  auto store = Store::open(path("killed.db"));
  ASSERT_TRUE(store.ok()) << store.error().to_string();
  EXPECT_EQ((*store)->measurements()->size(), size_t{kRecorded});
}

}  // namespace
}  // namespace moetune::tuner
