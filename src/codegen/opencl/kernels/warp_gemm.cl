// BLAS-style GEMM: C = alpha * op(A) op(B) + beta * C, row-major, batched by get_group_id(2),
// on NVIDIA's warp-wide mma.sync (inline PTX) or, where MMA_PTX is 0 or MODE is 0 (fp32), the
// same fragments per work-item with FMAs in plain OpenCL C (any device: fp32 everywhere, and the
// matrix-engine modes' rounding emulated so that tests check the tiling, staging and epilogue
// on a CPU; the PTX fragment layouts are checked on the GPU).
//
// A work-group of WG = (BM / WM) x (BN / WN) x KGROUPS warps computes a BM x BN tile of C. Per
// step of BK along K, the A tile (BM x BK, k contiguous) and the B tile (BN x BK, k contiguous: B
// is staged transposed, as mma's "col" operand wants it) go from global memory through
// registers to local memory, double-buffered: the next step's loads are in flight while this one
// computes. Each warp then computes its WM x WN part as MI x NI mma tiles of 16 x 8, MK deep;
// with KGROUPS > 1 the warps of group q along K take the step's MK-deep blocks q, q + KGROUPS,
// ... (more warps on each tile, where the tiles are too few for the compute units to hide the
// engine's latency) and group 0 adds the others' sums up through local memory at the end:
//   MODE 1 (tf32)    m16n8k8 on tf32 operands (rounded to nearest by cvt.rna)
//   MODE 3 (tf32x3)  each operand split x = hi + lo into two tf32 parts; hi*lo + lo*hi + hi*hi,
//                    which keeps fp32-level accuracy (only lo*lo, ~2^-22 relative, is dropped)
//   MODE 16 (f16)    m16n8k16 on f16 operands (staged in local memory as half)
//   MODE 0 (fp32)    FMAs
// all accumulating in fp32. Local rows are padded (LS) so that a warp's fragment loads touch 32
// distinct banks: lanes read rows g = lane / 4 and columns t = lane % 4 of a 16 x 8 block.
// With ASYNC (the matrix engine, operands 16-byte aligned and stored in the mode's type, their
// contiguous dimensions multiples of 16 bytes) the tiles are instead copied as they are stored
// by CP_ASYNC16 (generator.h DefineAsyncCopy: cp.async, or plain copies without the PTX),
// STAGES - 1 steps ahead.
// Parameters: BM, BN, BK, WM, WN, KGROUPS, MODE, RAW_TF32 (tf32: operands not rounded by
// cvt.rna, the engine truncating them), MMA_PTX, ASYNC, STAGES (2 without ASYNC), PENDING
// (STAGES - 2), TRANS_A, TRANS_B (op(A) = A^T: A stored [K, M]), A_AT(r, k), B_AT(k, c)
// (element offsets of op(A)[r, k] and op(B)[k, c]), VEC_A, VEC_B (4: the operand's contiguous
// dimension is loaded as float4; 1: scalars), GATHER_B (B is not stored as a matrix: LOAD_B(p,
// k, col) returns VEC_B elements of its row k from column col as staged, zeros past N: a
// convolution's image gathered as im2col; never with TRANS_B or ASYNC; with GATHER_HOISTED its
// per-column part GATHER_INIT(col) once and GATHER_LOAD(p, k, state) per step instead;
// GATHER_F32: the image is f32 (T_STORE_B float, models only) and converted as it is staged),
// B_INSIDE(k, c) (optional, with ASYNC: false where op(B)[k, c] is a zero the copies skip: a
// channels-last image gathered by B_AT(k, c), whose padding is outside it),
// EVEN (M, N, K are multiples of BM, BN, BK: no bounds checks), T_STORE, F16_STORAGE, GLOAD(p,
// i), GLOAD4(p, i) (4 elements at i as float4), GSTORE(p, i, v); TO_TF32, ROUND_TF32, TO_F16
// (helper names unique to the kernel); MODEL (a model's product: M, N, K, lda, ldb, A_OFF(z),
// B_OFF(z), OUT_AT(z, r, c) (matmul.cl), EPILOGUE(v, i), EPILOGUE_PARAMS, PARTIALS, BATCH,
// SPLITS, KS as macros, no alpha or beta; BIAS_PARAM and BIAS(z, row): a bias per row, added
// before the epilogue; FIXUP: split K's slices go to `parts` (FIXUP_PARAMS: parts, counters) and
// the last of a tile's work-groups to arrive (ARRIVE_LAST) adds them up into c, its work-items
// on adjacent rows with OUT_ROWS_FAST, else adjacent columns). Without MODEL (texel_gemm),
// FIXUP with SPLITS splits K the same way, the range's length computed from K at run time, and
// the fixup applies alpha and beta.
#define WARPS_N (BN / WN)
#define TILE_WARPS ((BM / WM) * WARPS_N)
#define WG (TILE_WARPS * KGROUPS * 32)
#define MI (WM / 16)
#define NI (WN / 8)
// TL: an element in local memory, RT: in the registers staging it (f16 bits in MODE 16, read
// raw from f16 storage or converted from f32 as they are loaded: so that local memory is
// written with plain stores), GLOADR / GLOADR4: one / four of them from global memory.
#if MODE == 16
#define MK 16
#define LS (BK + 8)  // halves per local row: BK / 2 + 4 words
#define TL ushort
#define RT ushort
#define LREAD(buf, i) vload_half((i), (__local const half*)(buf))
#else
#define MK 8
#define LS (BK + 4)
#define TL float
#define RT float
#define GLOADR(p, i) GLOAD(p, i)
#define GLOADR4(p, i) GLOAD4(p, i)
#define LREAD(buf, i) ((buf)[i])
#endif
// Local tiles per stage. With ASYNC an operand is copied as it is stored: A transposed is
// [BK][BM + 8], B not transposed [BK][BN + 8] (rows of 8 mod 32 words: fragment reads stay
// conflict-free); otherwise both are [rows][LS], k contiguous. A_IDX(r, k) / B_IDX(c, k): the
// index of element (r, k) of A's tile, (k, c) of B's; A_FRAG / B_FRAG: the element.
#if ASYNC && TRANS_A
#define LSA (BM + 8)
#define A_TILE (BK * LSA)
#define A_IDX(r, k) ((k) * LSA + (r))
#else
#define LSA LS
#define A_TILE (BM * LS)
#define A_IDX(r, k) ((r) * LS + (k))
#endif
#if ASYNC && !TRANS_B
#define LSB (BN + 8)
#define B_TILE (BK * LSB)
#define B_IDX(c, k) ((k) * LSB + (c))
#else
#define LSB LS
#define B_TILE (BN * LS)
#define B_IDX(c, k) ((c) * LS + (k))
#endif
#define CH (MODE == 16 ? 8 : 4)  // elements per 16-byte chunk
#define LSW (WN + 8)  // floats per row of staged results: the fragments' pairs meet no conflicts
#define A_FRAG(at, r, k) (at)[A_IDX(r, k)]
#define B_FRAG(bt, c, k) (bt)[B_IDX(c, k)]

