// Convolution and max pooling for CPUs, vectorised along the output row (window_rows.h,
// conv_blocked.h): a work-item computes RH output rows of WM output channels of one group, VW
// adjacent outputs at a time as one vector per channel, summing over the group's ICG input
// channels (depthwise convolution and pooling: one channel in, one out). Each filter tap loads
// the VW inputs it meets as one vector (stride 1: contiguous; stride 2: the even elements of two
// vectors; else gathered) and combines it with the tap's weight of each output channel (from
// filters packed as [G][OCB][ICG][KD][KH][KW][WM]) or takes the maximum (pooling). Blocks whose
// window stays inside the row load without bounds checks; the others first copy the SPAN
// (= VW * SW + (KW - 1) * DW) inputs they meet into registers, PAD beyond the row. Results are
// stored along the row.
// Parameters: KERNEL_NAME; T, T_STORE, LOAD, STORE (f32); TV (float VW), VW, VLOAD(p), SPAN, RH,
// WM; C (input channels), COUT, G (groups), ICG, OCG (channels per group), OCB (blocks of WM
// output channels per group); the window macros (window.h); INIT (accumulator start), PAD (what
// lies beyond the input), ACC(acc, v, wt) (wt: the tap's weight, or 0 without filters),
// WEIGHT(p) (the weight at p), WEIGHT_PARAM, BIAS_PARAM, BIAS(c); PREFETCH_AHEAD and
// PREFETCH_ROW(p, n) where defined (convolutions over several input channels: window.h
// DefineRowPrefetch); EPILOGUE(v, i),
// EPILOGUE_PARAMS, and VEPILOGUE(v, i), VSTORE(v, i) where the epilogue has a vector form (whole
// vectors are then stored as such); VSTORE_TO(v, p); EDGES (1: the vectors whose windows stay inside the row, starting from VLO
// to VHI, VECS of them, without copies near the ends, and the other outputs one at a time; 0:
// every vector from 0 on, with the copies where a window crosses an end).
#if SW == 1
#define LOADV(p, i) VLOAD((p) + (i))
#elif SW == 2
#define LOADV(p, i) ((TV)(VLOAD((p) + (i)).even, VLOAD((p) + (i) + VW).even))
#endif
__attribute__((reqd_work_group_size(1, 1, 1))) __kernel void KERNEL_NAME(
    __global const T_STORE* restrict x WEIGHT_PARAM BIAS_PARAM,
    __global T_STORE* restrict out EPILOGUE_PARAMS) {
  const int z = get_global_id(1);  // (image * G + group) * OCB + block
  const int blk = z % OCB, ng = z / OCB, g = ng % G, n = ng / G;
  const int r0 = get_global_id(0) * RH;
  const __global T_STORE* restrict xp = x + ((long)n * C + g * ICG) * ID * IH * IW;
  const long wp = (long)(g * OCB + blk) * ICG * KD * KH * KW * WM;  // this block's filters
  for (int odh = r0; odh < min(r0 + RH, OD * OH); ++odh) {
    const int oh = odh % OH, od = odh / OH;
#if EDGES
    // The outputs before VLO one at a time, vectors from VLO to VHI (the last may overlap the
    // one before: those outputs are written twice, alike), the outputs after them one at a time.
    for (int item = 0; item < VLO + VECS + OW - (VHI + VW); ++item) {
      const int vec = item - VLO, cnt = vec >= 0 && vec < VECS ? VW : 1;
      const int ow0 = vec < 0 ? item : cnt > 1 ? min(VLO + vec * VW, VHI) : VHI + VW + vec - VECS;
      const int iw0 = ow0 * SW - PW;
      const bool inside = cnt > 1;
#else
    for (int ow0 = 0; ow0 < OW; ow0 += VW) {
      const int iw0 = ow0 * SW - PW, cnt = min(VW, OW - ow0);
      const bool inside = iw0 >= 0 && iw0 + (KW - 1) * DW + SW * VW <= IW;
#endif
      TV acc[WM];
#pragma unroll
      for (int r = 0; r < WM; ++r) acc[r] = (TV)(INIT);
      for (int ic = 0; ic < ICG; ++ic)
        for (int kd = 0; kd < KD; ++kd) {
          const int id = od * SD - PD + kd * DD;
          if (id < 0 || id >= ID) continue;
          for (int kh = 0; kh < KH; ++kh) {
            const int ih = oh * SH - PH + kh * DH;
            if (ih < 0 || ih >= IH) continue;
            const __global T_STORE* restrict row = xp + (((long)ic * ID + id) * IH + ih) * IW;
            const long wk = wp + (((long)ic * KD + kd) * KH + kh) * KW * WM;
#ifdef LOADV
            if (inside) {
#ifdef PREFETCH_ROW
              if (ic + PREFETCH_AHEAD < ICG)
                PREFETCH_ROW(row + (long)PREFETCH_AHEAD * ID * IH * IW + iw0, SPAN);
#endif
              for (int kw = 0; kw < KW; ++kw) {
                const TV v = LOADV(row, iw0 + kw * DW);
#pragma unroll
                for (int r = 0; r < WM; ++r) acc[r] = ACC(acc[r], v, WEIGHT(wk + kw * WM + r));
              }
              continue;
            }
#endif
#if EDGES
            // One output: its taps inside the row (those outside are zero or -inf), in lane 0.
            for (int kw = 0; kw < KW; ++kw) {
              const int iw = iw0 + kw * DW;
              if (iw < 0 || iw >= IW) continue;
              const T v = LOAD(row, iw);
#pragma unroll
              for (int r = 0; r < WM; ++r) acc[r] = ACC(acc[r], (TV)(v), WEIGHT(wk + kw * WM + r));
            }
            continue;
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
#pragma unroll
              for (int r = 0; r < WM; ++r) acc[r] = ACC(acc[r], v, WEIGHT(wk + kw * WM + r));
            }
          }
        }
#pragma unroll
      for (int r = 0; r < WM; ++r) {
        const int oc = blk * WM + r;
        if (oc >= OCG) break;
        const int c = g * OCG + oc;
        const T bias = BIAS(c);
        const long o = (((long)n * COUT + c) * OD * OH + odh) * OW + ow0;
#ifdef VEPILOGUE
        if (cnt == VW) {
          VSTORE(VEPILOGUE(acc[r] + bias, o), o);
          continue;
        }
#endif
        // Lane by lane through a copy: taking acc's address would keep it in memory throughout.
        T lanes[VW];
        VSTORE_TO(acc[r], lanes);
#pragma unroll
        for (int e = 0; e < VW; ++e) {
          if (e >= cnt) break;
          STORE(out, o + e, EPILOGUE(lanes[e] + bias, o + e));
        }
      }
    }
  }
}
#undef LOADV
