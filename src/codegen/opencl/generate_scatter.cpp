// ScatterElements and ScatterND as pointwise ("gather-style") bodies: each output element
// starts from data and walks the updates that can target it, combining them in update order.
// So duplicate indices are deterministic without atomics (reduction none keeps the last
// update, add/mul accumulate in order), and an out-of-range index simply never matches.
#include "codegen/opencl/generator.h"
#include "core/error.h"

namespace texel::codegen {
namespace {

using ir::OpKind;

// The reduction of the running value v with update u, as an OpenCL expression.
std::string Combine(const ir::Node& n) {
  const std::string& r = n.attrs.Str("reduction");
  DType t = n.inputs[0]->type.dtype;
  if (r == "none") return "u";
  bool is_bool = t == DType::kBool, is_float = IsFloat(t);
  if (r == "add") return is_bool ? "(v | u)" : "(v + u)";  // bool: numpy's logical or / and
  if (r == "mul") return is_bool ? "(v & u)" : "(v * u)";
  // max / min: NaN wins, as numpy's maximum / minimum.
  std::string nan = is_float ? "isnan(v) || " : "";
  if (r == "max") return fmt::format("({}v > u ? v : u)", nan);
  if (r == "min") return fmt::format("({}v < u ? v : u)", nan);
  Fail(ErrorCode::kInternal, "unknown reduction '{}'", r);
}

// Output element c takes the updates u at coordinates with u_d = c_d off the axis and
// wrap(indices[u]) = c_axis, in order along the axis.
std::string ScatterElementsBody(const ir::Node& n, const std::string& combine) {
  const Shape& xs = n.inputs[0]->type.shape;
  const Shape& is = n.inputs[1]->type.shape;
  int64_t axis = n.attrs.Int("axis"), dim = xs[axis];
  std::vector<int64_t> ist = Strides(is), base_st = ist;
  base_st[axis] = 0;
  // Output coordinates past the updates' extent (off the axis) receive nothing.
  std::string fits = "1";
  for (size_t d = 0; d < xs.size(); ++d)
    if (static_cast<int64_t>(d) != axis && is[d] < xs[d])
      fits += fmt::format(" && c{} < {}", d, is[d]);
  return fmt::format(
      "v = in0[i]; if ({}) {{ const long base = {}; "
      "for (long k = 0; k < {}; ++k) {{ const long at = base + k * {}; long g = (long)in1[at]; "
      "if (g < 0) g += {}; if (g != c{}) continue; const T_OUT u = in2[at]; v = (T_OUT){}; }} }}",
      fits, OffsetExpr(base_st), is[axis], ist[axis], dim, axis, combine);
}

// Output element c takes update row j (in order) when wrap(indices[j, :]) = c[:k]; it reads
// the update at the trailing coordinates c[k:].
std::string ScatterNDBody(const ir::Node& n, const std::string& combine) {
  const Shape& xs = n.inputs[0]->type.shape;
  const Shape& is = n.inputs[1]->type.shape;
  int64_t k = is.back(), rows = NumElements(Shape(is.begin(), is.end() - 1));
  std::vector<int64_t> xst = Strides(xs), sfx_st(xs.size(), 0);
  int64_t slice = 1;
  for (size_t d = k; d < xs.size(); ++d) {
    sfx_st[d] = xst[d];
    slice *= xs[d];
  }
  std::string match;
  for (int64_t d = 0; d < k; ++d)
    match += fmt::format(
        "{{ long g = (long)in1[j * {} + {}]; if (g < 0) g += {}; "
        "if (g != c{}) continue; }} ",
        k, d, xs[d], d);
  return fmt::format(
      "v = in0[i]; const long sfx = {}; for (long j = 0; j < {}; ++j) {{ {}"
      "const T_OUT u = in2[j * {} + sfx]; v = (T_OUT){}; }}",
      OffsetExpr(sfx_st), rows, match, slice, combine);
}

}  // namespace

void CheckScatter(const ir::Node& n) {
  const std::string& r = n.attrs.Str("reduction");
  if (r != "none" && n.inputs[0]->type.dtype == DType::kFloat16)
    Fail(ErrorCode::kUnsupported, "{} with reduction '{}' on f16 is not supported on the device",
         OpName(n.op), r);
}

std::string ScatterBody(const ir::Node& n) {
  std::string combine = Combine(n);
  if (n.op == OpKind::kScatterElements) return ScatterElementsBody(n, combine);
  return ScatterNDBody(n, combine);
}

}  // namespace texel::codegen
