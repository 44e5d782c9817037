// Shared by the tuner tests: the built moetune binary as the worker, a tiny cpu problem that tunes
// in about a second, and fast search options.
#pragma once

#include <string>

#include "core/problem.hpp"
#include "tuner/search.hpp"
#include "tuner/worker.hpp"

namespace moetune::tuner::testing {

inline WorkerOptions cpu_worker() {
  return WorkerOptions{
      .exe = std::string(MOETUNE_BINARY_DIR) + "/moetune", .backend = "cpu", .start_timeout_s = 30};
}

/// E=4, K=64, I=32, top_k=2, bf16 on the cpu family.
inline core::MoeProblem tiny_problem(int64_t tokens = 4) {
  core::MoeProblem p;
  p.num_tokens = tokens;
  p.hidden_size = 64;
  p.intermediate_size = 32;
  p.num_experts = 4;
  p.top_k = 2;
  p.arch = "cpu";
  return p;
}

inline BucketTask tiny_task(int64_t bucket = 4) {
  BucketTask t;
  t.problem = tiny_problem(bucket);
  t.routing.seed = 7;
  t.seed = 7;
  t.bucket = bucket;
  t.tune_hash = "tiny";
  t.shape = "tiny";
  t.device = "cpu";
  return t;
}

/// Few reps, short timeouts: a bucket in about a second on 2 shared cores.
inline SearchOptions fast_options() {
  SearchOptions o;
  o.timeout_s = 2;
  o.prepare_timeout_s = 30;
  o.first_reps = 1;
  o.final_reps = 3;
  o.warmup = 0;
  o.resamples = 200;
  return o;
}

}  // namespace moetune::tuner::testing
