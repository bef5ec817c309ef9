// Tests for ir::EvaluateOnHost (constant folding) against hand-computed values.
#include <gtest/gtest.h>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/error.h"
#include "ir/host_eval.h"
#include "ir/infer.h"

namespace texel::ir {
namespace {

using Ints = std::vector<int64_t>;

template <typename T>
HostTensor Make(DType dtype, Shape shape, const std::vector<T>& values) {
  HostTensor t(dtype, std::move(shape));
  EXPECT_EQ(static_cast<int64_t>(values.size()), t.size());
  for (size_t i = 0; i < values.size(); ++i) t.data<T>()[i] = values[i];
  return t;
}

HostTensor F32(Shape s, const std::vector<float>& v) { return Make(DType::kFloat32, s, v); }
HostTensor I64(Shape s, const std::vector<int64_t>& v) { return Make(DType::kInt64, s, v); }
HostTensor Bool(Shape s, const std::vector<uint8_t>& v) { return Make(DType::kBool, s, v); }

template <typename T>
std::vector<T> Values(const HostTensor& t) {
  return std::vector<T>(t.data<T>(), t.data<T>() + t.size());
}

// Infers the output type (as the importer and fold-constants do) and evaluates.
std::optional<HostTensor> Eval(OpKind op, const std::vector<const HostTensor*>& in,
                               const Attrs& attrs = {}) {
  std::vector<TensorType> types;
  for (const HostTensor* t : in) types.push_back({t->dtype, t->shape});
  return EvaluateOnHost(op, attrs, in, InferTypes(op, types, attrs).at(0));
}

HostTensor MustEval(OpKind op, const std::vector<const HostTensor*>& in, const Attrs& attrs = {}) {
  std::optional<HostTensor> r = Eval(op, in, attrs);
  EXPECT_TRUE(r.has_value()) << OpName(op);
  return r ? std::move(*r) : HostTensor();
}

constexpr int64_t k2p53 = int64_t{1} << 53;

TEST(HostEvalTest, AddInt64BroadcastIsExact) {
  // Values past 2^53 are not representable in double: the sums must stay in integers.
  HostTensor a = I64({2, 1}, {k2p53, -7});
  HostTensor b = I64({1, 3}, {1, 3, -5});
  HostTensor y = MustEval(OpKind::kAdd, {&a, &b});
  EXPECT_EQ(y.dtype, DType::kInt64);
  EXPECT_EQ(y.shape, (Shape{2, 3}));
  EXPECT_EQ(Values<int64_t>(y), (Ints{k2p53 + 1, k2p53 + 3, k2p53 - 5, -6, -4, -12}));
}

TEST(HostEvalTest, DivInt64Truncates) {
  HostTensor a = I64({5}, {7, -7, 7, -7, 9});
  HostTensor b = I64({5}, {2, 2, -2, -2, 3});
  EXPECT_EQ(Values<int64_t>(MustEval(OpKind::kDiv, {&a, &b})), (Ints{3, -3, -3, 3, 3}));
  HostTensor zero = I64({1}, {0});
  try {
    Eval(OpKind::kDiv, {&a, &zero});
    ADD_FAILURE() << "integer division by zero must fail";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kInvalidModel);
  }
}

TEST(HostEvalTest, CastFloatToInt64Truncates) {
  HostTensor x = F32({5}, {1.9f, -1.9f, 2.5f, -0.5f, 123456.75f});
  HostTensor y = MustEval(OpKind::kCast, {&x}, {{"to", int64_t(DType::kInt64)}});
  EXPECT_EQ(y.dtype, DType::kInt64);
  EXPECT_EQ(Values<int64_t>(y), (Ints{1, -1, 2, 0, 123456}));
}

TEST(HostEvalTest, CastInt64ToFloat) {
  HostTensor x = I64({4}, {3, -5, (int64_t{1} << 24) + 1, int64_t{1} << 40});
  HostTensor y = MustEval(OpKind::kCast, {&x}, {{"to", int64_t(DType::kFloat32)}});
  EXPECT_EQ(y.dtype, DType::kFloat32);
  // 2^24 + 1 rounds to the nearest float, 2^24.
  EXPECT_EQ(Values<float>(y), (std::vector<float>{3.0f, -5.0f, 16777216.0f, 1099511627776.0f}));
}

TEST(HostEvalTest, Transpose) {
  // x[a][b][c] = 10 + 4a + 2b + c; y[c][a][b] = x[a][b][c].
  HostTensor x = F32({2, 2, 2}, {10, 11, 12, 13, 14, 15, 16, 17});
  HostTensor y = MustEval(OpKind::kTranspose, {&x}, {{"perm", Ints{2, 0, 1}}});
  EXPECT_EQ(y.shape, (Shape{2, 2, 2}));
  EXPECT_EQ(Values<float>(y), (std::vector<float>{10, 12, 14, 16, 11, 13, 15, 17}));
  HostTensor m = I64({2, 3}, {1, 2, 3, 4, 5, 6});
  EXPECT_EQ(Values<int64_t>(MustEval(OpKind::kTranspose, {&m}, {{"perm", Ints{1, 0}}})),
            (Ints{1, 4, 2, 5, 3, 6}));
}

TEST(HostEvalTest, SliceNegativeStep) {
  HostTensor x = I64({2, 5}, {1, 2, 3, 4, 5, 6, 7, 8, 9, 10});
  // Row 1, columns 4, 2, 0.
  HostTensor y = MustEval(OpKind::kSlice, {&x},
                          {{"starts", Ints{1, 4}}, {"steps", Ints{1, -2}}, {"sizes", Ints{1, 3}}});
  EXPECT_EQ(y.shape, (Shape{1, 3}));
  EXPECT_EQ(Values<int64_t>(y), (Ints{10, 8, 6}));
  // Both rows reversed, columns 1..3.
  y = MustEval(OpKind::kSlice, {&x},
               {{"starts", Ints{1, 1}}, {"steps", Ints{-1, 1}}, {"sizes", Ints{2, 3}}});
  EXPECT_EQ(Values<int64_t>(y), (Ints{7, 8, 9, 2, 3, 4}));
}

TEST(HostEvalTest, GatherNegativeIndices) {
  HostTensor x = F32({2, 3}, {1, 2, 3, 4, 5, 6});
  HostTensor idx = I64({2}, {-1, 0});
  HostTensor y = MustEval(OpKind::kGather, {&x, &idx}, {{"axis", int64_t{1}}});
  EXPECT_EQ(y.shape, (Shape{2, 2}));
  EXPECT_EQ(Values<float>(y), (std::vector<float>{3, 1, 6, 4}));
  // int32 indices of rank 2 on axis 0.
  HostTensor idx32 = Make<int32_t>(DType::kInt32, {2, 1}, {-2, 1});
  y = MustEval(OpKind::kGather, {&x, &idx32}, {{"axis", int64_t{0}}});
  EXPECT_EQ(y.shape, (Shape{2, 1, 3}));
  EXPECT_EQ(Values<float>(y), (std::vector<float>{1, 2, 3, 4, 5, 6}));
  // A scalar index drops the axis.
  HostTensor scalar = I64({}, {-2});
  y = MustEval(OpKind::kGather, {&x, &scalar}, {{"axis", int64_t{1}}});
  EXPECT_EQ(y.shape, (Shape{2}));
  EXPECT_EQ(Values<float>(y), (std::vector<float>{2, 5}));
  HostTensor bad = I64({1}, {-4});
  try {
    Eval(OpKind::kGather, {&x, &bad}, {{"axis", int64_t{1}}});
    ADD_FAILURE() << "index -4 on a dim of 3 must fail";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kInvalidModel);
  }
}

