#include "api/candidate_order.h"

#include <algorithm>

namespace texel::tuning {
namespace {

// Points that differ in exactly one parameter.
bool Neighbours(const codegen::TunePoint& a, const codegen::TunePoint& b) {
  int differ = 0;
  for (const auto& [k, v] : a) differ += b.count(k) == 0 || b.at(k) != v;
  return differ == 1;
}

}  // namespace

CandidateOrder::CandidateOrder(const std::vector<codegen::TunePoint>& candidates,
                               std::mt19937_64& rng)
    : tried_(candidates.size(), false), from_elsewhere_(candidates.size(), false) {
  tried_[0] = true;
  for (size_t c = 1; c < candidates.size(); ++c) order_.push_back(c);
  small_ = order_.size() <= 24;
  if (!small_) std::shuffle(order_.begin(), order_.end(), rng);
}

bool CandidateOrder::Prefer(const std::vector<codegen::TunePoint>& candidates,
                            const codegen::TunePoint& p) {
  auto it = std::find(candidates.begin(), candidates.end(), p);
  if (it == candidates.end()) return false;
  size_t c = static_cast<size_t>(it - candidates.begin());
  if (tried_[c]) return false;
  std::erase(preferred_, c);
  preferred_.insert(preferred_.begin(), c);
  from_elsewhere_[c] = true;
  if (preferred_.size() > kPreferred) {  // the oldest, dropped, is taken in order_'s turn
    from_elsewhere_[preferred_.back()] = false;
    preferred_.pop_back();
  }
  return true;
}

std::optional<size_t> CandidateOrder::Next(const std::vector<codegen::TunePoint>& candidates,
                                           const codegen::TunePoint& best, bool refine) {
  auto take = [this](size_t c) {
    tried_[c] = true;
    return c;
  };
  while (!preferred_.empty()) {
    size_t c = preferred_.front();
    preferred_.erase(preferred_.begin());
    if (!tried_[c]) return take(c);
  }
  if (!small_ && refine)
    for (size_t c = 1; c < candidates.size(); ++c)
      if (!tried_[c] && Neighbours(candidates[c], best)) return take(c);
  for (size_t c : order_)
    if (!tried_[c]) return take(c);
  return std::nullopt;
}

std::vector<codegen::TunePoint> WinnersElsewhere(const runtime::TuningDb& db,
                                                 const cl::DeviceInfo& dev,
                                                 const codegen::Tunable& t, double won_below) {
  const runtime::TuningKey key = runtime::TuningKey::For(dev, t.family, t.version, t.signature);
  std::vector<const runtime::TuningEntry*> won;
  for (const runtime::TuningEntry& e : db.entries()) {
    if (!e.key.SameFamily(key) || e.key.signature == key.signature ||
        !(e.tuned_us < won_below * e.heuristic_us) ||
        std::find(t.candidates.begin() + 1, t.candidates.end(), e.params) == t.candidates.end())
      continue;
    won.push_back(&e);
  }
  std::stable_sort(won.begin(), won.end(), [](const auto* a, const auto* b) {
    return a->tuned_us / a->heuristic_us < b->tuned_us / b->heuristic_us;
  });
  std::vector<codegen::TunePoint> points;
  for (const runtime::TuningEntry* e : won)
    if (std::find(points.begin(), points.end(), e->params) == points.end())
      points.push_back(e->params);
  return points;
}

}  // namespace texel::tuning
