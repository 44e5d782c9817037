// l2_sides.cu: which SMs sit beside which of the H200's two L2 partitions, and what crosses the
// fabric between them.
//
// Part A, the map. For each SM s:
//   - the L2 is flushed;
//   - one CTA on SM 0 (the reference) reads a 128 KiB probe region;
//   - one thread on SM s times a dependent load of each of its 1024 lines.
// A line homed in the far partition takes the fabric and is slower. Where the reference side
// keeps a copy of what it read, an SM beside it sees no slow line and one on the other side half.
// Without copies, each SM's set of slow lines (its signature) matches SM 0's or its complement.
// Part B, the fabric, for ncu (lts__t_sectors_srcunit_ltcfabric.sum): kernels where chosen SMs read
// an 8 MiB region from a cold L2: one reader once or four times, 16 readers on one side, 8 + 8 on
// both sides; by plain loads, cp.async and bulk copies (the TMA unit).
// Part C, how long the copy lasts: 16 side-0 readers read the region, 0-48 MiB stream through L2,
// and the readers read the region again (reread_kernel).
// Found on the H200: the reading side keeps a copy, so a far line crosses once per side that reads
// it, by every kind of load; the copy outlasts 4 MiB of other traffic, 80% of it 16 MiB, none 48
// MiB. The map differs from chip to chip (pairs of SMs; 64 / 68 or 66 / 66 SMs per side).
//
// Build: the CMake target moetune_l2_sides, or
//   nvcc -O2 -std=c++17 -gencode arch=compute_90a,code=sm_90a -Isrc -o l2_sides
//   tools/l2/l2_sides.cu
// Run: moetune_l2_sides [map.txt]. It prints the map and per-SM slow-line fractions, and writes
// the map to map.txt when given: one digit per SM, 0 for SM 0's side, 1 for the other.
#include <algorithm>
#include <string>
#include <vector>

#define L2_PROBE_NAME "l2_sides"
#include "l2_probe.cuh"

namespace {

constexpr int kProbeLines = 1024;       // 128 KiB of 128-byte lines
constexpr int kSmemBytes = 200 * 1024;  // one CTA per SM

using l2_probe::smid;
using moetune_dev::smem_u32;

/// One 16-byte ld.global.cg, its four words folded into one (so that the load is used).
__device__ unsigned ld_cg_v4(const uint4* p) {
  uint4 v;
  asm volatile("ld.global.cg.v4.u32 {%0,%1,%2,%3}, [%4];"
               : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w)
               : "l"(p)
               : "memory");
  return v.x ^ v.y ^ v.z ^ v.w;
}

__device__ unsigned ld_cg(const unsigned* p) {
  unsigned v;
  asm volatile("ld.global.cg.u32 %0, [%1];" : "=r"(v) : "l"(p) : "memory");
  return v;
}

// The CTA on SM 0 (the reference) reads every probe line and says it ran.
__global__ void warm_kernel(const unsigned* probe, unsigned* ref_sm, unsigned* sink) {
  if (smid() != 0) return;
  unsigned acc = 0;
  for (int i = threadIdx.x; i < kProbeLines; i += blockDim.x) acc += ld_cg(probe + i * 32);
  if (threadIdx.x == 0) *ref_sm = 1;
  if (acc == 0xdeadbeef) sink[0] = acc;
}

// The CTA on SM `target` times each probe line with one thread, loads chained through the value
// read (the region holds zeros, which the compiler cannot know).
__global__ void probe_kernel(const unsigned* probe, unsigned target, unsigned* lat,
                             unsigned* found) {
  __shared__ volatile unsigned s_use;
  if (smid() != target || threadIdx.x != 0) return;
  *found = 1;
  unsigned v = 0;
  for (int i = 0; i < kProbeLines; ++i) {
    const long long t0 = clock64();
    v = ld_cg(probe + i * 32 + v);
    s_use = v;  // waits for the load before the second clock read
    const long long t1 = clock64();
    lat[i] = static_cast<unsigned>(t1 - t0);
  }
}

