// leading comment
#map = affine_map<(d0) -> (d0)>
!t = tensor<32xf32>
module @m attributes {torch.debug_module_name = "M"} {
  func.func @f(%x: !t loc(#loc), %y: tensor<32xf32> {bufferization.writable = true},
               %v: tensor<4xf32>) -> (tensor<32xf32>, tensor<32xf32>, tensor<4xf32>)
      attributes {llvm.emit_c_interface} {
    %c = arith.constant dense<2.000000e+00> : tensor<32xf32>  // a splat
    %0 = linalg.generic {indexing_maps = [#map, #map, #map], iterator_types = ["parallel"]}
        ins(%x, %c : !t, !t) outs(%y : !t) attrs = {some.mark} {
    ^bb0(%in: f32, %in_0: f32, %out: f32):
      %1 = arith.mulf %in, %in_0 : f32
      %2 = arith.addf %1, %out : f32
      linalg.yield %2 : f32
    } -> !t loc(#loc)
    %3 = linalg.mul ins(%0, %x : !t, !t) outs(%y : !t) -> !t
    %d = arith.constant dense<[1.0, -2.0, 3.5, 0x40800000]> : tensor<4xf32>
    %e = tensor.empty() : tensor<4xf32>
    %4 = linalg.add ins(%v, %d : tensor<4xf32>, tensor<4xf32>) outs(%e : tensor<4xf32>)
        -> tensor<4xf32>
    func.return %0, %3, %4 : tensor<32xf32>, tensor<32xf32>, tensor<4xf32>
  } loc(#loc)
}
#loc = loc("model.py":3:1)
