// The checker and its negative twins (STYLE 23): a correct run passes; one corrupted, unwritten
// or NaN element must be caught.
#include "kernels/cpu/output_check.hpp"

#include <gtest/gtest.h>

#include <bit>
#include <limits>

#include "cpu_test_util.hpp"
#include "kernels/cpu/bf16.hpp"
#include "kernels/cpu/cpu_backend.hpp"
#include "kernels/cpu/reference.hpp"

namespace moetune::kernels::cpu {
namespace {

class OutputCheck : public ::testing::TestWithParam<core::DType> {
 protected:
  void SetUp() override {
    problem_ = testing::small_problem(16, 8, 128, 96, 2, core::Activation::kSiluGated, GetParam());
    auto data = generate_moe_data(problem_, core::RoutingProfile{}, testing::test_seed());
    ASSERT_TRUE(data.ok());
    data_ = std::move(data).value();
    auto ref = reference_moe(problem_, data_.view());
    ASSERT_TRUE(ref.ok());
    ref_ = std::move(ref).value();
    out_ = testing::run_cpu(data_, cpu_tiled_default_config(problem_));
    ASSERT_TRUE(out_.status.ok());
  }
  /// Overwrites element `index` of the output with `value` in the problem dtype.
  void set(int64_t index, float value) {
    if (GetParam() == core::DType::kFp32) {
      out_.storage[index] = std::bit_cast<uint32_t>(value);
    } else {
      reinterpret_cast<uint16_t*>(out_.storage.data())[index] = float_to_bf16_bits(value);
    }
  }
  CheckResult check() const {
    return check_output(GetParam(), out_.data(), ref_, tolerance_for(GetParam()));
  }

  core::MoeProblem problem_;
  MoeHostData data_;
  std::vector<double> ref_;
  testing::RunOutput out_;
};

TEST_P(OutputCheck, CorrectRunPasses) {
  CheckResult const r = check();
  EXPECT_TRUE(check_passed(r, tolerance_for(GetParam())));
  EXPECT_EQ(r.first_bad, -1);
  EXPECT_EQ(r.digest.size(), 16u);
}

TEST_P(OutputCheck, OneCorruptedElementIsCaughtAtItsIndex) {
  int64_t const index = 5 * problem_.hidden_size + 77;
  set(index, static_cast<float>(ref_[index] * 1.5 + 0.5));
  CheckResult const r = check();
  EXPECT_FALSE(check_passed(r, tolerance_for(GetParam())));
  EXPECT_EQ(r.first_bad, index);
  EXPECT_TRUE(r.all_written);
  EXPECT_TRUE(r.all_finite);
}

TEST_P(OutputCheck, UnwrittenElementIsCaught) {
  int64_t const index = 3 * problem_.hidden_size + 1;
  poison_output(GetParam(),
                GetParam() == core::DType::kFp32
                    ? static_cast<void*>(&out_.storage[index])
                    : reinterpret_cast<uint16_t*>(out_.storage.data()) + index,
                1);
  CheckResult const r = check();
  EXPECT_FALSE(r.all_written);
  EXPECT_TRUE(r.all_finite);
  EXPECT_EQ(r.first_bad, index);
  EXPECT_FALSE(check_passed(r, tolerance_for(GetParam())));
}

TEST_P(OutputCheck, NanElementIsCaughtAsNotFinite) {
  int64_t const index = problem_.num_tokens * problem_.hidden_size - 1;
  set(index, std::numeric_limits<float>::quiet_NaN());
  CheckResult const r = check();
  EXPECT_TRUE(r.all_written);
  EXPECT_FALSE(r.all_finite);
  EXPECT_EQ(r.first_bad, index);
  EXPECT_FALSE(check_passed(r, tolerance_for(GetParam())));
}

TEST_P(OutputCheck, DigestChangesWhenOneBitChanges) {
  std::string const before = check().digest;
  out_.storage[0] ^= 1u;
  EXPECT_NE(check().digest, before);
}

INSTANTIATE_TEST_SUITE_P(Dtypes, OutputCheck,
                         ::testing::Values(core::DType::kBf16, core::DType::kFp32),
                         [](auto const& info) { return std::string(core::to_string(info.param)); });

TEST(Fnv1aDigest, MatchesPublishedTestVectors) {
  EXPECT_EQ(fnv1a_digest("", 0), "cbf29ce484222325");
  EXPECT_EQ(fnv1a_digest("a", 1), "af63dc4c8601ec8c");
}

TEST(ToleranceTable, EveryDtypeHasAToleranceAndAReason) {
  for (core::DType d : {core::DType::kBf16, core::DType::kFp16, core::DType::kFp32}) {
    Tolerance const t = tolerance_for(d);
    EXPECT_GT(t.rel_l2, 0.0);
    EXPECT_GT(std::string(t.reason).size(), 10u);
  }
  EXPECT_EQ(tolerance_for(core::DType::kBf16).rel_l2, 1e-2);
  EXPECT_EQ(tolerance_for(core::DType::kFp32).rel_l2, 1e-5);
  core::MoeProblem p;
  EXPECT_EQ(tolerance_for(p).rel_l2, 1e-2);  // bf16, no quant: the dtype's row
  p.quant = core::Quant::kFp8Block;
  EXPECT_EQ(tolerance_for(p).rel_l2, 3e-2);
  EXPECT_GT(std::string(tolerance_for(p).reason).size(), 10u);
}

}  // namespace
}  // namespace moetune::kernels::cpu
