// Depthwise convolution and max pooling for CPUs, vectorised along the output row
// (window_rows.h): a work-item computes RH output rows of one channel plane, VW adjacent
// outputs at a time as one vector. Each filter tap loads the VW inputs it meets as one vector
// (stride 1: contiguous; stride 2: the even elements of two vectors; else gathered) and
// combines it with the tap's weight (depthwise) or takes the maximum (pooling). Blocks whose
// window stays inside the row load without bounds checks; the others first copy the SPAN
// (= VW * SW + (KW - 1) * DW) inputs they meet into registers, PAD beyond the row.
// Parameters: KERNEL_NAME; T, T_STORE, LOAD, STORE (f32); TV (float VW), VW, VLOAD(p), SPAN, RH, C (channels),
// NC (images x channels); the window macros (window.h); INIT (accumulator start), PAD (what lies
// beyond the input), ACC(acc, v, c, tap) (tap: kd, kh, kw flattened), WEIGHT_PARAM, BIAS_PARAM,
// BIAS(c); EPILOGUE(v, i), EPILOGUE_PARAMS.
#if SW == 1
#define LOADV(p, i) VLOAD((p) + (i))
#elif SW == 2
#define LOADV(p, i) ((TV)(VLOAD((p) + (i)).even, VLOAD((p) + (i) + VW).even))
#endif
__attribute__((reqd_work_group_size(1, 1, 1))) __kernel void KERNEL_NAME(
    __global const T_STORE* restrict x WEIGHT_PARAM BIAS_PARAM,
    __global T_STORE* restrict out EPILOGUE_PARAMS) {
  const int z = get_global_id(1);  // image * C + channel
  const int c = z % C;
  const int r0 = get_global_id(0) * RH;
  const __global T_STORE* restrict xp = x + (long)z * ID * IH * IW;
  for (int odh = r0; odh < min(r0 + RH, OD * OH); ++odh) {
    const int oh = odh % OH, od = odh / OH;
    for (int ow0 = 0; ow0 < OW; ow0 += VW) {
      const int iw0 = ow0 * SW - PW;
      const bool inside = iw0 >= 0 && iw0 + (KW - 1) * DW + SW * VW <= IW;
      TV acc = (TV)(INIT);
      for (int kd = 0; kd < KD; ++kd) {
        const int id = od * SD - PD + kd * DD;
        if (id < 0 || id >= ID) continue;
        for (int kh = 0; kh < KH; ++kh) {
          const int ih = oh * SH - PH + kh * DH;
          if (ih < 0 || ih >= IH) continue;
          const __global T_STORE* restrict row = xp + ((long)id * IH + ih) * IW;
#ifdef LOADV
          if (inside) {
            for (int kw = 0; kw < KW; ++kw)
              acc = ACC(acc, LOADV(row, iw0 + kw * DW), c, (kd * KH + kh) * KW + kw);
            continue;
          }
#endif
          // Near the row's ends: the inputs this block meets, PAD outside, copied once.
          T span[SPAN];
#pragma unroll
          for (int i = 0; i < SPAN; ++i)
            span[i] = iw0 + i >= 0 && iw0 + i < IW ? LOAD(row, iw0 + i) : (T)(PAD);
          for (int kw = 0; kw < KW; ++kw) {
            TV v;
#ifdef LOADV
            v = LOADV(span, kw * DW);
#else
#pragma unroll
            for (int e = 0; e < VW; ++e) ELEM(v, e) = span[e * SW + kw * DW];
#endif
            acc = ACC(acc, v, c, (kd * KH + kh) * KW + kw);
          }
        }
      }
      const T bias = BIAS(c);
      const long o = ((long)z * OD * OH + odh) * OW + ow0;
#pragma unroll
      for (int e = 0; e < VW; ++e) {
        if (ow0 + e >= OW) break;
        STORE(out, o + e, EPILOGUE(ELEM(acc, e) + bias, o + e));
      }
    }
  }
}
#undef LOADV
