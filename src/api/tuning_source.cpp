#include "api/tuning_source.h"

#include <fmt/format.h>

#include <algorithm>

namespace texel {

DbTuningSource::DbTuningSource(const std::string& path, const cl::DeviceInfo& device)
    : path_(path), device_(device), db_(runtime::TuningDb::Load(path)) {
  notices_ = db_.notices();
}

std::optional<codegen::TunePoint> DbTuningSource::Pick(const codegen::Tunable& t) const {
  runtime::TuningKey key = runtime::TuningKey::For(device_, t.family, t.version, t.signature);
  // An entry's point is used only where it is in t's space; an exact entry outside it is
  // damage (said), a nearest one is another shape's choice (the next nearest is tried).
  auto fits = [&](const runtime::TuningEntry& e) {
    codegen::TunePoint p(e.params.begin(), e.params.end());
    return std::find(t.candidates.begin(), t.candidates.end(), p) != t.candidates.end();
  };
  const runtime::TuningEntry* exact = db_.Find(key);
  if (exact && !fits(*exact))
    Notice(fmt::format("{}: {} entry for '{}' has parameters outside its space ({}): ignored",
                       path_, t.family, t.signature,
                       codegen::PointString({exact->params.begin(), exact->params.end()})));
  for (const runtime::TuningEntry& other : db_.entries()) {
    const runtime::TuningKey& k = other.key;
    if (k.family == key.family && k.signature == key.signature && k.device == key.device &&
        k.family_version != key.family_version)
      Notice(fmt::format("{}: {} entry for '{}' is of version {}, this texel's is {}: ignored",
                         path_, t.family, t.signature, k.family_version, t.version));
  }
  Path path = Path::kHeuristic;
  const runtime::TuningEntry* e = nullptr;
  if (exact && fits(*exact)) {
    e = exact, path = Path::kExact;
  } else if ((e = db_.FindNearest(key, fits))) {
    path = Path::kNearest;
  }
  std::optional<codegen::TunePoint> point;
  if (e) point = codegen::TunePoint(e->params.begin(), e->params.end());
  decided_[t.family + "/" + t.signature] = path;
  return point;
}

void DbTuningSource::Notice(std::string note) const {
  if (std::find(notices_.begin(), notices_.end(), note) == notices_.end())
    notices_.push_back(std::move(note));
}

TuningReport DbTuningSource::Report() const {
  TuningReport r;
  r.db_path = path_;
  for (const auto& [key, path] : decided_)
    ++(path == Path::kExact ? r.exact : path == Path::kNearest ? r.nearest : r.heuristic);
  r.notices = notices_;
  return r;
}

}  // namespace texel
