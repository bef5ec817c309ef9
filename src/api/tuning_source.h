// Where a compile takes tuned kernel parameters from (issue 17, docs/tuning.md): the tuning
// database of the device (runtime/tuning_db.h). A kernel's signature is looked up exactly, then
// the nearest shape of its family on the device, then the heuristic's point is used; a point
// that is not valid for the kernel's shape, or an entry of another version of the kernel's
// family, is ignored with a notice. Counts per path are kept
// for `texel compile --stats`. Thread safety: one compile at a time.
#pragma once

#include <map>
#include <set>
#include <string>
#include <vector>

#include "codegen/opencl/tuning.h"
#include "runtime/cl/device.h"
#include "runtime/tuning_db.h"

namespace texel {

// Which way each distinct kernel signature was decided, and the database's notices.
struct TuningReport {
  std::string db_path;  // "" when tuning was off
  int exact = 0, nearest = 0, heuristic = 0;
  std::vector<std::string> notices;
};

class DbTuningSource : public codegen::TuningSource {
 public:
  // Reads the database at path (absent: empty) for device.
  DbTuningSource(const std::string& path, const cl::DeviceInfo& device);
  std::optional<codegen::TunePoint> Pick(const codegen::Tunable& t) const override;
  TuningReport Report() const;

 private:
  enum class Path { kExact, kNearest, kHeuristic };
  void Notice(std::string note) const;  // once per text
  std::string path_;
  cl::DeviceInfo device_;
  runtime::TuningDb db_;
  mutable std::map<std::string, Path> decided_;  // family/signature -> path
  mutable std::vector<std::string> notices_;
};

}  // namespace texel
