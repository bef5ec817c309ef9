// Convolution for CPUs as register-blocked direct loops (conv_blocked.h): a work-item computes
// NV blocks of VOC output channels (NV vectors) x RW adjacent output pixels of one output row,
// holding NV x RW vector accumulators, so that each broadcast input pixel feeds NV products. The filters are packed at compile time so that the VOC channels' weights
// of one (ic, kd, kh, kw) are one contiguous vector ([G][OCB][ICG][KD][KH][KW][VOC], zero beyond
// the group's channels); each input pixel is broadcast against it. Per filter tap: one vector
// loads and RW scalar broadcasts for NV x RW vector FMAs, with no gathers and no local memory. Tiles
// whose window stays inside the row take a loop without bounds checks. Products are written
// a * b + c, which OpenCL C contracts into one fused multiply-add where the device has it
// (FP_CONTRACT is on by default), not mad(): PoCL computes mad() as a multiply and an add, which
// left the loop without a single FMA (SqueezeNet's 3x3 convolutions 1.2-1.4x slower).
// Parameters: KERNEL_NAME; T, T_STORE, LOAD, STORE (f32 storage); TV (float VOC), VOC, RW, NV,
// VSTORE_TO(v, p);
// C (input channels), COUT, G (groups), ICG (input channels per group), OCG, OCB (VOC blocks per
// group; a work-item's last blocks past OCB read block OCB - 1 and store nothing); the window macros (ID, IH, IW, OD, OH, OW, KD, KH, KW, SD, SH, SW, PD, PH, PW, DD, DH,
// DW; window.h); PREFETCH_AHEAD, PREFETCH_ROW(p, n) (window.h DefineRowPrefetch); BIAS_PARAM,
// BIAS(c); EPILOGUE(v, i), EPILOGUE_PARAMS.
__attribute__((reqd_work_group_size(1, 1, 1))) __kernel void KERNEL_NAME(
    __global const T_STORE* restrict x, __global const float* restrict w BIAS_PARAM,
    __global T_STORE* restrict out EPILOGUE_PARAMS) {
  const int ow0 = get_global_id(0) * RW;
  const int odh = get_global_id(1);  // od * OH + oh
  const int z = get_global_id(2);    // (image * G + group) * OCBN + the first block / NV
#define OCBN ((OCB + NV - 1) / NV)
#define WBLOCK (ICG * KD * KH * KW * VOC)  // floats of packed filters per block
  const int blk0 = z % OCBN * NV, ng = z / OCBN, g = ng % G, n = ng / G;
  const int oh = odh % OH, od = odh / OH;
  const __global T_STORE* restrict xp = x + ((long)n * C + g * ICG) * ID * IH * IW;
  const __global float* restrict wp = w + (long)(g * OCB + blk0) * WBLOCK;
  int wstep[NV];  // each vector's block from the first, the ones past OCB on the last
#pragma unroll
  for (int v = 0; v < NV; ++v) wstep[v] = (min(blk0 + v, OCB - 1) - blk0) * WBLOCK;
  const int iw0 = ow0 * SW - PW;
  const bool inside = iw0 >= 0 && (ow0 + RW - 1) * SW - PW + (KW - 1) * DW < IW;
  TV acc[NV][RW];
#pragma unroll
  for (int v = 0; v < NV; ++v)
#pragma unroll
    for (int j = 0; j < RW; ++j) acc[v][j] = (TV)0;
  for (int ic = 0; ic < ICG; ++ic)
    for (int kd = 0; kd < KD; ++kd) {
      const int id = od * SD - PD + kd * DD;
      if (id < 0 || id >= ID) continue;
      for (int kh = 0; kh < KH; ++kh) {
        const int ih = oh * SH - PH + kh * DH;
        if (ih < 0 || ih >= IH) continue;
        const __global T_STORE* restrict row = xp + (((long)ic * ID + id) * IH + ih) * IW + iw0;
        const __global float* restrict wk = wp + ((ic * KD + kd) * KH + kh) * KW * VOC;
        if (inside) {
          if (ic + PREFETCH_AHEAD < ICG)
            PREFETCH_ROW(row + (long)PREFETCH_AHEAD * ID * IH * IW, (RW - 1) * SW + (KW - 1) * DW + 1);
          for (int kw = 0; kw < KW; ++kw) {
            TV wv[NV];
#pragma unroll
            for (int v = 0; v < NV; ++v) wv[v] = VLOAD(wk + kw * VOC + wstep[v]);
#pragma unroll
            for (int j = 0; j < RW; ++j) {
              const TV xv = (TV)(LOAD(row, j * SW + kw * DW));
#pragma unroll
              for (int v = 0; v < NV; ++v) acc[v][j] = xv * wv[v] + acc[v][j];
            }
          }
        } else {
          for (int kw = 0; kw < KW; ++kw) {
            TV wv[NV];
#pragma unroll
            for (int v = 0; v < NV; ++v) wv[v] = VLOAD(wk + kw * VOC + wstep[v]);
#pragma unroll
            for (int j = 0; j < RW; ++j) {
              const int iw = iw0 + j * SW + kw * DW;
              const TV xv = (TV)(iw >= 0 && iw < IW ? LOAD(row, j * SW + kw * DW) : (T)0);
#pragma unroll
              for (int v = 0; v < NV; ++v) acc[v][j] = xv * wv[v] + acc[v][j];
            }
          }
        }
      }
    }
  // Lane by lane through a copy: taking acc's address would keep it in memory throughout.
  T lanes[NV][RW][VOC];
#pragma unroll
  for (int v = 0; v < NV; ++v)
#pragma unroll
    for (int j = 0; j < RW; ++j) VSTORE_TO(acc[v][j], lanes[v][j]);
#pragma unroll
  for (int v = 0; v < NV; ++v)
#pragma unroll
    for (int e = 0; e < VOC; ++e) {
      const int oc = (blk0 + v) * VOC + e;
      if (oc >= OCG) break;
      const int c = g * OCG + oc;
      const T bias = BIAS(c);
      const long o = (((long)n * COUT + c) * OD * OH + odh) * OW + ow0;
#pragma unroll
      for (int j = 0; j < RW; ++j) {
        if (ow0 + j >= OW) break;
        STORE(out, o + j, EPILOGUE(lanes[v][j][e] + bias, o + j));
      }
    }
}
#undef OCBN
#undef WBLOCK
