// Scaled dot-product attention for GPUs, tiled like a GEMM (the same online softmax as
// attention.cl): a work-group of WG = ROWS / RM * 8 work-items takes ROWS query rows of one
// batch entry, RM rows per work-item. Q (pre-scaled) stays in local memory for the whole pass,
// transposed; per tile of 32 keys:
//   S = Q·Kᵀ    each work-item RM rows x 4 keys (tx, tx + 8, tx + 16, tx + 24) in registers,
//               RM / 4 + 1 float4 local reads per 4 RM FMAs (the tile's keys are stored permuted
//               so that a work-item's four are one float4)
//   softmax     the 8 work-items sharing a row meet once through `red` for the tile's row max;
//               each then rescales its part of the row, exponentiates its scores into P and
//               keeps its part of the row sum l (the parts are added at the end)
//   O += P·V    each work-item RM rows x DV/8 columns (tx*4 + 32g + e), rescaled by
//               exp(m - m_new) first
// so that a local read feeds 4-8 FMAs instead of one row's 1 (the row-per-work-item kernel
// is bound by local-memory reads on GPUs). The 8 work-items of a row lie in one warp of 32, so
// the row exchanges (max, P) need only ROW_SYNC: a warp barrier where the target has one, a
// work-group barrier elsewhere. Local layouts are free of bank conflicts for 32 banks: adjacent
// work-items read adjacent float4s of K, V and P, and the padded P and `red` rows spread their
// stores. Keys past SK, and past the diagonal with CAUSAL, are -inf; rows past SQ read zeros
// and store nothing. With SPLIT > 1 as attention.cl: records of DV + 2 (unnormalised row, m, l)
// for attention_merge.cl, or with FIXUP merged by the row block's last work-group to arrive.
// With ASYNC the K and V tiles go from global to local memory without passing through
// registers (CP_ASYNC16: PTX cp.async on NVIDIA), K as stored (rows padded to D + 4 floats,
// so a work-item's four keys sit in different banks), the next tile's K copied during this
// tile's step into the second of two K buffers, V during this tile's Q·Kᵀ; P then takes the
// place of the K tile it was computed from (48 KiB of local memory hold no more).
// Parameters: as attention.cl, with D % 4 == 0, DV % 32 == 0, BK == 32, ROWS (32 or 64),
// RM (4 or 8); ROW_SYNC(); FIXUP (ATTENTION_ARGS then ends in part, counters), ARRIVE_LAST,
// SPLIT_REC(s, g, i) (split s's record of row i of batch entry g); ASYNC with K_PTR(r, c), V_PTR(r, c) (float4 c of row r),
// CP_ASYNC16(dst, src, ok) (zeros where !ok), CP_ASYNC_COMMIT(), CP_ASYNC_WAIT(n).
#if BK != 32
#error the tiled attention kernel takes 32 keys per tile
#endif
#if RM % 4 != 0 || ROWS % RM != 0
#error the tiled attention kernel takes rows in fours
#endif
#define WG (ROWS / RM * 8)
#define PT_STRIDE (ROWS + 4)                           // P rows (one per key), padded by a float4
#define RED(row, x) red[(row) * 8 + (row) / RM * 8 + (x)]  // 8 per row, +8 per row group
__kernel __attribute__((reqd_work_group_size(WG, 1, 1))) void KERNEL_NAME(ATTENTION_ARGS) {
#if FIXUP
  __local int last;
#endif
  const int lid = get_local_id(0), tx = lid % 8, ty = lid / 8;
  const int i0 = get_group_id(0) * ROWS;
  const long g = get_group_id(1);
  long qo = 0, ko = 0, vo = 0, oo = 0;
  BATCH_OFFSETS
  __local float qs[D * ROWS];  // qs[d * ROWS + row]
#if ASYNC
#define KS_STRIDE (D + 4)
#define KBUF (BK * (KS_STRIDE > PT_STRIDE ? KS_STRIDE : PT_STRIDE))
  // kbuf[b * KBUF + key * KS_STRIDE + d], then P as pt below
  __local float kbuf[2 * KBUF] __attribute__((aligned(16)));
#else
  __local float ks[D * BK];   // ks[d * BK + key]
  __local float pt[BK * PT_STRIDE];  // pt[key * PT_STRIDE + row]: probabilities
#endif
  __local float vs[BK * DV] __attribute__((aligned(16)));  // vs[key * DV + c]
  __local float red[ROWS * 8 + WG];  // RED(row, tx): partial row maxima, at the end row sums
  for (int e = lid; e < ROWS * (D / 4); e += WG) {
    const int row = e % ROWS, c = e / ROWS;
    const float4 x = i0 + row < SQ ? convert_float4(Q_AT(i0 + row, c)) * (float)SCALE : (float4)0;
    qs[(c * 4 + 0) * ROWS + row] = x.s0;
    qs[(c * 4 + 1) * ROWS + row] = x.s1;
    qs[(c * 4 + 2) * ROWS + row] = x.s2;
    qs[(c * 4 + 3) * ROWS + row] = x.s3;
  }
  float m[RM], l[RM], acc[RM][DV / 8];
#pragma unroll
  for (int r = 0; r < RM; ++r) {
    m[r] = -INFINITY;
    l[r] = 0;
  }
#pragma unroll
  for (int r = 0; r < RM; ++r)
#pragma unroll
    for (int c = 0; c < DV / 8; ++c) acc[r][c] = 0;
  const int jbeg = KEY_BEGIN, kend = KEY_END(i0);
  // Each tile's keys and values pass through registers (KL and VL float4 per work-item) into
  // local memory at the top of its step. Loading the next tile into registers during this one
  // measured 2-6% slower on the H100 (more registers live through the step).
#define KL ((BK * (D / 4) + WG - 1) / WG)
#define VL ((BK * (DV / 4) + WG - 1) / WG)
#if ASYNC
  // Rows j0.. of a tile of COLS float4 per row (PTR(row, c)) to dst (rows `stride` apart);
  // rows past SK are zeros (a V row of NaN times p = 0 would still be NaN).
#define ISSUE_TILE(dst, stride, COLS, PTR, j0)                                            \
  for (int n = 0; n < (BK * (COLS) + WG - 1) / WG; ++n) {                                  \
    const int e = lid + n * WG, j = e / (COLS), c = e % (COLS);                            \
    if (e < BK * (COLS))                                                                   \
      CP_ASYNC16((dst) + j * (stride) + c * 4, PTR(min((j0) + j, SK - 1), c), (j0) + j < SK); \
  }
#define ISSUE_K(dst, j0) ISSUE_TILE(dst, KS_STRIDE, D / 4, K_PTR, j0)
#define ISSUE_V(j0) ISSUE_TILE(vs, DV, DV / 4, V_PTR, j0)
  if (jbeg < kend) ISSUE_K(kbuf, jbeg);
  CP_ASYNC_COMMIT();
  int buf = 0;
  for (int j0 = jbeg; j0 < kend; j0 += BK, buf ^= 1) {
    __local float* ks = kbuf + buf * KBUF;
    __local float* pt = ks;  // once every work-item is past Q·Kᵀ
    CP_ASYNC_WAIT(0);                // this tile's K, the only copies pending
    barrier(CLK_LOCAL_MEM_FENCE);    // ... of every work-item; the last tile's P·V is done
    ISSUE_V(j0);
    CP_ASYNC_COMMIT();
    if (j0 + BK < kend) ISSUE_K(kbuf + (buf ^ 1) * KBUF, j0 + BK);
    CP_ASYNC_COMMIT();
#else
  float4 kr[KL], vr[VL];
  for (int j0 = jbeg; j0 < kend; j0 += BK) {
    for (int n = 0; n < KL; ++n) {
      const int e = lid + n * WG, j = e % BK;
      kr[n] = e < BK * (D / 4) && j0 + j < SK ? convert_float4(K_AT(j0 + j, e / BK)) : (float4)0;
    }
    for (int n = 0; n < VL; ++n) {
      const int e = lid + n * WG, j = e / (DV / 4);
      vr[n] = e < BK * (DV / 4) && j0 + j < SK ? convert_float4(V_AT(j0 + j, e % (DV / 4)))
                                                : (float4)0;
    }
    barrier(CLK_LOCAL_MEM_FENCE);
#pragma unroll
    for (int n = 0; n < KL; ++n) {
      const int e = lid + n * WG, j = e % BK, c = e / BK, col = j % 8 * 4 + j / 8;
      if (e < BK * (D / 4)) {
        ks[(c * 4 + 0) * BK + col] = kr[n].s0;
        ks[(c * 4 + 1) * BK + col] = kr[n].s1;
        ks[(c * 4 + 2) * BK + col] = kr[n].s2;
        ks[(c * 4 + 3) * BK + col] = kr[n].s3;
      }
    }
#pragma unroll
    for (int n = 0; n < VL; ++n) {
      const int e = lid + n * WG;
      if (e < BK * (DV / 4)) vstore4(vr[n], 0, vs + (e / (DV / 4)) * DV + (e % (DV / 4)) * 4);
    }
    barrier(CLK_LOCAL_MEM_FENCE);
#endif
    float s[RM][4];
#pragma unroll
    for (int r = 0; r < RM; ++r)
#pragma unroll
      for (int c = 0; c < 4; ++c) s[r][c] = 0;
#if ASYNC
#pragma unroll 4
    for (int d4 = 0; d4 < D / 4; ++d4) {
      float av[4][RM];
#pragma unroll
      for (int e = 0; e < 4; ++e)
#pragma unroll
        for (int h = 0; h < RM / 4; ++h) {
          const float4 a = vload4(h, qs + (d4 * 4 + e) * ROWS + ty * RM);
          av[e][4 * h] = a.s0, av[e][4 * h + 1] = a.s1, av[e][4 * h + 2] = a.s2,
          av[e][4 * h + 3] = a.s3;
        }
#pragma unroll
      for (int c = 0; c < 4; ++c) {
        const float4 b = vload4(d4, ks + (tx + 8 * c) * KS_STRIDE);
#pragma unroll
        for (int r = 0; r < RM; ++r) {
          s[r][c] = av[0][r] * b.s0 + s[r][c];
          s[r][c] = av[1][r] * b.s1 + s[r][c];
          s[r][c] = av[2][r] * b.s2 + s[r][c];
          s[r][c] = av[3][r] * b.s3 + s[r][c];
        }
      }
    }
#else
#pragma unroll 8
    for (int d = 0; d < D; ++d) {
      float av[RM];
#pragma unroll
      for (int h = 0; h < RM / 4; ++h) {
        const float4 a = vload4(h, qs + d * ROWS + ty * RM);
        av[4 * h] = a.s0, av[4 * h + 1] = a.s1, av[4 * h + 2] = a.s2, av[4 * h + 3] = a.s3;
      }
      const float4 b = vload4(0, ks + d * BK + tx * 4);
      const float bv[4] = {b.s0, b.s1, b.s2, b.s3};
#pragma unroll
      for (int r = 0; r < RM; ++r)
#pragma unroll
        for (int c = 0; c < 4; ++c) s[r][c] = av[r] * bv[c] + s[r][c];
    }
#endif
#pragma unroll
    for (int r = 0; r < RM; ++r) {
      float mx = -INFINITY;
#pragma unroll
      for (int c = 0; c < 4; ++c) {
        const int i = min(i0 + ty * RM + r, SQ - 1), j = j0 + tx + 8 * c;
        float x = s[r][c] + BIAS(i, min(j, SK - 1));
#if CAUSAL
        if (j > i + (SK - SQ)) x = -INFINITY;
#endif
        s[r][c] = j < SK ? x : -INFINITY;
        mx = fmax(mx, s[r][c]);
      }
      RED(ty * RM + r, tx) = mx;
    }
    ROW_SYNC();
    float p[RM][4];
#pragma unroll
    for (int r = 0; r < RM; ++r) {
      const float4 a = vload4(0, &RED(ty * RM + r, 0)), b = vload4(0, &RED(ty * RM + r, 4));
      const float mx =
          fmax(fmax(fmax(a.s0, a.s1), fmax(a.s2, a.s3)), fmax(fmax(b.s0, b.s1), fmax(b.s2, b.s3)));
      const float m_new = fmax(m[r], mx);
      // Every key so far masked out: nothing to add, nothing to rescale.
      const float corr = m_new == -INFINITY ? 1 : EXP(m[r] - m_new);
      m[r] = m_new;
      l[r] *= corr;
#pragma unroll
      for (int c = 0; c < DV / 8; ++c) acc[r][c] *= corr;
#pragma unroll
      for (int c = 0; c < 4; ++c) {
        p[r][c] = m_new == -INFINITY ? 0 : EXP(s[r][c] - m_new);
        l[r] += p[r][c];
      }
    }
#if ASYNC
    barrier(CLK_LOCAL_MEM_FENCE);  // every work-item is done with the K tile P replaces
#endif
#pragma unroll
    for (int c = 0; c < 4; ++c)
#pragma unroll
      for (int h = 0; h < RM / 4; ++h)
        vstore4((float4)(p[4 * h][c], p[4 * h + 1][c], p[4 * h + 2][c], p[4 * h + 3][c]), h,
                pt + (tx + 8 * c) * PT_STRIDE + ty * RM);
#if ASYNC
    CP_ASYNC_WAIT(1);  // this tile's V (the next tile's K may stay pending)
    barrier(CLK_LOCAL_MEM_FENCE);
#else
    ROW_SYNC();
#endif
#pragma unroll 8
    for (int j = 0; j < BK; ++j) {
      float pv[RM];
#pragma unroll
      for (int h = 0; h < RM / 4; ++h) {
        const float4 pj = vload4(h, pt + j * PT_STRIDE + ty * RM);
        pv[4 * h] = pj.s0, pv[4 * h + 1] = pj.s1, pv[4 * h + 2] = pj.s2, pv[4 * h + 3] = pj.s3;
      }
#pragma unroll
      for (int c = 0; c < DV / 8; c += 4) {
        const float4 w = vload4(0, vs + j * DV + c * 8 + tx * 4);
#pragma unroll
        for (int r = 0; r < RM; ++r) {
          acc[r][c + 0] = pv[r] * w.s0 + acc[r][c + 0];
          acc[r][c + 1] = pv[r] * w.s1 + acc[r][c + 1];
          acc[r][c + 2] = pv[r] * w.s2 + acc[r][c + 2];
          acc[r][c + 3] = pv[r] * w.s3 + acc[r][c + 3];
        }
      }
    }
  }
  barrier(CLK_LOCAL_MEM_FENCE);
#pragma unroll
  for (int r = 0; r < RM; ++r) RED(ty * RM + r, tx) = l[r];
  ROW_SYNC();
  float lsum[RM];
#pragma unroll
  for (int r = 0; r < RM; ++r) {
    const float4 a = vload4(0, &RED(ty * RM + r, 0)), b = vload4(0, &RED(ty * RM + r, 4));
    lsum[r] = a.s0 + a.s1 + a.s2 + a.s3 + b.s0 + b.s1 + b.s2 + b.s3;
  }
#if SPLIT > 1
#pragma unroll
  for (int r = 0; r < RM; ++r) {
    const int i = i0 + ty * RM + r;
    if (i >= SQ) break;
    __global T* rec = PART_REC(g, i);
#pragma unroll
    for (int c = 0; c < DV / 8; c += 4)
      vstore4((float4)(acc[r][c], acc[r][c + 1], acc[r][c + 2], acc[r][c + 3]), 0,
              rec + c * 8 + tx * 4);
    if (tx == 0) {
      rec[DV] = m[r];
      rec[DV + 1] = lsum[r];
    }
  }
#if FIXUP
  // The last of the row block's SPLIT work-groups merges all SPLIT records, its own included, in
  // split order, as attention_merge.cl does: which group arrives last must not change the
  // rounding (results repeat bit for bit).
  ARRIVE_LAST(counters + g * get_num_groups(0) + get_group_id(0), SPLIT, last);
  if (!last) return;
#pragma unroll
  for (int r = 0; r < RM; ++r) {
    const int i = i0 + ty * RM + r;
    if (i >= SQ) break;
    float mx = -INFINITY;
    for (int s = 0; s < SPLIT; ++s)
      mx = fmax(mx, ((volatile __global const T*)SPLIT_REC(s, g, i))[DV]);
    lsum[r] = 0;
#pragma unroll
    for (int c = 0; c < DV / 8; ++c) acc[r][c] = 0;
    for (int s = 0; s < SPLIT; ++s) {
      volatile __global const T* rec = SPLIT_REC(s, g, i);
      const float ws = rec[DV] == -INFINITY ? 0 : EXP(rec[DV] - mx);
      lsum[r] += ws * rec[DV + 1];
#pragma unroll
      for (int c = 0; c < DV / 8; ++c) acc[r][c] += ws * rec[c / 4 * 32 + tx * 4 + c % 4];
    }
  }
#endif
#endif
#if SPLIT == 1 || FIXUP
#pragma unroll
  for (int r = 0; r < RM; ++r) {
    const int i = i0 + ty * RM + r;
    if (i >= SQ) break;
    const float inv = 1 / lsum[r];
#pragma unroll
    for (int c = 0; c < DV / 8; c += 4)
      O_STORE(i, c * 2 + tx,
              (float4)(acc[r][c], acc[r][c + 1], acc[r][c + 2], acc[r][c + 3]) * inv);
  }
#endif
}
#undef KL
#undef VL
#if ASYNC
#undef KS_STRIDE
#undef KBUF
#undef ISSUE_TILE
#undef ISSUE_K
#undef ISSUE_V
#endif
#undef PT_STRIDE
#undef WG
#undef RED
