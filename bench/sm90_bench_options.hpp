// moetune_sm90_bench's command line (bench/sm90_bench.cpp): its options, the shapes they name,
// and the run's fatal-error exit.
#pragma once

#include <cstdio>
#include <cstdlib>
#include <optional>
#include <string>
#include <vector>

#include "core/config.hpp"
#include "core/problem.hpp"
#include "core/result.hpp"

namespace moetune::bench {

/// A named MoE shape (M left 0: each point sets it).
struct Shape {
  std::string name;
  core::MoeProblem p;
};

/// The benchmark shapes S1-S3.
std::vector<Shape> all_shapes();

/// s split at sep, empty items dropped.
std::vector<std::string> split(std::string const& s, char sep);

/// "moetune_sm90_bench: <what>" on stderr, exit 1.
[[noreturn]] void die(std::string const& what);

/// r's value, or die naming ctx.
template <class T>
T must(core::Result<T> r, std::string const& ctx) {
  if (!r.ok()) die(ctx + ": " + r.error().to_string());
  return std::move(r).value();
}

struct Options {
  std::string out_dir = "build/results";
  std::string shapes = "S1,S2,S3";
  std::string ms = "1,4,16,64,128,256,512,1024,2048,4096,8192,16384";
  bool sweep = true;
  std::string recipe;  // --recipe: time the recipe's pinned rows instead of sweeping
  // --schedule-override S: pinned GEMMs with a wgmma schedule run with schedule S instead (same
  // tiles), to compare main loops at the recipe's points.
  std::optional<core::Schedule> schedule_override;
  // --sweep-schedule S: the sweep only times candidates with schedule S.
  std::optional<core::Schedule> sweep_schedule;
  bool sweep_decode_only = false;  // --sweep-decode-only: only the decode kernels (launch.swap_ab)
  int sweep_reps = 5;
  std::string sweep_log;  // --sweep-log FILE: every candidate the sweep timed (sweep_best)
  // --shape NAME=E,K,I,TOPK,ACT (repeatable): a shape beyond S1-S3 (e.g. a held-out model), run
  // after the --shapes ones; no peer numbers exist for it, the floor is computed the same way.
  std::vector<Shape> extra_shapes;
  // --dense: also time cuBLAS on each point's two GEMMs as dense matrices (M x top_k rows, no
  // gather, no padding, no activation or routing weight) into <date>-<commit>-dense.csv: what the
  // best dense GEMM does with the same flops in the same run (its SM clock sampled too: at the
  // power cap the two measurements may run at different clocks).
  bool dense = false;
};

/// Parses --shape's "NAME=E,K,I,TOPK,ACT" (ACT as the CLI names it: silu, relu2, gelu,
/// gelu_tanh); dies with the expected form otherwise.
Shape parse_shape(std::string const& text);

/// The command line; dies naming an unknown option or a missing value.
Options parse_options(int argc, char** argv);

/// The shapes a run times: those --shapes names (none: only the --shape ones), then --shape's;
/// an unknown name dies before the device is touched.
std::vector<Shape> selected_shapes(Options const& opt);

}  // namespace moetune::bench
