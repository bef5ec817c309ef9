func.func @f(%arg0: memref<4x8xf32>, %arg1: memref<8x6xf32>, %arg2: memref<4x6xf32>) {
  %0 = bufferization.to_tensor %arg0 restrict : memref<4x8xf32>
  %1 = bufferization.to_tensor %arg1 restrict : memref<8x6xf32>
  %2 = tensor.empty() : tensor<4x6xf32>
  %cst = arith.constant 0.000000e+00 : f32
  %3 = linalg.fill ins(%cst : f32) outs(%2 : tensor<4x6xf32>) -> tensor<4x6xf32>
  %4 = linalg.matmul ins(%0, %1 : tensor<4x8xf32>, tensor<8x6xf32>) outs(%3 : tensor<4x6xf32>) -> tensor<4x6xf32>
  bufferization.materialize_in_destination %4 in restrict writable %arg2 : (tensor<4x6xf32>, memref<4x6xf32>) -> ()
  return
}
