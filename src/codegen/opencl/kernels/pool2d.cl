// 2-D max / average pooling over NCHW. One work-item per output element.
// Parameters: KERNEL_NAME, NC (N*C), IH, IW, OH, OW, KH, KW, SH, SW, PH, PW, DH, DW,
// INIT (accumulator start), ACC(acc, v), FINISH(acc, count, padded_count),
// PH_END, PW_END (end pads, for count_include_pad windows).
__kernel void KERNEL_NAME(__global const float* x, __global float* out) {
  const int ow = get_global_id(0);
  const int oh = get_global_id(1);
  const int z = get_global_id(2);
  if (ow >= OW || oh >= OH || z >= NC) return;
  const __global float* xp = x + (long)z * IH * IW;
  float acc = INIT;
  int count = 0;
  const int ih0 = oh * SH - PH;
  const int iw0 = ow * SW - PW;
  for (int kh = 0; kh < KH; ++kh) {
    const int ih = ih0 + kh * DH;
    if (ih < 0 || ih >= IH) continue;
    for (int kw = 0; kw < KW; ++kw) {
      const int iw = iw0 + kw * DW;
      if (iw < 0 || iw >= IW) continue;
      ACC(acc, xp[ih * IW + iw]);
      ++count;
    }
  }
  // Window clipped to the padded input, for count_include_pad.
  const int hs = max(ih0, -PH), he = min(ih0 + (KH - 1) * DH + 1, IH + PH_END);
  const int ws = max(iw0, -PW), we = min(iw0 + (KW - 1) * DW + 1, IW + PW_END);
  const int padded_count = ((he - hs + DH - 1) / DH) * ((we - ws + DW - 1) / DW);
  out[((long)z * OH + oh) * OW + ow] = FINISH(acc, count, padded_count);
}
