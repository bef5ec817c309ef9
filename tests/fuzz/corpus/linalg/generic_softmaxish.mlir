// A softmax-like fragment: scores = x * w^T + 0.5 (accumulated into a non-zero fill), then
// e = exp(scores + bias[j] - shift[i]) through a linalg.generic with broadcast maps, then named
// elementwise ops; and a batched product accumulated into a tensor read from an argument.
// Outputs: %y = (max(e, exp(scores)) - scores)^2 / e, %z = a x b + c.
#id = affine_map<(d0, d1) -> (d0, d1)>
#cols = affine_map<(d0, d1) -> (d1)>
#rows = affine_map<(d0, d1) -> (d0, 0)>
module attributes {torch.debug_module_name = "Softmaxish"} {
  func.func @softmaxish(%x: memref<16x32xf32>, %w: memref<24x32xf32>, %bias: memref<24xf32>,
                        %shift: memref<16x1xf32>, %a: memref<2x16x8xf32>,
                        %b: memref<2x8x12xf32>, %c: memref<2x16x12xf32>,
                        %y: memref<16x24xf32>, %z: memref<2x16x12xf32>) {
    %0 = bufferization.to_tensor %x restrict : memref<16x32xf32>
    %1 = bufferization.to_tensor %w restrict : memref<24x32xf32>
    %2 = bufferization.to_tensor %bias restrict : memref<24xf32>
    %3 = bufferization.to_tensor %shift restrict : memref<16x1xf32>
    %empty = tensor.empty() : tensor<16x24xf32>
    %half = arith.constant 5.000000e-01 : f32
    %fill = linalg.fill ins(%half : f32) outs(%empty : tensor<16x24xf32>) -> tensor<16x24xf32>
    %scores = linalg.matmul_transpose_b ins(%0, %1 : tensor<16x32xf32>, tensor<24x32xf32>)
                outs(%fill : tensor<16x24xf32>) -> tensor<16x24xf32>
    %e = linalg.generic {indexing_maps = [#id, #cols, #rows, #id],
                         iterator_types = ["parallel", "parallel"]}
        ins(%scores, %2, %3 : tensor<16x24xf32>, tensor<24xf32>, tensor<16x1xf32>)
        outs(%empty : tensor<16x24xf32>) {
    ^bb0(%in: f32, %in_0: f32, %in_1: f32, %out: f32):
      %s = arith.addf %in, %in_0 : f32
      %t = arith.subf %s, %in_1 : f32
      %u = math.exp %t : f32
      linalg.yield %u : f32
    } -> tensor<16x24xf32>
    %es = linalg.exp ins(%scores : tensor<16x24xf32>) outs(%empty : tensor<16x24xf32>)
            -> tensor<16x24xf32>
    %m = linalg.max ins(%e, %es : tensor<16x24xf32>, tensor<16x24xf32>)
           outs(%empty : tensor<16x24xf32>) -> tensor<16x24xf32>
    %d = linalg.sub ins(%m, %scores : tensor<16x24xf32>, tensor<16x24xf32>)
           outs(%empty : tensor<16x24xf32>) -> tensor<16x24xf32>
    %sq = linalg.mul ins(%d, %d : tensor<16x24xf32>, tensor<16x24xf32>)
            outs(%empty : tensor<16x24xf32>) -> tensor<16x24xf32>
    %q = linalg.div ins(%sq, %e : tensor<16x24xf32>, tensor<16x24xf32>)
           outs(%empty : tensor<16x24xf32>) -> tensor<16x24xf32>
    bufferization.materialize_in_destination %q in restrict writable %y
        : (tensor<16x24xf32>, memref<16x24xf32>) -> ()
    %4 = bufferization.to_tensor %a restrict : memref<2x16x8xf32>
    %5 = bufferization.to_tensor %b restrict : memref<2x8x12xf32>
    %6 = bufferization.to_tensor %c restrict : memref<2x16x12xf32>
    %7 = linalg.batch_matmul ins(%4, %5 : tensor<2x16x8xf32>, tensor<2x8x12xf32>)
           outs(%6 : tensor<2x16x12xf32>) -> tensor<2x16x12xf32>
    bufferization.materialize_in_destination %7 in restrict writable %z
        : (tensor<2x16x12xf32>, memref<2x16x12xf32>) -> ()
    return
  }
}
