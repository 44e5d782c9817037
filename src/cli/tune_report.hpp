// What `moetune tune` prints: one result line per bucket, the --json summary, and the progress
// bar with ETA on stderr (redrawn in place on a terminal, plain lines otherwise).
#pragma once

#include <chrono>
#include <cstdint>
#include <ostream>
#include <string>
#include <vector>

#include "core/config.hpp"
#include "tuner/search.hpp"

namespace moetune::cli {

/// "bucket 16: m16n64k128g1w4s2t1  41.2 us [40.9, 41.8]  incumbent m16n64k128g1w4s2t1 41.2 us
/// [..]  margin +0.0%  incumbent kept  [112 candidates: 90 ok, 22 rejected; per GEMM: 90 checked,
/// joint product 1296]".
std::string bucket_line(tuner::BucketResult const& r);
/// "pruned: 22 (gemm1.pipeline.split_k 16, gemm2.pipeline.split_k 6)", "" when nothing was.
std::string pruned_line(tuner::BucketResult const& r);

/// Collects `moetune tune --json`: {"shapes": [{"name", "table", "backend", "buckets": [...]}],
/// "store", "run", "elapsed_s"}; every call is a no-op when disabled.
class TuneJson {
 public:
  explicit TuneJson(bool enabled) : enabled_(enabled) {}
  void begin_shape(std::string const& name, std::string const& table, std::string const& backend);
  /// A pinned bucket; with `measured` (--measure-pinned) also the tuner's answer, the pin being
  /// its incumbent.
  void pinned_bucket(int64_t bucket, core::MoeConfig const& config,
                     tuner::BucketResult const* measured = nullptr);
  void tuned_bucket(tuner::BucketResult const& r, std::string const& command);
  void failed_bucket(tuner::BucketResult const& r);
  void end_shape();
  /// Prints the object (when enabled).
  void finish(std::ostream& out, std::string const& store, int64_t run, double elapsed_s) const;

 private:
  bool enabled_;
  std::vector<std::string> shapes_;
  std::string shape_head_;
  std::vector<std::string> buckets_;
};

/// Progress over a run's buckets, with ETA, on stderr.
class ProgressBar {
 public:
  /// `tty`: redraw one line in place; else print one plain line per finished bucket.
  ProgressBar(int total_buckets, bool tty);
  /// The current bucket (1-based count) has reached `fraction` of its work.
  void update(int64_t bucket, int index, double fraction);
  /// Clears the line on a terminal.
  void done();

 private:
  int total_;
  bool tty_;
  std::chrono::steady_clock::time_point start_ = std::chrono::steady_clock::now();
  double last_draw_s_ = -1;
  int last_printed_ = 0;  ///< plain mode: the last bucket whose line was printed
};

}  // namespace moetune::cli
