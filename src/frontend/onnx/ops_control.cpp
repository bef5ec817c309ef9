// Importers for control flow. texel compiles static graphs, so control flow is resolved at
// compile time:
//   If:   a constant condition imports the chosen branch; a run-time condition imports both
//         and selects with Where (both branches must give the same types and shapes).
//   Loop: unrolled; the trip count and the condition must be known at compile time, except that
//         a run-time condition without scan outputs is handled by masking the carried values.
//   Scan: unrolled over the scan axis (Gather of one slice per step, Concat of the outputs).
// Each unrolled step is a fresh import of the body, so constant folding sees through it.
#include <algorithm>

#include "frontend/onnx/node_importer.h"
#include "frontend/onnx/registry.h"

namespace texel::onnx_frontend {
namespace {

using ir::OpKind;
using Ints = std::vector<int64_t>;

// More steps than this are almost certainly not meant to be unrolled.
constexpr int64_t kMaxUnrolledSteps = 4096;

ir::Value* Scalar(NodeImporter& n, ir::Value* v) {
  if (NumElements(v->type.shape) != 1) n.Invalid("the condition must have one element");
  return n.Reshape(v, {});
}

bool ConstBool(const ir::Value* v) { return v->constant->GetInt(0) != 0; }

// Stacks per-step values along a new axis `axis` (reversed when `reverse`).
ir::Value* Stack(NodeImporter& n, std::vector<ir::Value*> steps, int64_t axis, bool reverse) {
  if (reverse) std::reverse(steps.begin(), steps.end());
  const ir::TensorType& t = steps[0]->type;
  int64_t rank = static_cast<int64_t>(t.shape.size()) + 1;
  if (axis < 0) axis += rank;
  if (axis < 0 || axis >= rank) n.Invalid("scan output axis is out of range");
  Shape s = t.shape;
  s.insert(s.begin() + axis, 1);
  for (ir::Value*& v : steps) {
    if (v->type != t) n.Invalid("a scan output changes type or shape between iterations");
    v = n.Reshape(v, s);
  }
  if (steps.size() == 1) return steps[0];
  return n.Emit(OpKind::kConcat, steps, {{"axis", axis}});
}

void If(NodeImporter& n) {
  ir::Value* cond = Scalar(n, n.RequiredInput(0));
  if (cond->is_constant()) {
    bool c = ConstBool(cond);
    n.AttrGraph(c ? "else_branch" : "then_branch");
    auto outs = n.ImportSubgraph(c ? "then_branch" : "else_branch", {});
    for (size_t i = 0; i < outs.size(); ++i) n.SetOutput(i, outs[i]);
    return;
  }
  auto then_outs = n.ImportSubgraph("then_branch", {});
  auto else_outs = n.ImportSubgraph("else_branch", {});
  if (then_outs.size() != else_outs.size()) n.Invalid("the branches have different output counts");
  for (size_t i = 0; i < then_outs.size(); ++i) {
    if (then_outs[i]->type != else_outs[i]->type)
      n.ConstInput(0, "If condition, whose branches give different shapes");  // throws
    n.SetOutput(i, n.Emit(OpKind::kWhere, {cond, then_outs[i], else_outs[i]}));
  }
}

void Loop(NodeImporter& n) {
  std::optional<int64_t> trip;
  if (n.Input(0)) trip = n.ConstInput(0, "Loop trip count").GetInt(0);
  ir::Value* cond = n.Input(1) ? Scalar(n, n.Input(1)) : nullptr;
  if (cond && !cond->is_constant() && !trip) n.ConstInput(1, "Loop condition");  // throws
  std::vector<ir::Value*> carried;
  for (size_t i = 2; i < n.num_inputs(); ++i) carried.push_back(n.RequiredInput(i));
  size_t num_scan = n.num_outputs() > carried.size() ? n.num_outputs() - carried.size() : 0;
  if (cond && !cond->is_constant() && num_scan > 0)
    n.ConstInput(1, "Loop condition of a loop with scan outputs");  // throws
  std::vector<std::vector<ir::Value*>> scans(num_scan);
  ir::Value* alive = cond;  // run-time condition: a step's results count only while alive
  for (int64_t i = 0;; ++i) {
    if (trip && i >= *trip) break;
    if (alive && alive->is_constant() && !ConstBool(alive)) break;
    if (i >= kMaxUnrolledSteps)
      n.Unsupported(
          fmt::format("a Loop of more than {} iterations is not unrolled", kMaxUnrolledSteps));
    std::vector<ir::Value*> in = {n.ConstScalar(DType::kInt64, static_cast<double>(i)),
                                  alive ? alive : n.ConstScalar(DType::kBool, 1)};
    in.insert(in.end(), carried.begin(), carried.end());
    auto outs = n.ImportSubgraph("body", in);
    if (outs.size() != 1 + carried.size() + num_scan)
      n.Invalid(fmt::format("the body has {} outputs, expected {}", outs.size(),
                            1 + carried.size() + num_scan));
    bool masked = alive && !alive->is_constant();
    for (size_t k = 0; k < carried.size(); ++k) {
      ir::Value* next = outs[1 + k];
      if (next->type != carried[k]->type)
        n.Unsupported("a loop-carried value changes its shape between iterations");
      carried[k] = masked ? n.Emit(OpKind::kWhere, {alive, next, carried[k]}) : next;
    }
    for (size_t k = 0; k < num_scan; ++k) scans[k].push_back(outs[1 + carried.size() + k]);
    if (!cond) continue;  // without a condition input, the body's condition is ignored
    ir::Value* c = Scalar(n, outs[0]);
    if (masked || !c->is_constant()) {
      if (num_scan > 0)
        n.Unsupported(
            "a Loop whose condition is computed at run time cannot have scan outputs "
            "(their length would depend on data)");
      if (!trip) n.Unsupported("a Loop with a run-time condition needs a trip count");
      alive = masked ? n.Emit(OpKind::kAnd, {alive, c}) : c;
    } else {
      alive = c;
    }
  }
  for (size_t k = 0; k < carried.size(); ++k) n.SetOutput(k, carried[k]);
  for (size_t k = 0; k < num_scan; ++k) {
    if (scans[k].empty()) n.Unsupported("a Loop that runs zero times cannot have scan outputs");
    n.SetOutput(carried.size() + k, Stack(n, scans[k], 0, false));
  }
}

// One Scan (opset >= 9 semantics) over `states` and `inputs`; returns states then scan outputs.
std::vector<ir::Value*> ScanSteps(NodeImporter& n, std::vector<ir::Value*> states,
                                  const std::vector<ir::Value*>& inputs, const Ints& in_axes,
                                  const Ints& in_dirs, const Ints& out_axes, const Ints& out_dirs,
                                  size_t num_outputs) {
  int64_t len = -1;
  std::vector<int64_t> axes;
  for (size_t j = 0; j < inputs.size(); ++j) {
    const Shape& s = inputs[j]->type.shape;
    int64_t a = in_axes.empty() ? 0 : in_axes[j];
    if (a < 0) a += static_cast<int64_t>(s.size());
    if (a < 0 || a >= static_cast<int64_t>(s.size())) n.Invalid("scan_input_axes out of range");
    if (len >= 0 && s[a] != len) n.Invalid("scan inputs have different lengths");
    len = s[a];
    axes.push_back(a);
  }
  if (len <= 0) n.Unsupported("a Scan over zero steps is not supported");
  if (len > kMaxUnrolledSteps)
    n.Unsupported(fmt::format("a Scan of more than {} steps is not unrolled", kMaxUnrolledSteps));
  size_t num_scan = num_outputs - states.size();
  std::vector<std::vector<ir::Value*>> scans(num_scan);
  for (int64_t t = 0; t < len; ++t) {
    std::vector<ir::Value*> in = states;
    for (size_t j = 0; j < inputs.size(); ++j) {
      bool rev = !in_dirs.empty() && in_dirs[j] != 0;
      ir::Value* idx = n.ConstScalar(DType::kInt64, static_cast<double>(rev ? len - 1 - t : t));
      in.push_back(n.Emit(OpKind::kGather, {inputs[j], idx}, {{"axis", axes[j]}}));
    }
    auto outs = n.ImportSubgraph("body", in);
    if (outs.size() != num_outputs)
      n.Invalid(fmt::format("the body has {} outputs, expected {}", outs.size(), num_outputs));
    for (size_t k = 0; k < states.size(); ++k) {
      if (outs[k]->type != states[k]->type) n.Invalid("a Scan state changes type or shape");
      states[k] = outs[k];
    }
    for (size_t k = 0; k < num_scan; ++k) scans[k].push_back(outs[states.size() + k]);
  }
  for (size_t k = 0; k < num_scan; ++k)
    states.push_back(Stack(n, scans[k], out_axes.empty() ? 0 : out_axes[k],
                           !out_dirs.empty() && out_dirs[k] != 0));
  return states;
}

void Scan(NodeImporter& n) {
  int64_t num_scan_inputs = n.AttrInt("num_scan_inputs");
  size_t first = n.opset() < 9 ? 1 : 0;  // Scan-8 starts with sequence_lens
  if (num_scan_inputs <= 0 || first + num_scan_inputs > n.num_inputs())
    n.Invalid("num_scan_inputs does not fit the inputs");
  size_t num_states = n.num_inputs() - first - num_scan_inputs;
  std::vector<ir::Value*> states, inputs;
  for (size_t i = 0; i < num_states; ++i) states.push_back(n.RequiredInput(first + i));
  for (size_t i = first + num_states; i < n.num_inputs(); ++i) inputs.push_back(n.RequiredInput(i));
  if (n.opset() >= 9) {
    Ints in_axes = n.AttrInts("scan_input_axes", Ints{});
    Ints in_dirs = n.AttrInts("scan_input_directions", Ints{});
    Ints out_axes = n.AttrInts("scan_output_axes", Ints{});
    Ints out_dirs = n.AttrInts("scan_output_directions", Ints{});
    auto outs = ScanSteps(n, states, inputs, in_axes, in_dirs, out_axes, out_dirs, n.num_outputs());
    for (size_t k = 0; k < outs.size(); ++k) n.SetOutput(k, outs[k]);
    return;
  }
  // Scan-8: every input has a leading batch axis and scans along axis 1; each batch element is
  // an independent scan. Sequence lengths shorter than the axis are not supported.
  Ints dirs = n.AttrInts("directions", Ints{});
  int64_t batch = inputs[0]->type.shape.empty() ? 0 : inputs[0]->type.shape[0];
  if (n.Input(0))
    for (int64_t l : n.ConstInts(0, "Scan sequence_lens"))
      if (l != inputs[0]->type.shape[1])
        n.Unsupported("Scan with sequence_lens shorter than the scan axis is not supported");
  std::vector<std::vector<ir::Value*>> per_batch(n.num_outputs());
  for (int64_t b = 0; b < batch; ++b) {
    ir::Value* idx = n.ConstScalar(DType::kInt64, static_cast<double>(b));
    auto pick = [&](ir::Value* v) {
      return n.Emit(OpKind::kGather, {v, idx}, {{"axis", int64_t{0}}});
    };
    std::vector<ir::Value*> s, x;
    for (ir::Value* v : states) s.push_back(pick(v));
    for (ir::Value* v : inputs) x.push_back(pick(v));
    auto outs = ScanSteps(n, s, x, {}, dirs, {}, {}, n.num_outputs());
    for (size_t k = 0; k < outs.size(); ++k) per_batch[k].push_back(outs[k]);
  }
  if (batch <= 0) n.Unsupported("a Scan over an empty batch is not supported");
  for (size_t k = 0; k < per_batch.size(); ++k) n.SetOutput(k, Stack(n, per_batch[k], 0, false));
}

}  // namespace

void RegisterControlOps(Registry& r) {
  r["If"] = If;
  r["Loop"] = Loop;
  r["Scan"] = Scan;
}

}  // namespace texel::onnx_frontend
