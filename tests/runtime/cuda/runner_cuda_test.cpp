// MoeRunner on the cuda backend (sm90_gather), through raw device pointers and a stream, as an
// engine calls it (label gpu; every test skips with the reason where no sm_90 GPU is visible).
// Shapes E=8 K=256 I=128 top-2, silu-gated and relu2, at M in {1, 17, 300}: knobs none, explicit
// and auto (a small budget, the knob cache in a temp dir) against the CPU fp64 reference on
// random N(0, 1) inputs with the output poisoned before every run, every element checked; two
// runs give the same bits; auto is refused during a real CUDA graph capture (and the capture
// survives the refusal); a second runner on the same cache serves from it without tuning; the
// levers reach the launches. Run on the device by `bench/device.sh runtime`.
#include <cuda_runtime.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include <gtest/gtest.h>

#include "core/temp_dir.hpp"
#include "kernels/cpu/moe_data.hpp"
#include "kernels/cpu/output_check.hpp"
#include "kernels/cpu/reference.hpp"
#include "kernels/cuda/cuda_backend.hpp"
#include "kernels/cuda_factory.hpp"
#include "kernels/testbed.hpp"
#include "moetune/moe_runner.hpp"

namespace moetune {
namespace {

namespace cpu = kernels::cpu;

char const* const kShapes[] = {"E=8,K=256,I=128,topk=2,act=silu,dtype=bf16",
                               "E=8,K=256,I=128,topk=2,act=relu2,dtype=bf16"};
int64_t const kMs[] = {1, 17, 300};

#define CUDA_OK(call) ASSERT_EQ((call), cudaSuccess) << #call

/// One call's tensors on the device (generated on the host, fixed seed), a stream, and the
/// fp64 reference of the call.
class DeviceCall {
 public:
  DeviceCall(core::MoeProblem p, uint64_t seed) : p_(p) {
    auto d = cpu::generate_moe_data(p, {}, seed);
    EXPECT_TRUE(d.ok()) << d.error().to_string();
    if (!d.ok()) return;
    data_ = std::move(d).value();
    auto ref = cpu::reference_moe(p, data_.view());
    EXPECT_TRUE(ref.ok());
    if (ref.ok()) ref_ = std::move(ref).value();
    size_t const eb = core::dtype_bytes(p.dtype);
    size_t const pairs = data_.routing.topk_ids.size();
    x_ = upload(data_.x_data(), static_cast<size_t>(p.num_tokens * p.hidden_size) * eb);
    ids_ = upload(data_.routing.topk_ids.data(), pairs * 4);
    wts_ = upload(data_.routing.topk_weights.data(), pairs * 4);
    w1_ = upload(data_.w1_data(),
                 static_cast<size_t>(p.num_experts * core::gemm1_n(p) * p.hidden_size) * eb);
    w2_ = upload(data_.w2_data(),
                 static_cast<size_t>(p.num_experts * p.hidden_size * p.intermediate_size) * eb);
    out_ = upload(nullptr, out_elems() * 2);
    EXPECT_EQ(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking), cudaSuccess);
  }
  ~DeviceCall() {
    if (stream_ != nullptr) cudaStreamDestroy(stream_);
    for (void* b : owned_) cudaFree(b);
  }
  size_t out_elems() const { return static_cast<size_t>(p_.num_tokens * p_.hidden_size); }
  std::vector<double> const& reference() const { return ref_; }
  cudaStream_t stream() const { return stream_; }

