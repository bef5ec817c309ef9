// Scaled dot-product attention on f16 storage through the matrix engine (NVIDIA mma.sync
// m16n8k16, f16 operands, fp32 accumulation), with the online softmax of attention.cl.
// A work-group of WARPS warps takes 16 * WARPS query rows of one batch entry, 16 per warp; per
// tile of BKV keys, each warp:
//   S = Q·Kᵀ   16 x BKV in mma accumulators: lane (lr = lane / 4, lc = lane % 4) holds rows lr and
//              lr + 8, keys 2lc, 2lc + 1 of each 8-key block; Q's fragments stay in registers for
//              the whole pass (loaded once from global memory), K's come from local memory by
//              ldmatrix
//   softmax    scale, bias and mask in fp32; the row max and, at the end, the row sum are
//              exchanged by the 4 lanes of a row (QUAD_MAX, QUAD_SUM)
//   O += P·V   P rounded to f16 straight from the accumulators: two adjacent 8-key blocks of S
//              are, lane for lane, the A fragment of a 16-key step; V's fragments by ldmatrix
//              .trans (V is stored with the keys as rows)
// K and V tiles go from global to local memory by CP_ASYNC16 (cp.async on NVIDIA), two tiles
// deep: the next tile's copy runs during this one's products. Local rows are padded by 16 bytes,
// so that the 8 rows an ldmatrix reads start in 8 different bank quads. Keys past SK are zeros
// and score -inf; rows past SQ compute on row SQ - 1 and store nothing.
// Without MMA_PTX (tests on CPUs: the matrix-engine target emulated) each work-item computes
// its lane's entries with FMAs on the same f16 values: S from Q in global memory and K in local,
// P·V through P staged in local memory (pbuf, as f16: what the engine reads), the quad
// exchanges through local memory (xch), so that the tiling, masking and merging are checked on
// a CPU; the PTX fragment layouts are checked on the GPU.
// With SPLIT > 1 as attention.cl: records of DV + 2 (unnormalised row, m, l) for
// attention_merge.cl.
// Parameters: as attention.cl (T, T_STORE, D, DV, SQ, SK, SCALE, CAUSAL, BATCH_OFFSETS, BIAS,
// ATTENTION_ARGS, KEY_BEGIN, KEY_END, SPLIT, PART_REC, EXP), with D and DV multiples of 16; WARPS,
// BKV (a multiple of 16); MMA_PTX; Q_H(r, c) (element c of Q's row r, as f16 bits),
// K_PTR(r, c) / V_PTR(r, c) (the 8 elements from 8c of row r: 16 bytes, aligned), O_STORE1(r, c,
// x); CP_ASYNC16, CP_ASYNC_COMMIT, CP_ASYNC_WAIT (DefineAsyncCopy); with MMA_PTX, MMA_F16 and
// LDMATRIX_X4 (DefineMatrixEngine).
#if D % 16 != 0 || DV % 16 != 0 || BKV % 16 != 0
#error the matrix-engine attention kernel takes head dims and key tiles in sixteens
#endif
#define WG (WARPS * 32)
#define ROWS (WARPS * 16)
#define KS (D + 8)   // halves per local K row
#define VS (DV + 8)  // halves per local V row
#define NS (BKV / 8) // 8-key blocks of S
#define NO (DV / 8)  // 8-column blocks of O
#if MMA_PTX
// The max / sum over the 4 lanes of a row (lanes 4g .. 4g + 3).
#define QUAD_STEP(x, op, m)                                                                  \
  {                                                                                          \
    uint y_;                                                                                 \
    __asm volatile("shfl.sync.bfly.b32 %0, %1, " #m ", 0x1f, 0xffffffff;" : "=r"(y_)       \
                   : "r"(as_uint(x)));                                                       \
    (x) = op((x), as_float(y_));                                                             \
  }
#define QUAD(x, op)                                                                          \
  do {                                                                                       \
    QUAD_STEP(x, op, 1) QUAD_STEP(x, op, 2)                                                  \
  } while (0)
#else
#define QUAD(x, op)                                                                          \
  do {                                                                                       \
    xch[lid] = (x);                                                                          \
    barrier(CLK_LOCAL_MEM_FENCE);                                                            \
    const int b_ = lid & ~3;                                                                 \
    (x) = op(op(xch[b_], xch[b_ + 1]), op(xch[b_ + 2], xch[b_ + 3]));                        \
    barrier(CLK_LOCAL_MEM_FENCE);                                                            \
  } while (0)
#endif
#define ADD_(a, b) ((a) + (b))
#define QUAD_MAX(x) QUAD(x, fmax)
#define QUAD_SUM(x) QUAD(x, ADD_)

