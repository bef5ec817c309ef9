// Depthwise convolution (one filter per channel: groups == input channels == output channels)
// for CPUs, where the implicit GEMM would be M = 1 rows of gathered columns. One work-item per
// output; PoCL vectorizes across the 16 work-items of a group along the output row, whose
// inputs lie next to each other. Padding reads a clamped (valid) address and multiplies by
// zero, which keeps the inner loop free of branches.
// Parameters: KERNEL_NAME, T / T_STORE / LOAD / STORE, C (channels), the window macros (ID, IH,
// IW, OD, OH, OW, KD, KH, KW, SD, SH, SW, PD, PH, PW, DD, DH, DW; window.h), BIAS_PARAM,
// BIAS(c), EPILOGUE(v, i), EPILOGUE_PARAMS.
__kernel void KERNEL_NAME(__global const T_STORE* restrict x, __global const T_STORE* restrict w
                              BIAS_PARAM,
                          __global T_STORE* restrict out EPILOGUE_PARAMS) {
  const int ow = get_global_id(0);
  const int odh = get_global_id(1);
  const int z = get_global_id(2);  // image * C + channel
  if (ow >= OW) return;
  const int oh = odh % OH, od = odh / OH, c = z % C;
  T acc = 0;
  for (int kd = 0; kd < KD; ++kd) {
    const int id = od * SD - PD + kd * DD;
    if (id < 0 || id >= ID) continue;
    for (int kh = 0; kh < KH; ++kh) {
      const int ih = oh * SH - PH + kh * DH;
      if (ih < 0 || ih >= IH) continue;
      const long row = (((long)z * ID + id) * IH + ih) * IW;
      for (int kw = 0; kw < KW; ++kw) {
        const int iw = ow * SW - PW + kw * DW;
        const T in = iw >= 0 && iw < IW ? (T)1 : (T)0;
        acc = mad(LOAD(w, ((c * KD + kd) * KH + kh) * KW + kw) * in,
                  LOAD(x, row + clamp(iw, 0, IW - 1)), acc);
      }
    }
  }
  const long o = ((long)z * OD * OH + odh) * OW + ow;
  STORE(out, o, EPILOGUE(acc + BIAS(c), o));
}
