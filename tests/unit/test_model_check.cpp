// The tuner's model check verdict (api/tuner.h CheckVerdict): which set of points a check keeps
// from its models' medians, one set or two. The runs themselves are the CLI tests' and the GPU's.
#include <gtest/gtest.h>

#include "api/tuner.h"

namespace texel::tuning {
namespace {

TEST(ModelCheckTest, OneSetIsKeptWhenFasterThanNoise) {
  EXPECT_EQ(CheckVerdict({1.000, 0.990}), 1u);
  EXPECT_EQ(CheckVerdict({1.000, 0.994}), 1u);
  EXPECT_EQ(CheckVerdict({1.000, 0.996}), 0u);  // within 0.5%: noise
  EXPECT_EQ(CheckVerdict({1.000, 1.100}), 0u);
}

TEST(ModelCheckTest, TwoSetsNeedOnePercent) {
  // The better of two noisy times is flattered: 0.6% is not enough with two sets.
  EXPECT_EQ(CheckVerdict({1.000, 0.994, 0.996}), 0u);
  EXPECT_EQ(CheckVerdict({1.000, 0.980, 0.985}), 1u);
  EXPECT_EQ(CheckVerdict({1.000, 0.985, 0.980}), 2u);
  EXPECT_EQ(CheckVerdict({1.000, 1.050, 0.970}), 2u);  // every point loses, the 5% ones win
  EXPECT_EQ(CheckVerdict({1.000, 1.050, 1.020}), 0u);
}

TEST(ModelCheckTest, NothingTimedKeepsTheHeuristic) {
  EXPECT_EQ(CheckVerdict({}), 0u);
  EXPECT_EQ(CheckVerdict({1.000}), 0u);
}

}  // namespace
}  // namespace texel::tuning