  /// Poisons the device output (synchronously, before the stream's work).
  void poison() {
    std::vector<uint16_t> host(out_elems());
    cpu::poison_output(p_.dtype, host.data(), static_cast<int64_t>(host.size()));
    EXPECT_EQ(cudaMemcpy(out_, host.data(), host.size() * 2, cudaMemcpyHostToDevice), cudaSuccess);
  }
  /// Enqueues runner.run on the stream (no synchronisation).
  core::Status enqueue(MoeRunner& r, Knobs const& k, Choice* chosen) {
    return r.run(stream_, x_, static_cast<int32_t const*>(ids_), static_cast<float const*>(wts_),
                 w1_, w2_, out_, p_.num_tokens, k, chosen);
  }
  /// Poison, run, synchronise, download: the output bits.
  std::vector<uint16_t> run(MoeRunner& r, Knobs const& k, Choice* chosen) {
    poison();
    core::Status s = enqueue(r, k, chosen);
    EXPECT_TRUE(s.ok()) << s.error().to_string();
    return download();
  }
  std::vector<uint16_t> download() {
    std::vector<uint16_t> host(out_elems());
    EXPECT_EQ(cudaStreamSynchronize(stream_), cudaSuccess);
    EXPECT_EQ(cudaGetLastError(), cudaSuccess);
    EXPECT_EQ(cudaMemcpy(host.data(), out_, host.size() * 2, cudaMemcpyDeviceToHost), cudaSuccess);
    return host;
  }
  /// Every element written, finite and within the bf16 band of the fp64 reference.
  void expect_matches(std::vector<uint16_t> const& out, std::string const& what) const {
    kernels::Tolerance const tol = kernels::tolerance_for(p_.dtype);
    kernels::CheckResult const c = cpu::check_output(p_.dtype, out.data(), ref_, tol);
    EXPECT_TRUE(cpu::check_passed(c, tol))
        << what << ": rel_l2 " << c.rel_l2_error << " written " << c.all_written << " finite "
        << c.all_finite << " first bad " << c.first_bad
        << (c.first_bad >= 0
                ? " got " + std::to_string(cpu::output_value(p_.dtype, out.data(), c.first_bad)) +
                      " want " + std::to_string(ref_[c.first_bad])
                : std::string());
    // Negative twin: the same check catches one corrupted element.
    std::vector<uint16_t> bad = out;
    bad[bad.size() / 2] ^= 0x4000;
    EXPECT_FALSE(cpu::check_passed(cpu::check_output(p_.dtype, bad.data(), ref_, tol), tol))
        << what;
  }

 private:
  void* upload(void const* src, size_t bytes) {
    void* d = nullptr;
    EXPECT_EQ(cudaMalloc(&d, bytes == 0 ? 1 : bytes), cudaSuccess);
    if (src != nullptr && bytes > 0) {
      EXPECT_EQ(cudaMemcpy(d, src, bytes, cudaMemcpyHostToDevice), cudaSuccess);
    }
    owned_.push_back(d);
    return d;
  }
  core::MoeProblem p_;
  cpu::MoeHostData data_;
  std::vector<double> ref_;
  std::vector<void*> owned_;
  void *x_ = nullptr, *ids_ = nullptr, *wts_ = nullptr, *w1_ = nullptr, *w2_ = nullptr;
  void* out_ = nullptr;
  cudaStream_t stream_ = nullptr;
};

class RunnerCuda : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!kernels::cuda_device_present()) {
      GTEST_SKIP() << "no CUDA device visible: the cuda MoeRunner tests run on the device "
                      "machine (bench/device.sh runtime)";
    }
    auto dev = kernels::cuda::query_cuda_device();
    if (!dev.ok() || dev->arch.rfind("sm_90", 0) != 0) {
      GTEST_SKIP() << "sm90_gather needs an sm_90 GPU; this one is "
                   << (dev.ok() ? dev->arch : dev.error().to_string());
    }
    dir_ = moetune::testing::unique_temp_dir("runner_cuda");
  }
  void TearDown() override {
    if (!dir_.empty()) std::filesystem::remove_all(dir_);
  }
  RunnerOptions options(core::EnvSnapshot env = {}) const {
    RunnerOptions o;
    o.cache_path = dir_ + "/knobs.json";
    o.max_tokens = 512;
    o.auto_budget_s = 3;
    o.warn = [](std::string const& w) { std::printf("runner warning: %s\n", w.c_str()); };
    o.levers.env = std::move(env);
    return o;
  }
  std::unique_ptr<MoeRunner> make(char const* spec, RunnerOptions const& o) const {
    auto r = MoeRunner::create(*core::parse_problem_spec(spec), "cuda", o);
    EXPECT_TRUE(r.ok()) << spec << ": " << r.error().to_string();
    return r.ok() ? std::move(r).value() : nullptr;
  }
  static std::string read(std::string const& path) {
    std::ifstream in(path);
    std::stringstream s;
    s << in.rdbuf();
    return s.str();
  }
  std::string dir_;
};