TEST(HostEvalTest, Concat) {
  HostTensor a = I64({2, 1}, {1, 2});
  HostTensor b = I64({2, 2}, {3, 4, 5, 6});
  HostTensor c = I64({2, 1}, {7, 8});
  HostTensor y = MustEval(OpKind::kConcat, {&a, &b, &c}, {{"axis", int64_t{1}}});
  EXPECT_EQ(y.shape, (Shape{2, 4}));
  EXPECT_EQ(Values<int64_t>(y), (Ints{1, 3, 4, 7, 2, 5, 6, 8}));
  HostTensor d = F32({1, 2}, {1.5f, 2.5f});
  HostTensor e = F32({2, 2}, {3.5f, 4.5f, 5.5f, 6.5f});
  y = MustEval(OpKind::kConcat, {&e, &d}, {{"axis", int64_t{0}}});
  EXPECT_EQ(Values<float>(y), (std::vector<float>{3.5f, 4.5f, 5.5f, 6.5f, 1.5f, 2.5f}));
}

TEST(HostEvalTest, PadConstant) {
  HostTensor x = F32({2, 2}, {1, 2, 3, 4});
  // pads = [row begin, col begin, row end, col end].
  HostTensor y =
      MustEval(OpKind::kPad, {&x},
               {{"pads", Ints{0, 1, 1, 0}}, {"mode", std::string("constant")}, {"value", 9.5}});
  EXPECT_EQ(y.shape, (Shape{3, 3}));
  EXPECT_EQ(Values<float>(y), (std::vector<float>{9.5f, 1, 2, 9.5f, 3, 4, 9.5f, 9.5f, 9.5f}));
  // Negative pads crop.
  y = MustEval(OpKind::kPad, {&x},
               {{"pads", Ints{0, -1, 0, 0}}, {"mode", std::string("constant")}, {"value", 0.0}});
  EXPECT_EQ(Values<float>(y), (std::vector<float>{2, 4}));
  // Integer tensors take the value converted.
  HostTensor xi = I64({2}, {5, 6});
  y = MustEval(OpKind::kPad, {&xi},
               {{"pads", Ints{1, 2}}, {"mode", std::string("constant")}, {"value", -3.0}});
  EXPECT_EQ(Values<int64_t>(y), (Ints{-3, 5, 6, -3, -3}));
}

