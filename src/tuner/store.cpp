// Store on SQLite; see store.hpp. Statements are prepared per call: the store writes a few rows
// per candidate, far below where statement caching would matter.
#include "tuner/store.hpp"

#include <sqlite3.h>

#include <chrono>
#include <ctime>
#include <sstream>
#include <thread>

#include "core/json_text.hpp"
#include "tuner/protocol.hpp"

namespace moetune::tuner {
namespace {

constexpr char kSchema[] = R"sql(
CREATE TABLE IF NOT EXISTS runs (
  id INTEGER PRIMARY KEY, started TEXT, recipe_path TEXT, recipe_hash TEXT, git_commit TEXT,
  device TEXT, driver TEXT, toolchain TEXT, seed INTEGER, routing TEXT, command TEXT);
CREATE TABLE IF NOT EXISTS measurements (
  id INTEGER PRIMARY KEY, run INTEGER REFERENCES runs(id), tune_hash TEXT, shape TEXT,
  bucket INTEGER, round INTEGER, config TEXT, seed INTEGER, fault TEXT, device TEXT,
  outcome TEXT, reason TEXT, samples TEXT, median_us REAL, ci_low_us REAL, ci_high_us REAL,
  digest TEXT, rel_err REAL, clocks TEXT, created TEXT);
CREATE INDEX IF NOT EXISTS measurements_key
  ON measurements(tune_hash, bucket, round, config, seed, fault, device);
CREATE TABLE IF NOT EXISTS decisions (
  id INTEGER PRIMARY KEY, run INTEGER REFERENCES runs(id), tune_hash TEXT, shape TEXT,
  bucket INTEGER, winner TEXT, incumbent TEXT, challenger TEXT, verdict TEXT, winner_us REAL,
  incumbent_us REAL, challenger_us REAL, agreement REAL, created TEXT, tied TEXT DEFAULT '');
)sql";

/// Schema 1 -> 2: decisions.tied, the finalists tied with the winner, one config's one-line JSON
/// per line ("" for none).
constexpr char kUpgrade1To2[] = "ALTER TABLE decisions ADD COLUMN tied TEXT DEFAULT ''";

/// A prepared statement, finalized on scope exit; bind() and column helpers by 1-based index.
class Stmt {
 public:
  Stmt(sqlite3* db, char const* sql) { rc_ = sqlite3_prepare_v2(db, sql, -1, &s_, nullptr); }
  ~Stmt() { sqlite3_finalize(s_); }
  bool ok() const { return rc_ == SQLITE_OK; }
  void bind(int i, std::string const& v) {
    sqlite3_bind_text(s_, i, v.data(), static_cast<int>(v.size()), SQLITE_TRANSIENT);
  }
  void bind(int i, int64_t v) { sqlite3_bind_int64(s_, i, v); }
  void bind(int i, double v) { sqlite3_bind_double(s_, i, v); }
  int step() { return sqlite3_step(s_); }
  std::string text(int i) const {
    auto p = reinterpret_cast<char const*>(sqlite3_column_text(s_, i));
    return p ? std::string(p) : std::string();
  }
  int64_t integer(int i) const { return sqlite3_column_int64(s_, i); }
  double real(int i) const { return sqlite3_column_double(s_, i); }

 private:
  sqlite3_stmt* s_ = nullptr;
  int rc_ = SQLITE_ERROR;
};

std::string config_text(core::MoeConfig const& c) { return core::to_json_text(c, -1); }

core::MoeConfig config_from(std::string const& text) {
  auto c = core::parse_moe_config_json(text, "store");
  return c.ok() ? *c : core::MoeConfig{};
}

constexpr char kMeasurementColumns[] =
    "run, tune_hash, shape, bucket, round, config, seed, fault, device, outcome, reason, samples, "
    "median_us, ci_low_us, ci_high_us, digest, rel_err, clocks, created";

Measurement read_measurement(Stmt const& s) {
  Measurement m;
  m.run = s.integer(0);
  m.key.tune_hash = s.text(1);
  m.shape = s.text(2);
  m.key.bucket = s.integer(3);
  m.key.round = static_cast<int>(s.integer(4));
  m.key.config = config_from(s.text(5));
  m.key.seed = static_cast<uint64_t>(s.integer(6));
  m.key.fault = s.text(7);
  m.key.device = s.text(8);
  auto outcome = parse_outcome(s.text(9));
  m.outcome = outcome.ok() ? *outcome : Outcome::kLaunchFailed;
  m.reason = s.text(10);
  auto samples = parse_doubles(s.text(11), "store samples");
  if (samples.ok()) m.samples_us = *samples;
  m.median_us = s.real(12);
  m.ci_low_us = s.real(13);
  m.ci_high_us = s.real(14);
  m.digest = s.text(15);
  m.rel_err = s.real(16);
  m.clocks = s.text(17);
  m.created = s.text(18);
  return m;
}

}  // namespace

