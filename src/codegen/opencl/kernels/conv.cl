// Direct convolution over 3 spatial dims (2-D and 1-D run with a depth and height of 1),
// NCDHW activations, OIDHW weights, groups and dilation.
// One work-item computes one output element; dim 0 runs along the output row so that
// neighbouring work-items read neighbouring inputs, dim 1 over OD * OH, dim 2 over N * OC.
// Parameters: KERNEL_NAME, N, IC, ID, IH, IW, OC, OD, OH, OW, KD, KH, KW, SD, SH, SW,
// PD, PH, PW (begin pads), DD, DH, DW, IC_PER_G, OC_PER_G, T / T_STORE / LOAD / STORE
// (element storage), BIAS_PARAM (", __global const T_STORE* b" or empty), BIAS(oc) (initial
// accumulator), EPILOGUE(v, i) / EPILOGUE_PARAMS (fused elementwise ops on each result).
__kernel void KERNEL_NAME(__global const T_STORE* x, __global const T_STORE* w BIAS_PARAM,
                          __global T_STORE* out EPILOGUE_PARAMS) {
  const int ow = get_global_id(0);
  const int odh = get_global_id(1);
  const int z = get_global_id(2);
  if (ow >= OW || odh >= OD * OH || z >= N * OC) return;
  const int oh = odh % OH;
  const int od = odh / OH;
  const int oc = z % OC;
  const int n = z / OC;
  const int g = oc / OC_PER_G;
  T acc = BIAS(oc);
  const int id0 = od * SD - PD;
  const int ih0 = oh * SH - PH;
  const int iw0 = ow * SW - PW;
  for (int ic = 0; ic < IC_PER_G; ++ic) {
    const long xp = (long)(n * IC + g * IC_PER_G + ic) * ID * IH * IW;
    const long wp = (long)(oc * IC_PER_G + ic) * KD * KH * KW;
    for (int kd = 0; kd < KD; ++kd) {
      const int id = id0 + kd * DD;
      if (id < 0 || id >= ID) continue;
      for (int kh = 0; kh < KH; ++kh) {
        const int ih = ih0 + kh * DH;
        if (ih < 0 || ih >= IH) continue;
        const long xr = xp + (id * IH + ih) * IW;
        const long wr = wp + (kd * KH + kh) * KW;
        for (int kw = 0; kw < KW; ++kw) {
          const int iw = iw0 + kw * DW;
          if (iw >= 0 && iw < IW) acc += LOAD(x, xr + iw) * LOAD(w, wr + kw);
        }
      }
    }
  }
  const long i = ((long)z * OD * OH + odh) * OW + ow;
  STORE(out, i, EPILOGUE(acc, i));
}
