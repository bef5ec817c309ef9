// Depthwise convolution and max pooling for CPUs, a whole output row at a time in chunks of VW
// outputs (window_rows.h, variant `shift`): a work-item computes RH output rows of one channel
// plane. For each chunk and input row it loads the input chunks the chunk's windows meet as
// vectors (PAD past the row's ends, the last partial chunk in pieces that stay inside the row),
// and each tap's inputs are those vectors' lanes shifted by the tap's offset (shuffle2 with
// constant masks; stride 2 first splits a pair of chunks into even and odd lanes). So every
// output of a row is a vector lane, none goes one at a time, and the weights of a plane are
// loaded once per tap and row. window_rows.cl's blocks near the row's ends computed one output
// per pass of the taps, which on rows of 7 or 14 outputs was half of the work-item's passes.
// Parameters: KERNEL_NAME; T, T_STORE, LOAD, STORE (f32); TV (float VW), VW, VLOAD(p), RH; C;
// the window macros (window.h); INIT, PAD, ACC(acc, v, wt), WEIGHT(i), WEIGHT_PARAM, BIAS_PARAM,
// BIAS(c); EPILOGUE(v, i), EPILOGUE_PARAMS, and VEPILOGUE(v, i), VSTORE(v, i) where the epilogue
// has a vector form (whole chunks are then stored as vectors); CHUNKS (output chunks per row); PARTIAL(p) (the row's
// last IW % VW inputs from p, PAD after); TAPS(acc, row, j, wk): the KW taps of input row `row`
// for output chunk j with the weights from index wk on (generated: each a shifted chunk and ACC,
// reading input chunks through CHUNK below).

// Input chunk k of a row: inputs k * VW to k * VW + VW - 1, PAD outside the row.
#define CHUNK(row, k)                                     \
  ((k) < 0 || (k) * VW >= IW ? (TV)(PAD)                  \
   : ((k) + 1) * VW <= IW    ? VLOAD((row) + (k) * VW)    \
                             : PARTIAL((row) + (k) * VW))

__attribute__((reqd_work_group_size(1, 1, 1))) __kernel void KERNEL_NAME(
    __global const T_STORE* restrict x WEIGHT_PARAM BIAS_PARAM,
    __global T_STORE* restrict out EPILOGUE_PARAMS) {
  const int plane = get_global_id(1);  // image * C + channel
  const int ch = plane % C, r0 = get_global_id(0) * RH;
  const __global T_STORE* restrict xp = x + (long)plane * ID * IH * IW;
  const long wp = (long)ch * KD * KH * KW;
  const T bias = BIAS(ch);
  for (int odh = r0; odh < min(r0 + RH, OD * OH); ++odh) {
    const int oh = odh % OH, od = odh / OH;
#pragma unroll
    for (int j = 0; j < CHUNKS; ++j) {
      TV acc = (TV)(INIT);
      for (int kd = 0; kd < KD; ++kd) {
        const int id = od * SD - PD + kd * DD;
        if (id < 0 || id >= ID) continue;
        for (int kh = 0; kh < KH; ++kh) {
          const int ih = oh * SH - PH + kh * DH;
          if (ih < 0 || ih >= IH) continue;
          const __global T_STORE* restrict row = xp + ((long)id * IH + ih) * IW;
          TAPS(acc, row, j, wp + (kd * KH + kh) * KW);
        }
      }
      const long o = ((long)plane * OD * OH + odh) * OW + j * VW;
#ifdef VEPILOGUE
      if (j * VW + VW <= OW) {
        VSTORE(VEPILOGUE(acc + bias, o), o);
        continue;
      }
#endif
      // Lane by lane through a copy: taking acc's address would keep it in memory throughout.
      T lanes[VW];
      VSTORE_TO(acc, lanes);
#pragma unroll
      for (int e = 0; e < VW; ++e) {
        if (j * VW + e >= OW) break;
        STORE(out, o + e, EPILOGUE(lanes[e] + bias, o + e));
      }
    }
  }
}
#undef CHUNK