// Part B: CTAs whose SM has role 1 read the region `reps` times (all 1024 threads, one pass after
// another), the rest return at once. mode 0: ld.global.cg 16-byte loads; 1: cp.async.cg 16-byte
// copies into shared memory (as the GEMMs gather x rows); 2: cp.async.bulk 16 KiB copies into
// shared memory on an mbarrier (the TMA unit, as the GEMMs load weights).
__global__ void read_kernel(const uint4* region, long long n16, int reps, const int* role, int mode,
                            unsigned* sink) {
  extern __shared__ __align__(128) char smem[];
  __shared__ __align__(8) unsigned long long bar;
  if (role[smid()] != 1) return;
  unsigned acc = 0;
  const unsigned sbase = smem_u32(smem);
  const unsigned sbar = smem_u32(&bar);
  if (mode == 2 && threadIdx.x == 0) {
    moetune_dev::mbar_init(sbar, 1);
    moetune_dev::mbar_init_fence();
  }
  __syncthreads();
  int phase = 0;
  for (int r = 0; r < reps; ++r) {
    if (mode == 0) {
      for (long long i = threadIdx.x; i < n16; i += blockDim.x) {
        acc += ld_cg_v4(region + i);
      }
    } else if (mode == 1) {
      // 1024 threads x 16 B = 16 KiB per pass into a 16 KiB window.
      for (long long i = threadIdx.x; i < n16; i += blockDim.x) {
        moetune_dev::cp_async_16(sbase + static_cast<unsigned>(threadIdx.x) * 16, region + i, 16);
        asm volatile("cp.async.wait_all;" ::: "memory");
      }
      acc += reinterpret_cast<unsigned*>(smem)[threadIdx.x];
    } else {
      constexpr unsigned kChunk = 16384;
      const long long chunks = n16 * 16 / kChunk;
      for (long long c = 0; c < chunks; ++c) {
        if (threadIdx.x == 0) {
          moetune_dev::mbar_arrive_expect_tx(sbar, kChunk);
          moetune_dev::bulk_copy_g2s(sbase + static_cast<unsigned>(c % 8) * kChunk,
                                     reinterpret_cast<const char*>(region) + c * kChunk, kChunk,
                                     sbar);
          moetune_dev::mbar_wait(sbar, phase);
          phase ^= 1;
        }
      }
      __syncthreads();
      acc += reinterpret_cast<unsigned*>(smem)[threadIdx.x];
    }
    __syncthreads();
  }
  if (acc == 0xdeadbeef) sink[1] = acc;
}

// Part C: the second read of the region (a kernel of its own name, for ncu's filter).
__global__ void reread_kernel(const uint4* region, long long n16, const int* role, unsigned* sink) {
  if (role[smid()] != 1) return;
  unsigned acc = 0;
  for (long long i = threadIdx.x; i < n16; i += blockDim.x) {
    acc += ld_cg_v4(region + i);
  }
  if (acc == 0xdeadbeef) sink[2] = acc;
}

// Part C: CTAs whose SM has role 1 stream n16 16-byte words between the two reads, each CTA its
// own slice.
__global__ void stream_kernel(const uint4* buf, long long n16, const int* role, int streamers,
                              unsigned* sink) {
  const int r = role[smid()];
  if (r < 0) return;
  unsigned acc = 0;
  const long long per = (n16 + streamers - 1) / streamers;
  for (long long i = r * per + threadIdx.x; i < min(n16, (r + 1) * per); i += blockDim.x) {
    acc += ld_cg_v4(buf + i);
  }
  if (acc == 0xdeadbeef) sink[3] = acc;
}

}  // namespace

