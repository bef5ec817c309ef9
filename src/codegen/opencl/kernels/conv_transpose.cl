// Transposed convolution over 3 spatial dims (2-D and 1-D run with a depth and height of 1),
// NCDHW activations, weights [IC, OC_PER_G, KD, KH, KW], groups, dilation and (possibly
// negative) pads. Gather form: output element (od, oh, ow) sums x at the input positions i with
// o + P - k * DIL = i * S along each axis, where divisible and inside the input.
// One work-item per output element: dim 0 along the output row, dim 1 over OD * OH, dim 2 over
// N * OC.
// Parameters: KERNEL_NAME, N, IC, ID, IH, IW, OC, OD, OH, OW, KD, KH, KW, SD, SH, SW,
// PD, PH, PW (begin pads), DD, DH, DW, IC_PER_G, OC_PER_G, T / T_STORE / LOAD / STORE
// (element storage), BIAS_PARAM (", __global const T_STORE* bias_p" or empty), BIAS(c) (initial
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
  const int ocg = oc % OC_PER_G;
  T acc = BIAS(oc);
  // Along each axis, t = o + P - k * DIL decreases with k: once negative, it stays so.
  for (int ic = g * IC_PER_G; ic < (g + 1) * IC_PER_G; ++ic) {
    const long xp = (long)(n * IC + ic) * ID * IH * IW;
    const long wp = (long)(ic * OC_PER_G + ocg) * KD * KH * KW;
    for (int kd = 0; kd < KD; ++kd) {
      const int td = od + PD - kd * DD;
      if (td < 0) break;
      if (td % SD != 0 || td / SD >= ID) continue;
      const int id = td / SD;
      for (int kh = 0; kh < KH; ++kh) {
        const int th = oh + PH - kh * DH;
        if (th < 0) break;
        if (th % SH != 0 || th / SH >= IH) continue;
        const long xr = xp + (id * IH + th / SH) * IW;
        const long wr = wp + (kd * KH + kh) * KW;
        for (int kw = 0; kw < KW; ++kw) {
          const int tw = ow + PW - kw * DW;
          if (tw < 0) break;
          if (tw % SW == 0 && tw / SW < IW) acc += LOAD(x, xr + tw / SW) * LOAD(w, wr + kw);
        }
      }
    }
  }
  const long i = ((long)z * OD * OH + odh) * OW + ow;
  STORE(out, i, EPILOGUE(acc, i));
}