TEST(HostEvalTest, PadEdge) {
  HostTensor x = F32({2, 3}, {1, 2, 3, 4, 5, 6});
  HostTensor y =
      MustEval(OpKind::kPad, {&x},
               {{"pads", Ints{1, 2, 0, 1}}, {"mode", std::string("edge")}, {"value", 0.0}});
  EXPECT_EQ(y.shape, (Shape{3, 6}));
  EXPECT_EQ(Values<float>(y), (std::vector<float>{1, 1, 1, 2, 3, 3,  //
                                                  1, 1, 1, 2, 3, 3,  //
                                                  4, 4, 4, 5, 6, 6}));
}

TEST(HostEvalTest, Expand) {
  HostTensor x = I64({3, 1}, {1, 2, 3});
  HostTensor y = MustEval(OpKind::kExpand, {&x}, {{"shape", Ints{2, 3, 2}}});
  EXPECT_EQ(y.shape, (Shape{2, 3, 2}));
  EXPECT_EQ(Values<int64_t>(y), (Ints{1, 1, 2, 2, 3, 3, 1, 1, 2, 2, 3, 3}));
}

TEST(HostEvalTest, ReduceSumKeepdims) {
  HostTensor x = F32({2, 3}, {1, 2, 3, 4, 5, 6});
  HostTensor y = MustEval(OpKind::kReduceSum, {&x}, {{"axes", Ints{1}}, {"keepdims", int64_t{1}}});
  EXPECT_EQ(y.shape, (Shape{2, 1}));
  EXPECT_EQ(Values<float>(y), (std::vector<float>{6, 15}));
  y = MustEval(OpKind::kReduceSum, {&x}, {{"axes", Ints{0}}, {"keepdims", int64_t{0}}});
  EXPECT_EQ(y.shape, (Shape{3}));
  EXPECT_EQ(Values<float>(y), (std::vector<float>{5, 7, 9}));
  y = MustEval(OpKind::kReduceSum, {&x}, {{"axes", Ints{0, 1}}, {"keepdims", int64_t{0}}});
  EXPECT_EQ(y.shape, (Shape{}));
  EXPECT_EQ(Values<float>(y), (std::vector<float>{21}));
}