int main(int argc, char** argv) {
  int sms = 0;
  CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
  CHECK(cudaFuncSetAttribute(warm_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, kSmemBytes));
  CHECK(
      cudaFuncSetAttribute(probe_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, kSmemBytes));
  CHECK(cudaFuncSetAttribute(read_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, kSmemBytes));
  CHECK(
      cudaFuncSetAttribute(reread_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, kSmemBytes));
  CHECK(
      cudaFuncSetAttribute(stream_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, kSmemBytes));
  const size_t flush_bytes = 256ull << 20;
  void* flush = nullptr;
  unsigned *probe = nullptr, *lat = nullptr, *found = nullptr, *ref_sm = nullptr, *sink = nullptr;
  CHECK(cudaMalloc(&flush, flush_bytes));
  CHECK(cudaMalloc(&probe, kProbeLines * 128 + 4096));
  CHECK(cudaMemset(probe, 0, kProbeLines * 128 + 4096));
  CHECK(cudaMalloc(&lat, kProbeLines * sizeof(unsigned)));
  CHECK(cudaMalloc(&found, sizeof(unsigned)));
  CHECK(cudaMalloc(&ref_sm, sizeof(unsigned)));
  CHECK(cudaMalloc(&sink, 16));

  // Part A.
  std::vector<std::vector<unsigned>> lats(sms, std::vector<unsigned>(kProbeLines, 0));
  std::vector<int> seen(sms, 0);
  const int ref = 0;
  for (int s = 0; s < sms; ++s) {
    CHECK(cudaMemset(flush, s & 0xff, flush_bytes));
    warm_kernel<<<sms, 32, kSmemBytes>>>(probe, ref_sm, sink);
    CHECK_LAUNCH();
    CHECK(cudaMemset(found, 0, sizeof(unsigned)));
    probe_kernel<<<sms, 32, kSmemBytes>>>(probe, static_cast<unsigned>(s), lat, found);
    CHECK_LAUNCH();
    CHECK(cudaDeviceSynchronize());
    unsigned f = 0, r = 0;
    CHECK(cudaMemcpy(&f, found, sizeof f, cudaMemcpyDeviceToHost));
    CHECK(cudaMemcpy(&r, ref_sm, sizeof r, cudaMemcpyDeviceToHost));
    seen[s] = static_cast<int>(f);
    if (r != 1) std::printf("note: no CTA landed on SM 0 for the warm-up at s=%d\n", s);
    CHECK(cudaMemcpy(lats[s].data(), lat, kProbeLines * sizeof(unsigned), cudaMemcpyDeviceToHost));
  }
  // Threshold: the midpoint between the 10th and 90th percentiles of all latencies pooled.
  std::vector<unsigned> all;
  for (int s = 0; s < sms; ++s)
    if (seen[s]) all.insert(all.end(), lats[s].begin() + 8, lats[s].end());
  std::sort(all.begin(), all.end());
  const auto q = [&](double f) { return all[static_cast<size_t>(f * (all.size() - 1))]; };
  std::printf("latency quantiles (cycles) 1%% %u 10%% %u 50%% %u 90%% %u 99%% %u\n", q(0.01),
              q(0.10), q(0.50), q(0.90), q(0.99));
  const unsigned thr = (q(0.10) + q(0.90)) / 2;
  std::printf("threshold %u; reference SM %d\n", thr, ref);
  std::vector<std::vector<char>> slow(sms, std::vector<char>(kProbeLines, 0));
  std::vector<double> frac(sms, 0.0);
  for (int s = 0; s < sms; ++s) {
    int n = 0;
    for (int i = 8; i < kProbeLines; ++i) {
      slow[s][i] = lats[s][i] > thr;
      n += slow[s][i];
    }
    frac[s] = n / double(kProbeLines - 8);
  }
  // Sides: where the reference SM sees (almost) no slow line, the near partition keeps a copy of
  // what SM 0 read, and an SM on the other side is the one that sees slow lines; otherwise each
  // SM sees its far-homed lines slow and shares SM 0's side where its slow set matches SM 0's.
  const bool copies = frac[ref] < 0.1;
  std::vector<int> side(sms, -1);
  std::vector<double> agree(sms, 0.0);
  for (int s = 0; s < sms; ++s) {
    if (!seen[s]) continue;
    int n = 0;
    for (int i = 8; i < kProbeLines; ++i) n += slow[s][i] == slow[ref][i];
    agree[s] = n / double(kProbeLines - 8);
    side[s] = copies ? (frac[s] < 0.25 ? 0 : 1) : (agree[s] > 0.5 ? 0 : 1);
  }
  std::printf("model: %s\n", copies ? "the reading side keeps a copy of far lines"
                                    : "no copy: far-homed lines stay slow for every reader");
  int other = -1;
  for (int s = 0; s < sms && other < 0; ++s)
    if (side[s] == 1) other = s;
  std::printf("sm  side frac_slow agree_sm0  median  p90\n");
  for (int s = 0; s < sms; ++s) {
    std::vector<unsigned> v(lats[s].begin() + 8, lats[s].end());
    std::sort(v.begin(), v.end());
    std::printf("%3d %4d %9.3f %9.3f %7u %5u%s\n", s, side[s], frac[s], agree[s], v[v.size() / 2],
                v[v.size() * 9 / 10], seen[s] ? "" : " (no CTA landed)");
  }
  std::string map;
  int n0 = 0;
  for (int s = 0; s < sms; ++s) {
    map += side[s] < 0 ? '?' : char('0' + side[s]);
    n0 += side[s] == 0;
  }
  std::printf("map %s\nside 0: %d SMs, side 1: %d SMs\n", map.c_str(), n0, sms - n0);
  std::printf("first 128 probe lines on the other side's SM %d (1 slow): ", other);
  for (int i = 0; i < 128 && other >= 0; ++i) std::printf("%d", slow[other][i]);
  std::printf("\n");
  if (argc > 1) {
    FILE* f = std::fopen(argv[1], "w");
    if (f) {
      std::fprintf(f, "%s\n", map.c_str());
      std::fclose(f);
    }
  }

  // Part B.
  const long long region_bytes = 8ll << 20;
  uint4* region = nullptr;
  int* role = nullptr;
  CHECK(cudaMalloc(&region, region_bytes));
  CHECK(cudaMemset(region, 1, region_bytes));
  CHECK(cudaMalloc(&role, sms * sizeof(int)));
  std::vector<int> s0, s1;
  for (int s = 0; s < sms; ++s) (side[s] == 0 ? s0 : s1).push_back(s);
  struct Case {
    const char* name;
    int a, b, reps, mode;
  };
  const Case cases[] = {
      {"one-reader-x1", 1, 0, 1, 0}, {"one-reader-x4", 1, 0, 4, 0}, {"side0-16-x1", 16, 0, 1, 0},
      {"side1-16-x1", 0, 16, 1, 0},  {"mixed-8+8-x1", 8, 8, 1, 0},  {"side0-16-x4", 16, 0, 4, 0},
      {"mixed-8+8-x4", 8, 8, 4, 0},  {"cpasync-1-x4", 1, 0, 4, 1},  {"cpasync-16-x1", 16, 0, 1, 1},
      {"bulk-1-x1", 1, 0, 1, 2},     {"bulk-1-x4", 1, 0, 4, 2},     {"bulk-16-x1", 16, 0, 1, 2},
      {"bulk-16-x4", 16, 0, 4, 2}};
  for (const Case& c : cases) {
    std::vector<int> r(sms, 0);
    for (int i = 0; i < c.a && i < int(s0.size()); ++i) r[s0[i]] = 1;
    for (int i = 0; i < c.b && i < int(s1.size()); ++i) r[s1[i]] = 1;
    CHECK(cudaMemcpy(role, r.data(), sms * sizeof(int), cudaMemcpyHostToDevice));
    CHECK(cudaMemset(flush, 7, flush_bytes));
    cudaEvent_t e0, e1;
    CHECK(cudaEventCreate(&e0));
    CHECK(cudaEventCreate(&e1));
    CHECK(cudaEventRecord(e0));
    read_kernel<<<sms, 1024, kSmemBytes>>>(region, region_bytes / 16, c.reps, role, c.mode, sink);
    CHECK_LAUNCH();
    CHECK(cudaEventRecord(e1));
    CHECK(cudaDeviceSynchronize());
    float ms = 0;
    CHECK(cudaEventElapsedTime(&ms, e0, e1));
    std::printf("B %-14s mode %d readers %d+%d reps %d: %.1f us\n", c.name, c.mode, c.a, c.b,
                c.reps, ms * 1e3);
  }
  // Part C: 16 side-0 readers read the region, X MiB stream through L2 (read by every SM, or by
  // side 1's only), and the same readers read the region again (reread_kernel): how long does
  // the reading side's copy of a far line last against other traffic?
  const long long stream_bytes = 128ll << 20;
  uint4* sbuf = nullptr;
  int* srole = nullptr;
  CHECK(cudaMalloc(&sbuf, stream_bytes));
  CHECK(cudaMemset(sbuf, 3, stream_bytes));
  CHECK(cudaMalloc(&srole, sms * sizeof(int)));
  struct Stream {
    int mib;
    bool side1_only;
  };
  const Stream streams[] = {{0, false}, {4, false}, {16, false}, {48, false}, {16, true}};
  std::vector<int> readers(sms, 0);
  for (int i = 0; i < 16 && i < int(s0.size()); ++i) readers[s0[i]] = 1;
  CHECK(cudaMemcpy(role, readers.data(), sms * sizeof(int), cudaMemcpyHostToDevice));
  for (const Stream& st : streams) {
    std::vector<int> sr(sms, -1);
    int streamers = 0;
    for (int s = 0; s < sms; ++s)
      if (!st.side1_only || side[s] == 1) sr[s] = streamers++;
    CHECK(cudaMemcpy(srole, sr.data(), sms * sizeof(int), cudaMemcpyHostToDevice));
    CHECK(cudaMemset(flush, 9, flush_bytes));
    read_kernel<<<sms, 1024, kSmemBytes>>>(region, region_bytes / 16, 1, role, 0, sink);
    CHECK_LAUNCH();
    if (st.mib > 0) {
      stream_kernel<<<sms, 1024, kSmemBytes>>>(sbuf, (st.mib * (1ll << 20)) / 16, srole, streamers,
                                               sink);
      CHECK_LAUNCH();
    }
    reread_kernel<<<sms, 1024, kSmemBytes>>>(region, region_bytes / 16, role, sink);
    CHECK_LAUNCH();
    CHECK(cudaDeviceSynchronize());
    std::printf("C reread after %d MiB streamed by %s\n", st.mib,
                st.side1_only ? "side 1" : "every SM");
  }
  std::printf("region sectors (32 B): %lld\n", region_bytes / 32);
  return 0;
}