/// A config of the search space the backend accepts that is not the default (else the default).
core::MoeConfig other_config(core::Backend const& b, core::MoeProblem const& p) {
  core::MoeConfig const d = b.default_config(p);
  for (auto const& c : b.search_space(p)) {
    if (!(c == d) && b.can_implement(p, c).ok()) return c;
  }
  return d;
}

TEST_F(RunnerCuda, NoneExplicitAndAutoMatchTheFp64ReferenceBitwiseStably) {
  auto backend = kernels::make_backend("cuda");
  ASSERT_TRUE(backend.ok());
  for (char const* spec : kShapes) {
    auto r = make(spec, options());
    ASSERT_NE(r, nullptr);
    EXPECT_EQ(r->levers().origin, "environment");
    EXPECT_GT(r->workspace_bytes(), 0u);
    for (int64_t m : kMs) {
      core::MoeProblem p = r->problem();
      p.num_tokens = m;
      DeviceCall call(p, 100 + static_cast<uint64_t>(m));
      double ref_norm = 0;
      for (double v : call.reference()) ref_norm += v * v;
      ASSERT_GT(ref_norm, 0) << "the reference must not be all zeros";
      std::string const at = std::string(spec) + " M=" + std::to_string(m);
      // knobs none: default (no tables), twice, same bits.
      Choice c1, c2;
      auto none1 = call.run(*r, Knobs::none(), &c1);
      auto none2 = call.run(*r, Knobs::none(), &c2);
      EXPECT_EQ(c1.rule, ChoiceRule::kDefault) << at;
      call.expect_matches(none1, at + " none");
      EXPECT_EQ(none1, none2) << at << ": two runs of " << core::short_string(c1.config);
      // explicit: another config of the space, validated, twice.
      core::MoeConfig const other = other_config(**backend, p);
      Choice ce;
      auto ex1 = call.run(*r, Knobs::explicit_config(other), &ce);
      EXPECT_EQ(ce.rule, ChoiceRule::kExplicit) << at;
      EXPECT_EQ(ce.config, other);
      call.expect_matches(ex1, at + " explicit " + core::short_string(other));
      EXPECT_EQ(ex1, call.run(*r, Knobs::explicit_config(other), nullptr)) << at;
      // auto: tunes this bucket once, then serves it from the cache.
      Choice ca;
      auto au1 = call.run(*r, Knobs::auto_tune(), &ca);
      EXPECT_EQ(ca.rule, ChoiceRule::kAuto) << at << ": " << ca.explain;
      call.expect_matches(au1, at + " auto " + core::short_string(ca.config));
      Choice ca2;
      auto au2 = call.run(*r, Knobs::auto_tune(), &ca2);
      EXPECT_EQ(ca2.rule, ChoiceRule::kCache) << at;
      EXPECT_EQ(ca2.config, ca.config);
      EXPECT_EQ(au1, au2) << at;
    }
    std::filesystem::remove(dir_ + "/knobs.json");
  }
}

TEST_F(RunnerCuda, AutoIsRefusedDuringGraphCaptureAndTheCaptureSurvives) {
  auto r = make(kShapes[0], options());
  ASSERT_NE(r, nullptr);
  core::MoeProblem p = r->problem();
  p.num_tokens = 17;
  DeviceCall call(p, 7);
  auto direct = call.run(*r, Knobs::none(), nullptr);  // loads the kernels, sizes the workspace
  call.poison();
  CUDA_OK(cudaStreamBeginCapture(call.stream(), cudaStreamCaptureModeGlobal));
  core::Status refused = call.enqueue(*r, Knobs::auto_tune(), nullptr);
  core::Status served = call.enqueue(*r, Knobs::none(), nullptr);  // memoised: captured
  cudaGraph_t graph = nullptr;
  CUDA_OK(cudaStreamEndCapture(call.stream(), &graph));  // the refusal broke nothing
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.error().code, core::ErrorCode::kUnsupported);
  EXPECT_NE(refused.error().message.find("during CUDA graph capture is refused"), std::string::npos)
      << refused.error().message;
  ASSERT_TRUE(served.ok()) << served.error().to_string();
  cudaGraphExec_t exec = nullptr;
  CUDA_OK(cudaGraphInstantiate(&exec, graph, 0));
  CUDA_OK(cudaGraphLaunch(exec, call.stream()));
  auto replayed = call.download();
  cudaGraphExecDestroy(exec);
  cudaGraphDestroy(graph);
  EXPECT_EQ(replayed, direct) << "the captured call replays to the direct call's bits";
  call.expect_matches(replayed, "graph replay");
  EXPECT_FALSE(std::filesystem::exists(dir_ + "/knobs.json")) << "nothing was tuned";
}

