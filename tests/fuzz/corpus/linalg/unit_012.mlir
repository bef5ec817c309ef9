
#id = affine_map<(d0, d1) -> (d0, d1)>
func.func @types(%ia: memref<6x10xi32>, %ib: memref<6x10xi32>, %la: memref<6x10xi64>,
                 %ha: memref<6x10xf16>, %hb: memref<6x10xf16>, %o1: memref<6x10xi32>,
                 %o2: memref<6x10xi64>, %o3: memref<6x10xf16>) {
  %0 = bufferization.to_tensor %ia : memref<6x10xi32>
  %1 = bufferization.to_tensor %ib : memref<6x10xi32>
  %2 = bufferization.to_tensor %la : memref<6x10xi64>
  %3 = bufferization.to_tensor %ha : memref<6x10xf16>
  %4 = bufferization.to_tensor %hb : memref<6x10xf16>
  %e = tensor.empty() : tensor<6x10xi32>
  %m = linalg.mul ins(%0, %1 : tensor<6x10xi32>, tensor<6x10xi32>) outs(%e : tensor<6x10xi32>)
      -> tensor<6x10xi32>
  %mx = linalg.max ins(%m, %0 : tensor<6x10xi32>, tensor<6x10xi32>) outs(%e : tensor<6x10xi32>)
      -> tensor<6x10xi32>
  bufferization.materialize_in_destination %mx in writable %o1
      : (tensor<6x10xi32>, memref<6x10xi32>) -> ()
  %c3 = arith.constant 3 : i64
  %e64 = tensor.empty() : tensor<6x10xi64>
  %g = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%2 : tensor<6x10xi64>) outs(%e64 : tensor<6x10xi64>) {
  ^bb0(%a: i64, %out: i64):
    %t = arith.muli %a, %c3 : i64
    %lt = arith.cmpi slt, %a, %c3 : i64
    %s = arith.subi %t, %a : i64
    %r = arith.select %lt, %t, %s : i64
    linalg.yield %r : i64
  } -> tensor<6x10xi64>
  bufferization.materialize_in_destination %g in writable %o2
      : (tensor<6x10xi64>, memref<6x10xi64>) -> ()
  %e16 = tensor.empty() : tensor<6x10xf16>
  %h = linalg.add ins(%3, %4 : tensor<6x10xf16>, tensor<6x10xf16>) outs(%e16 : tensor<6x10xf16>)
      -> tensor<6x10xf16>
  bufferization.materialize_in_destination %h in writable %o3
      : (tensor<6x10xf16>, memref<6x10xf16>) -> ()
  return
}