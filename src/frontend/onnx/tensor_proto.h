// ONNX TensorProto <-> HostTensor, including external data files. Thread safety: pure functions.
#pragma once

#include <onnx/onnx_pb.h>

#include <string>

#include "core/tensor.h"

namespace texel::onnx_frontend {

// Maps TensorProto::DataType to DType; returns false for types texel does not hold (strings,
// complex, bfloat16).
bool DTypeFromOnnx(int onnx_type, DType* out);
const char* OnnxTypeName(int onnx_type);
// base_dir resolves external data locations. Throws Error(kInvalidModel / kNotFound /
// kUnsupported) naming the tensor.
HostTensor TensorFromProto(const onnx::TensorProto& t, const std::string& base_dir);
// Reads a serialized TensorProto file (ONNX test data input_0.pb).
HostTensor ReadTensorProtoFile(const std::string& path, std::string* name = nullptr);

}  // namespace texel::onnx_frontend