// Per step each work-item loads LA vectors of VEC_A elements of A along A's contiguous dimension
// (k, or rows with TRANS_A), and LB of B (columns, or k with TRANS_B).
#define LA (BM * BK / (VEC_A * WG))
#define LB (BN * BK / (VEC_B * WG))

#define USE_MMA (MMA_PTX && MODE != 0)
#if USE_MMA
uint TO_TF32(float x) {
  uint r;
  __asm("cvt.rna.tf32.f32 %0, %1;" : "=r"(r) : "f"(x));
  return r;
}
// MMA_TF32, MMA_F16, LDMATRIX_X4: DefineMatrixEngine (generator.h).
// x as tf32 bits: hi, and with MODE 3 the rest as lo (x = hi + lo to 22 bits).
#if MODE == 3
#define SPLIT_TF32(x, hi, lo) (hi) = TO_TF32(x), (lo) = TO_TF32((x) - as_float(hi))
#elif RAW_TF32
// The f32 bits as they are: the engine reads their top 19 (the mantissa truncated).
#define SPLIT_TF32(x, hi, lo) (hi) = as_uint(x)
#else
#define SPLIT_TF32(x, hi, lo) (hi) = TO_TF32(x)
#endif
#else
// cvt.rna.tf32.f32: the magnitude rounded to 10 mantissa bits, ties away from zero.
float ROUND_TF32(float x) { return as_float((as_uint(x) + 0x1000u) & 0xffffe000u); }
// x as the emulated engine computes with it: hi, and with MODE 3 the rest as lo.
#if MODE == 3
#define SPLIT(x, hi, lo) (hi) = ROUND_TF32(x), (lo) = ROUND_TF32((x) - (hi))
#elif MODE == 1 && RAW_TF32
#define SPLIT(x, hi, lo) (hi) = as_float(as_uint(x) & 0xffffe000u)
#elif MODE == 1
#define SPLIT(x, hi, lo) (hi) = ROUND_TF32(x)
#else
#define SPLIT(x, hi, lo) (hi) = (x)
#endif
#endif
#if MODE == 16
// f32 to f16 bits, rounded to nearest even.
ushort TO_F16(float x) {
#if MMA_PTX
  uint r;
  __asm("cvt.rn.f16x2.f32 %0, %1, %2;" : "=r"(r) : "f"(0.0f), "f"(x));
  return (ushort)r;
#else
  ushort h;
  vstore_half_rte(x, 0, (half*)&h);
  return h;
#endif
}
#if F16_STORAGE
#define GLOADR(p, i) (((__global const ushort*)(p))[i])
#define GLOADR4(p, i) vload4(0, (__global const ushort*)(p) + (i))
#else
#define GLOADR(p, i) TO_F16((p)[i])
#define GLOADR4(p, i)                                                                  \
  ((ushort4)(TO_F16((p)[(i)]), TO_F16((p)[(i) + 1]), TO_F16((p)[(i) + 2]),           \
             TO_F16((p)[(i) + 3])))
