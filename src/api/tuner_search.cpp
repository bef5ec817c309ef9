// Each kernel's search, in waves across kernels, and its winners' confirmation (api/tuner.h).
#include <fmt/format.h>

#include <algorithm>

#include "api/tuner.h"

namespace texel::tuning {
// Every kernel's search at once: each wave gives builds to the kernels with the most of their
// share of the time left (the slowest first while none has had one), so that a wave fills its
// compiling processes with several kernels' candidates where one kernel's share (ResNet-50 at
// batch 32: 22 kernels in 40 s) is shorter than a wave.
void Tuner::Search() {
  double keep_below = heuristic_model_ ? kKeepChecked : kKeepAlone;
  std::vector<Hunt> hunts = StartHunts();
  // What a build costs a kernel's share: a build alone at first, then the last wave's time per
  // build.
  double per_build = last_build_ > 0 ? last_build_ : 1.0;
  bool reshared = false;
  // The confirmations' time for the winners so far (and one more).
  auto confirm_s = [&] {
    size_t pending = 0;
    for (const Hunt& h : hunts) pending += h.best_ratio <= keep_below;
    return ConfirmTime(pending);
  };
  // A wave is not started that the last builds' durations say would overrun the budget (with
  // the confirmations' time kept: before, a whole search wave's, which at batch 1 on an H200
  // left 6-12 s of 30 s budgets unused).
  auto all_stopped = [&] {
    return std::all_of(hunts.begin(), hunts.end(), [](const Hunt& h) { return h.stopped; });
  };
  for (bool again = true; again;) {
    again = false;
    for (double keep_s; Left() > last_build_ + (keep_s = confirm_s());) {
      std::vector<Hunt*> owner;
      // Just after a reshare, builds for the kernels with the most share left even where no
      // share covers one (what is left split among many kernels: SqueezeNet's 22 on PoCL ended
      // a 30 s tune at 20 s), so that an empty wave then means every hunt has stopped.
      std::vector<std::vector<Trial>> wave =
          NextWave(hunts, per_build, BuildsThatFit(Left() - keep_s, WaveSize()), &owner, reshared);
      if (wave.empty()) {
        if (reshared || !Reshare(hunts, keep_s)) break;
        reshared = true;
        continue;
      }
      reshared = false;
      auto start = Clock::now();
      std::vector<Measurements> results = RunWave(wave, options_.seed);
      // Builds the budget left unrun keep their candidates counted as tried.
      size_t run = 0;
      for (const Measurements& m : results) run += m.run;
      double cost = run > 0 ? Since(start) / static_cast<double>(run) : per_build;
      for (size_t b = 0; b < wave.size(); ++b) {
        if (!results[b].run) continue;
        owner[b]->spent_s += cost - per_build;
        if (Judge(*owner[b], wave[b], results[b])) Spread(hunts, *owner[b]);
        Report(owner[b]->work);
      }
      per_build = cost;
    }
    // Nothing found, so nothing to check: `auto`'s check gives its share to the search, whose
    // points are then judged alone (ResNet-50 at batch 32 on an H200, `--budget 40`: 3 builds, no
    // winner, and the tune ended at 14 s with about 18.7 s kept for the check, inferred from
    // its times).
    if (!Stopped() && heuristic_model_ && options_.model_check == TuneOptions::ModelCheck::kAuto &&
        !all_stopped() &&
        std::none_of(hunts.begin(), hunts.end(),
                     [&](const Hunt& h) { return h.best_ratio <= keep_below; }) &&
        BudgetLeft() > last_build_ + ConfirmTime(1)) {
      Say(fmt::format(
          "no point found yet, so no model check: its {:.1f} s go to the search (points judged by "
          "their kernels alone)",
          reserve_));
      heuristic_model_.reset();
      reserve_ = 0;
      keep_below = kKeepAlone;
      reshared = false;
      again = true;
    }
  }
  if (!Stopped() && Left() > 0) {
    bool done = all_stopped();
    Say(
        fmt::format("the search ended with {:.1f} s left ({}; a build takes about {:.1f} s, the "
                    "confirmations {:.1f})",
                    Left(), done ? "no kernel left to search" : "too little for another wave",
                    last_build_, confirm_s()));
  }
  Confirm(hunts, keep_below);
  if (offered_ > 0) {
    int won = 0;
    for (const Hunt& h : hunts) {
      const std::vector<TunePoint>& c = work_[h.work].tunable.candidates;
      size_t best = static_cast<size_t>(std::find(c.begin(), c.end(), h.best) - c.begin());
      won += h.best_ratio <= keep_below && h.order.preferred(best);
    }
    Say(fmt::format(
        "winners on other kernels (this tune's or the database's) tried first: {}; the best point "
        "of {} kernels",
        offered_, won));
  }
  StoreChosen(hunts, keep_below);
  // The compiling threads' contexts hold device memory (a CUDA context each on NVIDIA's).
  compilers_.resize(std::min<size_t>(compilers_.size(), 1));
}

std::vector<Tuner::Hunt> Tuner::StartHunts() {
  std::vector<Hunt> hunts;
  double total_us = 0;
  for (const Work& w : work_)
    if (w.ok) total_us += w.k.heuristic_us;
  std::mt19937_64 rng(options_.seed);
  const double left = Left();
  // The database's winners on other shapes (other models' tunes) go first, the largest gain
  // first; its notices are the compile's to give.
  const runtime::TuningDb db = runtime::TuningDb::Load(result_.db);
  for (size_t i = 0; i < work_.size(); ++i) {
    if (!work_[i].ok) continue;
    const codegen::Tunable& t = work_[i].tunable;
    Hunt h(i, t.candidates, rng);
    std::vector<TunePoint> won = WinnersElsewhere(db, dev_, t, kKeepAlone);
    for (auto p = won.rbegin(); p != won.rend(); ++p) h.order.Prefer(t.candidates, *p);
    h.share_s = left * work_[i].k.heuristic_us / std::max(total_us, 1e-9);
    hunts.push_back(std::move(h));
  }
  std::stable_sort(hunts.begin(), hunts.end(), [&](const Hunt& a, const Hunt& b) {
    return work_[a.work].k.heuristic_us > work_[b.work].k.heuristic_us;
  });
  return hunts;
}

std::vector<std::vector<Trial>> Tuner::NextWave(std::vector<Hunt>& hunts, double per_build,
                                                size_t room, std::vector<Hunt*>* owner,
                                                bool at_least_one) {
  std::vector<std::vector<Trial>> wave;
  for (bool more = true; more && wave.size() < room;) {
    more = false;
    std::vector<Hunt*> ready;
    for (Hunt& h : hunts)
      if (!h.stopped && (h.builds == 0 || h.spent_s + per_build <= h.share_s)) ready.push_back(&h);
    if (ready.empty() && wave.empty() && at_least_one)  // every unstopped hunt, in order
      for (Hunt& h : hunts)
        if (!h.stopped) ready.push_back(&h);
    std::stable_sort(ready.begin(), ready.end(), [](const Hunt* a, const Hunt* b) {
      return (a->builds == 0) != (b->builds == 0)
                 ? a->builds == 0
                 : a->share_s - a->spent_s > b->share_s - b->spent_s;
    });
    for (Hunt* h : ready) {
      if (wave.size() >= room) break;
      Work& w = work_[h->work];
      std::vector<Trial> trials = {{w.node, &w.tunable, w.tunable.candidates[0], w.product_only}};
      for (size_t n = 1; n < kPerBuild; ++n) {
        std::optional<size_t> c = h->Next(w.tunable.candidates);
        if (!c) break;
        offered_ += h->order.preferred(*c);
        trials.push_back({w.node, &w.tunable, w.tunable.candidates[*c], w.product_only});
      }
      if (trials.size() == 1) {  // every candidate tried
        h->stopped = true;
        continue;
      }
      ++h->builds;
      h->spent_s += per_build;  // until the wave says what a build cost
      wave.push_back(std::move(trials));
      owner->push_back(h);
      more = true;
    }
  }
  return wave;
}

bool Tuner::Reshare(std::vector<Hunt>& hunts, double keep_s) {
  double active_us = 0;
  for (const Hunt& h : hunts)
    if (!h.stopped) active_us += work_[h.work].k.heuristic_us;
  if (active_us <= 0) return false;
  for (Hunt& h : hunts)
    if (!h.stopped)
      h.share_s = h.spent_s + (Left() - keep_s) * work_[h.work].k.heuristic_us / active_us;
  return true;
}

void Tuner::StoreChosen(std::vector<Hunt>& hunts, double keep_below) {
  // Interrupted, a kernel never searched gets no entry (one would say it was).
  const bool stopped = Stopped();
  std::vector<runtime::TuningEntry> entries;
  for (Hunt& h : hunts) {
    Work& w = work_[h.work];
    if (stopped && w.k.tried <= 1) continue;
    w.best = h.best;
    if (h.best_ratio > keep_below) {  // within noise and context: keep the heuristic's
      w.best = w.tunable.candidates[0];
      w.k.best = w.k.heuristic;
      w.k.tuned_us = w.k.heuristic_us;
    }
    entries.push_back(OnlyForTheCheck(w) ? HeuristicEntry(w)
                                         : EntryOf(dev_, w.tunable, w.best, w.k));
  }
  runtime::TuningDb::Store(result_.db, entries);
}

bool Tuner::Judge(Hunt& h, const std::vector<Trial>& trials, Measurements& m) {
  Work& w = work_[h.work];
  const codegen::Tunable& t = w.tunable;
  if (!m.measured[0]) {  // the heuristic's kernel ran before: the device is failing
    h.stopped = true;
    return false;
  }
  const double before = h.best_ratio;
  for (size_t j = 1; j < trials.size(); ++j) {
    ++w.k.tried;
    std::string p = codegen::PointString(trials[j].point);
    if (m.measured[j]) m.why[j] = Differs(m.measured[0]->out, m.measured[j]->out);
    if (!m.why[j].empty()) {
      ++w.k.discarded;
      Say(fmt::format("{} {} {}: discarded: {}", t.family, t.signature, p, m.why[j]));
      continue;
    }
    // Judged by its time relative to the heuristic's kernel in the same runs: a busy machine
    // slows both alike.
    double ratio = m.measured[j]->us / std::max(m.measured[0]->us, 1e-9);
    if (options_.log_candidates)
      Say(fmt::format("{} {} {}: {:.1f} us (heuristic {:.1f} us)", t.family, t.signature, p,
                      m.measured[j]->us, m.measured[0]->us));
    if (ratio < h.best_ratio) {
      h.best_ratio = ratio;
      h.best = trials[j].point;
      w.k.best = p;
      w.k.heuristic_us = m.measured[0]->us;
      w.k.tuned_us = m.measured[j]->us;
    }
  }
  return h.best_ratio < before && h.best_ratio <= kKeepAlone;
}

void Tuner::Spread(std::vector<Hunt>& hunts, const Hunt& from) {
  const std::string& family = work_[from.work].tunable.family;
  for (Hunt& h : hunts) {
    const codegen::Tunable& t = work_[h.work].tunable;
    if (&h != &from && !h.stopped && t.family == family) h.order.Prefer(t.candidates, from.best);
  }
}

// The fastest of many noisy measurements is flattered by the noise (ResNet-18's points so
// chosen on a busy 2-core machine ran 1.3x slower in the model than the heuristic's): each
// winner is timed again beside the heuristic's kernel, interleaved, in a build of its own (the
// builds in waves), and kept only if it is still faster there. Winners the budget leaves no
// time to confirm keep their search's ratio.
void Tuner::Confirm(std::vector<Hunt>& hunts, double keep_below) {
  std::vector<Hunt*> pending;
  for (Hunt& h : hunts)
    if (h.best_ratio <= keep_below) pending.push_back(&h);
  while (!pending.empty() && Left() > ConfirmTime(1)) {
    size_t n = std::min(pending.size(), BuildsThatFit(Left(), WaveSize(), ConfirmScale()));
    std::vector<std::vector<Trial>> wave;
    for (size_t b = 0; b < n; ++b) {
      Work& w = work_[pending[b]->work];
      wave.emplace_back();
      for (int r = 0; r < 2; ++r) {
        wave.back().push_back({w.node, &w.tunable, w.tunable.candidates[0], w.product_only});
        wave.back().push_back({w.node, &w.tunable, pending[b]->best, w.product_only});
      }
    }
    std::vector<Measurements> results = RunWave(wave, options_.seed + 1);
    for (size_t b = 0; b < n; ++b) {
      if (!results[b].run) continue;  // not confirmed: the search's ratio stands
      Hunt& h = *pending[b];
      // Whole (heuristic, best) pairs only: a part of a failed build measured alone would pair
      // one kernel's two times with the other's one.
      const std::vector<std::optional<Measured>>& m = results[b].measured;
      double heuristic = 0, best = 0;
      int pairs = 0;
      for (size_t j = 0; j + 1 < m.size(); j += 2)
        if (m[j] && m[j + 1]) heuristic += m[j]->us, best += m[j + 1]->us, ++pairs;
      if (pairs == 0 || heuristic <= 0) {
        h.best_ratio = 1;
        continue;
      }
      Work& w = work_[h.work];
      w.k.heuristic_us = heuristic / pairs;
      w.k.tuned_us = best / pairs;
      h.best_ratio = best / heuristic;
    }
    pending.erase(pending.begin(), pending.begin() + static_cast<std::ptrdiff_t>(n));
  }
}

}  // namespace texel::tuning
