// The order of a kernel's search: every candidate once, other kernels' winners first (newest
// first, at most kPreferred held), and the database's winners on other shapes of the family,
// largest gain first, only where they are candidates of this kernel.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <set>

#include "api/candidate_order.h"

namespace texel::tuning {
namespace {

using codegen::TunePoint;

std::vector<TunePoint> Space(int n) {
  std::vector<TunePoint> points;
  for (int i = 0; i < n; ++i) points.push_back({{"tile", i}, {"vector", 4}});
  return points;
}

std::vector<size_t> Drain(CandidateOrder& order, const std::vector<TunePoint>& space) {
  std::vector<size_t> taken;
  while (auto c = order.Next(space, space[0], false)) taken.push_back(*c);
  return taken;
}

TEST(CandidateOrderTest, EveryCandidateOnceAndTheHeuristicsNever) {
  for (int n : {5, 60}) {  // a small space in turn, a large one shuffled
    std::mt19937_64 rng(7);
    std::vector<TunePoint> space = Space(n);
    CandidateOrder order(space, rng);
    std::vector<size_t> taken = Drain(order, space);
    ASSERT_EQ(taken.size(), static_cast<size_t>(n - 1)) << n;
    EXPECT_EQ(std::set<size_t>(taken.begin(), taken.end()).size(), taken.size());
    EXPECT_EQ(std::count(taken.begin(), taken.end(), 0u), 0);
  }
}

TEST(CandidateOrderTest, WinnersOfOtherKernelsGoFirstNewestFirst) {
  std::mt19937_64 rng(11);
  std::vector<TunePoint> space = Space(60);
  CandidateOrder order(space, rng);
  EXPECT_FALSE(order.Prefer(space, {{"tile", 99}, {"vector", 4}}));  // not a candidate
  EXPECT_FALSE(order.Prefer(space, space[0]));                       // the heuristic's: tried
  for (int c : {30, 31, 32, 33, 34}) EXPECT_TRUE(order.Prefer(space, space[c]));
  EXPECT_TRUE(order.Prefer(space, space[31]));  // again: to the front
  // At most kPreferred held: 30, the oldest, fell back to its random turn.
  EXPECT_EQ(*order.Next(space, space[0], false), 31u);
  EXPECT_EQ(*order.Next(space, space[0], false), 34u);
  EXPECT_EQ(*order.Next(space, space[0], false), 33u);
  EXPECT_EQ(*order.Next(space, space[0], false), 32u);
  EXPECT_TRUE(order.preferred(32));
  EXPECT_FALSE(order.preferred(30));
  EXPECT_FALSE(order.Prefer(space, space[31]));  // tried
  std::vector<size_t> rest = Drain(order, space);
  EXPECT_EQ(rest.size(), 55u);
  EXPECT_EQ(std::count(rest.begin(), rest.end(), 30u), 1);
}

TEST(CandidateOrderTest, RefiningTakesTheBestPointsNeighboursOfALargeSpace) {
  std::mt19937_64 rng(3);
  std::vector<TunePoint> space;
  for (int t = 0; t < 8; ++t)
    for (int v = 0; v < 8; ++v) space.push_back({{"tile", t}, {"vector", v}});
  CandidateOrder order(space, rng);
  const TunePoint best = {{"tile", 5}, {"vector", 5}};
  for (int i = 0; i < 14; ++i) {  // its 14 neighbours first
    size_t c = *order.Next(space, best, true);
    int differ = (space[c].at("tile") != 5) + (space[c].at("vector") != 5);
    EXPECT_EQ(differ, 1) << i;
  }
}

TEST(CandidateOrderTest, TheDatabasesWinnersOnOtherShapesLargestGainFirst) {
  std::string dir =
      (std::filesystem::temp_directory_path() / ("texel_order_" + std::to_string(::getpid())))
          .string();
  std::filesystem::remove_all(dir);
  cl::DeviceInfo dev;
  dev.name = "Device X", dev.driver_version = "1.0", dev.platform_version = "OpenCL 3.0";
  codegen::Tunable t{"matmul", 2, "m=128,n=768", Space(10)};
  auto entry = [&](std::string family, int version, std::string signature, int tile,
                   double heuristic_us, double tuned_us) {
    runtime::TuningEntry e;
    e.key = runtime::TuningKey::For(dev, std::move(family), version, std::move(signature));
    e.params = {{"tile", tile}, {"vector", 4}};
    e.heuristic_us = heuristic_us, e.tuned_us = tuned_us;
    return e;
  };
  runtime::TuningDb::Store(dir + "/db.jsonl",
                           {
                               entry("matmul", 2, "m=256,n=768", 3, 10, 9),   // 10%
                               entry("matmul", 2, "m=512,n=768", 5, 10, 6),   // 40%
                               entry("matmul", 2, "m=64,n=768", 7, 10, 9.8),  // 2%: noise
                               entry("matmul", 2, "m=128,n=768", 8, 10, 5),   // its own
                               entry("matmul", 1, "m=32,n=768", 2, 10, 5),    // old version
                               entry("conv", 2, "m=32,n=768", 4, 10, 5),      // other family
                               entry("matmul", 2, "m=16,n=768", 42, 10, 5),   // no candidate
                               entry("matmul", 2, "m=8,n=768", 0, 10, 5),     // the heuristic's
                               entry("matmul", 2, "m=4,n=768", 5, 10, 7),     // 5 again: once
                           });
  runtime::TuningDb db = runtime::TuningDb::Load(dir + "/db.jsonl");
  std::vector<TunePoint> won = WinnersElsewhere(db, dev, t, 0.95);
  ASSERT_EQ(won.size(), 2u);
  EXPECT_EQ(won[0].at("tile"), 5);
  EXPECT_EQ(won[1].at("tile"), 3);
  cl::DeviceInfo other = dev;
  other.driver_version = "2.0";
  EXPECT_TRUE(WinnersElsewhere(db, other, t, 0.95).empty());
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace texel::tuning
