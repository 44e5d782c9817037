// The multi-CTA align's chunking (sm90_align_chunks, sm90_gather_launch.cpp): every pair lands in
// a chunk of at most 8 ids per thread of 256 (what the kernels hold in registers), the chunk count
// stays within one batch of histogram loads per place CTA up to 32768 pairs, and the benchmark
// points get the counts measured best on the H200. Host-only (no GPU, no NVRTC).
#include <gtest/gtest.h>

#include <cstdint>
#include <string>

#include "kernels/cuda/sm90_gather_launch.hpp"

namespace moetune::kernels::cuda {
namespace {

constexpr int64_t kThreads = 256;  // sm90_align_kernel.cuh kAlignChunkThreads
constexpr int64_t kMaxIds = 8;     // sm90_align_kernel.cuh kAlignChunkIds

/// Empty when `chunks` chunks cover `pairs` the way the kernels split them (align_chunk_ids: the
/// fewest ids per thread that cover the pairs, at most kMaxIds), else what is wrong.
std::string chunking_error(int64_t pairs, int64_t chunks) {
  if (chunks < 1) return "no chunk";
  const int64_t ids = (pairs + chunks * kThreads - 1) / (chunks * kThreads);
  if (ids > kMaxIds)
    return std::to_string(ids) + " ids per thread, over " + std::to_string(kMaxIds);
  if (ids < 1) return "no ids per thread";
  if ((chunks - 1) * kThreads * ids >= pairs) return "an empty last chunk";
  return "";
}

/// Threads of a place CTA per expert's histogram row (the kernel's align_threads_per_expert).
int64_t threads_per_expert(int64_t e) {
  int64_t tpe = 1;
  while (tpe < 32 && 2 * tpe * e <= kThreads) tpe *= 2;
  return tpe;
}

TEST(AlignChunks, CoverEveryPairWithAtMostEightIdsPerThreadAndOneHistogramBatchUpTo32768) {
  int checked = 0;
  for (int64_t e : {2, 8, 40, 60, 128, 129, 256, 300, 1024}) {
    for (int64_t pairs : {2049, 3000, 4096, 6144, 8191, 8192, 16384, 24576, 32768, 32769, 49152,
                          98304, 131072, 1000003}) {
      const int64_t chunks = sm90_align_chunks(pairs, e);
      const std::string what = std::to_string(pairs) + " pairs, E = " + std::to_string(e) + ": " +
                               std::to_string(chunks) + " chunks";
      EXPECT_EQ(chunking_error(pairs, chunks), "") << what;
      if (pairs <= 32768) {
        // one batch of 16 loads per thread, unless 2 ids per thread (the fewest) already need more
        EXPECT_TRUE(chunks <= 16 * threads_per_expert(e) ||
                    chunks == (pairs + 2 * kThreads - 1) / (2 * kThreads))
            << what;
      } else {
        EXPECT_EQ(chunks, (pairs + 2047) / 2048) << what;
      }
      ++checked;
    }
  }
  EXPECT_EQ(checked, 9 * 14);
}

TEST(AlignChunks, BenchmarkPointsGetTheChunkCountsMeasuredOnTheH200) {
  EXPECT_EQ(sm90_align_chunks(8192, 128), 16);    // S2 M=1024: 2 ids per thread
  EXPECT_EQ(sm90_align_chunks(16384, 128), 32);   // S2 M=2048
  EXPECT_EQ(sm90_align_chunks(12288, 128), 24);   // S1 M=2048
  EXPECT_EQ(sm90_align_chunks(32768, 128), 32);   // S2 M=4096: 4 ids per thread
  EXPECT_EQ(sm90_align_chunks(49152, 128), 24);   // S1 M=8192: 2048 pairs a chunk, as before
  EXPECT_EQ(sm90_align_chunks(131072, 128), 64);  // S2 M=16384
  EXPECT_EQ(sm90_align_chunks(32768, 8), 64);     // S3 M=16384: E = 8, 2 ids per thread
}

// The checker's negative twin: chunk counts the kernels could not cover are caught.
TEST(AlignChunks, TheCoverageCheckRefusesTooFewChunksAndAnEmptyLastOne) {
  EXPECT_EQ(chunking_error(16384, 8), "");  // 8 ids per thread: the most
  EXPECT_NE(chunking_error(16384, 7), "");  // 10 ids per thread
  EXPECT_NE(chunking_error(16384, 0), "");
  EXPECT_NE(chunking_error(1000, 5), "");  // 1 id per thread covers it in 4 chunks
}

}  // namespace
}  // namespace moetune::kernels::cuda
