// texel_gemm (api/gemm.h): the C arguments as a row-major codegen::GemmProblem. A column-major
// product C = op(A) op(B) is the row-major C^T = op(B)^T op(A)^T over the same memory: the
// operands swap and m and n swap; the transposes stay with their operands.
#include <vector>

#include "api/gemm.h"
#include "backends/native/native_backend.h"
#include "capi/handles.h"

using texel::ErrorCode;
using texel::Fail;
using texel::capi::Guard;
using texel::capi::RawEnum;
using texel::capi::Require;

namespace {

texel::codegen::GemmProblem ProblemOf(const texel_gemm_t& g, texel::api::GemmOperands* ops) {
  texel::codegen::GemmProblem p;
  const int layout = RawEnum(g.layout), dtype = RawEnum(g.dtype), compute = RawEnum(g.compute);
  if (layout != TEXEL_ROW_MAJOR && layout != TEXEL_COL_MAJOR)
    Fail(ErrorCode::kInvalidArgument, "layout {}: want TEXEL_ROW_MAJOR or TEXEL_COL_MAJOR", layout);
  if (dtype == TEXEL_DTYPE_F32)
    p.elem = texel::DType::kFloat32;
  else if (dtype == TEXEL_DTYPE_F16)
    p.elem = texel::DType::kFloat16;
  else
    Fail(ErrorCode::kInvalidArgument, "dtype {}: want TEXEL_DTYPE_F32 or TEXEL_DTYPE_F16", dtype);
  switch (compute) {
    case TEXEL_COMPUTE_FP32: p.mode = texel::ComputeMode::kFp32; break;
    case TEXEL_COMPUTE_TF32: p.mode = texel::ComputeMode::kTf32; break;
    case TEXEL_COMPUTE_TF32X3: p.mode = texel::ComputeMode::kTf32x3; break;
    case TEXEL_COMPUTE_FP16: p.mode = texel::ComputeMode::kFp16; break;
    default: Fail(ErrorCode::kInvalidArgument, "compute {}: not a texel_compute_t", compute);
  }
  // size_t values past int64_t read as negative and are refused by CheckGemm.
  auto i64 = [](size_t v) { return static_cast<int64_t>(v); };
  bool col = layout == TEXEL_COL_MAJOR;
  p.m = i64(col ? g.n : g.m), p.n = i64(col ? g.m : g.n), p.k = i64(g.k), p.batch = i64(g.batch);
  p.trans_a = (col ? g.trans_b : g.trans_a) != 0;
  p.trans_b = (col ? g.trans_a : g.trans_b) != 0;
  p.lda = i64(col ? g.ldb : g.lda), p.ldb = i64(col ? g.lda : g.ldb), p.ldc = i64(g.ldc);
  p.a_offset = i64(col ? g.b_offset : g.a_offset), p.b_offset = i64(col ? g.a_offset : g.b_offset);
  p.c_offset = i64(g.c_offset);
  p.stride_a = i64(col ? g.stride_b : g.stride_a), p.stride_b = i64(col ? g.stride_a : g.stride_b);
  p.stride_c = i64(g.stride_c);
  *ops = {col ? g.b : g.a, col ? g.a : g.b, g.c, g.alpha, g.beta, col};
  return p;
}

// The queue must run on the context's device, in its context.
void CheckQueue(const texel::cl::Context& ctx, cl_command_queue queue) {
  cl_context qc = nullptr;
  cl_device_id qd = nullptr;
  if (clGetCommandQueueInfo(queue, CL_QUEUE_CONTEXT, sizeof(qc), &qc, nullptr) != CL_SUCCESS ||
      clGetCommandQueueInfo(queue, CL_QUEUE_DEVICE, sizeof(qd), &qd, nullptr) != CL_SUCCESS)
    Fail(ErrorCode::kInvalidArgument, "queue is not a valid cl_command_queue");
  if (qc != ctx.context() || qd != ctx.device())
    Fail(ErrorCode::kInvalidArgument, "queue belongs to another context or device");
}

}  // namespace

extern "C" {

void texel_gemm_init(texel_gemm_t* gemm) {
  if (!texel::capi::ResetStruct(gemm)) return;
  gemm->layout = TEXEL_ROW_MAJOR;
  gemm->alpha = 1.0f;
  gemm->batch = 1;
  gemm->dtype = TEXEL_DTYPE_F32;
  gemm->compute = TEXEL_COMPUTE_FP32;
}

texel_status_t texel_gemm(texel_context_t context, const texel_gemm_t* gemm, cl_command_queue queue,
                          cl_uint num_wait_events, const cl_event* wait_events,
                          cl_event* out_event) {
  return Guard(__func__, [&] {
    Require(context, "context");
    Require(gemm, "gemm");
    if (gemm->struct_size < sizeof(*gemm))
      Fail(ErrorCode::kInvalidArgument, "gemm was not set up by texel_gemm_init");
    if (num_wait_events > 0) Require(wait_events, "wait_events");
    const texel::cl::Context& ctx = *context->context;
    if (queue != nullptr) CheckQueue(ctx, queue);
    texel::api::GemmOperands ops;
    texel::codegen::GemmProblem p = ProblemOf(*gemm, &ops);
    texel::codegen::Target target = texel::backends::NativeBackend::TargetOf(ctx.info());
    texel::api::CheckGemm(p, ops, target);
    std::call_once(context->gemm_once, [&] {
      context->gemm = std::make_shared<texel::api::GemmKernels>(context->context);
    });
    std::vector<cl_event> wait(wait_events, wait_events + num_wait_events);
    context->gemm->Enqueue(p, ops, queue, wait, out_event, target);
  });
}

}  // extern "C"