TEST(HostEvalTest, ReduceMaxKeepdims) {
  // x[a][b][c] over a 2x2x2 cube.
  HostTensor x = F32({2, 2, 2}, {3, -1, 7, 2, -5, 8, 0.5f, 4});
  HostTensor y =
      MustEval(OpKind::kReduceMax, {&x}, {{"axes", Ints{0, 2}}, {"keepdims", int64_t{0}}});
  EXPECT_EQ(y.shape, (Shape{2}));
  EXPECT_EQ(Values<float>(y), (std::vector<float>{8, 7}));
  y = MustEval(OpKind::kReduceMax, {&x}, {{"axes", Ints{1}}, {"keepdims", int64_t{1}}});
  EXPECT_EQ(y.shape, (Shape{2, 1, 2}));
  EXPECT_EQ(Values<float>(y), (std::vector<float>{7, 2, 0.5f, 8}));
  HostTensor xi = I64({2, 2}, {-4, 9, 6, -2});
  y = MustEval(OpKind::kReduceMax, {&xi}, {{"axes", Ints{1}}, {"keepdims", int64_t{0}}});
  EXPECT_EQ(Values<int64_t>(y), (Ints{9, 6}));
  // Integer sums are exact (int64 accumulator).
  y = MustEval(OpKind::kReduceSum, {&xi}, {{"axes", Ints{1}}, {"keepdims", int64_t{0}}});
  EXPECT_EQ(Values<int64_t>(y), (Ints{5, 4}));
}

TEST(HostEvalTest, ReduceMaxInt64IsExact) {
  HostTensor x = I64({2}, {k2p53 + 1, 1});
  HostTensor y = MustEval(OpKind::kReduceMax, {&x}, {{"axes", Ints{0}}, {"keepdims", int64_t{0}}});
  EXPECT_EQ(Values<int64_t>(y), (Ints{k2p53 + 1}));
}

TEST(HostEvalTest, Where) {
  HostTensor cond = Bool({2, 2}, {1, 0, 0, 1});
  HostTensor x = F32({2, 2}, {1, 2, 3, 4});
  HostTensor y = F32({2}, {-1, -2});
  EXPECT_EQ(Values<float>(MustEval(OpKind::kWhere, {&cond, &x, &y})),
            (std::vector<float>{1, -2, -1, 4}));
  // Integer branches stay exact; the condition broadcasts too.
  HostTensor c1 = Bool({2, 1}, {0, 1});
  HostTensor xi = I64({1, 2}, {k2p53 + 1, 5});
  HostTensor yi = I64({2, 2}, {-1, -2, -3, -4});
  HostTensor r = MustEval(OpKind::kWhere, {&c1, &xi, &yi});
  EXPECT_EQ(r.shape, (Shape{2, 2}));
  EXPECT_EQ(Values<int64_t>(r), (Ints{-1, -2, k2p53 + 1, 5}));
}

TEST(HostEvalTest, AnchorsAreNotEvaluated) {
  HostTensor x = F32({1, 1, 3, 3}, {1, 2, 3, 4, 5, 6, 7, 8, 9});
  HostTensor w = F32({1, 1, 2, 2}, {1, -1, 2, -2});
  EXPECT_FALSE(Eval(OpKind::kConv, {&x, &w},
                    {{"strides", Ints{1, 1}},
                     {"pads", Ints{0, 0, 0, 0}},
                     {"dilations", Ints{1, 1}},
                     {"group", int64_t{1}}}));
  HostTensor a = F32({2, 3}, {1, 2, 3, 4, 5, 6});
  HostTensor b = F32({3, 1}, {1, 2, 3});
  EXPECT_FALSE(Eval(OpKind::kMatMul, {&a, &b}));
}

TEST(HostEvalTest, BroadcastStrides) {
  EXPECT_EQ(BroadcastStrides({3, 1}, {2, 3, 4}), (Ints{0, 1, 0}));
  EXPECT_EQ(BroadcastStrides({2, 3, 4}, {2, 3, 4}), (Ints{12, 4, 1}));
  EXPECT_EQ(BroadcastStrides({}, {2, 2}), (Ints{0, 0}));
}

}  // namespace
}  // namespace texel::ir
