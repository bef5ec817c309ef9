// Importer helpers of ops_nn.cpp shared with other op families (the integer and quantised
// convolutions of ops_quant.cpp).
#pragma once

#include "frontend/onnx/node_importer.h"

namespace texel::onnx_frontend {

// A core Conv of x and w (and bias b, may be null) with the node's Conv attributes (kernel_shape,
// strides, dilations, pads, auto_pad, group), checked against the shapes of x and w.
ir::Value* EmitConv(NodeImporter& n, ir::Value* x, ir::Value* w, ir::Value* b);

}  // namespace texel::onnx_frontend
