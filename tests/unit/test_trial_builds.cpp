// The tuner's comparison of a candidate's output with the heuristic kernel's (api/trial_builds.h):
// reordered sums pass, anything else names why, including NaNs and infinities in other places
// (an infinity against a finite value once made the error NaN, which passed).
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <string>

#include "api/trial_builds.h"
#include "kernel_test_util.h"

namespace texel {
namespace {

TEST(TrialBuildsTest, DiffersNamesWhatIsWrong) {
  HostTensor ref = testing::RandomF32({3, 50}, 41);
  HostTensor same = ref, noisy = ref, wrong = ref, nan = ref, inf = ref, both_inf = ref;
  for (int64_t i = 0; i < noisy.size(); ++i) noisy.data<float>()[i] *= 1.0f + 1e-6f;
  wrong.data<float>()[7] += 1.0f;
  nan.data<float>()[9] = std::numeric_limits<float>::quiet_NaN();
  inf.data<float>()[11] = std::numeric_limits<float>::infinity();
  HostTensor ref_inf = ref;
  ref_inf.data<float>()[11] = std::numeric_limits<float>::infinity();
  both_inf.data<float>()[11] = std::numeric_limits<float>::infinity();
  EXPECT_EQ(tuning::Differs(ref, same), "");
  EXPECT_EQ(tuning::Differs(ref, noisy), "") << "reordered sums";
  EXPECT_NE(tuning::Differs(ref, wrong).find("relative L2"), std::string::npos);
  EXPECT_NE(tuning::Differs(ref, nan).find("NaN at element 9"), std::string::npos);
  EXPECT_NE(tuning::Differs(ref, inf).find("infinity at element 11"), std::string::npos);
  EXPECT_NE(tuning::Differs(ref_inf, ref).find("infinity at element 11"), std::string::npos);
  EXPECT_EQ(tuning::Differs(ref_inf, both_inf), "") << "the same infinity in the same place";
  EXPECT_NE(tuning::Differs(ref, testing::RandomF32({150}, 41)).find("shape"), std::string::npos);
  // f16 outputs compare as halves, not as 16-bit integers.
  HostTensor h = testing::ToF16(ref), h_wrong = testing::ToF16(wrong);
  EXPECT_EQ(tuning::Differs(h, h), "");
  EXPECT_NE(tuning::Differs(h, h_wrong).find("relative L2"), std::string::npos);
}

}  // namespace
}  // namespace texel
