func.func @f(%a: memref<4xi1>, %o: memref<4xi1>) {
  %0 = bufferization.to_tensor %a : memref<4xi1>
  %e = tensor.empty() : tensor<4xi1>
  %1 = linalg.add ins(%0, %0 : tensor<4xi1>, tensor<4xi1>) outs(%e : tensor<4xi1>) -> tensor<4xi1>
  bufferization.materialize_in_destination %1 in %o : (tensor<4xi1>, memref<4xi1>) -> ()
  return
}