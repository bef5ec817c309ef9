// Batched matrix product out[b] = EPILOGUE(A[b] x B[b]), row-major, broadcast batch dims;
// register- and local-memory-tiled (see matmul.h and docs/decisions.md).
// A work-group of LX x LY work-items computes a TM x TN tile of one batch; work-item (tx, ty)
// holds a WM x WN block in registers. K advances TK at a time: the next tile is loaded from
// global memory into registers while the current one is multiplied out of local memory, then
// stored into the other of two local buffers, so one barrier per step suffices.
// A is staged transposed (As[k][m]) so that both operands are read along the block as VM / VN
// vectors. A work-item's rows are ty*VM + g*LY*VM (g < WM/VM), its columns tx*VN + g*LX*VN:
// adjacent work-items read adjacent vectors, which keeps local reads free of bank conflicts and
// output stores coalesced.
// Parameters: KERNEL_NAME; T, T_STORE, LOAD, STORE (element storage); T_STORE_B (B's: T_STORE, or
// float for an f32 image gathered by an f16 convolution); T_OUT, OSTORE(p, i, v) (the
// output's: the epilogue's result type, f16 or f32 where a fused Cast converts it, or with
// SPLITS > 1 the compute type T); M, N, K, BATCH;
// A_OFFSET(b), B_OFFSET(b) (element offsets of batch b's matrices); A_RS, A_KS (A's element
// (row, k) is at row * A_RS + k * A_KS: K, 1 row-major, 1, M transposed); TM, TN, TK, WM, WN, LX, LY;
// VA, VB (global load widths of A along K and B along N) with types TVA, TVB and loads
// GLOAD_A(p, i), LOAD_B(p, k, col) (VB elements of B's row k from column col: row-major, or
// gathered from an image for convolution); BIAS_PARAM and BIAS(b, row) (added to each result
// of a row before the epilogue: convolution bias); VM, VN with types TVM, TVN;
// STORE_VN(p, i, v) (a VN-wide store, defined when N % VN == 0); ELEM(v, e) (component e of a vector or scalar lvalue);
// LOADS_A, LOADS_B (vector loads per work-item and tile) and GUARD_A, GUARD_B (1 when the last
// of them covers only part of the work-group); AS_STRIDE, BS_STRIDE (local row lengths),
// LOCAL_ALIGN; EDGE_M, EDGE_N, EDGE_K (1 when the last tile overhangs M, N or K); CLAMP_N (1
// when overhanging columns must load from the last valid ones; a gathering LOAD_B returns zeros
// beyond N instead, so N need not be a multiple of VB);
// OUT_AT(b, r, c) (C(b, r, c)'s flat output index: row-major, or NCHW where a convolution's
// images are folded into the columns, matmul.h);
// EPILOGUE(v, i) (applied to each result, i = flat output index), EPILOGUE_PARAMS; SPLITS, KS
// (split-K: work-group z = batch * SPLITS + s sums k in [s * KS, s * KS + KS) into slice s of
// `out`, a scratch buffer of SPLITS x BATCH x M x N, with no bias or epilogue; kernels/
// matmul_splitk.cl adds the slices up. SPLITS == 1, KS == K otherwise).
// Overhanging rows and columns are clamped on load (their results are never stored); K beyond
// its end reads zeros.
__attribute__((reqd_work_group_size(LX, LY, 1))) __kernel void KERNEL_NAME(
    __global const T_STORE* restrict a, __global const T_STORE_B* restrict b BIAS_PARAM,
    __global T_OUT* restrict out EPILOGUE_PARAMS) {
  __local T as[2][TK][AS_STRIDE] __attribute__((aligned(LOCAL_ALIGN)));
  __local T bs[2][TK][BS_STRIDE] __attribute__((aligned(LOCAL_ALIGN)));
  const int tx = get_local_id(0), ty = get_local_id(1);
  const int tid = ty * LX + tx;
  const int col0 = get_group_id(0) * TN, row0 = get_group_id(1) * TM;
  const int batch = get_group_id(2) / SPLITS, split = get_group_id(2) % SPLITS;
  const int k_begin = split * KS;
  const __global T_STORE* restrict ap = a + A_OFFSET(batch);
  const __global T_STORE_B* restrict bp = b + B_OFFSET(batch);

  // Where this work-item's loads land in the tiles (constant over the K loop).
  long a_src[LOADS_A];
  int a_row[LOADS_A], a_k[LOADS_A], b_k[LOADS_B], b_col[LOADS_B], b_src_col[LOADS_B];
#pragma unroll
  for (int l = 0; l < LOADS_A; ++l) {
    const int id = l * LX * LY + tid;
    a_row[l] = id / (TK / VA);
    a_k[l] = id % (TK / VA) * VA;
    int row = row0 + a_row[l];
#if EDGE_M
    row = min(row, M - 1);
#endif
    a_src[l] = (long)row * A_RS + (long)a_k[l] * A_KS;
  }
#pragma unroll
  for (int l = 0; l < LOADS_B; ++l) {
    const int id = l * LX * LY + tid;
    b_k[l] = id / (TN / VB);
    b_col[l] = id % (TN / VB) * VB;
    int col = col0 + b_col[l];
#if CLAMP_N
    col = min(col, N - VB);
#endif
    b_src_col[l] = col;
  }

  TVA ra[LOADS_A];
  TVB rb[LOADS_B];
  T acc[WM][WN];
#pragma unroll
  for (int i = 0; i < WM; ++i)
#pragma unroll
    for (int j = 0; j < WN; ++j) acc[i][j] = 0;

  const int tiles = (min(KS, K - k_begin) + TK - 1) / TK;
  for (int t = 0; t <= tiles; ++t) {
    const int buf = t & 1;
    if (t < tiles) {  // global -> registers: tile t
      const int k0 = k_begin + t * TK;
#pragma unroll
      for (int l = 0; l < LOADS_A; ++l) {
        ra[l] = (TVA)0;
#if GUARD_A
        if (l * LX * LY + tid >= TM * TK / VA) continue;
#endif
#if EDGE_K
        if (k0 + a_k[l] >= K) continue;
#endif
        ra[l] = GLOAD_A(ap, a_src[l] + (long)k0 * A_KS);
      }
#pragma unroll
      for (int l = 0; l < LOADS_B; ++l) {
        rb[l] = (TVB)0;
#if GUARD_B
        if (l * LX * LY + tid >= TK * TN / VB) continue;
#endif
#if EDGE_K
        if (k0 + b_k[l] >= K) continue;
#endif
        rb[l] = LOAD_B(bp, k0 + b_k[l], b_src_col[l]);
      }
    }
    if (t > 0) {  // multiply tile t - 1, staged in buffer buf ^ 1
#pragma unroll
      for (int kk = 0; kk < TK; ++kk) {
        T af[WM], bf[WN];
#pragma unroll
        for (int g = 0; g < WM / VM; ++g) {
          TVM v = *(__local const TVM*)&as[buf ^ 1][kk][g * LY * VM + ty * VM];
#pragma unroll
          for (int e = 0; e < VM; ++e) af[g * VM + e] = ELEM(v, e);
        }
#pragma unroll
        for (int g = 0; g < WN / VN; ++g) {
          TVN v = *(__local const TVN*)&bs[buf ^ 1][kk][g * LX * VN + tx * VN];
#pragma unroll
          for (int e = 0; e < VN; ++e) bf[g * VN + e] = ELEM(v, e);
        }
#pragma unroll
        for (int i = 0; i < WM; ++i)
#pragma unroll
          for (int j = 0; j < WN; ++j) acc[i][j] = af[i] * bf[j] + acc[i][j];
      }
    }
    if (t < tiles) {  // registers -> local buffer buf
#pragma unroll
      for (int l = 0; l < LOADS_A; ++l) {
#if GUARD_A
        if (l * LX * LY + tid >= TM * TK / VA) continue;
#endif
#pragma unroll
        for (int e = 0; e < VA; ++e) as[buf][a_k[l] + e][a_row[l]] = ELEM(ra[l], e);
      }
#pragma unroll
      for (int l = 0; l < LOADS_B; ++l) {
#if GUARD_B
        if (l * LX * LY + tid >= TK * TN / VB) continue;
#endif
        *(__local TVB*)&bs[buf][b_k[l]][b_col[l]] = rb[l];
      }
      barrier(CLK_LOCAL_MEM_FENCE);
    }
  }

#pragma unroll
  for (int i = 0; i < WM; ++i) {
    const int row = row0 + i / VM * LY * VM + ty * VM + i % VM;
#if EDGE_M
    if (row >= M) continue;
#endif
    const long slice = (long)split * BATCH * M * N;
    const T bias = BIAS(batch, row);
#pragma unroll
    for (int g = 0; g < WN / VN; ++g) {
      const int col = col0 + g * LX * VN + tx * VN;
      const long o = slice + OUT_AT(batch, row, col);
#ifdef STORE_VN
#if EDGE_N
      if (col >= N) continue;
#endif
      TVN v;
#pragma unroll
      for (int e = 0; e < VN; ++e) ELEM(v, e) = EPILOGUE(acc[i][g * VN + e] + bias, o + e);
      STORE_VN(out, o, v);
#else
#pragma unroll
      for (int e = 0; e < VN; ++e) {
#if EDGE_N
        if (col + e >= N) continue;
#endif
        const long oe = slice + OUT_AT(batch, row, col + e);
        OSTORE(out, oe, EPILOGUE(acc[i][g * VN + e] + bias, oe));
      }
#endif
    }
  }
}
