func.func @f(%a: memref<4xf32>, %o: memref<4xf32>) {
  %0 = bufferization.to_tensor %a : memref<4xf32>
  %1 = linalg.generic {indexing_maps = [#m, #m], iterator_types = ["parallel"]} ins(%0 : tensor<4xf32>) outs(%0 : tensor<4xf32>) {
  ^bb0(%in: f32, %out: f32):
    linalg.yield %in : f32
  } -> tensor<4xf32>
  bufferization.materialize_in_destination %1 in %o : (tensor<4xf32>, memref<4xf32>) -> ()
  return
}