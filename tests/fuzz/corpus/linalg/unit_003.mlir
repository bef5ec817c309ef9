func.func @f(%o: memref<4xf32>) {
  %e = tensor.empty() : tensor<4xf32>
  %1 = linalg.exp ins(%e : tensor<4xf32>) outs(%e : tensor<4xf32>) -> tensor<4xf32>
  bufferization.materialize_in_destination %1 in %o : (tensor<4xf32>, memref<4xf32>) -> ()
  return
}