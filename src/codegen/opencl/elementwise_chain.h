// Elementwise ops as OpenCL C expressions, and chains of them for fusion (see passes/fuse.cpp):
// a chain is a list of elementwise nodes of one output shape in order, each reading the seed or
// earlier results (a DAG, e.g. GELU's x * (1 + erf(x / sqrt 2)) / 2 after a MatMul); the other
// operands are read with broadcasting at the output coordinates.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "codegen/opencl/kernel_spec.h"
#include "ir/graph.h"

namespace texel::codegen {

// The C type elementwise code computes t in (f16 storage computes in float), and the element
// type behind a __global pointer to t.
std::string ValueTypeName(DType t);
std::string StorageTypeName(DType t);

// The expression of elementwise node n over operand expressions x (one per input), converted
// to the value type of n's output. Throws kUnsupported for type combinations without a kernel.
std::string ElementwiseExpr(const ir::Node& n, const std::vector<std::string>& x);
// Throws what ElementwiseExpr would for n's types (the support check).
void CheckElementwise(const ir::Node& n);

struct ChainCode {
  std::string code;    // statements; they read coordinates c0, c1, ... of the output element
  std::string result;  // the variable holding the chain's result
};

// The statements computing `ops` in order. Where an op reads `seed_value` (the chain's input
// from outside, e.g. an anchor's result) it uses variable `seed_var`; later ops read their
// predecessor's result; any other operand v is read from buffer parameter param(v).
// With `direct`, an operand for which it returns an expression is that expression instead
// (a texture kernel passes a lane of a texel it read).
ChainCode ElementwiseChain(const std::vector<const ir::Node*>& ops, const ir::Value* seed_value,
                           const std::string& seed_var,
                           const std::function<std::string(const ir::Value*)>& param,
                           const std::function<std::string(const ir::Value*)>& direct = {});

// `ops` (consuming seed) as a helper function for kernels that apply a chain element by element
// themselves: `float NAME(float v, long i, float l0, ..., __global const T0* b0, ...)`,
// i the flat output index. The operands `by_lane` accepts are passed as float arguments l<k>
// (a texture kernel reads their texel once and passes a lane); the others are read from buffer
// parameters b<k> (of their storage type). Values f32, or f16 computed in float.
struct ChainFunction {
  std::string code;
  std::vector<const ir::Value*> lane_operands, buffer_operands;
};
ChainFunction ChainAsFunction(const std::string& name, const ir::Value* seed,
                              const std::vector<const ir::Node*>& ops,
                              const std::function<bool(const ir::Value*)>& by_lane);

// The type of what `ops` (consuming anchor_out) leave: anchor_out's when there are none.
DType ChainResultType(const ir::Value* anchor_out, const std::vector<const ir::Node*>& ops);

// Lets an anchor template apply `ops` (which consume anchor_out) to each result: defines
// EPILOGUE(v, i) (i: flat output index) and EPILOGUE_PARAMS (extra buffer parameters after the
// output), adds a helper function before the template, appends the extra operands to
// spec.args and retargets the output argument to the chain's result. With no ops, EPILOGUE is
// the identity. Also EPILOGUE_T and EPILOGUE_STORE(p, i, v): the element type of the chain's
// result and its store, which templates that declare `stores_any_float` use for their output
// (a chain ending in a Cast between f16 and f32: a graph output converted by the kernel that
// computes it, passes/fuse.cpp); for other templates a chain must keep the anchor's type.
// Call after spec.args lists the anchor's inputs and output, before Render().
void ApplyEpilogue(KernelSource& src, const std::string& kernel_name, const ir::Value* anchor_out,
                   const std::vector<const ir::Node*>& ops, KernelSpec& spec,
                   bool stores_any_float = false);
// Where the chain has a vector form (VectorChain: f32 ops with a vector rule, operands read
// along the output's innermost axis or constant along it), defines VEPILOGUE(v, i): the chain on
// a float<vw> v of the results at flat indices i to i + vw - 1 of one innermost row, with
// EPILOGUE's parameters; the identity without ops. Leaves it undefined otherwise (the kernel
// then applies EPILOGUE lane by lane). Call before ApplyEpilogue.
void ApplyVectorEpilogue(KernelSource& src, const std::string& kernel_name,
                         const ir::Value* anchor_out, const std::vector<const ir::Node*>& ops,
                         int vw);
// The same under another macro name (MACRO(v, i), MACRO_PARAMS) and parameter prefix: a chain
// applied to values a kernel reads (LayerNorm's prologue) rather than writes. It computes in
// float whatever the chain's types; what a kernel stores is ApplyEpilogue's to check.
void ApplyChain(KernelSource& src, const std::string& kernel_name, const ir::Value* anchor_out,
                const std::vector<const ir::Node*>& ops, KernelSpec& spec, const std::string& macro,
                const std::string& prefix);

}  // namespace texel::codegen
