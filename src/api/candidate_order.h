// The order in which a kernel's search takes its candidates (api/tuner.h): the points that won
// on other kernels of its family first, then every candidate in turn where few, else random ones
// and, once half its share of the time is spent, the best one's neighbours. Winners travel
// because a family's kernels in one model often want the same point (a model's 1x1
// convolutions, its products of one width), and a batch-1 tune on a GPU compiles one or two
// builds a kernel within 30 s, too few to find them by chance. Thread safety: a plain value.
#pragma once

#include <cstddef>
#include <optional>
#include <random>
#include <vector>

#include "codegen/opencl/tuning.h"
#include "runtime/cl/device.h"
#include "runtime/tuning_db.h"

namespace texel::tuning {

class CandidateOrder {
 public:
  // candidates[0], the heuristic's point, counts as tried.
  CandidateOrder(const std::vector<codegen::TunePoint>& candidates, std::mt19937_64& rng);

  // Puts the candidate equal to p first, ahead of earlier preferred ones, keeping at most
  // kPreferred; false where p is no candidate or was tried.
  static constexpr size_t kPreferred = 4;
  bool Prefer(const std::vector<codegen::TunePoint>& candidates, const codegen::TunePoint& p);

  // The next untried candidate, marked tried; nullopt when every one was. `refine`: the search
  // has spent half its share, so a large space's neighbours of `best` come before the rest.
  std::optional<size_t> Next(const std::vector<codegen::TunePoint>& candidates,
                             const codegen::TunePoint& best, bool refine);

  // Whether candidate c was taken, or is to be, as another kernel's winner.
  bool preferred(size_t c) const { return c < from_elsewhere_.size() && from_elsewhere_[c]; }

 private:
  std::vector<size_t> order_;      // candidates 1.. in the order taken
  std::vector<size_t> preferred_;  // taken before order_, newest first
  std::vector<bool> tried_, from_elsewhere_;
  bool small_ = true;  // every candidate in turn (few), else random then refined
};

// Points that won on other shapes of t's family on this device, from the database: entries of the
// same family version whose point is one of t's candidates other than the heuristic's and whose
// tuned time was under won_below times the heuristic's, the largest gain first.
std::vector<codegen::TunePoint> WinnersElsewhere(const runtime::TuningDb& db,
                                                 const cl::DeviceInfo& dev,
                                                 const codegen::Tunable& t, double won_below);

}  // namespace texel::tuning
