
func.func @mm(%a: memref<12x20xf32>, %b: memref<20x16xf32>, %at: memref<20x12xf32>,
              %ba: memref<3x12x20xf32>, %bt: memref<3x16x20xf32>, %bk: memref<3x20x12xf32>,
              %bb: memref<3x20x16xf32>, %acc: memref<12x16xf32>, %o1: memref<12x16xf32>,
              %o2: memref<3x12x16xf32>, %o3: memref<12x16xf32>, %o4: memref<12x16xf32>,
              %o5: memref<3x12x16xf32>) {
  %0 = bufferization.to_tensor %a : memref<12x20xf32>
  %1 = bufferization.to_tensor %b : memref<20x16xf32>
  %2 = bufferization.to_tensor %at : memref<20x12xf32>
  %3 = bufferization.to_tensor %ba : memref<3x12x20xf32>
  %4 = bufferization.to_tensor %bt : memref<3x16x20xf32>
  %5 = bufferization.to_tensor %acc : memref<12x16xf32>
  %6 = bufferization.to_tensor %bk : memref<3x20x12xf32>
  %7 = bufferization.to_tensor %bb : memref<3x20x16xf32>
  %e = tensor.empty() : tensor<12x16xf32>
  %r1 = linalg.matmul_transpose_a ins(%2, %1 : tensor<20x12xf32>, tensor<20x16xf32>)
          outs(%e : tensor<12x16xf32>) -> tensor<12x16xf32>
  bufferization.materialize_in_destination %r1 in writable %o1
      : (tensor<12x16xf32>, memref<12x16xf32>) -> ()
  %splat = arith.constant dense<-1.500000e+00> : tensor<3x12x16xf32>
  %r2 = linalg.batch_matmul_transpose_b ins(%3, %4 : tensor<3x12x20xf32>, tensor<3x16x20xf32>)
          outs(%splat : tensor<3x12x16xf32>) -> tensor<3x12x16xf32>
  bufferization.materialize_in_destination %r2 in writable %o2
      : (tensor<3x12x16xf32>, memref<3x12x16xf32>) -> ()
  %r3 = linalg.matmul ins(%0, %1 : tensor<12x20xf32>, tensor<20x16xf32>)
          outs(%5 : tensor<12x16xf32>) -> tensor<12x16xf32>
  bufferization.materialize_in_destination %r3 in writable %o3
      : (tensor<12x16xf32>, memref<12x16xf32>) -> ()
  %r4 = linalg.matmul ins(%0, %1 : tensor<12x20xf32>, tensor<20x16xf32>)
          outs(%r3 : tensor<12x16xf32>) -> tensor<12x16xf32>
  bufferization.materialize_in_destination %r4 in writable %o4
      : (tensor<12x16xf32>, memref<12x16xf32>) -> ()
  %e3 = tensor.empty() : tensor<3x12x16xf32>
  %r5 = linalg.batch_matmul_transpose_a ins(%6, %7 : tensor<3x20x12xf32>, tensor<3x20x16xf32>)
          outs(%e3 : tensor<3x12x16xf32>) -> tensor<3x12x16xf32>
  bufferization.materialize_in_destination %r5 in writable %o5
      : (tensor<3x12x16xf32>, memref<3x12x16xf32>) -> ()
  return
}