TEST_F(RunnerCuda, SecondRunnerOnTheSameCacheServesItWithoutTuning) {
  auto first = make(kShapes[1], options());
  ASSERT_NE(first, nullptr);
  core::MoeProblem p = first->problem();
  p.num_tokens = 17;
  DeviceCall call(p, 11);
  Choice tuned;
  auto a = call.run(*first, Knobs::auto_tune(), &tuned);
  ASSERT_EQ(tuned.rule, ChoiceRule::kAuto) << tuned.explain;
  std::string const cache = read(dir_ + "/knobs.json");
  ASSERT_FALSE(cache.empty());
  auto const written = std::filesystem::last_write_time(dir_ + "/knobs.json");

  auto second = make(kShapes[1], options());
  ASSERT_NE(second, nullptr);
  Choice served;
  {
    ScopedCapture capture(*second);  // a cached bucket is served even while capturing
    auto c = second->choose(17, Knobs::auto_tune());
    ASSERT_TRUE(c.ok()) << c.error().to_string();
    EXPECT_EQ(c->rule, ChoiceRule::kCache);
  }
  auto b = call.run(*second, Knobs::auto_tune(), &served);
  EXPECT_EQ(served.rule, ChoiceRule::kCache);
  EXPECT_NE(served.explain.find("not re-tuned"), std::string::npos) << served.explain;
  EXPECT_EQ(served.config, tuned.config);
  EXPECT_EQ(a, b) << "same config, same inputs: same bits across runners";
  call.expect_matches(b, "second runner");
  EXPECT_EQ(read(dir_ + "/knobs.json"), cache);
  EXPECT_EQ(std::filesystem::last_write_time(dir_ + "/knobs.json"), written);
}

TEST_F(RunnerCuda, LeversFromTheEnvironmentReachTheLaunches) {
  auto on = make(kShapes[0], options());
  auto pdl_off = make(kShapes[0], options({{"MOETUNE_LEVER_PDL", "off"}}));
  auto mma = make(kShapes[0], options({{"MOETUNE_LEVER_WGMMA_MAINLOOP", "off"}}));
  ASSERT_TRUE(on && pdl_off && mma);
  EXPECT_EQ(core::to_string(*on->levers().deployment),
            "backend=cuda,arch=sm90,tp=1,ep=1,dtype=bf16,role=prefill");
  EXPECT_TRUE(on->levers().fast_paths.pdl);
  EXPECT_FALSE(pdl_off->levers().fast_paths.pdl);
  EXPECT_FALSE(mma->levers().fast_paths.wgmma_mainloop);
  core::MoeProblem p = on->problem();
  p.num_tokens = 300;
  DeviceCall call(p, 5);
  Choice c_on, c_pdl, c_mma;
  auto out_on = call.run(*on, Knobs::none(), &c_on);
  auto out_pdl = call.run(*pdl_off, Knobs::none(), &c_pdl);
  auto out_mma = call.run(*mma, Knobs::none(), &c_mma);
  EXPECT_EQ(out_on, out_pdl) << "pdl is a bitwise lever";
  for (auto const* g : {&c_mma.config.gemm1, &c_mma.config.gemm2}) {
    EXPECT_EQ(g->launch.schedule, core::Schedule::kAuto)
        << "wgmma_mainloop off: the default must use the mma.sync main loop: "
        << core::short_string(c_mma.config);
  }
  call.expect_matches(out_on, "levers default");
  call.expect_matches(out_mma, "wgmma_mainloop off " + core::short_string(c_mma.config));
  // A config the levers refuse is refused when given explicitly, naming the lever.
  if (c_on.config.gemm1.launch.schedule != core::Schedule::kAuto) {
    Choice refused;
    core::Status s = call.enqueue(*mma, Knobs::explicit_config(c_on.config), &refused);
    EXPECT_FALSE(s.ok());
  }
}

}  // namespace
}  // namespace moetune
