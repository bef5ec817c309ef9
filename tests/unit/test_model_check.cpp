// The tuner's model check verdict (api/tuner.h CheckVerdict): which set of points a check keeps
// from its models' medians, one set or two. The runs themselves are the CLI tests' and the GPU's.
#include <gtest/gtest.h>

#include <limits>

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

TEST(ModelCheckTest, TimesThatAreNoTimesAreSkipped) {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  const double inf = std::numeric_limits<double>::infinity();
  EXPECT_EQ(CheckVerdict({1.000, nan, 0.980}), 2u);
  EXPECT_EQ(CheckVerdict({1.000, 0.0, 0.980}), 2u);
  EXPECT_EQ(CheckVerdict({1.000, inf}), 0u);
  EXPECT_EQ(CheckVerdict({nan, 0.500}), 0u);  // nothing to compare with
  EXPECT_EQ(CheckVerdict({0.0, 0.500}), 0u);
}

TEST(ModelCheckTest, TiesGoToEveryChosenPoint) {
  EXPECT_EQ(CheckVerdict({1.000, 0.980, 0.980}), 1u);
}

}  // namespace
}  // namespace texel::tuning
