// What every frontend (ONNX, linalg) takes besides the model: shapes fixed for graph inputs and
// inputs bound to values at compile time.
#pragma once

#include <map>
#include <string>

#include "core/shape.h"
#include "core/tensor.h"

namespace texel::frontend {

struct ImportOptions {
  std::map<std::string, Shape> input_shapes;  // override / fix dims of graph inputs
  // Graph inputs bound to values at compile time (they become constants). The harness and
  // users (--freeze) use this for inputs that decide shapes, such as a Reshape target.
  std::map<std::string, HostTensor> frozen_inputs;
};

}  // namespace texel::frontend
