// The closed set of core ops that every frontend lowers to and every backend consumes.
// ONNX ops that are compositions (Gemm, HardSwish, BatchNormalization, ...) are decomposed by
// the importer; codegen never sees ONNX. Adding an op: one X() line here, its type inference in
// ir/infer.cpp, its host evaluation (optional) and its generator.
#pragma once

#include <cstdint>
#include <string_view>

namespace texel::ir {

enum class OpClass : uint8_t {
  kUnary,      // elementwise, one input, same shape
  kBinary,     // elementwise, two inputs, numpy broadcasting
  kTernary,    // elementwise, three inputs, numpy broadcasting (Where)
  kMovement,   // data movement: output elements are input elements
  kReduce,     // reduction over attr "axes"
  kConv,       // convolution
  kPool,       // windowed pooling
  kMatMul,     // batched matrix product
  kNormalize,  // softmax family
  kSelect,     // data-dependent selection: a padded output whose valid rows are counted at run time
  kAttention,  // scaled dot-product attention (passes/match_attention.cpp)
};

// X(name, class, inputs (-1 = variadic), outputs)
// clang-format off
#define TEXEL_OPS(X)                                                                                \
  /* unary: attrs as noted */                                                                       \
  X(Relu, kUnary, 1, 1)                                                                             \
  X(Sigmoid, kUnary, 1, 1)                                                                          \
  X(Tanh, kUnary, 1, 1)                                                                             \
  X(Exp, kUnary, 1, 1)                                                                              \
  X(Log, kUnary, 1, 1)                                                                              \
  X(Sqrt, kUnary, 1, 1)                                                                             \
  X(Neg, kUnary, 1, 1)                                                                              \
  X(Abs, kUnary, 1, 1)                                                                              \
  X(Reciprocal, kUnary, 1, 1)                                                                       \
  X(Erf, kUnary, 1, 1)                                                                              \
  X(Softplus, kUnary, 1, 1)                                                                         \
  X(Floor, kUnary, 1, 1)                                                                            \
  X(Ceil, kUnary, 1, 1)                                                                             \
  X(Round, kUnary, 1, 1)                                                                            \
  X(Sign, kUnary, 1, 1)                                                                             \
  X(Sin, kUnary, 1, 1)                                                                              \
  X(Cos, kUnary, 1, 1)                                                                              \
  X(Not, kUnary, 1, 1)                                                                              \
  X(Tan, kUnary, 1, 1)                                                                              \
  X(Asin, kUnary, 1, 1)                                                                             \
  X(Acos, kUnary, 1, 1)                                                                             \
  X(Atan, kUnary, 1, 1)                                                                             \
  X(Sinh, kUnary, 1, 1)                                                                             \
  X(Cosh, kUnary, 1, 1)                                                                             \
  X(Asinh, kUnary, 1, 1)                                                                            \
  X(Acosh, kUnary, 1, 1)                                                                            \
  X(Atanh, kUnary, 1, 1)                                                                            \
  X(IsNaN, kUnary, 1, 1)       /* bool output */                                                    \
  X(IsInf, kUnary, 1, 1)       /* bool output; detect_positive, detect_negative */                  \
  X(Clip, kUnary, 1, 1)        /* min, max (f64) */                                                 \
  X(LeakyRelu, kUnary, 1, 1)   /* alpha */                                                          \
  X(Elu, kUnary, 1, 1)         /* alpha */                                                          \
  X(HardSigmoid, kUnary, 1, 1) /* alpha, beta: clamp(alpha*x+beta, 0, 1) */                         \
  X(Cast, kUnary, 1, 1)        /* output dtype is the node's output type */                         \
  X(Copy, kUnary, 1, 1)        /* identity; used for graph outputs that alias inputs */             \
  /* binary, numpy broadcasting */                                                                  \
  X(Add, kBinary, 2, 1)                                                                             \
  X(Sub, kBinary, 2, 1)                                                                             \
  X(Mul, kBinary, 2, 1)                                                                             \
  X(Div, kBinary, 2, 1)                                                                             \
  X(Pow, kBinary, 2, 1)                                                                             \
  X(Max, kBinary, 2, 1)                                                                             \
  X(Min, kBinary, 2, 1)                                                                             \
  X(Equal, kBinary, 2, 1)                                                                           \
  X(Less, kBinary, 2, 1)                                                                            \
  X(Greater, kBinary, 2, 1)                                                                         \
  X(And, kBinary, 2, 1)                                                                             \
  X(Or, kBinary, 2, 1)                                                                              \
  X(Mod, kBinary, 2, 1)    /* fmod: 1 = C fmod (sign of dividend), 0 = sign of divisor */           \
  X(BitShift, kBinary, 2, 1) /* left: 1 = x << y, 0 = x >> y (unsigned integers) */     \
  X(Where, kTernary, 3, 1) /* cond, x, y */                                                         \
  /* data movement */                                                                               \
  X(Reshape, kMovement, 1, 1)        /* output type carries the shape */                            \
  X(ConvertStorage, kMovement, 1, 1) /* buffer <-> image copy; the output value says its storage */  \
  X(Expand, kMovement, 1, 1)         /* broadcast to the output shape */                            \
  X(Transpose, kMovement, 1, 1)      /* perm */                                                     \
  X(Slice, kMovement, 1, 1)          /* starts, steps (one per axis, normalised) */                 \
  X(Concat, kMovement, -1, 1)        /* axis */                                                     \
  X(Gather, kMovement, 2, 1)         /* axis; indices i32/i64, negative wrap */                     \
  X(Pad, kMovement, 1, 1)            /* pads [begins..., ends...] (may be negative), value */       \
  X(GatherElements, kMovement, 2, 1) /* axis; output shape = indices shape */                       \
  X(GatherND, kMovement, 2, 1) /* batch_dims */                                           \
  X(TopKIndices, kMovement, 1, 1) /* axis, k, largest: i64 indices of the k best, sorted */  \
  X(CumSum, kMovement, 1, 1)         /* axis, exclusive, reverse */                                 \
  X(Resize, kMovement, 1, 1)         /* sizes, scales, roi, mode, coord, nearest_mode, cubic_a,     \
                                        exclude_outside, extrapolation (see generate_resize.cpp) */ \
  X(GridSample, kMovement, 2, 1) /* x [N,C,H,W], grid [N,Ho,Wo,2]; mode, padding_mode, align */     \
  X(RoiAlign, kMovement, 3, 1) /* x, rois [R,4], batch_indices [R]; see generate_roi_align.cpp */   \
  X(ScatterElements, kMovement, 3, 1) /* data, indices, updates; axis, reduction */                 \
  X(ScatterND, kMovement, 3, 1)      /* data, indices [..., k], updates; reduction */               \
  /* anchors */                                                                                     \
  X(Conv, kConv, -1, 1)       /* x, w[, b]; strides, pads[begins, ends], dilations, group */        \
  X(ConvTranspose, kConv, -1, 1) /* x, w [C, M/group, k...][, b]; Conv attrs, output_padding */    \
  X(MaxPool, kPool, 1, 1)     /* kernel, strides, pads, dilations */                                \
  X(AveragePool, kPool, 1, 1) /* kernel, strides, pads, count_include_pad */                        \
  X(MaxPoolIndices, kPool, 1, 1) /* MaxPool attrs, storage_order: i64 flat index of the max */      \
  X(MatMul, kMatMul, 2, 1)    /* [..., M, K] x [..., K, N], broadcast batch; trans_a, trans_b */    \
  X(ReduceSum, kReduce, 1, 1) /* axes (sorted, normalised), keepdims */                             \
  X(ReduceMean, kReduce, 1, 1)                                                                      \
  X(ReduceMax, kReduce, 1, 1)                                                                       \
  X(ReduceMin, kReduce, 1, 1)                                                                       \
  X(ReduceProd, kReduce, 1, 1)                                                                      \
  X(ArgMax, kReduce, 1, 1) /* axes = [axis], keepdims, select_last_index; i64 output */             \
  X(ArgMin, kReduce, 1, 1)                                                                          \
  X(Softmax, kNormalize, 1, 1)    /* axis */                                                        \
  X(LogSoftmax, kNormalize, 1, 1) /* axis */                                                        \
  /* (x - mean) / sqrt(var + epsilon) over dims >= axis; rms = 1: x / sqrt(mean(x^2) + eps)  */  \
  X(LayerNorm, kNormalize, 1, 1)                                                                    \
  /* q, k, v, biases...: softmax(scale * q k^T + sum(biases)) v, each operand read through a    \
     view (ir/index_map.h); scale, causal (passes/match_attention.cpp) */                         \
  X(Attention, kAttention, -1, 1)                                                                   \
  /* boxes [B, N, 4], scores [B, C, N] -> selected [B*C*min(max, N), 3] i64 padded, count i64 []; \
     max_per_class, iou_threshold, score_threshold (NaN: none), center_point_box */               \
  X(NonMaxSuppression, kSelect, 2, 2)
// clang-format on

enum class OpKind : uint16_t {
#define TEXEL_OP_ENUM(name, cls, nin, nout) k##name,
  TEXEL_OPS(TEXEL_OP_ENUM)
#undef TEXEL_OP_ENUM
      kCount
};

struct OpInfo {
  OpKind kind;
  std::string_view name;
  OpClass cls;
  int num_inputs;  // -1: variadic
  int num_outputs;
};

const OpInfo& GetOpInfo(OpKind op);
inline std::string_view OpName(OpKind op) { return GetOpInfo(op).name; }
// Unary, binary and ternary ops: one output element from the same element of each input.
inline bool IsElementwiseClass(OpClass c) {
  return c == OpClass::kUnary || c == OpClass::kBinary || c == OpClass::kTernary;
}
bool ParseOpKind(std::string_view name, OpKind* out);

}  // namespace texel::ir