#endif
#endif

// Every accumulator of the warp's tile: entry e of the 16 x 8 fragment (i, j).
#define FOR_TILE(i, j, e)                                    \
  _Pragma("unroll") for (int i = 0; i < MI; ++i)             \
      _Pragma("unroll") for (int j = 0; j < NI; ++j)         \
          _Pragma("unroll") for (int e = 0; e < 4; ++e)

// Vector e of w elements of a step's A tile: row r, column k (the first along A's contiguous
// dimension: rows with TRANS_A, k without). B's alike: column c, row k (k with TRANS_B, columns
// without).
#define A_VEC(e, w, r, k)                                        \
  const int r = TRANS_A ? (e) % (BM / (w)) * (w) : (e) / (BK / (w)); \
  const int k = TRANS_A ? (e) / (BM / (w)) : (e) % (BK / (w)) * (w)
#define B_VEC(e, w, c, k)                                        \
  const int c = TRANS_B ? (e) / (BK / (w)) : (e) % (BN / (w)) * (w); \
  const int k = TRANS_B ? (e) % (BK / (w)) * (w) : (e) / (BN / (w))
// Element v of a vector: (row, k) offsets.
#define A_DR(v) (TRANS_A ? (v) : 0)
#define A_DK(v) (TRANS_A ? 0 : (v))
#define B_DC(v) (TRANS_B ? 0 : (v))
#define B_DK(v) (TRANS_B ? (v) : 0)

