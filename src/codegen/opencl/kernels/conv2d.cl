// Direct 2-D convolution, NCHW activations, OIHW weights, groups and dilation.
// One work-item computes one output pixel; dim 0 runs along the output row so that
// neighbouring work-items read neighbouring inputs.
// Parameters: KERNEL_NAME, N, IC, IH, IW, OC, OH, OW, KH, KW, SH, SW, PH, PW, DH, DW,
// IC_PER_G, OC_PER_G, BIAS_PARAM (", __global const float* b" or empty),
// BIAS(oc) (initial accumulator).
__kernel void KERNEL_NAME(__global const float* x, __global const float* w BIAS_PARAM,
                          __global float* out) {
  const int ow = get_global_id(0);
  const int oh = get_global_id(1);
  const int z = get_global_id(2);
  if (ow >= OW || oh >= OH || z >= N * OC) return;
  const int oc = z % OC;
  const int n = z / OC;
  const int g = oc / OC_PER_G;
  float acc = BIAS(oc);
  const int ih0 = oh * SH - PH;
  const int iw0 = ow * SW - PW;
  for (int ic = 0; ic < IC_PER_G; ++ic) {
    const __global float* xp = x + (long)(n * IC + g * IC_PER_G + ic) * IH * IW;
    const __global float* wp = w + (long)(oc * IC_PER_G + ic) * KH * KW;
    for (int kh = 0; kh < KH; ++kh) {
      const int ih = ih0 + kh * DH;
      if (ih < 0 || ih >= IH) continue;
      for (int kw = 0; kw < KW; ++kw) {
        const int iw = iw0 + kw * DW;
        if (iw >= 0 && iw < IW) acc += xp[ih * IW + iw] * wp[kh * KW + kw];
      }
    }
  }
  out[((long)z * OH + oh) * OW + ow] = acc;
}
