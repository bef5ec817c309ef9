// The linalg frontend end to end: fragments (tests/data/*.mlir and fragments built here) are
// imported, compiled for PoCL and run on seeded random inputs, against references computed on
// the host in double precision. Each test compiles one program. Bad input: test_linalg_errors.cpp.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <functional>
#include <map>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "api/compiler.h"
#include "frontend/linalg/importer.h"
#include "kernel_test_util.h"

namespace texel::linalg_frontend {
namespace {

using testing::SharedContext;

std::string DataPath(const char* name) { return std::string(TEXEL_TEST_DATA_DIR) + "/" + name; }

std::string ReadFile(const std::string& path) {
  std::ifstream f(path);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

// Seeded random inputs for every graph input: floats with 0.25 <= |x| <= 1.5 (positive ones for
// the inputs named in `positive`), integers in [-9, 9], never zero.
std::map<std::string, HostTensor> RandomInputs(const ir::Graph& g, uint32_t seed,
                                               const std::vector<std::string>& positive = {}) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<double> mag(0.25, 1.5);
  std::uniform_int_distribution<int> small(1, 9), coin(0, 1);
  std::map<std::string, HostTensor> out;
  for (const ir::Value* in : g.inputs()) {
    bool pos = std::find(positive.begin(), positive.end(), in->name) != positive.end();
    HostTensor t(in->type.dtype, in->type.shape);
    for (int64_t i = 0; i < t.size(); ++i) {
      double sign = pos || coin(rng) ? 1.0 : -1.0;
      double v = sign * mag(rng);
      switch (t.dtype) {
        case DType::kFloat32: t.data<float>()[i] = static_cast<float>(v); break;
        case DType::kFloat16: t.data<uint16_t>()[i] = FloatToHalf(static_cast<float>(v)); break;
        case DType::kInt32: t.data<int32_t>()[i] = static_cast<int32_t>(sign) * small(rng); break;
        case DType::kInt64: t.data<int64_t>()[i] = static_cast<int64_t>(sign) * small(rng); break;
        default: ADD_FAILURE() << "no random data for " << DTypeName(t.dtype);
      }
    }
    out[in->name] = std::move(t);
  }
  return out;
}

// Compiles g for PoCL, runs it once, and returns its outputs by name.
std::map<std::string, HostTensor> CompileAndRun(std::unique_ptr<ir::Graph> g,
                                                const std::map<std::string, HostTensor>& inputs) {
  std::vector<std::string> names;
  for (const ir::Value* v : g->outputs()) names.push_back(v->name);
  std::vector<HostTensor> outs = testing::CompileAndRun(std::move(g), inputs);
  std::map<std::string, HostTensor> by_name;
  for (size_t i = 0; i < names.size(); ++i) by_name[names[i]] = outs.at(i);
  return by_name;
}

// A reference result: values in row-major order and the shape.
struct Ref {
  Shape shape;
  std::vector<double> v;
};

// |got - want| <= rtol * max(|want|, 1) elementwise, equal shapes.
void ExpectNear(const HostTensor& got, const Ref& want, const std::string& what,
                double rtol = 1e-4) {
  ASSERT_EQ(got.shape, want.shape) << what;
  int bad = 0;
  for (int64_t i = 0; i < got.size(); ++i) {
    double g = got.GetDouble(i), w = want.v[i];
    if (!(std::fabs(g - w) <= rtol * std::max(std::fabs(w), 1.0)) && ++bad <= 3)
      ADD_FAILURE() << what << " at " << i << ": got " << g << ", want " << w;
  }
  EXPECT_EQ(bad, 0) << what << ": " << bad << " of " << got.size() << " elements differ";
}

// Element i of t as double, for references.
double At(const HostTensor& t, int64_t i) { return t.GetDouble(i); }

// Elementwise reference over one or two same-shaped tensors.
Ref Map(const HostTensor& a, const std::function<double(double)>& f) {
  Ref r{a.shape, {}};
  for (int64_t i = 0; i < a.size(); ++i) r.v.push_back(f(At(a, i)));
  return r;
}
Ref Map2(const HostTensor& a, const HostTensor& b, const std::function<double(double, double)>& f) {
  Ref r{a.shape, {}};
  for (int64_t i = 0; i < a.size(); ++i) r.v.push_back(f(At(a, i), At(b, i)));
  return r;
}

// [B..., M, K] x [B..., K, N] (operands given with their last two axes swapped when ta / tb),
// plus acc(i) for element i of the result.
Ref MatMulRef(const HostTensor& a, const HostTensor& b, bool ta, bool tb,
              const std::function<double(int64_t)>& acc) {
  size_t r = a.shape.size();
  int64_t batch = 1;
  for (size_t d = 0; d + 2 < r; ++d) batch *= a.shape[d];
  int64_t m = ta ? a.shape[r - 1] : a.shape[r - 2], k = ta ? a.shape[r - 2] : a.shape[r - 1];
  int64_t n = tb ? b.shape[r - 2] : b.shape[r - 1];
  Ref out{Shape(a.shape.begin(), a.shape.end() - 2), {}};
  out.shape.push_back(m);
  out.shape.push_back(n);
  for (int64_t p = 0; p < batch; ++p)
    for (int64_t i = 0; i < m; ++i)
      for (int64_t j = 0; j < n; ++j) {
        double s = acc(static_cast<int64_t>(out.v.size()));
        for (int64_t q = 0; q < k; ++q)
          s += At(a, p * m * k + (ta ? q * m + i : i * k + q)) *
               At(b, p * k * n + (tb ? j * k + q : q * n + j));
        out.v.push_back(s);
      }
  return out;
}

// The example fragment through the file path (Compile) and through bytes (CompileBytes).
TEST(LinalgImport, MatmulAddExampleRuns) {
  std::string path = DataPath("matmul_add.mlir");
  CompiledModel m = Compile(path, SharedContext(), CompileOptions{});
  ASSERT_EQ(m.graph->inputs().size(), 2u);
  EXPECT_EQ(m.graph->inputs()[0]->name, "arg0");
  EXPECT_EQ(m.graph->inputs()[1]->name, "arg1");
  ASSERT_EQ(m.graph->outputs().size(), 1u);
  EXPECT_EQ(m.graph->outputs()[0]->name, "arg2");
  auto in = RandomInputs(*m.graph, 1);
  const HostTensor &a = in["arg0"], &b = in["arg1"];
  Ref want = MatMulRef(a, b, false, false, [&](int64_t i) { return At(a, i); });  // + arg0
  runtime::Session session(*m.executable);
  ExpectNear(session.Run(in).at(0), want, "Compile(path)");

  CompiledModel mb = CompileBytes(ReadFile(path), SharedContext(), CompileOptions{});
  runtime::Session session_b(*mb.executable);
  ExpectNear(session_b.Run(in).at(0), want, "CompileBytes");
}

TEST(LinalgImport, GenericSoftmaxishRuns) {
  auto g = ImportLinalgFile(DataPath("generic_softmaxish.mlir"));
  auto in = RandomInputs(*g, 2);
  const HostTensor &x = in["x"], &w = in["w"], &bias = in["bias"], &shift = in["shift"];
  Ref scores = MatMulRef(x, w, false, true, [](int64_t) { return 0.5; });
  Ref y{scores.shape, {}};
  for (int64_t i = 0; i < 16; ++i)
    for (int64_t j = 0; j < 24; ++j) {
      double s = scores.v[i * 24 + j];
      double e = std::exp(s + At(bias, j) - At(shift, i));
      double d = std::max(e, std::exp(s)) - s;
      y.v.push_back(d * d / e);
    }
  const HostTensor& c = in["c"];
  Ref z = MatMulRef(in["a"], in["b"], false, false, [&](int64_t i) { return At(c, i); });
  auto out = CompileAndRun(std::move(g), in);
  ExpectNear(out["y"], y, "y");
  ExpectNear(out["z"], z, "z");
}

// matmul_transpose_a into tensor.empty, batch_matmul_transpose_b accumulating a dense splat,
// batch_matmul_transpose_a, matmul accumulating a tensor argument, and a chained accumulation.
TEST(LinalgImport, MatmulVariantsRun) {
  const char* text = R"(
func.func @mm(%a: memref<12x20xf32>, %b: memref<20x16xf32>, %at: memref<20x12xf32>,
              %ba: memref<3x12x20xf32>, %bt: memref<3x16x20xf32>, %bk: memref<3x20x12xf32>,
              %bb: memref<3x20x16xf32>, %acc: memref<12x16xf32>, %o1: memref<12x16xf32>,
              %o2: memref<3x12x16xf32>, %o3: memref<12x16xf32>, %o4: memref<12x16xf32>,
              %o5: memref<3x12x16xf32>) {
  %0 = bufferization.to_tensor %a : memref<12x20xf32>
  %1 = bufferization.to_tensor %b : memref<20x16xf32>
  %2 = bufferization.to_tensor %at : memref<20x12xf32>
  %3 = bufferization.to_tensor %ba : memref<3x12x20xf32>
  %4 = bufferization.to_tensor %bt : memref<3x16x20xf32>
  %5 = bufferization.to_tensor %acc : memref<12x16xf32>
  %6 = bufferization.to_tensor %bk : memref<3x20x12xf32>
  %7 = bufferization.to_tensor %bb : memref<3x20x16xf32>
  %e = tensor.empty() : tensor<12x16xf32>
  %r1 = linalg.matmul_transpose_a ins(%2, %1 : tensor<20x12xf32>, tensor<20x16xf32>)
          outs(%e : tensor<12x16xf32>) -> tensor<12x16xf32>
  bufferization.materialize_in_destination %r1 in writable %o1
      : (tensor<12x16xf32>, memref<12x16xf32>) -> ()
  %splat = arith.constant dense<-1.500000e+00> : tensor<3x12x16xf32>
  %r2 = linalg.batch_matmul_transpose_b ins(%3, %4 : tensor<3x12x20xf32>, tensor<3x16x20xf32>)
          outs(%splat : tensor<3x12x16xf32>) -> tensor<3x12x16xf32>
  bufferization.materialize_in_destination %r2 in writable %o2
      : (tensor<3x12x16xf32>, memref<3x12x16xf32>) -> ()
  %r3 = linalg.matmul ins(%0, %1 : tensor<12x20xf32>, tensor<20x16xf32>)
          outs(%5 : tensor<12x16xf32>) -> tensor<12x16xf32>
  bufferization.materialize_in_destination %r3 in writable %o3
      : (tensor<12x16xf32>, memref<12x16xf32>) -> ()
  %r4 = linalg.matmul ins(%0, %1 : tensor<12x20xf32>, tensor<20x16xf32>)
          outs(%r3 : tensor<12x16xf32>) -> tensor<12x16xf32>
  bufferization.materialize_in_destination %r4 in writable %o4
      : (tensor<12x16xf32>, memref<12x16xf32>) -> ()
  %e3 = tensor.empty() : tensor<3x12x16xf32>
  %r5 = linalg.batch_matmul_transpose_a ins(%6, %7 : tensor<3x20x12xf32>, tensor<3x20x16xf32>)
          outs(%e3 : tensor<3x12x16xf32>) -> tensor<3x12x16xf32>
  bufferization.materialize_in_destination %r5 in writable %o5
      : (tensor<3x12x16xf32>, memref<3x12x16xf32>) -> ()
  return
})";
  auto g = ImportLinalgText(text, "mm.mlir");
  auto in = RandomInputs(*g, 3);
  auto zero = [](int64_t) { return 0.0; };
  Ref r1 = MatMulRef(in["at"], in["b"], true, false, zero);
  Ref r2 = MatMulRef(in["ba"], in["bt"], false, true, [](int64_t) { return -1.5; });
  Ref r3 = MatMulRef(in["a"], in["b"], false, false, [&](int64_t i) { return At(in["acc"], i); });
  Ref r4 = MatMulRef(in["a"], in["b"], false, false, [&](int64_t i) { return r3.v[i]; });
  Ref r5 = MatMulRef(in["bk"], in["bb"], true, false, zero);
  auto out = CompileAndRun(std::move(g), in);
  ExpectNear(out["o1"], r1, "matmul_transpose_a");
  ExpectNear(out["o2"], r2, "batch_matmul_transpose_b + splat");
  ExpectNear(out["o3"], r3, "matmul + acc");
  ExpectNear(out["o4"], r4, "matmul + matmul + acc");
  ExpectNear(out["o5"], r5, "batch_matmul_transpose_a");
}

// Every elementwise named op, plus copy, transpose, broadcast and fill, in one fragment built
// here: output oN of case N. Binary ops read (p, q), unary ones q, or p where they need
// positive input (p > 0, |q| >= 0.25).
TEST(LinalgImport, NamedElementwiseOpsRun) {
  struct Case {
    const char* op;
    int arity;
    bool positive;
    double (*ref)(double, double);
  };
  const Case kCases[] = {
      {"add", 2, false, [](double a, double b) { return a + b; }},
      {"sub", 2, false, [](double a, double b) { return a - b; }},
      {"mul", 2, false, [](double a, double b) { return a * b; }},
      {"div", 2, false, [](double a, double b) { return a / b; }},
      {"max", 2, false, [](double a, double b) { return std::max(a, b); }},
      {"min", 2, false, [](double a, double b) { return std::min(a, b); }},
      {"powf", 2, false, [](double a, double b) { return std::pow(a, b); }},
      {"exp", 1, false, [](double a, double) { return std::exp(a); }},
      {"log", 1, true, [](double a, double) { return std::log(a); }},
      {"abs", 1, false, [](double a, double) { return std::fabs(a); }},
      {"negf", 1, false, [](double a, double) { return -a; }},
      {"sqrt", 1, true, [](double a, double) { return std::sqrt(a); }},
      {"rsqrt", 1, true, [](double a, double) { return 1 / std::sqrt(a); }},
      {"square", 1, false, [](double a, double) { return a * a; }},
      {"tanh", 1, false, [](double a, double) { return std::tanh(a); }},
      {"erf", 1, false, [](double a, double) { return std::erf(a); }},
      {"floor", 1, false, [](double a, double) { return std::floor(a); }},
      {"ceil", 1, false, [](double a, double) { return std::ceil(a); }},
      {"reciprocal", 1, false, [](double a, double) { return 1 / a; }},
      {"copy", 1, false, [](double a, double) { return a; }},
  };
  const std::string t = "tensor<8x16xf32>", m = "memref<8x16xf32>";
  std::string args = "%pa: " + m + ", %qa: " + m + ", %va: memref<16xf32>";
  std::string body = fmt::format(
      "  %p = bufferization.to_tensor %pa : {0}\n  %q = bufferization.to_tensor %qa : {0}\n"
      "  %v = bufferization.to_tensor %va : memref<16xf32>\n  %e = tensor.empty() : {1}\n",
      m, t);
  auto write = [&](const std::string& value, const std::string& out, const std::string& type) {
    std::string memref = "memref" + type.substr(6);
    args += fmt::format(", %{}: {}", out, memref);
    body += fmt::format(
        "  bufferization.materialize_in_destination {} in writable %{} : ({}, {}) -> ()\n", value,
        out, type, memref);
  };
  for (size_t i = 0; i < std::size(kCases); ++i) {
    const Case& c = kCases[i];
    std::string ins = c.arity == 2 ? fmt::format("%p, %q : {0}, {0}", t)
                                   : fmt::format("{} : {}", c.positive ? "%p" : "%q", t);
    body += fmt::format("  %r{} = linalg.{} ins({}) outs(%e : {}) -> {}\n", i, c.op, ins, t, t);
    write(fmt::format("%r{}", i), fmt::format("o{}", i), t);
  }
  body +=
      "  %et = tensor.empty() : tensor<16x8xf32>\n"
      "  %tr = linalg.transpose ins(%q : tensor<8x16xf32>) outs(%et : tensor<16x8xf32>)"
      " permutation = [1, 0]\n"
      "  %bc = linalg.broadcast ins(%v : tensor<16xf32>) outs(%e : tensor<8x16xf32>)"
      " dimensions = [0]\n"
      "  %c = arith.constant 2.500000e+00 : f32\n"
      "  %fl = linalg.fill ins(%c : f32) outs(%e : tensor<8x16xf32>) -> tensor<8x16xf32>\n";
  write("%tr", "transposed", "tensor<16x8xf32>");
  write("%bc", "broadcast", t);
  write("%fl", "filled", t);
  std::string text = "func.func @named(" + args + ") {\n" + body + "  return\n}\n";

  auto g = ImportLinalgText(text, "named.mlir");
  auto in = RandomInputs(*g, 4, {"pa"});
  const HostTensor &p = in["pa"], &q = in["qa"], &v = in["va"];
  auto out = CompileAndRun(std::move(g), in);
  for (size_t i = 0; i < std::size(kCases); ++i) {
    const Case& c = kCases[i];
    Ref want = c.arity == 2 ? Map2(p, q, c.ref)
                            : Map(c.positive ? p : q, [&](double a) { return c.ref(a, 0); });
    ExpectNear(out[fmt::format("o{}", i)], want, std::string("linalg.") + c.op);
  }
  Ref tr{{16, 8}, {}}, bc{{8, 16}, {}}, fl{{8, 16}, std::vector<double>(128, 2.5)};
  for (int64_t i = 0; i < 16; ++i)
    for (int64_t j = 0; j < 8; ++j) tr.v.push_back(At(q, j * 16 + i));
  for (int64_t i = 0; i < 128; ++i) bc.v.push_back(At(v, i % 16));
  ExpectNear(out["transposed"], tr, "linalg.transpose");
  ExpectNear(out["broadcast"], bc, "linalg.broadcast");
  ExpectNear(out["filled"], fl, "linalg.fill");
}

// linalg.generic: transposed, projected, scalar and constant-index operands, the outs value
// read through %out, constants in the body, comparisons and selects (NaN included), the
// maxnumf/minnumf NaN rule, a chain of math ops, and a rank-3 iteration space with a permuted
// projection.
TEST(LinalgImport, GenericBodiesRun) {
  const char* text = R"(
#id = affine_map<(d0, d1) -> (d0, d1)>
#tr = affine_map<(d0, d1) -> (d1, d0)>
#row = affine_map<(d0, d1) -> (d0)>
#scalar = affine_map<(d0, d1) -> ()>
#first = affine_map<(d0, d1) -> (0, d1)>
#id3 = affine_map<(d0, d1, d2) -> (d0, d1, d2)>
#perm3 = affine_map<(d0, d1, d2) -> (d2, d0)>
func.func @bodies(%xa: memref<8x16xf32>, %ta: memref<16x8xf32>, %va: memref<8xf32>,
                  %ha: memref<1x16xf32>, %oa: memref<8x16xf32>, %ra: memref<4x8x16xf32>,
                  %pa: memref<16x4xf32>, %y1: memref<8x16xf32>, %y2: memref<8x16xf32>,
                  %y3: memref<8x16xf32>, %y4: memref<4x8x16xf32>) {
  %x = bufferization.to_tensor %xa : memref<8x16xf32>
  %t = bufferization.to_tensor %ta : memref<16x8xf32>
  %v = bufferization.to_tensor %va : memref<8xf32>
  %h = bufferization.to_tensor %ha : memref<1x16xf32>
  %o = bufferization.to_tensor %oa : memref<8x16xf32>
  %r = bufferization.to_tensor %ra : memref<4x8x16xf32>
  %p = bufferization.to_tensor %pa : memref<16x4xf32>
  %two = arith.constant 2.000000e+00 : f32
  %nan = arith.constant 0x7FC00000 : f32
  %e = tensor.empty() : tensor<8x16xf32>
  // y1 = min((x * t^T + v[i]) / 2 - o, h[0, j] + 1)
  %1 = linalg.generic {indexing_maps = [#id, #tr, #row, #scalar, #first, #id],
                       iterator_types = ["parallel", "parallel"]}
      ins(%x, %t, %v, %two, %h : tensor<8x16xf32>, tensor<16x8xf32>, tensor<8xf32>, f32,
          tensor<1x16xf32>) outs(%o : tensor<8x16xf32>) {
  ^bb0(%a: f32, %b: f32, %c: f32, %s: f32, %hh: f32, %out: f32):
    %m = arith.mulf %a, %b : f32
    %n = arith.addf %m, %c fastmath<fast> : f32
    %d = arith.divf %n, %s : f32
    %u = arith.subf %d, %out : f32
    %one = arith.constant 1.000000e+00 : f32
    %k = arith.addf %hh, %one : f32
    %res = arith.minimumf %u, %k : f32
    linalg.yield %res : f32
  } -> tensor<8x16xf32>
  bufferization.materialize_in_destination %1 in writable %y1
      : (tensor<8x16xf32>, memref<8x16xf32>) -> ()
  // y2 = 3 * max(x, o) + min(x, o), through comparisons, selects and NaN rules
  %2 = linalg.generic {indexing_maps = [#id, #id, #id],
                       iterator_types = [#linalg.iterator_type<parallel>,
                                         #linalg.iterator_type<parallel>]}
      ins(%x, %o : tensor<8x16xf32>, tensor<8x16xf32>) outs(%e : tensor<8x16xf32>) {
  ^bb0(%a2: f32, %b2: f32, %out2: f32):
    %gt = arith.cmpf ogt, %a2, %b2 : f32
    %mx = arith.select %gt, %a2, %b2 : f32
    %un = arith.cmpf uno, %a2, %nan : f32
    %keep = arith.select %un, %mx, %a2 : f32
    %le = arith.cmpf ole, %a2, %b2 : f32
    %mn = arith.select %le, %a2, %b2 : f32
    %nn = arith.maxnumf %mn, %nan : f32
    %nm = arith.minnumf %nan, %keep : f32
    %three = arith.constant 3.000000e+00 : f32
    %t3 = arith.mulf %nm, %three : f32
    %sum = arith.addf %t3, %nn : f32
    %ne = arith.cmpf une, %a2, %a2 : f32
    %neg = arith.negf %sum : f32
    %res2 = arith.select %ne, %neg, %sum : f32
    %ug = arith.cmpf uge, %nan, %a2 : f32
    %res3 = arith.select %ug, %res2, %neg : f32
    linalg.yield %res3 : f32
  } -> tensor<8x16xf32>
  bufferization.materialize_in_destination %2 in writable %y2
      : (tensor<8x16xf32>, memref<8x16xf32>) -> ()
  // y3 = ((-log|x| + sqrt|x| + tanh x) * exp x + erf x + floor x - ceil x + sin x) * cos x
  //      + rsqrt|x| + |x|^x
  %3 = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%x : tensor<8x16xf32>) outs(%e : tensor<8x16xf32>) {
  ^bb0(%a3: f32, %out3: f32):
    %ab = math.absf %a3 : f32
    %lg = math.log %ab : f32
    %sq = math.sqrt %ab : f32
    %th = math.tanh %a3 : f32
    %ex = math.exp %a3 : f32
    %er = math.erf %a3 : f32
    %fl = math.floor %a3 : f32
    %ce = math.ceil %a3 : f32
    %sn = math.sin %a3 : f32
    %cs = math.cos %a3 : f32
    %rs = math.rsqrt %ab : f32
    %pw = math.powf %ab, %a3 : f32
    %ng = arith.negf %lg : f32
    %s1 = arith.addf %ng, %sq : f32
    %s2 = arith.addf %s1, %th : f32
    %s3 = arith.mulf %s2, %ex : f32
    %s4 = arith.addf %s3, %er : f32
    %s5 = arith.addf %s4, %fl : f32
    %s6 = arith.subf %s5, %ce : f32
    %s7 = arith.addf %s6, %sn : f32
    %s8 = arith.mulf %s7, %cs : f32
    %s9 = arith.addf %s8, %rs : f32
    %s10 = arith.addf %s9, %pw : f32
    linalg.yield %s10 : f32
  } -> tensor<8x16xf32>
  bufferization.materialize_in_destination %3 in writable %y3
      : (tensor<8x16xf32>, memref<8x16xf32>) -> ()
  // y4[i, j, k] = r[i, j, k] * p[k, i] - p[k, i]
  %e3 = tensor.empty() : tensor<4x8x16xf32>
  %4 = linalg.generic {indexing_maps = [#id3, #perm3, #id3],
                       iterator_types = ["parallel", "parallel", "parallel"]}
      ins(%r, %p : tensor<4x8x16xf32>, tensor<16x4xf32>) outs(%e3 : tensor<4x8x16xf32>) {
  ^bb0(%a4: f32, %b4: f32, %out4: f32):
    %m4 = arith.mulf %a4, %b4 : f32
    %d4 = arith.subf %m4, %b4 : f32
    linalg.yield %d4 : f32
  } -> tensor<4x8x16xf32>
  bufferization.materialize_in_destination %4 in writable %y4
      : (tensor<4x8x16xf32>, memref<4x8x16xf32>) -> ()
  return
})";
  auto g = ImportLinalgText(text, "bodies.mlir");
  auto in = RandomInputs(*g, 5);
  const HostTensor &x = in["xa"], &t = in["ta"], &v = in["va"], &h = in["ha"], &o = in["oa"];
  const HostTensor &r = in["ra"], &p = in["pa"];
  Ref y1{{8, 16}, {}}, y4{{4, 8, 16}, {}};
  for (int64_t i = 0; i < 8; ++i)
    for (int64_t j = 0; j < 16; ++j) {
      double u = (At(x, i * 16 + j) * At(t, j * 8 + i) + At(v, i)) / 2 - At(o, i * 16 + j);
      y1.v.push_back(std::min(u, At(h, j) + 1));
    }
  Ref y2 = Map2(x, o, [](double a, double b) { return 3 * std::max(a, b) + std::min(a, b); });
  Ref y3 = Map(x, [](double a) {
    double s = (-std::log(std::fabs(a)) + std::sqrt(std::fabs(a)) + std::tanh(a)) * std::exp(a);
    s = (s + std::erf(a) + std::floor(a) - std::ceil(a) + std::sin(a)) * std::cos(a);
    return s + 1 / std::sqrt(std::fabs(a)) + std::pow(std::fabs(a), a);
  });
  for (int64_t i = 0; i < 4; ++i)
    for (int64_t j = 0; j < 8; ++j)
      for (int64_t k = 0; k < 16; ++k) {
        double pk = At(p, k * 4 + i);
        y4.v.push_back(At(r, (i * 8 + j) * 16 + k) * pk - pk);
      }
  auto out = CompileAndRun(std::move(g), in);
  ExpectNear(out["y1"], y1, "projections, scalar and %out");
  ExpectNear(out["y2"], y2, "comparisons and selects");
  ExpectNear(out["y3"], y3, "math chain");
  ExpectNear(out["y4"], y4, "rank-3 permuted projection");
}

// The pure-tensor form (tensor arguments, returned results), inside a module, with aliases
// (also a type alias and locations defined after their use), comments and a dense literal.
TEST(LinalgImport, TensorFunctionFormRuns) {
  const char* text = R"(// leading comment
#map = affine_map<(d0) -> (d0)>
!t = tensor<32xf32>
module @m attributes {torch.debug_module_name = "M"} {
  func.func @f(%x: !t loc(#loc), %y: tensor<32xf32> {bufferization.writable = true},
               %v: tensor<4xf32>) -> (tensor<32xf32>, tensor<32xf32>, tensor<4xf32>)
      attributes {llvm.emit_c_interface} {
    %c = arith.constant dense<2.000000e+00> : tensor<32xf32>  // a splat
    %0 = linalg.generic {indexing_maps = [#map, #map, #map], iterator_types = ["parallel"]}
        ins(%x, %c : !t, !t) outs(%y : !t) attrs = {some.mark} {
    ^bb0(%in: f32, %in_0: f32, %out: f32):
      %1 = arith.mulf %in, %in_0 : f32
      %2 = arith.addf %1, %out : f32
      linalg.yield %2 : f32
    } -> !t loc(#loc)
    %3 = linalg.mul ins(%0, %x : !t, !t) outs(%y : !t) -> !t
    %d = arith.constant dense<[1.0, -2.0, 3.5, 0x40800000]> : tensor<4xf32>
    %e = tensor.empty() : tensor<4xf32>
    %4 = linalg.add ins(%v, %d : tensor<4xf32>, tensor<4xf32>) outs(%e : tensor<4xf32>)
        -> tensor<4xf32>
    func.return %0, %3, %4 : tensor<32xf32>, tensor<32xf32>, tensor<4xf32>
  } loc(#loc)
}
#loc = loc("model.py":3:1)
)";
  ASSERT_TRUE(LooksLikeLinalg(text));
  auto g = ImportModelBytes(text, ".", onnx_frontend::ImportOptions{});
  ASSERT_EQ(g->inputs().size(), 3u);
  ASSERT_EQ(g->outputs().size(), 3u);
  EXPECT_EQ(g->outputs()[0]->name, "result0");
  auto in = RandomInputs(*g, 6);
  const HostTensor &x = in["x"], &y = in["y"], &v = in["v"];
  Ref r0 = Map2(x, y, [](double a, double b) { return 2 * a + b; });
  Ref r1 = Map2(x, y, [](double a, double b) { return (2 * a + b) * a; });
  const double d[] = {1.0, -2.0, 3.5, 4.0};
  Ref r2{{4}, {}};
  for (int i = 0; i < 4; ++i) r2.v.push_back(At(v, i) + d[i]);
  auto out = CompileAndRun(std::move(g), in);
  ExpectNear(out["result0"], r0, "generic reading %out");
  ExpectNear(out["result1"], r1, "mul");
  ExpectNear(out["result2"], r2, "dense literal");
}

// i32 and i64 (named ops, a generic with integer compare and select) and f16 storage.
TEST(LinalgImport, IntegerAndHalfTypesRun) {
  const char* text = R"(
#id = affine_map<(d0, d1) -> (d0, d1)>
func.func @types(%ia: memref<6x10xi32>, %ib: memref<6x10xi32>, %la: memref<6x10xi64>,
                 %ha: memref<6x10xf16>, %hb: memref<6x10xf16>, %o1: memref<6x10xi32>,
                 %o2: memref<6x10xi64>, %o3: memref<6x10xf16>) {
  %0 = bufferization.to_tensor %ia : memref<6x10xi32>
  %1 = bufferization.to_tensor %ib : memref<6x10xi32>
  %2 = bufferization.to_tensor %la : memref<6x10xi64>
  %3 = bufferization.to_tensor %ha : memref<6x10xf16>
  %4 = bufferization.to_tensor %hb : memref<6x10xf16>
  %e = tensor.empty() : tensor<6x10xi32>
  %m = linalg.mul ins(%0, %1 : tensor<6x10xi32>, tensor<6x10xi32>) outs(%e : tensor<6x10xi32>)
      -> tensor<6x10xi32>
  %mx = linalg.max ins(%m, %0 : tensor<6x10xi32>, tensor<6x10xi32>) outs(%e : tensor<6x10xi32>)
      -> tensor<6x10xi32>
  bufferization.materialize_in_destination %mx in writable %o1
      : (tensor<6x10xi32>, memref<6x10xi32>) -> ()
  %c3 = arith.constant 3 : i64
  %e64 = tensor.empty() : tensor<6x10xi64>
  %g = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%2 : tensor<6x10xi64>) outs(%e64 : tensor<6x10xi64>) {
  ^bb0(%a: i64, %out: i64):
    %t = arith.muli %a, %c3 : i64
    %lt = arith.cmpi slt, %a, %c3 : i64
    %s = arith.subi %t, %a : i64
    %r = arith.select %lt, %t, %s : i64
    linalg.yield %r : i64
  } -> tensor<6x10xi64>
  bufferization.materialize_in_destination %g in writable %o2
      : (tensor<6x10xi64>, memref<6x10xi64>) -> ()
  %e16 = tensor.empty() : tensor<6x10xf16>
  %h = linalg.add ins(%3, %4 : tensor<6x10xf16>, tensor<6x10xf16>) outs(%e16 : tensor<6x10xf16>)
      -> tensor<6x10xf16>
  bufferization.materialize_in_destination %h in writable %o3
      : (tensor<6x10xf16>, memref<6x10xf16>) -> ()
  return
})";
  auto g = ImportLinalgText(text, "types.mlir");
  auto in = RandomInputs(*g, 7);
  Ref o1 = Map2(in["ia"], in["ib"], [](double a, double b) { return std::max(a * b, a); });
  Ref o2 = Map(in["la"], [](double a) { return a < 3 ? 3 * a : 2 * a; });
  Ref o3 = Map2(in["ha"], in["hb"], [](double a, double b) { return a + b; });
  auto out = CompileAndRun(std::move(g), in);
  EXPECT_EQ(out["o1"].dtype, DType::kInt32);
  EXPECT_EQ(out["o2"].dtype, DType::kInt64);
  EXPECT_EQ(out["o3"].dtype, DType::kFloat16);
  ExpectNear(out["o1"], o1, "i32", 0);
  ExpectNear(out["o2"], o2, "i64", 0);
  ExpectNear(out["o3"], o3, "f16", 2e-3);
}

// --freeze binds a read argument to a constant; --input-shape may restate a static shape.
TEST(LinalgImport, FrozenInputBecomesConstant) {
  onnx_frontend::ImportOptions opts;
  HostTensor b(DType::kFloat32, {128, 128});
  for (int64_t i = 0; i < b.size(); ++i) b.data<float>()[i] = static_cast<float>(i % 7) - 3;
  opts.frozen_inputs["arg1"] = b;
  opts.input_shapes["arg0"] = {64, 128};
  auto g = ImportLinalgFile(DataPath("matmul_add.mlir"), opts);
  ASSERT_EQ(g->inputs().size(), 1u);
  EXPECT_EQ(g->inputs()[0]->name, "arg0");
  int constants = 0;
  for (const auto& v : g->values()) constants += v->is_constant() && v->name == "arg1";
  EXPECT_EQ(constants, 1);
}

}  // namespace
}  // namespace texel::linalg_frontend