#if MODEL
// A model's product: sizes and leading dimensions are macros, A_OFF(z) / B_OFF(z) the batch
// offsets (broadcast batches), C dense; each result goes through EPILOGUE(v, i) (i: flat index)
// to c, or with PARTIALS unchanged to c (FIXUP: parts) as float: split-K's slices (SPLITS, KS;
// the sum kernel, the fixup below or a LayerNorm adds them up and applies the epilogue).
// (T_C, C_VALUE and C_PUT from the generator, warp_gemm.h DefineModelProduct.)
__kernel __attribute__((reqd_work_group_size(WG, 1, 1))) void KERNEL_NAME(
    __global const T_STORE* restrict a, __global const T_STORE_B* restrict b BIAS_PARAM,
    __global T_C* restrict c EPILOGUE_PARAMS FIXUP_PARAMS) {
#if FIXUP
  __local int last;
#endif
  // Work-group z = batch * SPLITS + s sums k in [s * KS, s * KS + KS) into slice s of c.
  const int z = get_group_id(2) / SPLITS, k_begin = get_group_id(2) % SPLITS * KS;
  const int k_end = min(K, k_begin + KS);
  const long c_off = (long)(get_group_id(2) % SPLITS) * BATCH * M * N;
#define C_AT(r, col) (c_off + OUT_AT(z, r, col))
#if FIXUP
#define C_DST parts
#else
#define C_DST c
#endif
// The slices' element (r, col) of batch entry z (slice 0; slice q SLICE apart) and how the
// fixup stores a tile's sum v of it.
#define PART_AT(z, r, col) OUT_AT(z, r, col)
#define SLICE ((long)BATCH * M * N)
#define FIXUP_STORE(z, r, col, v) \
  EPILOGUE_STORE(c, PART_AT(z, r, col), EPILOGUE((v) + BIAS(z, r), PART_AT(z, r, col)))
#else
#define A_OFF(z) (a_off + (z) * stride_a)
#define B_OFF(z) (b_off + (z) * stride_b)
// alpha * v + beta * C's element i, C read only where beta is not 0.
#define C_VALUE_AB(p, i, v) (beta != 0 ? alpha * (v) + beta * GLOAD(p, i) : alpha * (v))
__kernel __attribute__((reqd_work_group_size(WG, 1, 1))) void KERNEL_NAME(
    const int M, const int N, const int K, const float alpha, __global const T_STORE* a,
    const long a_off, const int lda, const long stride_a, __global const T_STORE* b,
    const long b_off, const int ldb, const long stride_b, const float beta, __global T_STORE* c,
    const long c_off0, const int ldc, const long stride_c FIXUP_PARAMS) {
#if FIXUP
  // Split K: work-group z * SPLITS + s sums k in [s * ks, s * ks + ks) into slice s of `parts`
  // (SLICE floats each, dense [batch][M][N]) unscaled; the tile's last adds the slices up and
  // applies alpha and beta.
  __local int last;
  const int z = get_group_id(2) / SPLITS, split = get_group_id(2) % SPLITS;
  const int ks = ((K + SPLITS - 1) / SPLITS + BK - 1) / BK * BK;
  const int k_begin = split * ks, k_end = min(K, k_begin + ks);
  const long c_off = c_off0 + z * stride_c;
#define PART_AT(z, r, col) (((long)(z) * M + (r)) * N + (col))
#define SLICE ((long)(get_num_groups(2) / SPLITS) * M * N)
#define C_DST parts
#define C_AT(r, col) (split * SLICE + PART_AT(z, r, col))
#define C_VALUE(p, i, v) (v)
#define C_PUT(p, i, x) ((p)[i] = (x))
#define FIXUP_STORE(z, r, col, v) \
  GSTORE(c, c_off + (long)(r) * ldc + (col), C_VALUE_AB(c, c_off + (long)(r) * ldc + (col), v))
#else
  const int z = get_group_id(2), k_begin = 0, k_end = K;
  const long c_off = c_off0 + z * stride_c;
#define C_DST c
#define C_AT(r, col) (c_off + (long)(r) * ldc + (col))
#define C_VALUE(p, i, v) C_VALUE_AB(p, i, v)
#define C_PUT(p, i, x) GSTORE(p, i, x)
#endif
#endif
  // The stages' A tiles, then their B tiles, in one array, which STAGED reuses for the
  // results. Aligned for the 16-byte copies and 32-bit fragment reads.
  __local TL smem[STAGES * (A_TILE + B_TILE)] __attribute__((aligned(16)));
#define AS(st) (smem + (st) * A_TILE)
#define BS(st) (smem + STAGES * A_TILE + (st) * B_TILE)
  const int lid = get_local_id(0), lane = lid % 32, warp = lid / 32 % TILE_WARPS;
#if KGROUPS > 1
  const int kgroup = lid / 32 / TILE_WARPS;
#else
  const int kgroup = 0;
#endif
  const int g = lane >> 2, t = lane & 3;
  const int wm = warp / WARPS_N * WM, wn = warp % WARPS_N * WN;
  const int m0 = get_group_id(1) * BM, n0 = get_group_id(0) * BN;
  a += A_OFF((long)z);
  b += B_OFF((long)z);
#if !ASYNC
  RT ra[LA * VEC_A], rb[LB * VEC_B];
#endif
  // A vector wholly inside the matrix is one GLOAD4 (an aligned float4 load where the host found
  // both operands 16-byte aligned, else vload4); one that crosses an edge is read element by
  // element, zeros outside.
#define LOAD_TILES(k0)                                                                     \
  for (int l = 0; l < LA; ++l) {                                                           \
    A_VEC(lid + l * WG, VEC_A, r, k);                                                             \
    if (VEC_A == 4 && (EVEN || (m0 + r + A_DR(3) < M && (k0) + k + A_DK(3) < K))) {           \
      vstore4(GLOADR4(a, A_AT(m0 + r, (k0) + k)), 0, ra + l * VEC_A);                         \
    } else {                                                                               \
      for (int v = 0; v < VEC_A; ++v) {                                                       \
        const int rr = m0 + r + A_DR(v), kk = (k0) + k + A_DK(v);                         \
        ra[l * VEC_A + v] = EVEN || (rr < M && kk < K) ? GLOADR(a, A_AT(rr, kk)) : (RT)0;    \
      }                                                                                    \
    }                                                                                      \
  }                                                                                        \
  for (int l = 0; l < LB; ++l) {                                                           \
    B_VEC(lid + l * WG, VEC_B, cc, k);                                                     \
    LOAD_B_VEC(rb + l * VEC_B, n0 + cc, (k0) + k)                                          \
  }
// VEC_B elements of B from column col of row kk on into rb.
#if GATHER_B
#if GATHER_HOISTED && WG % (BN / VEC_B) == 0
  // A work-item's columns are the same at every step (WG is a multiple of BN / VEC_B): what the
  // gather needs of them is computed once.
  const GATHER_T gather = GATHER_INIT(n0 + lid % (BN / VEC_B) * VEC_B);
#define GATHER_VEC(col, kk) GATHER_LOAD(b, kk, &gather)
#else
#define GATHER_VEC(col, kk) LOAD_B(b, kk, col)
#endif
// An f32 image under MODE 16 is gathered as floats and staged as f16 bits.
#if GATHER_F32 && MODE == 16
#define GATHER_RT(v) ((ushort4)(TO_F16((v).x), TO_F16((v).y), TO_F16((v).z), TO_F16((v).w)))
#else
#define GATHER_RT(v) (v)
#endif
#define LOAD_B_VEC(rb, col, kk)                                                            \
  if (EVEN || (kk) < K) {                                                                  \
    vstore4(GATHER_RT(GATHER_VEC(col, kk)), 0, rb);                                        \
  } else {                                                                                 \
    for (int v = 0; v < VEC_B; ++v) (rb)[v] = 0;                                           \
  }
#else
#define LOAD_B_VEC(rb, col, kk)                                                            \
  if (VEC_B == 4 && (EVEN || ((col) + B_DC(3) < N && (kk) + B_DK(3) < K))) {               \
    vstore4(GLOADR4(b, B_AT(kk, col)), 0, rb);                                             \
  } else {                                                                                 \
    for (int v = 0; v < VEC_B; ++v) {                                                      \
      const int c_ = (col) + B_DC(v), k_ = (kk) + B_DK(v);                                 \
      (rb)[v] = EVEN || (c_ < N && k_ < K) ? GLOADR(b, B_AT(k_, c_)) : (RT)0;              \
    }                                                                                      \
  }
#endif
#define STORE_TILES(buf)                                                                   \
  for (int l = 0; l < LA; ++l) {                                                           \
    A_VEC(lid + l * WG, VEC_A, r, k);                                                             \
    for (int v = 0; v < VEC_A; ++v)                                                           \
      AS(buf)[A_IDX(r + A_DR(v), k + A_DK(v))] = ra[l * VEC_A + v];                          \
  }                                                                                        \
  for (int l = 0; l < LB; ++l) {                                                           \
    B_VEC(lid + l * WG, VEC_B, cc, k);                                                            \
    for (int v = 0; v < VEC_B; ++v)                                                           \
      BS(buf)[B_IDX(cc + B_DC(v), k + B_DK(v))] = rb[l * VEC_B + v];                         \
  }
#if ASYNC
#ifndef B_INSIDE
#define B_INSIDE(k, c) 1
#endif
  // 16-byte chunks of both tiles of step k0 into stage st, as stored; chunks past the matrix's
  // edges (whole chunks: the host checked that its contiguous dimensions are multiples of CH)
  // are zeros, read from nowhere. A last round of fewer chunks than work-items (several warp
  // groups along K) leaves the rest idle.
#define COPY_TILES(st, k0)                                                                   \
  do {                                                                                       \
    for (int l = 0; l < (BM * BK / CH + WG - 1) / WG; ++l) {                                 \
      if (BM * BK / CH % WG != 0 && lid + l * WG >= BM * BK / CH) break;                     \
      A_VEC(lid + l * WG, CH, r, k);                                                         \
      const bool ok = EVEN || (m0 + r < M && (k0) + k < k_end);                              \
      CP_ASYNC16(&A_FRAG(AS(st), r, k), a + (ok ? A_AT(m0 + r, (k0) + k) : 0), ok);          \
    }                                                                                        \
    for (int l = 0; l < (BN * BK / CH + WG - 1) / WG; ++l) {                                 \
      if (BN * BK / CH % WG != 0 && lid + l * WG >= BN * BK / CH) break;                     \
      B_VEC(lid + l * WG, CH, c, k);                                                         \
      const bool ok = (EVEN || (n0 + c < N && (k0) + k < k_end)) && B_INSIDE((k0) + k, n0 + c); \
      CP_ASYNC16(&B_FRAG(BS(st), c, k), b + (ok ? B_AT((k0) + k, n0 + c) : 0), ok);          \
    }                                                                                        \
  } while (0)
#endif
  float acc[MI][NI][4];
  FOR_TILE(i, j, e) acc[i][j][e] = 0;
  const int steps = (k_end - k_begin + BK - 1) / BK;
#if ASYNC
  // STAGES - 1 steps in flight: step s waits for its own copies, meets the work-group (whose
  // copies are then visible, and which is done with the stage about to be refilled), starts the
  // copies of step s + STAGES - 1 and computes.
  for (int s = 0; s < STAGES - 1; ++s) {
    if (s < steps) COPY_TILES(s, k_begin + s * BK);
    CP_ASYNC_COMMIT();
  }
#else
  LOAD_TILES(k_begin)
  STORE_TILES(0)
  barrier(CLK_LOCAL_MEM_FENCE);
#endif
  for (int s = 0; s < steps; ++s) {
    __local const TL* at = AS(s % STAGES);
    __local const TL* bt = BS(s % STAGES);
#if ASYNC
    CP_ASYNC_WAIT(PENDING);
    barrier(CLK_LOCAL_MEM_FENCE);
    if (s + STAGES - 1 < steps) COPY_TILES((s + STAGES - 1) % STAGES, k_begin + (s + STAGES - 1) * BK);
    CP_ASYNC_COMMIT();
#else
    if (s + 1 < steps) {
      LOAD_TILES(k_begin + (s + 1) * BK)
    }
#endif
#if USE_MMA && MODE == 3
    // The step's products are summed apart and added to the running sums by a rounding FADD:
    // the matrix engine's own fp32 accumulation loses more than FMAs do over a long K.
    float part[MI][NI][4];
    FOR_TILE(i, j, e) part[i][j][e] = 0;
#define ACC part
#else
#define ACC acc
#endif
#pragma unroll
    for (int kq = 0; kq < BK / (MK * KGROUPS); ++kq) {
      const int kk = (kq * KGROUPS + kgroup) * MK;
#if USE_MMA && MODE == 16
      // Fragments by ldmatrix, four 8 x 8 blocks of f16 at a time, each lane naming one stored
      // row of 8 (16 bytes): A's blocks (rows 0-7 | 8-15) x (k 0-7 | 8-15) of tile i, B's
      // (k 0-7 | 8-15) x (columns of tiles j | j + 1); .trans where the operand is stored with
      // k as its rows (A transposed, B not), so that each lane gets the pairs along k mma wants.
      const int q = lane >> 3, l8 = lane & 7;
      uint fa[MI][4], fb[NI][2];
#pragma unroll
      for (int i = 0; i < MI; ++i) {
        const int r = wm + i * 16 + (q & 1) * 8, k = kk + (q >> 1) * 8;
#if ASYNC && TRANS_A
        LDMATRIX_X4(".trans", fa[i], &A_FRAG(at, r, k + l8));
#else
        LDMATRIX_X4("", fa[i], &A_FRAG(at, r + l8, k));
#endif
      }
#pragma unroll
      for (int j = 0; j < NI; j += 2) {
        const int c = wn + j * 8 + (q >> 1) * 8, k = kk + (q & 1) * 8;
        uint f[4];
#if ASYNC && !TRANS_B
        LDMATRIX_X4(".trans", f, &B_FRAG(bt, c, k + l8));
#else
        LDMATRIX_X4("", f, &B_FRAG(bt, c + l8, k));
#endif
        fb[j][0] = f[0], fb[j][1] = f[1], fb[j + 1][0] = f[2], fb[j + 1][1] = f[3];
      }
#pragma unroll
      for (int i = 0; i < MI; ++i)
#pragma unroll
        for (int j = 0; j < NI; ++j)
          MMA_F16(acc[i][j], fa[i][0], fa[i][1], fa[i][2], fa[i][3], fb[j][0], fb[j][1]);
#elif USE_MMA
      // A: rows g, g + 8, columns t, t + 4; B: column g, rows t, t + 4. Where k is an operand's
      // stored column, by ldmatrix on the f32 pairs seen as 16-bit pairs: a lane's word of an
      // 8 x 8 block of 16-bit elements is element t of row g of an 8 x 4 block of f32 (A's
      // blocks rows 0-7 | 8-15 x k 0-3 | 4-7; B's k 0-3 | 4-7 x columns of tiles j | j + 1).
      // Where k is the stored row, element by element.
      const int q = lane >> 3, l8 = lane & 7;
      uint ah[MI][4], bh[NI][2];
#if MODE == 3
      uint al[MI][4], bl[NI][2];
#endif
#pragma unroll
      for (int i = 0; i < MI; ++i) {
#if ASYNC && TRANS_A
        const int r = wm + i * 16 + g, k = kk + t;
        const float x[4] = {A_FRAG(at, r, k), A_FRAG(at, r + 8, k), A_FRAG(at, r, k + 4),
                            A_FRAG(at, r + 8, k + 4)};
#else
        uint w[4];
        LDMATRIX_X4("", w, &A_FRAG(at, wm + i * 16 + (q & 1) * 8 + l8, kk + (q >> 1) * 4));
        const float x[4] = {as_float(w[0]), as_float(w[1]), as_float(w[2]), as_float(w[3])};
#endif
#pragma unroll
        for (int e = 0; e < 4; ++e) SPLIT_TF32(x[e], ah[i][e], al[i][e]);
      }
#pragma unroll
      for (int j = 0; j < NI; j += 2) {
#if ASYNC && !TRANS_B
        float y[4];
#pragma unroll
        for (int h = 0; h < 2; ++h) {
          const int c = wn + (j + h) * 8 + g, k = kk + t;
          y[2 * h] = B_FRAG(bt, c, k), y[2 * h + 1] = B_FRAG(bt, c, k + 4);
        }
#else
        uint w[4];
        LDMATRIX_X4("", w, &B_FRAG(bt, wn + (j + (q >> 1)) * 8 + l8, kk + (q & 1) * 4));
        const float y[4] = {as_float(w[0]), as_float(w[1]), as_float(w[2]), as_float(w[3])};
#endif
#pragma unroll
        for (int e = 0; e < 4; ++e) SPLIT_TF32(y[e], bh[j + e / 2][e % 2], bl[j + e / 2][e % 2]);
      }
#pragma unroll
      for (int i = 0; i < MI; ++i)
#pragma unroll
        for (int j = 0; j < NI; ++j) {
#if MODE == 3
          MMA_TF32(ACC[i][j], al[i][0], al[i][1], al[i][2], al[i][3], bh[j][0], bh[j][1]);
          MMA_TF32(ACC[i][j], ah[i][0], ah[i][1], ah[i][2], ah[i][3], bl[j][0], bl[j][1]);
#endif
          MMA_TF32(ACC[i][j], ah[i][0], ah[i][1], ah[i][2], ah[i][3], bh[j][0], bh[j][1]);
        }
#else
      // The same fragment entries per work-item (rows g, g + 8 and columns 2t, 2t + 1 of each
      // tile) with FMAs, the operands rounded as the matrix engine rounds them; a 2 MI x 2 NI
      // register block, 2 (MI + NI) local reads per 4 MI NI FMAs.
#pragma unroll
      for (int k = kk; k < kk + MK; ++k) {
        float xh[MI][2], yh[NI][2];
#if MODE == 3
        float xl[MI][2], yl[NI][2];
#endif
#pragma unroll
        for (int i = 0; i < MI; ++i)
#pragma unroll
          for (int h = 0; h < 2; ++h)
            SPLIT(LREAD(at, A_IDX(wm + i * 16 + g + h * 8, k)), xh[i][h], xl[i][h]);
#pragma unroll
        for (int j = 0; j < NI; ++j)
#pragma unroll
          for (int h = 0; h < 2; ++h)
            SPLIT(LREAD(bt, B_IDX(wn + j * 8 + 2 * t + h, k)), yh[j][h], yl[j][h]);
#pragma unroll
        for (int i = 0; i < MI; ++i)
#pragma unroll
          for (int j = 0; j < NI; ++j)
#pragma unroll
            for (int e = 0; e < 4; ++e) {
#if MODE == 3
              acc[i][j][e] = mad(xl[i][e >> 1], yh[j][e & 1], acc[i][j][e]);
              acc[i][j][e] = mad(xh[i][e >> 1], yl[j][e & 1], acc[i][j][e]);
#endif
              acc[i][j][e] = mad(xh[i][e >> 1], yh[j][e & 1], acc[i][j][e]);
            }
      }
#endif
    }
#undef ACC
#if USE_MMA && MODE == 3
    FOR_TILE(i, j, e) acc[i][j][e] += part[i][j][e];
#endif
#if !ASYNC
    if (s + 1 < steps) {
      STORE_TILES((s + 1) & 1)
    }
    barrier(CLK_LOCAL_MEM_FENCE);
#endif
  }
#if KGROUPS > 1
  // Groups 1.. along K leave their sums in local memory (lane fastest: no bank conflicts), group
  // 0 adds them up in order.
  __local float* red = (__local float*)smem;
#define RED_AT(q, i, j, e) \
  red[((((q) - 1) * TILE_WARPS + warp) * (MI * NI * 4) + ((i) * NI + (j)) * 4 + (e)) * 32 + lane]
  barrier(CLK_LOCAL_MEM_FENCE);  // every warp is done with the stages
  if (kgroup > 0) FOR_TILE(i, j, e) RED_AT(kgroup, i, j, e) = acc[i][j][e];
  barrier(CLK_LOCAL_MEM_FENCE);
  if (kgroup == 0)
    for (int q = 1; q < KGROUPS; ++q) FOR_TILE(i, j, e) acc[i][j][e] += RED_AT(q, i, j, e);
#undef RED_AT
#endif
#if STAGED
  // C through local memory, 16 rows of each warp's block at a time, so that a warp stores (and
  // the epilogue reads its operands in) runs of adjacent elements of a row, where the fragments
  // hold pairs 8 rows apart. Every warp takes the same steps, so barriers can order them.
  __local float* ws = (__local float*)smem + warp * 16 * LSW;
  barrier(CLK_LOCAL_MEM_FENCE);  // every warp is done with the stages
#pragma unroll
  for (int i = 0; i < MI; ++i) {
    if (kgroup == 0)
#pragma unroll
      for (int j = 0; j < NI; ++j)
#pragma unroll
        for (int h = 0; h < 2; ++h)
          vstore2((float2)(acc[i][j][2 * h], acc[i][j][2 * h + 1]), 0,
                  ws + (g + h * 8) * LSW + j * 8 + 2 * t);
    barrier(CLK_LOCAL_MEM_FENCE);
    // Values first, then stores (as below).
#define STAGED_AT(q)                                                 \
  const int row = (lane + (q) * 32) / WN, cc = (lane + (q) * 32) % WN; \
  const int r = m0 + wm + i * 16 + row, col = n0 + wn + cc;          \
  const bool in = EVEN || (r < M && col < N)
    if (kgroup == 0) {
      float out[WN / 2];
#pragma unroll
      for (int q = 0; q < WN / 2; ++q) {
        STAGED_AT(q);
        if (in) out[q] = C_VALUE(C_DST, C_AT(r, col), ws[row * LSW + cc]);
      }
#pragma unroll
      for (int q = 0; q < WN / 2; ++q) {
        STAGED_AT(q);
        if (in) C_PUT(C_DST, C_AT(r, col), out[q]);
      }
    }
#undef STAGED_AT
    barrier(CLK_LOCAL_MEM_FENCE);  // read before the next rows overwrite them
  }
#else
  // C: rows g, g + 8 and columns 2t, 2t + 1 of each 16 x 8 tile. Every value (with the loads of
  // its epilogue's operands) before any store: interleaved, NVIDIA's compiler kept each load
  // after the store before it (measured: ResNet-50's residual convolutions 3x slower), restrict
  // on the output notwithstanding. The values stay in acc: an epilogue's result is a float
  // (passes/fuse.cpp keeps an anchor's group float; ModelProductSpec checks it).
#define FRAGMENT_AT(i, j, e)                                     \
  const int r = m0 + wm + (i) * 16 + g + ((e) >> 1) * 8;         \
  const int col = n0 + wn + (j) * 8 + 2 * t + ((e) & 1);         \
  const bool in = EVEN || (r < M && col < N)
  if (kgroup == 0) {
    FOR_TILE(i, j, e) {
      FRAGMENT_AT(i, j, e);
      if (in) acc[i][j][e] = C_VALUE(C_DST, C_AT(r, col), acc[i][j][e]);
    }
    FOR_TILE(i, j, e) {
      FRAGMENT_AT(i, j, e);
      if (in) C_PUT(C_DST, C_AT(r, col), acc[i][j][e]);
    }
  }
#undef FRAGMENT_AT
#endif
#if FIXUP
  // The tile's last work-group adds its SPLITS slices up in split order, as the sum kernel does
  // (the same result whichever group arrives last), then the bias and the epilogue.
  const long tile = ((long)z * get_num_groups(1) + get_group_id(1)) * get_num_groups(0);
  ARRIVE_LAST(counters + tile + get_group_id(0), SPLITS, last);
  if (!last) return;
  __global volatile const float* slices = parts;
  for (int e = lid; e < BM * BN; e += WG) {
    const int r = m0 + (OUT_ROWS_FAST ? e % BM : e / BN);
    const int col = n0 + (OUT_ROWS_FAST ? e / BM : e % BN);
    if (!EVEN && (r >= M || col >= N)) continue;
    const long o = PART_AT(z, r, col);
    float v = 0;
    for (int q = 0; q < SPLITS; ++q) v += slices[q * SLICE + o];
    FIXUP_STORE(z, r, col, v);
  }
#endif
}
#undef LOAD_TILES
#undef LOAD_B_VEC
#undef GATHER_VEC
#undef GATHER_RT
#undef C_VALUE_AB
#undef C_VALUE
#undef C_PUT
#undef PART_AT
#undef SLICE
#undef FIXUP_STORE
#undef C_DST
#undef C_AT
#undef T_C
#undef A_OFF
#undef B_OFF
#undef STORE_TILES
#undef FOR_TILE
#undef A_VEC
#undef B_VEC
#undef A_DR
#undef A_DK
#undef B_DC
#undef B_DK
#undef SPLIT
#undef SPLIT_TF32
#undef USE_MMA
#undef WARPS_N
#undef TILE_WARPS
#undef WG
#undef MI
#undef NI
#undef MK
#undef LS
#undef LSA
#undef LSB
#undef A_TILE
#undef B_TILE
#undef A_FRAG
#undef B_FRAG
#undef A_IDX
#undef B_IDX
#undef CH
#undef COPY_TILES
#undef RT
#undef GLOADR
#undef GLOADR4
#undef TL
#undef AS
#undef BS
#undef LSW
#undef LREAD
#undef LA
#undef LB
#undef B_INSIDE
