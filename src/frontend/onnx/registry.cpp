#include "frontend/onnx/registry.h"

namespace texel::onnx_frontend {

const std::map<std::string, ImportFn>& OpRegistry() {
  static const Registry registry = [] {
    Registry r;
    RegisterElementwiseOps(r);
    RegisterNnOps(r);
    RegisterShapeOps(r);
    RegisterMathOps(r);
    RegisterLossOps(r);
    RegisterResizeOps(r);
    RegisterEinsumOps(r);
    RegisterRnnOps(r);
    RegisterQuantOps(r);
    RegisterIndexingOps(r);
    RegisterControlOps(r);
    RegisterDetectionOps(r);
    return r;
  }();
  return registry;
}

}  // namespace texel::onnx_frontend
