// 2-D max, average or sum pooling over an NCHW4c texture: one output texel (4 channels of one
// pixel) per work-item. Out-of-range rows and columns are skipped (a border zero would be a
// value to a maximum). Reductions over H and W (ReduceMax / ReduceMean / ReduceSum keeping
// them, GlobalAveragePool) are the window of the whole image.
// Parameters: KERNEL_NAME; READ_TEXEL(img, pos); PARAMS (x, out, extra operands); C4; IH, IW, OH, OW, KH, KW,
// SH, SW, PH, PW, DH, DW, PH_END, PW_END; MAX (1: max, 0: sum); AVERAGE (1: the sum divided,
// over the window clipped to the padded input with INCLUDE_PAD, else over the valid
// positions); STORE_TEXEL(acc, n, c4, h, w).
__kernel void KERNEL_NAME(PARAMS) {
  const int ow = get_global_id(0), oh = get_global_id(1), z = get_global_id(2);
  if (ow >= OW || oh >= OH) return;
  const int n = z / C4, c4 = z % C4;
  const int ih0 = oh * SH - PH, iw0 = ow * SW - PW;
  float4 acc = MAX ? (float4)(-INFINITY) : (float4)(0.0f);
  int count = 0;
  for (int kh = 0; kh < KH; ++kh) {
    const int ih = ih0 + kh * DH;
    if (ih < 0 || ih >= IH) continue;
    for (int kw = 0; kw < KW; ++kw) {
      const int iw = iw0 + kw * DW;
      if (iw < 0 || iw >= IW) continue;
      const float4 v = READ_TEXEL(x, (int2)(iw, (n * C4 + c4) * IH + ih));
      acc = MAX ? fmax(acc, v) : acc + v;
      ++count;
    }
  }
#if AVERAGE
  const int hs = max(ih0, -PH), he = min(ih0 + (KH - 1) * DH + 1, IH + PH_END);
  const int ws = max(iw0, -PW), we = min(iw0 + (KW - 1) * DW + 1, IW + PW_END);
  const int padded = ((he - hs + DH - 1) / DH) * ((we - ws + DW - 1) / DW);
  acc /= (float)(INCLUDE_PAD ? padded : count);
#endif
  STORE_TEXEL(acc, n, c4, oh, ow);
}
