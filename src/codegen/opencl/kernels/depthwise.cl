// Depthwise convolution (one filter per channel: group == IC == OC) over 3 spatial dims, NCDHW,
// OX adjacent outputs of a row per work-item: dim 0 along the output row (adjacent work-items
// read adjacent inputs), dim 1 over OD * OH, dim 2 over N * C. A work-item reads the SPAN inputs
// its OX windows cover in each row once (3x3 windows at stride 1: 6 loads for 4 outputs, not 12).
// Parameters: KERNEL_NAME, C, ID, IH, IW, OD, OH, OW, KD, KH, KW, SD, SH, SW, PD, PH, PW (begin
// pads), DD, DH, DW, OX, T / T_STORE / LOAD / STORE (element storage), BIAS_PARAM, BIAS(c),
// EPILOGUE(v, i) / EPILOGUE_PARAMS (fused elementwise ops on each result).
#define SPAN ((OX - 1) * SW + (KW - 1) * DW + 1)

__kernel void KERNEL_NAME(__global const T_STORE* x, __global const T_STORE* w BIAS_PARAM,
                          __global T_STORE* out EPILOGUE_PARAMS) {
  const int ow0 = get_global_id(0) * OX;
  const int odh = get_global_id(1);
  const int z = get_global_id(2);
  if (ow0 >= OW || odh >= OD * OH) return;
  const int oh = odh % OH;
  const int od = odh / OH;
  const int c = z % C;
  const long base = (long)z * ID * IH * IW;
  const int wbase = c * KD * KH * KW;
  T acc[OX];
#pragma unroll
  for (int e = 0; e < OX; ++e) acc[e] = BIAS(c);
  const int id0 = od * SD - PD, ih0 = oh * SH - PH, iw0 = ow0 * SW - PW;
#pragma unroll
  for (int kd = 0; kd < KD; ++kd) {
    const int id = id0 + kd * DD;
    if (id < 0 || id >= ID) continue;
#pragma unroll
    for (int kh = 0; kh < KH; ++kh) {
      const int ih = ih0 + kh * DH;
      if (ih < 0 || ih >= IH) continue;
      const long xr = base + (long)(id * IH + ih) * IW;
      T xs[SPAN];
#pragma unroll
      for (int j = 0; j < SPAN; ++j) {
        bool used = false;  // a dilated window skips inputs (folded once unrolled)
#pragma unroll
        for (int e = 0; e < OX; ++e)
#pragma unroll
          for (int kw = 0; kw < KW; ++kw) used = used || e * SW + kw * DW == j;
        const int iw = iw0 + j;
        xs[j] = used && iw >= 0 && iw < IW ? LOAD(x, xr + iw) : (T)0;
      }
#pragma unroll
      for (int kw = 0; kw < KW; ++kw) {
        const T wv = LOAD(w, wbase + (kd * KH + kh) * KW + kw);
#pragma unroll
        for (int e = 0; e < OX; ++e) acc[e] = wv * xs[e * SW + kw * DW] + acc[e];
      }
    }
  }
  const long i = ((long)z * OD * OH + odh) * OW + ow0;
#pragma unroll
  for (int e = 0; e < OX; ++e)
    if (ow0 + e < OW) STORE(out, i + e, EPILOGUE(acc[e], i + e));
}
#undef SPAN
