// Store: every measurement of every tune run in one SQLite file (WAL, busy timeout), with its
// provenance, so a tuned row's measurements and decision are kept beside it, a killed run resumes
// from it, and two tuners can share it. Tables are written by the tune run itself
// (tuner/tune_pipeline.hpp) and can be rebuilt from the store alone (tuner/tables_from_store.hpp).
// The schema is versioned (STYLE 15): open() refuses a version outside [kStoreOldestSupported,
// kStoreSchemaVersion] by name. Every write is one transaction, committed without an fsync
// (synchronous=NORMAL).
//
// Tables: schema_version(version); runs (one per `moetune tune`); measurements (one per candidate
// per round: outcome, samples, median, CI, digest, ...); decisions (per bucket: winner, incumbent,
// best challenger, verdict, so a tie keeps both configs, and since schema 2 the finalists tied with
// the winner). open() upgrades a schema-1 store in place (one transaction: the decisions table
// gains `tied`), so an older store keeps every measurement and resumes.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/config.hpp"
#include "core/result.hpp"
#include "tuner/outcome.hpp"

struct sqlite3;

namespace moetune::tuner {

inline constexpr int kStoreSchemaVersion = 2;
inline constexpr int kStoreOldestSupported = 1;
/// How long a writer waits for another writer's lock before failing.
inline constexpr int kStoreBusyTimeoutMs = 30000;

/// One tune run's provenance.
struct RunInfo {
  std::string started;  ///< ISO-8601 UTC time
  std::string recipe_path;
  std::string recipe_hash;  ///< hash of the recipe file's bytes
  std::string commit;       ///< moetune's git commit
  std::string device;
  std::string driver;
  std::string toolchain;
  uint64_t seed = 0;
  std::string routing;  ///< core::format_routing
  std::string command;  ///< the command line that started the run
};

/// What identifies a measurement for resumption: the same key is never measured twice.
struct MeasurementKey {
  std::string tune_hash{};  ///< hash of what changes a measurement (problem, routing, family, ...)
  int64_t bucket = 0;
  int round = 0;  ///< successive-halving round; kFinalRound.. for the final and repeats
  core::MoeConfig config{};
  uint64_t seed = 0;
  std::string fault{};  ///< the injected fault ("" none): a faulty run never feeds a clean one
  std::string device{};
};

struct Measurement {
  MeasurementKey key;
  int64_t run = 0;
  std::string shape;  ///< the shape's table file name, for people reading the store
  Outcome outcome = Outcome::kOk;
  std::string reason;  ///< why, when not ok ("signal 11 (SIGSEGV)", a can_implement reason, ...)
  std::vector<double> samples_us;
  double median_us = 0;
  double ci_low_us = 0;
  double ci_high_us = 0;
  std::string digest;
  double rel_err = 0;
  std::string clocks;   ///< device clocks during timing when the testbed reports them, else ""
  std::string created;  ///< ISO-8601 UTC, set by record()
};

/// Per bucket: what selection decided, with both configs of a tie.
struct Decision {
  int64_t run = 0;
  std::string tune_hash;
  std::string shape;
  int64_t bucket = 0;
  core::MoeConfig winner;
  core::MoeConfig incumbent;
  core::MoeConfig challenger;  ///< the fastest other finalist
  std::string verdict;         ///< stats.hpp Verdict name, or "no_incumbent"
  double winner_us = 0;
  double incumbent_us = 0;
  double challenger_us = 0;
  double agreement = 1;  ///< fraction of --repeat rounds naming the same winner
  /// The other finalists statistically tied with the winner (neither beats the other beyond the
  /// intervals and the margin), in search order. Schema 2; a decision of schema 1 reads as none.
  std::vector<core::MoeConfig> tied;
};

class Store {
 public:
  /// Opens (creating when absent) the store at `path`; ":memory:" for a private in-memory one.
  /// Fails (kVersion) on a schema version outside the supported range:
  /// "store X has schema version 3; this moetune reads 1..2; use a newer moetune or a new --store",
  /// and (kIo) on a file that is not a SQLite database.
  static core::Result<std::unique_ptr<Store>> open(std::string const& path);
  ~Store();
  Store(Store const&) = delete;
  Store& operator=(Store const&) = delete;

  std::string const& path() const { return path_; }
  /// Records a run; returns its id.
  core::Result<int64_t> begin_run(RunInfo const& info);
  /// Records one measurement (created is set here).
  core::Status record(Measurement const& m);
  /// The latest measurement with exactly this key, or nullopt.
  core::Result<std::optional<Measurement>> find(MeasurementKey const& key);
  core::Status record_decision(Decision const& d);
  /// All measurements of a run (run = 0: of every run), in insertion order.
  core::Result<std::vector<Measurement>> measurements(int64_t run = 0);
  core::Result<std::vector<Decision>> decisions(int64_t run = 0);
  core::Result<int64_t> count_runs();
  /// One run's provenance; kNotFound when the store has no run `run`.
  core::Result<RunInfo> run_info(int64_t run);
  /// This connection's `PRAGMA synchronous`: 1 (NORMAL) after open(), so a commit does not wait
  /// for an fsync; a killed writer loses no committed measurement (see open() in store.cpp).
  core::Result<int64_t> synchronous();

 private:
  Store(sqlite3* db, std::string path) : db_(db), path_(std::move(path)) {}
  core::Status exec(char const* sql);
  core::Error error(std::string const& what) const;
  /// open's connection settings: WAL (retried while another connection converts the file) and
  /// synchronous=NORMAL.
  core::Status use_wal();
  /// open's schema, in one transaction: created, upgraded from version 1, or refused when this
  /// build cannot read it.
  core::Status ensure_schema();
  sqlite3* db_;
  std::string path_;
};

/// 16 hex digits of FNV-1a 64 over `text` (recipe and tune hashes).
std::string hash_text(std::string const& text);
/// The current UTC time as "YYYY-MM-DDTHH:MM:SSZ".
std::string utc_now();

}  // namespace moetune::tuner