std::string hash_text(std::string const& text) {
  uint64_t h = 1469598103934665603ull;
  for (unsigned char c : text) {
    h ^= c;
    h *= 1099511628211ull;
  }
  char buf[17];
  std::snprintf(buf, sizeof(buf), "%016llx", static_cast<unsigned long long>(h));
  return buf;
}

std::string utc_now() {
  std::time_t now = std::chrono::system_clock::to_time_t(std::chrono::system_clock::now());
  std::tm tm{};
  gmtime_r(&now, &tm);
  char buf[32];
  std::strftime(buf, sizeof(buf), "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

core::Error Store::error(std::string const& what) const {
  return core::make_error(
      core::ErrorCode::kIo, "store " + path_,
      what + ": " + sqlite3_errmsg(db_) + "; check the file, or use a new --store");
}

core::Status Store::exec(char const* sql) {
  char* message = nullptr;
  if (sqlite3_exec(db_, sql, nullptr, nullptr, &message) != SQLITE_OK) {
    std::string text = message ? message : "unknown error";
    sqlite3_free(message);
    return core::make_error(core::ErrorCode::kIo, "store " + path_,
                            std::string("'") + std::string(sql).substr(0, 40) +
                                "' failed: " + text + "; check the file, or use a new --store");
  }
  return core::Status::Ok();
}

core::Status Store::use_wal() {
  // NOTE: WAL lets readers run beside one writer; the busy timeout makes a second writer wait
  // for the lock instead of failing, so two tuners on one store lose nothing.
  // NOTE: switching to WAL needs an exclusive lock, and SQLite answers SQLITE_BUSY at once,
  // without the busy handler, while another connection is creating or converting the same file
  // (seen as a failed two-writer test on CI): retry within the busy timeout.
  const auto deadline =
      std::chrono::steady_clock::now() + std::chrono::milliseconds(kStoreBusyTimeoutMs);
  core::Status wal = exec("PRAGMA journal_mode=WAL");
  while (!wal.ok() && (sqlite3_errcode(db_) & 0xff) == SQLITE_BUSY &&
         std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
    wal = exec("PRAGMA journal_mode=WAL");
  }
  MOETUNE_RETURN_IF_ERROR(wal);
  // NOTE: under WAL, synchronous=FULL (SQLite's default) fsyncs the log at every commit: 3 ms a
  // measurement on a VM disk, about 20 s of an S1 tune's ~7000. NORMAL syncs only at checkpoints
  // and stays consistent; a killed tuner still loses nothing (its commits are in the OS cache),
  // only an OS crash or a power loss can drop the last ones, which a resume then measures again.
  return exec("PRAGMA synchronous=NORMAL");
}

core::Status Store::ensure_schema() {
  MOETUNE_RETURN_IF_ERROR(exec("BEGIN IMMEDIATE"));
  auto fail = [&](core::Error e) -> core::Status {
    (void)exec("ROLLBACK");
    return e;
  };
  if (!exec("CREATE TABLE IF NOT EXISTS schema_version (version INTEGER NOT NULL)").ok()) {
    return fail(error("cannot read the schema version"));
  }
  int64_t version = 0;
  {
    Stmt s(db_, "SELECT max(version) FROM schema_version");
    if (!s.ok() || s.step() != SQLITE_ROW) return fail(error("cannot read the version"));
    version = s.integer(0);
  }
  if (version == 0) {
    if (!exec(kSchema).ok()) return fail(error("cannot create the schema"));
    Stmt s(db_, "INSERT INTO schema_version(version) VALUES (?)");
    s.bind(1, int64_t{kStoreSchemaVersion});
    if (s.step() != SQLITE_DONE) return fail(error("cannot write the schema version"));
  } else if (version == 1) {
    if (!exec(kUpgrade1To2).ok() || !exec("UPDATE schema_version SET version = 2").ok()) {
      return fail(error("cannot upgrade the schema from version 1 to 2"));
    }
  } else if (version < kStoreOldestSupported || version > kStoreSchemaVersion) {
    return fail(core::make_error(
        core::ErrorCode::kVersion, "store " + path_,
        "store " + path_ + " has schema version " + std::to_string(version) +
            "; this moetune reads " + std::to_string(kStoreOldestSupported) + ".." +
            std::to_string(kStoreSchemaVersion) + "; use a newer moetune or a new --store"));
  }
  return exec("COMMIT");
}

core::Result<std::unique_ptr<Store>> Store::open(std::string const& path) {
  sqlite3* db = nullptr;
  int const rc =
      sqlite3_open_v2(path.c_str(), &db,
                      SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_FULLMUTEX, nullptr);
  std::unique_ptr<Store> store(new Store(db, path));
  if (rc != SQLITE_OK) return store->error("cannot open");
  sqlite3_busy_timeout(db, kStoreBusyTimeoutMs);
  MOETUNE_RETURN_IF_ERROR(store->use_wal());
  MOETUNE_RETURN_IF_ERROR(store->ensure_schema());
  return store;
}

Store::~Store() { sqlite3_close(db_); }

core::Result<int64_t> Store::begin_run(RunInfo const& r) {
  Stmt s(db_,
         "INSERT INTO runs(started, recipe_path, recipe_hash, git_commit, device, driver, "
         "toolchain, seed, routing, command) VALUES (?,?,?,?,?,?,?,?,?,?)");
  if (!s.ok()) return error("cannot record the run");
  s.bind(1, r.started);
  s.bind(2, r.recipe_path);
  s.bind(3, r.recipe_hash);
  s.bind(4, r.commit);
  s.bind(5, r.device);
  s.bind(6, r.driver);
  s.bind(7, r.toolchain);
  s.bind(8, static_cast<int64_t>(r.seed));
  s.bind(9, r.routing);
  s.bind(10, r.command);
  // A single INSERT is its own transaction.
  if (s.step() != SQLITE_DONE) return error("cannot record the run");
  return static_cast<int64_t>(sqlite3_last_insert_rowid(db_));
}

core::Status Store::record(Measurement const& m) {
  Stmt s(db_, (std::string("INSERT INTO measurements(") + kMeasurementColumns +
               ") VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)")
                  .c_str());
  if (!s.ok()) return error("cannot record a measurement");
  s.bind(1, m.run);
  s.bind(2, m.key.tune_hash);
  s.bind(3, m.shape);
  s.bind(4, m.key.bucket);
  s.bind(5, int64_t{m.key.round});
  s.bind(6, config_text(m.key.config));
  s.bind(7, static_cast<int64_t>(m.key.seed));
  s.bind(8, m.key.fault);
  s.bind(9, m.key.device);
  s.bind(10, std::string(to_string(m.outcome)));
  s.bind(11, m.reason);
  s.bind(12, json_doubles(m.samples_us));
  s.bind(13, m.median_us);
  s.bind(14, m.ci_low_us);
  s.bind(15, m.ci_high_us);
  s.bind(16, m.digest);
  s.bind(17, m.rel_err);
  s.bind(18, m.clocks);
  s.bind(19, utc_now());
  if (s.step() != SQLITE_DONE) return error("cannot record a measurement");
  return core::Status::Ok();
}

core::Result<std::optional<Measurement>> Store::find(MeasurementKey const& k) {
  Stmt s(db_, (std::string("SELECT ") + kMeasurementColumns +
               " FROM measurements WHERE tune_hash=? AND bucket=? AND round=? AND config=? AND "
               "seed=? AND fault=? AND device=? ORDER BY id DESC LIMIT 1")
                  .c_str());
  if (!s.ok()) return error("cannot look up a measurement");
  s.bind(1, k.tune_hash);
  s.bind(2, k.bucket);
  s.bind(3, int64_t{k.round});
  s.bind(4, config_text(k.config));
  s.bind(5, static_cast<int64_t>(k.seed));
  s.bind(6, k.fault);
  s.bind(7, k.device);
  int const rc = s.step();
  if (rc == SQLITE_DONE) return std::optional<Measurement>();
  if (rc != SQLITE_ROW) return error("cannot look up a measurement");
  return std::optional<Measurement>(read_measurement(s));
}

core::Status Store::record_decision(Decision const& d) {
  Stmt s(db_,
         "INSERT INTO decisions(run, tune_hash, shape, bucket, winner, incumbent, challenger, "
         "verdict, winner_us, incumbent_us, challenger_us, agreement, created, tied) "
         "VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?)");
  if (!s.ok()) return error("cannot record a decision");
  s.bind(1, d.run);
  s.bind(2, d.tune_hash);
  s.bind(3, d.shape);
  s.bind(4, d.bucket);
  s.bind(5, config_text(d.winner));
  s.bind(6, config_text(d.incumbent));
  s.bind(7, config_text(d.challenger));
  s.bind(8, d.verdict);
  s.bind(9, d.winner_us);
  s.bind(10, d.incumbent_us);
  s.bind(11, d.challenger_us);
  s.bind(12, d.agreement);
  s.bind(13, utc_now());
  std::string tied;
  for (core::MoeConfig const& c : d.tied) {
    if (!tied.empty()) tied += '\n';
    tied += config_text(c);
  }
  s.bind(14, tied);
  if (s.step() != SQLITE_DONE) return error("cannot record a decision");
  return core::Status::Ok();
}

core::Result<std::vector<Measurement>> Store::measurements(int64_t run) {
  Stmt s(db_, (std::string("SELECT ") + kMeasurementColumns +
               " FROM measurements WHERE ?=0 OR run=? ORDER BY id")
                  .c_str());
  if (!s.ok()) return error("cannot read measurements");
  s.bind(1, run);
  s.bind(2, run);
  std::vector<Measurement> out;
  int rc;
  while ((rc = s.step()) == SQLITE_ROW) out.push_back(read_measurement(s));
  if (rc != SQLITE_DONE) return error("cannot read measurements");
  return out;
}

core::Result<std::vector<Decision>> Store::decisions(int64_t run) {
  Stmt s(db_,
         "SELECT run, tune_hash, shape, bucket, winner, incumbent, challenger, verdict, "
         "winner_us, incumbent_us, challenger_us, agreement, tied FROM decisions WHERE ?=0 OR "
         "run=? "
         "ORDER BY id");
  if (!s.ok()) return error("cannot read decisions");
  s.bind(1, run);
  s.bind(2, run);
  std::vector<Decision> out;
  int rc;
  while ((rc = s.step()) == SQLITE_ROW) {
    Decision d;
    d.run = s.integer(0);
    d.tune_hash = s.text(1);
    d.shape = s.text(2);
    d.bucket = s.integer(3);
    d.winner = config_from(s.text(4));
    d.incumbent = config_from(s.text(5));
    d.challenger = config_from(s.text(6));
    d.verdict = s.text(7);
    d.winner_us = s.real(8);
    d.incumbent_us = s.real(9);
    d.challenger_us = s.real(10);
    d.agreement = s.real(11);
    std::istringstream tied(s.text(12));
    for (std::string line; std::getline(tied, line);) {
      if (!line.empty()) d.tied.push_back(config_from(line));
    }
    out.push_back(d);
  }
  if (rc != SQLITE_DONE) return error("cannot read decisions");
  return out;
}

core::Result<int64_t> Store::count_runs() {
  Stmt s(db_, "SELECT count(*) FROM runs");
  if (!s.ok() || s.step() != SQLITE_ROW) return error("cannot count runs");
  return s.integer(0);
}

core::Result<RunInfo> Store::run_info(int64_t run) {
  Stmt s(db_,
         "SELECT started, recipe_path, recipe_hash, git_commit, device, driver, toolchain, seed, "
         "routing, command FROM runs WHERE id=?");
  if (!s.ok()) return error("cannot read run " + std::to_string(run));
  s.bind(1, run);
  int const rc = s.step();
  if (rc == SQLITE_DONE) {
    return core::make_error(core::ErrorCode::kNotFound, "store " + path_,
                            "no run " + std::to_string(run) + " in it");
  }
  if (rc != SQLITE_ROW) return error("cannot read run " + std::to_string(run));
  return RunInfo{.started = s.text(0),
                 .recipe_path = s.text(1),
                 .recipe_hash = s.text(2),
                 .commit = s.text(3),
                 .device = s.text(4),
                 .driver = s.text(5),
                 .toolchain = s.text(6),
                 .seed = static_cast<uint64_t>(s.integer(7)),
                 .routing = s.text(8),
                 .command = s.text(9)};
}

core::Result<int64_t> Store::synchronous() {
  Stmt s(db_, "PRAGMA synchronous");
  if (!s.ok() || s.step() != SQLITE_ROW) return error("cannot read PRAGMA synchronous");
  return s.integer(0);
}

}  // namespace moetune::tuner
