#id = affine_map<(d0, d1) -> (d0, d1)>
#t = affine_map<(d0, d1) -> (d1, d0)>
func.func @f(%a: memref<4x4xf32>, %o: memref<4x4xf32>) {
  %0 = bufferization.to_tensor %a : memref<4x4xf32>
  %e = tensor.empty() : tensor<4x4xf32>
  %1 = linalg.generic {indexing_maps = [#id, #t], iterator_types = ["parallel", "parallel"]} ins(%0 : tensor<4x4xf32>) outs(%e : tensor<4x4xf32>) {
  ^bb0(%in: f32, %out: f32):
    linalg.yield %in : f32
  } -> tensor<4x4xf32>
  bufferization.materialize_in_destination %1 in %o : (tensor<4x4xf32>, memref<4x4xf32>) -> ()
  return
}