
#id = affine_map<(d0, d1) -> (d0, d1)>
#tr = affine_map<(d0, d1) -> (d1, d0)>
#row = affine_map<(d0, d1) -> (d0)>
#scalar = affine_map<(d0, d1) -> ()>
#first = affine_map<(d0, d1) -> (0, d1)>
#id3 = affine_map<(d0, d1, d2) -> (d0, d1, d2)>
#perm3 = affine_map<(d0, d1, d2) -> (d2, d0)>
func.func @bodies(%xa: memref<8x16xf32>, %ta: memref<16x8xf32>, %va: memref<8xf32>,
                  %ha: memref<1x16xf32>, %oa: memref<8x16xf32>, %ra: memref<4x8x16xf32>,
                  %pa: memref<16x4xf32>, %y1: memref<8x16xf32>, %y2: memref<8x16xf32>,
                  %y3: memref<8x16xf32>, %y4: memref<4x8x16xf32>) {
  %x = bufferization.to_tensor %xa : memref<8x16xf32>
  %t = bufferization.to_tensor %ta : memref<16x8xf32>
  %v = bufferization.to_tensor %va : memref<8xf32>
  %h = bufferization.to_tensor %ha : memref<1x16xf32>
  %o = bufferization.to_tensor %oa : memref<8x16xf32>
  %r = bufferization.to_tensor %ra : memref<4x8x16xf32>
  %p = bufferization.to_tensor %pa : memref<16x4xf32>
  %two = arith.constant 2.000000e+00 : f32
  %nan = arith.constant 0x7FC00000 : f32
  %e = tensor.empty() : tensor<8x16xf32>
  // y1 = min((x * t^T + v[i]) / 2 - o, h[0, j] + 1)
  %1 = linalg.generic {indexing_maps = [#id, #tr, #row, #scalar, #first, #id],
                       iterator_types = ["parallel", "parallel"]}
      ins(%x, %t, %v, %two, %h : tensor<8x16xf32>, tensor<16x8xf32>, tensor<8xf32>, f32,
          tensor<1x16xf32>) outs(%o : tensor<8x16xf32>) {
  ^bb0(%a: f32, %b: f32, %c: f32, %s: f32, %hh: f32, %out: f32):
    %m = arith.mulf %a, %b : f32
    %n = arith.addf %m, %c fastmath<fast> : f32
    %d = arith.divf %n, %s : f32
    %u = arith.subf %d, %out : f32
    %one = arith.constant 1.000000e+00 : f32
    %k = arith.addf %hh, %one : f32
    %res = arith.minimumf %u, %k : f32
    linalg.yield %res : f32
  } -> tensor<8x16xf32>
  bufferization.materialize_in_destination %1 in writable %y1
      : (tensor<8x16xf32>, memref<8x16xf32>) -> ()
  // y2 = 3 * max(x, o) + min(x, o), through comparisons, selects and NaN rules
  %2 = linalg.generic {indexing_maps = [#id, #id, #id],
                       iterator_types = [#linalg.iterator_type<parallel>,
                                         #linalg.iterator_type<parallel>]}
      ins(%x, %o : tensor<8x16xf32>, tensor<8x16xf32>) outs(%e : tensor<8x16xf32>) {
  ^bb0(%a2: f32, %b2: f32, %out2: f32):
    %gt = arith.cmpf ogt, %a2, %b2 : f32
    %mx = arith.select %gt, %a2, %b2 : f32
    %un = arith.cmpf uno, %a2, %nan : f32
    %keep = arith.select %un, %mx, %a2 : f32
    %le = arith.cmpf ole, %a2, %b2 : f32
    %mn = arith.select %le, %a2, %b2 : f32
    %nn = arith.maxnumf %mn, %nan : f32
    %nm = arith.minnumf %nan, %keep : f32
    %three = arith.constant 3.000000e+00 : f32
    %t3 = arith.mulf %nm, %three : f32
    %sum = arith.addf %t3, %nn : f32
    %ne = arith.cmpf une, %a2, %a2 : f32
    %neg = arith.negf %sum : f32
    %res2 = arith.select %ne, %neg, %sum : f32
    %ug = arith.cmpf uge, %nan, %a2 : f32
    %res3 = arith.select %ug, %res2, %neg : f32
    linalg.yield %res3 : f32
  } -> tensor<8x16xf32>
  bufferization.materialize_in_destination %2 in writable %y2
      : (tensor<8x16xf32>, memref<8x16xf32>) -> ()
  // y3 = ((-log|x| + sqrt|x| + tanh x) * exp x + erf x + floor x - ceil x + sin x) * cos x
  //      + rsqrt|x| + |x|^x
  %3 = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%x : tensor<8x16xf32>) outs(%e : tensor<8x16xf32>) {
  ^bb0(%a3: f32, %out3: f32):
    %ab = math.absf %a3 : f32
    %lg = math.log %ab : f32
    %sq = math.sqrt %ab : f32
    %th = math.tanh %a3 : f32
    %ex = math.exp %a3 : f32
    %er = math.erf %a3 : f32
    %fl = math.floor %a3 : f32
    %ce = math.ceil %a3 : f32
    %sn = math.sin %a3 : f32
    %cs = math.cos %a3 : f32
    %rs = math.rsqrt %ab : f32
    %pw = math.powf %ab, %a3 : f32
    %ng = arith.negf %lg : f32
    %s1 = arith.addf %ng, %sq : f32
    %s2 = arith.addf %s1, %th : f32
    %s3 = arith.mulf %s2, %ex : f32
    %s4 = arith.addf %s3, %er : f32
    %s5 = arith.addf %s4, %fl : f32
    %s6 = arith.subf %s5, %ce : f32
    %s7 = arith.addf %s6, %sn : f32
    %s8 = arith.mulf %s7, %cs : f32
    %s9 = arith.addf %s8, %rs : f32
    %s10 = arith.addf %s9, %pw : f32
    linalg.yield %s10 : f32
  } -> tensor<8x16xf32>
  bufferization.materialize_in_destination %3 in writable %y3
      : (tensor<8x16xf32>, memref<8x16xf32>) -> ()
  // y4[i, j, k] = r[i, j, k] * p[k, i] - p[k, i]
  %e3 = tensor.empty() : tensor<4x8x16xf32>
  %4 = linalg.generic {indexing_maps = [#id3, #perm3, #id3],
                       iterator_types = ["parallel", "parallel", "parallel"]}
      ins(%r, %p : tensor<4x8x16xf32>, tensor<16x4xf32>) outs(%e3 : tensor<4x8x16xf32>) {
  ^bb0(%a4: f32, %b4: f32, %out4: f32):
    %m4 = arith.mulf %a4, %b4 : f32
    %d4 = arith.subf %m4, %b4 : f32
    linalg.yield %d4 : f32
  } -> tensor<4x8x16xf32>
  bufferization.materialize_in_destination %4 in writable %y4
      : (tensor<4x8x16xf32>, memref<4x8x16xf32>) -> ()
  return
}