// Depthwise convolution (one filter per channel: group == IC == OC) over 3 spatial dims, NCDHW,
// one output element per work-item: dim 0 along the output row (adjacent work-items read
// adjacent inputs), dim 1 over OD * OH, dim 2 over N * C.
// Parameters: KERNEL_NAME, C, ID, IH, IW, OD, OH, OW, KD, KH, KW, SD, SH, SW, PD, PH, PW (begin
// pads), DD, DH, DW, T / T_STORE / LOAD / STORE (element storage), BIAS_PARAM, BIAS(c),
// EPILOGUE(v, i) / EPILOGUE_PARAMS (fused elementwise ops on each result).
__kernel void KERNEL_NAME(__global const T_STORE* x, __global const T_STORE* w BIAS_PARAM,
                          __global T_STORE* out EPILOGUE_PARAMS) {
  const int ow = get_global_id(0);
  const int odh = get_global_id(1);
  const int z = get_global_id(2);
  if (ow >= OW || odh >= OD * OH) return;
  const int oh = odh % OH;
  const int od = odh / OH;
  const int c = z % C;
  const long base = (long)z * ID * IH * IW;
  const int wbase = c * KD * KH * KW;
  T acc = BIAS(c);
  const int id0 = od * SD - PD, ih0 = oh * SH - PH, iw0 = ow * SW - PW;
#pragma unroll
  for (int kd = 0; kd < KD; ++kd) {
    const int id = id0 + kd * DD;
    if (id < 0 || id >= ID) continue;
#pragma unroll
    for (int kh = 0; kh < KH; ++kh) {
      const int ih = ih0 + kh * DH;
      if (ih < 0 || ih >= IH) continue;
      const long xr = base + (long)(id * IH + ih) * IW;
#pragma unroll
      for (int kw = 0; kw < KW; ++kw) {
        const int iw = iw0 + kw * DW;
        if (iw >= 0 && iw < IW)
          acc = LOAD(w, wbase + (kd * KH + kh) * KW + kw) * LOAD(x, xr + iw) + acc;
      }
    }
  }
  const long i = ((long)z * OD * OH + odh) * OW + ow;
  STORE(out, i, EPILOGUE(acc, i));
}
