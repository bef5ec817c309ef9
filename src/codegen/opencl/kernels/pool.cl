// Max / average pooling over 3 spatial dims (2-D and 1-D run with a depth and height of 1),
// NCDHW. One work-item per output element: dim 0 along the output row, dim 1 over OD * OH,
// dim 2 over N * C.
// Parameters: KERNEL_NAME, NC (N*C), ID, IH, IW, OD, OH, OW, KD, KH, KW, SD, SH, SW,
// PD, PH, PW (begin pads), DD, DH, DW, PD_END, PH_END, PW_END (end pads, for
// count_include_pad windows), T / T_STORE / LOAD (input storage), T_OUT / STORE_OUT(p, i, v)
// (output storage), INIT (accumulator start),
// ACC(acc, arg, v, at) (arg: where the max was, for MaxPool's Indices; at: the flat input index
// of v from AT(base, id, ih, iw)), FINISH(acc, arg, count, padded_count), EPILOGUE(v, i) /
// EPILOGUE_PARAMS (fused elementwise ops on each result).
__kernel void KERNEL_NAME(__global const T_STORE* x, __global T_OUT* out EPILOGUE_PARAMS) {
  const int ow = get_global_id(0);
  const int odh = get_global_id(1);
  const int z = get_global_id(2);
  if (ow >= OW || odh >= OD * OH || z >= NC) return;
  const int oh = odh % OH;
  const int od = odh / OH;
  const long base = (long)z * ID * IH * IW;
  T acc = INIT;
  long arg = -1;
  int count = 0;
  const int id0 = od * SD - PD;
  const int ih0 = oh * SH - PH;
  const int iw0 = ow * SW - PW;
  for (int kd = 0; kd < KD; ++kd) {
    const int id = id0 + kd * DD;
    if (id < 0 || id >= ID) continue;
    for (int kh = 0; kh < KH; ++kh) {
      const int ih = ih0 + kh * DH;
      if (ih < 0 || ih >= IH) continue;
      const long xr = base + (id * IH + ih) * IW;
      for (int kw = 0; kw < KW; ++kw) {
        const int iw = iw0 + kw * DW;
        if (iw < 0 || iw >= IW) continue;
        ACC(acc, arg, LOAD(x, xr + iw), AT(base, id, ih, iw));
        ++count;
      }
    }
  }
  // Window clipped to the padded input, for count_include_pad.
  const int ds = max(id0, -PD), de = min(id0 + (KD - 1) * DD + 1, ID + PD_END);
  const int hs = max(ih0, -PH), he = min(ih0 + (KH - 1) * DH + 1, IH + PH_END);
  const int ws = max(iw0, -PW), we = min(iw0 + (KW - 1) * DW + 1, IW + PW_END);
  const int padded_count = ((de - ds + DD - 1) / DD) * ((he - hs + DH - 1) / DH) *
                           ((we - ws + DW - 1) / DW);
  const long i = ((long)z * OD * OH + odh) * OW + ow;
  STORE_OUT(out, i, EPILOGUE(FINISH(acc, arg, count, padded_count), i));
}
