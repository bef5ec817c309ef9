// Scaled dot-product attention, one pass over the keys with an online softmax: a work-group of
// BQ work-items takes BQ query rows of one batch entry g (heads, windows, ...), one row each.
// Each keeps its row of q (pre-multiplied by SCALE) and of the output in registers; the keys and
// values pass through local memory in tiles of BK rows, loaded by the whole work-group. Per
// tile: scores s_j = q·k_j + bias, the running max m and sum l rescaled by EXP(m - m_new), the
// output row accumulating exp(s_j - m_new) · v_j; the division by l comes last. The scores
// never reach global memory. With CAUSAL, keys past the diagonal of the work-group's last row are
// never loaded. Rows past SQ compute on row SQ - 1 and store nothing.
// Split over the keys (SPLIT > 1, for too few rows to fill the device: long sequences with few
// heads, single-query decoding): work-group (., ., p) takes the p-th chunk of the keys
// and writes its unnormalised output row, m and l to `part` (records of DV + 2), which
// attention_merge.cl combines.
// Parameters: KERNEL_NAME, T / T_STORE (element storage), VT (T or a vector of VW of them),
// SUMV(a) (the sum of VT's lanes), D, DV (head dims, multiples of VW), SQ, SK, BQ, BK, SCALE,
// CAUSAL, BATCH_OFFSETS (statements: batch entry g -> offsets qo, ko, vo, oo, bo<k>),
// Q_AT(i, c) / K_AT(j, c) / V_AT(j, c) (the VW elements c*VW.. of row i or j, as VT),
// O_STORE(i, c, x) (stores x: VT), BIAS(i, j) (the sum of the biases at row i, key j, or 0),
// ATTENTION_ARGS (the kernel's parameters: q, k, v, part or o, the biases), KEY_BEGIN /
// KEY_END(i0) (the keys a work-group whose first row is i0 visits: its split's, and none past the diagonal with CAUSAL), SPLIT, NB (batch
// entries), PART_REC(g, i) (the record of row i of batch entry g), PART_STORE(rec, c, x),
// EXP(x) (exp or native_exp).
__kernel __attribute__((reqd_work_group_size(BQ, 1, 1))) void KERNEL_NAME(ATTENTION_ARGS) {
  const int l = get_local_id(0);
  const int i0 = get_group_id(0) * BQ;
  const int i = min(i0 + l, SQ - 1);
  const long g = get_group_id(1);
  long qo = 0, ko = 0, vo = 0, oo = 0;
  BATCH_OFFSETS
  __local VT ks[BK * (D / VW)];
  __local VT vs[BK * (DV / VW)];
  VT qr[D / VW], acc[DV / VW];
#pragma unroll
  for (int c = 0; c < D / VW; ++c) qr[c] = Q_AT(i, c) * (T)SCALE;
#pragma unroll
  for (int c = 0; c < DV / VW; ++c) acc[c] = (VT)0;
  T m = -INFINITY, lsum = 0;
  const int jbeg = KEY_BEGIN, kend = KEY_END(i0);
  for (int j0 = jbeg; j0 < kend; j0 += BK) {
    barrier(CLK_LOCAL_MEM_FENCE);
    for (int e = l; e < BK * (D / VW); e += BQ) {
      const int j = j0 + e / (D / VW);
      ks[e] = j < SK ? K_AT(j, e % (D / VW)) : (VT)0;
    }
    for (int e = l; e < BK * (DV / VW); e += BQ) {
      const int j = j0 + e / (DV / VW);
      vs[e] = j < SK ? V_AT(j, e % (DV / VW)) : (VT)0;
    }
    barrier(CLK_LOCAL_MEM_FENCE);
    T s[BK];
    T tile_max = -INFINITY;
#pragma unroll
    for (int jj = 0; jj < BK; ++jj) {
      const int j = j0 + jj;
      VT a = (VT)0;
#pragma unroll
      for (int c = 0; c < D / VW; ++c) a = qr[c] * ks[jj * (D / VW) + c] + a;
      T x = SUMV(a) + BIAS(i, min(j, SK - 1));
#if CAUSAL
      if (j > i + (SK - SQ)) x = -INFINITY;
#endif
      s[jj] = j < SK ? x : -INFINITY;
      tile_max = fmax(tile_max, s[jj]);
    }
    const T m_new = fmax(m, tile_max);
    if (m_new != -INFINITY) {  // else every key so far is masked out: nothing to add
      const T corr = EXP(m - m_new);
      lsum *= corr;
#pragma unroll
      for (int c = 0; c < DV / VW; ++c) acc[c] *= corr;
#pragma unroll
      for (int jj = 0; jj < BK; ++jj) {
        const T p = EXP(s[jj] - m_new);
        lsum += p;
#pragma unroll
        for (int c = 0; c < DV / VW; ++c) acc[c] = (VT)p * vs[jj * (DV / VW) + c] + acc[c];
      }
      m = m_new;
    }
  }
#if SPLIT > 1
  if (i0 + l < SQ) {
    __global T* rec = PART_REC(g, i);
#pragma unroll
    for (int c = 0; c < DV / VW; ++c) PART_STORE(rec, c, acc[c]);
    rec[DV] = m;
    rec[DV + 1] = lsum;
  }
#else
  if (i0 + l < SQ) {
    const T inv = 1 / lsum;
#pragma unroll
    for (int c = 0; c < DV / VW; ++c) O_STORE(i, c, acc[c] * inv);
  }
#endif
}
