// Registration of importer functions, one ops_*.cpp file per op family.
#pragma once

#include <map>
#include <string>

#include "frontend/onnx/node_importer.h"

namespace texel::onnx_frontend {

using Registry = std::map<std::string, ImportFn>;

void RegisterElementwiseOps(Registry& r);
void RegisterNnOps(Registry& r);
void RegisterShapeOps(Registry& r);
void RegisterMathOps(Registry& r);
void RegisterLossOps(Registry& r);
void RegisterResizeOps(Registry& r);
void RegisterEinsumOps(Registry& r);
void RegisterRnnOps(Registry& r);
void RegisterQuantOps(Registry& r);
void RegisterIndexingOps(Registry& r);
void RegisterControlOps(Registry& r);
void RegisterDetectionOps(Registry& r);

}  // namespace texel::onnx_frontend
