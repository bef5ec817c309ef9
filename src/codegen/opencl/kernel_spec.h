// What a generator produces for one node: an OpenCL C kernel (self-contained text whose macros
// are defined before and undefined after it, so many kernels share one program), the values
// bound to its parameters, and its launch geometry. A plain value.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "core/tensor.h"

namespace texel::codegen {

struct KernelSpec {
  std::string name;
  std::string source;
  std::vector<int> args;  // IR value ids in parameter order (inputs..., output); -1 - s: scratch s
  // Bytes of each scratch buffer: device memory private to the kernels generated together for
  // one node (split-K partial sums), which they pass on in order.
  std::vector<int64_t> scratch_bytes;
  // Scratch buffers (by index) that start zeroed and that the kernels leave zeroed: work-group
  // arrival counters, which outlive a run and are never shared with other values.
  std::vector<int> zeroed_scratch;
  // The ops this kernel computes among its group's nodes, [first_op, end_op) (end_op 0: to the
  // group's end), for its label in profiles and kernel counts: a product whose LayerNorm sums
  // its slices is the MatMul alone, the LayerNorm's kernel the epilogue and norm after it
  // (codegen GenerateGroup).
  size_t first_op = 0, end_op = 0;
  // What the code needs of the device beyond OpenCL C 1.2 (runtime/plan.h DeviceNeeds), set by
  // the generator that emits it: inline PTX (NVIDIA's OpenCL), mma.sync (compute capability 8.0).
  bool inline_ptx = false, tensor_cores = false;
  std::vector<size_t> global;
  std::vector<size_t> local;  // empty: the driver chooses
  double flops = 0;           // useful arithmetic, for profiles
  // B is read one element at a time through a gather (a transposed B, an im2col window): about
  // a third slower than vector loads, which backends' estimates count (NativeBackend::Estimate).
  bool gathers_b = false;
  // Arguments bound to a constant the generator lays out anew (a CPU convolution's filters,
  // packed by output-channel blocks): arg index and the packing, run once when lowered (not
  // when a backend only asks for support or cost); the value's own contents are not uploaded
  // unless another kernel reads them.
  struct PackedArg {
    size_t arg = 0;
    std::function<ConstTensorPtr()> pack;
  };
  std::vector<PackedArg> packed;
  // A library routine instead of a kernel (runtime/library_call.h): name, source and sizes are
  // unused; args are the routine's buffers.
  std::string call;
  std::vector<int64_t> call_args;
};

// Fills a kernel template (src/codegen/opencl/kernels/NAME.cl) with parameters.
class KernelSource {
 public:
  KernelSource(std::string kernel_name, std::string_view template_name);
  // key may be a function-like macro: "BIAS(oc)".
  KernelSource& Define(const std::string& key, const std::string& value);
  KernelSource& Define(const std::string& key, int64_t value);
  // Code placed after the defines, before the template (helper functions; their names must
  // contain the kernel name to stay unique in the program).
  KernelSource& Prelude(const std::string& code);
  std::string Render() const;
  // The same parameters for another kernel from another template (a family's second kernel).
  KernelSource& Retarget(std::string kernel_name, std::string_view template_name);

 private:
  std::string name_;
  const char* template_;
  std::vector<std::pair<std::string, std::string>> defines_;
  std::string prelude_;
};

// OpenCL C literal for a float value ("1.5f", "INFINITY", "NAN").
std::string FloatLiteral(double v);

}  // namespace texel::codegen
