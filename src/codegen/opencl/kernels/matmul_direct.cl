// Batched matrix product out[b] = EPILOGUE(A[b] x B[b]), row-major, broadcast batch dims,
// without register tiles shared through local memory (see matmul.h): the path for few rows M
// on GPUs (matrix-vector products, classifier and transformer heads) and for every shape on
// CPUs, where PoCL runs each work-item as straight-line vector code.
// A work-item computes WM rows x VB adjacent columns, broadcasting A and reading B as vectors.
// Work-items along dim 0 read adjacent vectors of a row of B (coalesced on a GPU).
// Local dim 1 either splits K (SPLIT_K == LY > 1: every LY-th k, partial sums added through
// local memory; keeps a GPU busy when N alone gives too few work-items) or stacks row blocks
// (TM = LY * WM rows per work-group); then with PANEL_K > 0 the group first copies PANEL_K rows
// of its columns of B into local memory and all its row blocks read them there: on a CPU that
// turns the strided walk down B (whose rows often alias in the caches) into one copy per panel
// per TM rows.
// Parameters: KERNEL_NAME; T, T_STORE, LOAD, STORE; T_STORE_B (as in matmul.cl); T_OUT, OSTORE(p, i, v) (the output's: the
// epilogue's result type, or T for a LayerNorm's partial sums); M, N, K, BATCH; A_OFFSET(b),
// B_OFFSET(b);
// A_RS, A_KS (A's element (row, k) is at row * A_RS + k * A_KS);
// WM, TM, LX, LY, SPLIT_K (a power of two), PANEL_K; VB, TVB, LOAD_B(p, k, col) (VB elements of
// B's row k from column col), BIAS_PARAM, BIAS(b, row), ELEM(v, e), CLAMP_N (as in matmul.cl);
// EDGE_M, EDGE_N (1 when the last group overhangs M or N);
// OUT_AT(b, r, c) (as in matmul.cl); EPILOGUE(v, i), EPILOGUE_PARAMS.
__attribute__((reqd_work_group_size(LX, LY, 1))) __kernel void KERNEL_NAME(
    __global const T_STORE* restrict a, __global const T_STORE_B* restrict b BIAS_PARAM,
    __global T_OUT* restrict out EPILOGUE_PARAMS) {
  const int tx = get_local_id(0), ty = get_local_id(1);
  const int col0 = (get_group_id(0) * LX + tx) * VB;
#if SPLIT_K > 1
  const int row0 = get_group_id(1) * TM;
#else
  const int row0 = get_group_id(1) * TM + ty * WM;
#endif
  const int batch = get_group_id(2);
#if CLAMP_N
  const int col = min(col0, N - VB);  // overhanging columns load valid data, never store
#else
  const int col = col0;
#endif
  const __global T_STORE* restrict ap = a + A_OFFSET(batch);
  const __global T_STORE_B* restrict bp = b + B_OFFSET(batch);
  long a_row[WM];
#pragma unroll
  for (int r = 0; r < WM; ++r) {
#if EDGE_M
    a_row[r] = (long)min(row0 + r, M - 1) * A_RS;
#else
    a_row[r] = (long)(row0 + r) * A_RS;
#endif
  }
  TVB acc[WM];
#pragma unroll
  for (int r = 0; r < WM; ++r) acc[r] = (TVB)0;
#if PANEL_K
  __local TVB panel[PANEL_K][LX];
  for (int k0 = 0; k0 < K; k0 += PANEL_K) {
    barrier(CLK_LOCAL_MEM_FENCE);  // the previous panel is used up
    for (int kk = ty; kk < PANEL_K; kk += LY)
      panel[kk][tx] = k0 + kk < K ? LOAD_B(bp, k0 + kk, col) : (TVB)0;
    barrier(CLK_LOCAL_MEM_FENCE);
    for (int kk = 0; kk < min(PANEL_K, K - k0); ++kk) {
      const TVB bv = panel[kk][tx];
#pragma unroll
      for (int r = 0; r < WM; ++r)
        acc[r] = (TVB)(LOAD(ap, a_row[r] + (long)(k0 + kk) * A_KS)) * bv + acc[r];
    }
  }
#else
  for (int k = SPLIT_K > 1 ? ty : 0; k < K; k += SPLIT_K) {
    const TVB bv = LOAD_B(bp, k, col);
#pragma unroll
    for (int r = 0; r < WM; ++r)
      acc[r] = (TVB)(LOAD(ap, a_row[r] + (long)k * A_KS)) * bv + acc[r];
  }
#endif
#if SPLIT_K > 1
  __local TVB part[LY][WM][LX];  // a tree sum over ty (LY is a power of two)
#pragma unroll
  for (int r = 0; r < WM; ++r) part[ty][r][tx] = acc[r];
  barrier(CLK_LOCAL_MEM_FENCE);
  for (int h = LY / 2; h > 0; h /= 2) {
    if (ty < h)
#pragma unroll
      for (int r = 0; r < WM; ++r) part[ty][r][tx] += part[ty + h][r][tx];
    barrier(CLK_LOCAL_MEM_FENCE);
  }
  if (ty != 0) return;
#pragma unroll
  for (int r = 0; r < WM; ++r) acc[r] = part[0][r][tx];
#endif
#pragma unroll
  for (int r = 0; r < WM; ++r) {
#if EDGE_M
    if (row0 + r >= M) continue;
#endif
    const T bias = BIAS(batch, row0 + r);
#pragma unroll
    for (int e = 0; e < VB; ++e) {
#if EDGE_N
      if (col0 + e >= N) continue;
#endif
      const long o = OUT_AT(batch, row0 + r, col0 + e);
      OSTORE(out, o, EPILOGUE(ELEM(acc[r], e) + bias, o));
    }
  }
}