__kernel __attribute__((reqd_work_group_size(WG, 1, 1))) void KERNEL_NAME(ATTENTION_ARGS) {
  __local ushort kbuf[2 * BKV * KS] __attribute__((aligned(16)));
  __local ushort vbuf[2 * BKV * VS] __attribute__((aligned(16)));
#if !MMA_PTX
  __local ushort pbuf[ROWS * BKV];  // pbuf[row * BKV + key]: P as f16 bits
  __local float xch[WG];
#endif
  const int lid = get_local_id(0), lane = lid % 32, warp = lid / 32, lr = lane >> 2, lc = lane & 3;
  const int i0 = get_group_id(0) * ROWS;
  const long g = get_group_id(1);
  long qo = 0, ko = 0, vo = 0, oo = 0;
  BATCH_OFFSETS
  // This lane's rows (h = 0, 1), clamped for reads.
  const int row[2] = {i0 + warp * 16 + lr, i0 + warp * 16 + lr + 8};
  const int rr[2] = {min(row[0], SQ - 1), min(row[1], SQ - 1)};
#if MMA_PTX
  // Q's A fragments: rows g, g + 8, columns 2t, 2t + 1 (+ 8) of each 16-column step.
  uint qf[D / 16][4];
#pragma unroll
  for (int kk = 0; kk < D / 16; ++kk)
#pragma unroll
    for (int e = 0; e < 4; ++e) {
      const int r = rr[e & 1], c = kk * 16 + 2 * lc + (e >> 1) * 8;
      qf[kk][e] = (uint)Q_H(r, c) | (uint)Q_H(r, c + 1) << 16;
    }
#endif
  float m[2] = {-INFINITY, -INFINITY}, l[2] = {0, 0}, acc[NO][4];
#pragma unroll
  for (int j = 0; j < NO; ++j)
#pragma unroll
    for (int e = 0; e < 4; ++e) acc[j][e] = 0;
  const int jbeg = KEY_BEGIN, kend = KEY_END(i0);
  const int tiles = kend > jbeg ? (kend - jbeg + BKV - 1) / BKV : 0;
  // Tile n's K and V rows to buffer b (keys past SK as zeros: a V row of NaN times p = 0 would
  // still be NaN).
#define ISSUE(n, b)                                                                           \
  do {                                                                                        \
    const int j0_ = jbeg + (n) * BKV;                                                         \
    for (int e = lid; e < BKV * (D / 8); e += WG) {                                           \
      const int j = e / (D / 8), c = e % (D / 8);                                             \
      CP_ASYNC16(kbuf + (b) * BKV * KS + j * KS + c * 8, K_PTR(min(j0_ + j, SK - 1), c),     \
                 j0_ + j < SK);                                                               \
    }                                                                                         \
    for (int e = lid; e < BKV * (DV / 8); e += WG) {                                          \
      const int j = e / (DV / 8), c = e % (DV / 8);                                           \
      CP_ASYNC16(vbuf + (b) * BKV * VS + j * VS + c * 8, V_PTR(min(j0_ + j, SK - 1), c),     \
                 j0_ + j < SK);                                                               \
    }                                                                                         \
  } while (0)
  if (tiles > 0) ISSUE(0, 0);
  CP_ASYNC_COMMIT();
  for (int n = 0; n < tiles; ++n) {
    const int j0 = jbeg + n * BKV, b = n & 1;
    barrier(CLK_LOCAL_MEM_FENCE);  // every warp is done with the buffer the next tile takes
    if (n + 1 < tiles) ISSUE(n + 1, b ^ 1);
    CP_ASYNC_COMMIT();
    CP_ASYNC_WAIT(1);  // this tile's copies (the next tile's may stay pending)
    barrier(CLK_LOCAL_MEM_FENCE);
    __local const ushort* kt = kbuf + b * BKV * KS;
    __local const ushort* vt = vbuf + b * BKV * VS;
    float s[NS][4];
#pragma unroll
    for (int j = 0; j < NS; ++j)
#pragma unroll
      for (int e = 0; e < 4; ++e) s[j][e] = 0;
#if MMA_PTX
    const int qd = lane >> 3, l8 = lane & 7;
#pragma unroll
    for (int kk = 0; kk < D / 16; ++kk)
#pragma unroll
      for (int j = 0; j < NS; j += 2) {
        // Keys of blocks j | j + 1 x columns 0-7 | 8-15 of the step (K's rows hold k).
        uint f[4];
        LDMATRIX_X4("", f, kt + (j * 8 + (qd >> 1) * 8 + l8) * KS + kk * 16 + (qd & 1) * 8);
        MMA_F16(s[j], qf[kk][0], qf[kk][1], qf[kk][2], qf[kk][3], f[0], f[1]);
        MMA_F16(s[j + 1], qf[kk][0], qf[kk][1], qf[kk][2], qf[kk][3], f[2], f[3]);
      }
#else
    for (int d = 0; d < D; ++d) {
      const float q0 = vload_half(0, (const __global half*)&Q_H(rr[0], d));
      const float q1 = vload_half(0, (const __global half*)&Q_H(rr[1], d));
#pragma unroll
      for (int j = 0; j < NS; ++j)
#pragma unroll
        for (int e = 0; e < 2; ++e) {
          const float kv = vload_half((j * 8 + 2 * lc + e) * KS + d, (__local const half*)kt);
          s[j][e] = mad(q0, kv, s[j][e]);
          s[j][2 + e] = mad(q1, kv, s[j][2 + e]);
        }
    }
#endif
    // Scale, bias, mask; the rows' maxima over the tile.
    float mx[2] = {-INFINITY, -INFINITY};
#pragma unroll
    for (int j = 0; j < NS; ++j)
#pragma unroll
      for (int e = 0; e < 4; ++e) {
        const int h = e >> 1, key = j0 + j * 8 + 2 * lc + (e & 1);
        float x = s[j][e] * (float)SCALE + BIAS(rr[h], min(key, SK - 1));
#if CAUSAL
        if (key > rr[h] + (SK - SQ)) x = -INFINITY;
#endif
        s[j][e] = key < kend ? x : -INFINITY;
        mx[h] = fmax(mx[h], s[j][e]);
      }
    float corr[2];
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      QUAD_MAX(mx[h]);
      const float m_new = fmax(m[h], mx[h]);
      // Every key so far masked out: nothing to add, nothing to rescale.
      corr[h] = m_new == -INFINITY ? 1 : EXP(m[h] - m_new);
      m[h] = m_new;
      l[h] *= corr[h];
    }
#pragma unroll
    for (int j = 0; j < NO; ++j)
#pragma unroll
      for (int e = 0; e < 4; ++e) acc[j][e] *= corr[e >> 1];
#pragma unroll
    for (int j = 0; j < NS; ++j)
#pragma unroll
      for (int e = 0; e < 4; ++e) {
        const int h = e >> 1;
        s[j][e] = m[h] == -INFINITY ? 0 : EXP(s[j][e] - m[h]);
        l[h] += s[j][e];
      }
#if MMA_PTX
#pragma unroll
    for (int kk = 0; kk < BKV / 16; ++kk) {
      // P's A fragment of keys 16kk..: blocks 2kk (columns 2t, 2t + 1) and 2kk + 1 (+ 8), rows
      // g and g + 8, packed low element first.
      uint pf[4];
#pragma unroll
      for (int e = 0; e < 4; ++e) {
        const int j = 2 * kk + (e >> 1), h = (e & 1) * 2;
        __asm("cvt.rn.f16x2.f32 %0, %1, %2;" : "=r"(pf[e]) : "f"(s[j][h + 1]), "f"(s[j][h]));
      }
#pragma unroll
      for (int j = 0; j < NO; j += 2) {
        // Keys 0-7 | 8-15 of the step x columns of blocks j | j + 1 (V's rows hold k): .trans.
        uint f[4];
        LDMATRIX_X4(".trans", f, vt + (kk * 16 + (qd & 1) * 8 + l8) * VS + j * 8 + (qd >> 1) * 8);
        MMA_F16(acc[j], pf[0], pf[1], pf[2], pf[3], f[0], f[1]);
        MMA_F16(acc[j + 1], pf[0], pf[1], pf[2], pf[3], f[2], f[3]);
      }
    }
#else
#pragma unroll
    for (int j = 0; j < NS; ++j)
#pragma unroll
      for (int e = 0; e < 4; ++e)
        vstore_half_rte(s[j][e], (warp * 16 + lr + (e >> 1) * 8) * BKV + j * 8 + 2 * lc + (e & 1),
                        (__local half*)pbuf);
    barrier(CLK_LOCAL_MEM_FENCE);
    for (int key = 0; key < BKV; ++key) {
      const float p0 = vload_half((warp * 16 + lr) * BKV + key, (__local const half*)pbuf);
      const float p1 = vload_half((warp * 16 + lr + 8) * BKV + key, (__local const half*)pbuf);
#pragma unroll
      for (int j = 0; j < NO; ++j)
#pragma unroll
        for (int e = 0; e < 2; ++e) {
          const float w = vload_half(key * VS + j * 8 + 2 * lc + e, (__local const half*)vt);
          acc[j][e] = mad(p0, w, acc[j][e]);
          acc[j][2 + e] = mad(p1, w, acc[j][2 + e]);
        }
    }
#endif
  }
#pragma unroll
  for (int h = 0; h < 2; ++h) QUAD_SUM(l[h]);
#pragma unroll
  for (int h = 0; h < 2; ++h) {
    if (row[h] >= SQ) continue;
#if SPLIT > 1
    __global T* rec = PART_REC(g, row[h]);
#pragma unroll
    for (int j = 0; j < NO; ++j)
#pragma unroll
      for (int e = 0; e < 2; ++e) rec[j * 8 + 2 * lc + e] = acc[j][2 * h + e];
    if (lc == 0) {
      rec[DV] = m[h];
      rec[DV + 1] = l[h];
    }
#else
    const float inv = 1 / l[h];
#pragma unroll
    for (int j = 0; j < NO; ++j)
#pragma unroll
      for (int e = 0; e < 2; ++e) O_STORE1(row[h], j * 8 + 2 * lc + e, acc[j][2 * h + e] * inv);
#endif
  }
}
#undef ISSUE
#undef QUAD_MAX
#undef QUAD_SUM
#undef ADD_
#undef QUAD
#ifdef QUAD_STEP
#undef QUAD_STEP
#endif
#undef NO
#undef NS
#undef VS
#undef KS
#undef ROWS
#undef WG
