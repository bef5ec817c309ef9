// Tunable kernel families (issue 17, docs/tuning.md). A family declares, for one kernel of a
// given shape on a given target, its parameter space as the list of valid points, the
// heuristic's choice first; a TuningSource (the tuning database, or the tuner trying a
// candidate) may name another point of that list. A point outside the list is never used, so a
// database entry with impossible parameters cannot reach a kernel. Thread safety: pure
// functions; a TuningSource is used from the compiling thread.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace texel::codegen {

struct Target;
}  // namespace texel::codegen
namespace texel::ir {
struct Node;
}  // namespace texel::ir
namespace texel::codegen {

using TunePoint = std::map<std::string, int64_t>;  // a family's parameters by name

// One kernel's choice as its generator declares it.
struct Tunable {
  std::string family;  // "conv_blocked", "matmul"
  int version = 0;     // what the parameters mean; entries of another version are foreign
  // "NAME=VALUE" items joined by ',': shapes, types and flags that change what is fastest.
  std::string signature;
  std::vector<TunePoint> candidates;  // the valid points; [0] is the heuristic's
};

class TuningSource {
 public:
  virtual ~TuningSource() = default;
  // The point to use for t (nullopt: the heuristic's). Choose ignores one not in t.candidates.
  virtual std::optional<TunePoint> Pick(const Tunable& t) const = 0;
};

// The tunable kernel of node n on target (the family its generator takes there), or nullopt
// when its kernel has no declared space (texture kernels: a node with an operand in an image). Its
// own node only: a fused epilogue does not change it.
std::optional<Tunable> TunableOf(const ir::Node& n, const Target& target);

// The point t runs with on target: target.tuning's pick when it is a candidate, else the
// heuristic's.
const TunePoint& Choose(const Tunable& t, const Target& target);

// "k=v,k=v" of a point, in name order (logs, tables).
std::string PointString(const TunePoint& p);

}  // namespace texel::codegen
