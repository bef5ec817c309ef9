// BLAS-style GEMM C = alpha * op(A) op(B) + beta * C (row-major, batched by get_group_id(2)) on
// Hopper's warpgroup MMA: wgmma.mma_async reads both operands from local memory through matrix
// descriptors and accumulates in fp32 registers. The instructions are sm_90a's, which NVIDIA's
// OpenCL compiler does not assemble: each is a PTX comment (SM90A) that the runtime makes live
// when it rebuilds the program from its PTX (runtime/cl/ptx_sm90a.h).
//
// A work-group of BM / 64 warpgroups (128 work-items each) computes a BM x BN tile; warpgroup w
// rows [64 w, 64 w + 64), all BN columns, as one m64nBNk16 (f16) or m64nBNk8 (tf32) instruction
// per 32 bytes of K. Each stage holds ROWB bytes of K (32, 64 or 128) of both tiles, copied by
// cp.async STAGES - 1 steps ahead, in the engine's 32-, 64- or 128-byte swizzle, which spreads
// its reads over every bank (the unswizzled layouts ran at a third of the speed on the H100):
// - k-contiguous operands (A [M, K], B stored [N, K]): tile row r at ROWB r, its 16-byte chunk c
//   at (c ^ ((r >> 2) & 1)) * 16 (32-byte rows), (c ^ ((r >> 1) & 3)) * 16 (64-byte rows) or
//   (c ^ (r & 7)) * 16 (128-byte rows); 8-row groups 8 ROWB bytes apart (the descriptor's
//   stride).
// - m- or n-contiguous ones (TRANS_A: A stored [K, M]; !TRANS_B: B stored [K, N]; f16 only, the
//   instruction transposing them; 64-byte rows only): 512-byte atoms of 8 k by 32 elements, row
//   k % 8 at 64 (k % 8) with the same chunk swizzle; atoms along M or N 512 bytes apart (the
//   descriptor's leading offset), 8-k groups R / 32 atoms apart (its stride), R the tile's extent.
// A stage's tiles start on 1 KiB boundaries, as the swizzle is of address bits. Work-groups run
// down M first (get_group_id(0)): in the probe of docs/precision.md, tf32 at n = 4096 was 4%
// faster than across N first.
// Parameters: BM, BN, STAGES, ROWB, ELEM (bytes per operand element: 2 for f16, 4 for tf32 on f32),
// TRANS_A, TRANS_B, WGMMA(d, da, db) (one instruction over d[BN / 2]), SM90A(x) (one hidden
// instruction; both defined by the generator, so that an emulated kernel's source has none),
// T_STORE, LOAD(p, i), STORE(p, i, v) (generator.h DefineStorage), CP_ASYNC16, CP_ASYNC_COMMIT,
// CP_ASYNC_WAIT (generator.h DefineAsyncCopy), EVEN (M % BM, N % BN and K % (ROWB / ELEM) are 0:
// texel_gemm's problems, WgmmaApplies; otherwise chunks past an edge are copied as zeros and
// results past it not stored, which needs each operand's contiguous dimension a multiple of 16
// bytes). Each operand's offset, leading dimension and batch stride are multiples of 16 bytes.
// MODEL: a model's product (wgmma_gemm.h GenerateModelWgmmaGemm) with warp_gemm.cl's model
// interface: M, N, K, lda, ldb, A_OFF(z), B_OFF(z), OUT_AT(z, r, c), BATCH, SPLITS, KS, PARTIALS,
// BIAS_PARAM, BIAS(z, row), EPILOGUE_PARAMS, T_C, C_VALUE(p, i, v), C_PUT(p, i, x) (warp_gemm.h
// DefineModelProduct).
// WGMMA_EMULATED: the instruction computed by each work-item from the same local-memory layout
// (tf32 operands truncated as the engine does), so that a CPU checks the staging, edges, splits
// and epilogue; the descriptors are checked on the GPU only.
#define WG (BM / 64 * 128)
#define KSTEP (ROWB / ELEM)  // elements of K per stage
#define CHUNKS (ROWB / 16)   // 16-byte chunks per stored row of a stage
#define A_BYTES (BM * ROWB)
#define STAGE_BYTES ((BM + BN) * ROWB)
// A descriptor: start address, leading and stride byte offsets, the swizzle (mode 1: 128 bytes,
// 2: 64 bytes, 3: 32 bytes).
#define DESC(addr, lead, stride)                                   \
  ((ulong)(((addr)&0x3FFFF) >> 4) | ((ulong)((lead) >> 4) << 16) | \
   ((ulong)((stride) >> 4) << 32) | ((ROWB == 128 ? 1ul : ROWB == 64 ? 2ul : 3ul) << 62))
// Where chunk c (16 bytes) of swizzled row r goes within its 8-row group or atom.
#if ROWB == 128
#define SWIZZLE(r, c) ((r)*128 + (((c) ^ ((r)&7)) << 4))
#elif ROWB == 64
#define SWIZZLE(r, c) ((r)*64 + (((c) ^ (((r) >> 1) & 3)) << 4))
#else
#define SWIZZLE(r, c) ((r)*32 + (((c) ^ (((r) >> 2) & 1)) << 4))
#endif
// A tile of R rows along M or N: where chunk e of a step goes, the global offset it comes from
// (bytes from the tile's first element at k = 0; rb: bytes per stored row), and the descriptor of
// the rows from `row`, 32 bytes of K from `kbyte` (0 or 32).
#define K_AT(R, e) SWIZZLE((e) / CHUNKS, (e) % CHUNKS)
#define K_FROM(R, e, kt, rb) ((e) / CHUNKS * (rb) + (long)(kt)*ROWB + (e) % CHUNKS * 16)
#define K_DESC(base, R, row, kbyte) DESC((base) + (row)*ROWB + (kbyte), 16, 8 * ROWB)
#define MN_AT(R, e)                                                             \
  ((((e) % ((R) / 8)) >> 2) * 512 + ((e) / ((R) / 8) >> 3) * ((R) / 32 * 512) + \
   SWIZZLE(((e) / ((R) / 8)) & 7, ((e) % ((R) / 8)) & 3))
#define MN_FROM(R, e, kt, rb) (((long)(kt)*KSTEP + (e) / ((R) / 8)) * (rb) + ((e) % ((R) / 8)) * 16)
#define MN_DESC(base, R, row, kbyte) \
  DESC((base) + (row) / 32 * 512 + (kbyte) / 32 * 2 * ((R) / 32 * 512), 512, (R) / 32 * 512)
// The m- or n-contiguous layout (MN_*) counts 2-byte elements: 8 a chunk, 32 an atom's row.
#if (TRANS_A || !TRANS_B) && ELEM != 2
#error "m- or n-contiguous operands are f16's only (tf32 has no transposing instruction)"
#endif
#if TRANS_A
#define A_AT MN_AT
#define A_FROM MN_FROM
#define A_DESC MN_DESC
#else
#define A_AT K_AT
#define A_FROM K_FROM
#define A_DESC K_DESC
#endif
#if TRANS_B
#define B_AT K_AT
#define B_FROM K_FROM
#define B_DESC K_DESC
#else
#define B_AT MN_AT
#define B_FROM MN_FROM
#define B_DESC MN_DESC
#endif

#if WGMMA_EMULATED
// Element (r, kk) of a stage's tile of R rows, kk < KSTEP: its byte offset.
#define K_ELEM(R, r, kk) (SWIZZLE(r, (kk)*ELEM / 16) + (kk)*ELEM % 16)
#define MN_ELEM(R, r, kk) (MN_AT(R, (kk) * ((R) / 8) + (r) / 8) + (r) % 8 * ELEM)
#if TRANS_A
#define A_ELEM MN_ELEM
#else
#define A_ELEM K_ELEM
#endif
#if TRANS_B
#define B_ELEM K_ELEM
#else
#define B_ELEM MN_ELEM
#endif
#if ELEM == 2
#define LOCAL_ELEM(p) vload_half(0, (__local const half*)(p))
#else
#define LOCAL_ELEM(p) as_float(*(__local const uint*)(p)&0xFFFFE000u)
#endif
// d[4 j + e]: row 16 warp + lane / 4 + 8 (e / 2), column 8 j + 2 (lane % 4) + e % 2.
#define MMA_STEP(so, j)                                                                        \
  for (int i_ = 0; i_ < BN / 2; ++i_) {                                                        \
    const int row_ = wg * 64 + warp * 16 + lane / 4 + (i_ & 2) * 4;                           \
    const int col_ = (i_ >> 2) * 8 + 2 * (lane & 3) + (i_ & 1);                               \
    float s_ = 0.0f;                                                                           \
    for (int kk_ = (j) * (32 / ELEM); kk_ < ((j) + 1) * (32 / ELEM); ++kk_)                    \
      s_ += LOCAL_ELEM(sm + (so) + A_ELEM(BM, row_, kk_)) *                                    \
            LOCAL_ELEM(sm + (so) + A_BYTES + B_ELEM(BN, col_, kk_));                           \
    d[i_] += s_;                                                                               \
  }
#else
#define MMA_STEP(so, j) \
  WGMMA(d, A_DESC(base + (so), BM, wg * 64, (j)*32), B_DESC(base + (so) + A_BYTES, BN, 0, (j)*32))
#endif
#if EVEN
#define A_OK(e, kt) 1
#define B_OK(e, kt) 1
#else
// Chunk e of step kt inside the operand (lim: rows or columns left from the tile's first).
#define K_OK(R, e, kt, lim) ((e) / CHUNKS < (lim) && (kt)*KSTEP + (e) % CHUNKS * (16 / ELEM) < kn)
#define MN_OK(R, e, kt, lim) ((e) % ((R) / 8) * 8 < (lim) && (kt)*KSTEP + (e) / ((R) / 8) < kn)
#if TRANS_A
#define A_OK(e, kt) MN_OK(BM, e, kt, M - m0)
#else
#define A_OK(e, kt) K_OK(BM, e, kt, M - m0)
#endif
#if TRANS_B
#define B_OK(e, kt) K_OK(BN, e, kt, N - n0)
#else
#define B_OK(e, kt) MN_OK(BN, e, kt, N - n0)
#endif
#endif

#if MODEL
// Work-group z = batch * SPLITS + s sums k in [s * KS, s * KS + KS) into slice s of c (PARTIALS:
// as float, the sum kernel or a LayerNorm adding them up), else through the epilogue.
// (T_C, C_VALUE and C_PUT from the generator, warp_gemm.h DefineModelProduct.)
#define C_AT(r, col) (c_off + OUT_AT(z, r, col))
__kernel __attribute__((reqd_work_group_size(WG, 1, 1))) void KERNEL_NAME(
    __global const T_STORE* restrict a, __global const T_STORE* restrict b BIAS_PARAM,
    __global T_C* restrict c EPILOGUE_PARAMS) {
  const int z = get_group_id(2) / SPLITS, k_begin = get_group_id(2) % SPLITS * KS;
  const int kn = min(K, k_begin + KS) - k_begin;
  const long c_off = (long)(get_group_id(2) % SPLITS) * BATCH * M * N;
  const long a_base = A_OFF((long)z), b_base = B_OFF((long)z);
#else
#define C_AT(r, col) (c_off + (long)(r)*ldc + (col))
#define C_VALUE(p, i, v) (beta != 0 ? alpha * (v) + beta * LOAD(p, i) : alpha * (v))
#define C_PUT(p, i, x) STORE(p, i, x)
__kernel __attribute__((reqd_work_group_size(WG, 1, 1))) void KERNEL_NAME(
    const int M, const int N, const int K, const float alpha, __global const T_STORE* a,
    const long a_off, const int lda, const long stride_a, __global const T_STORE* b,
    const long b_off, const int ldb, const long stride_b, const float beta, __global T_STORE* c,
    const long c_off0, const int ldc, const long stride_c) {
  const int z = get_group_id(2), k_begin = 0, kn = K;
  const long c_off = c_off0 + z * stride_c;
  const long a_base = a_off + z * stride_a, b_base = b_off + z * stride_b;
#endif
  __local uint4 smem[STAGES * STAGE_BYTES / 16] __attribute__((aligned(1024)));
  const int tid = get_local_id(0), wg = tid / 128, warp = tid % 128 / 32, lane = tid % 32;
  const int m0 = get_group_id(0) * BM, n0 = get_group_id(1) * BN;
  // The tiles' first elements at k = k_begin.
  __global const uchar* pa = (__global const uchar*)(a + a_base + (TRANS_A ? m0 : (long)m0 * lda) +
                                                     (TRANS_A ? (long)k_begin * lda : k_begin));
  __global const uchar* pb = (__global const uchar*)(b + b_base + (TRANS_B ? (long)n0 * ldb : n0) +
                                                     (TRANS_B ? k_begin : (long)k_begin * ldb));
  const long row_a = (long)lda * ELEM, row_b = (long)ldb * ELEM;
  const int steps = (kn + KSTEP - 1) / KSTEP;
  const uint base = (uint)(ulong)smem;
  __local uchar* sm = (__local uchar*)smem;
  // Step kt's tiles into stage st: R x CHUNKS chunks of 16 bytes per tile, consecutive
  // work-items on consecutive chunks of a stored row.
// A chunk past an edge is copied as zeros, from the tile's first (a valid address).
#define LOAD_STEP(kt, st)                                                           \
  do {                                                                              \
    __local uchar* sa_ = (__local uchar*)smem + (st)*STAGE_BYTES;                   \
    for (int e = tid; e < BM * CHUNKS; e += WG) {                                   \
      const bool ok_ = A_OK(e, kt);                                                 \
      CP_ASYNC16(sa_ + A_AT(BM, e), ok_ ? pa + A_FROM(BM, e, kt, row_a) : pa, ok_); \
    }                                                                               \
    for (int e = tid; e < BN * CHUNKS; e += WG) {                                   \
      const bool ok_ = B_OK(e, kt);                                                 \
      __local uchar* to_ = sa_ + A_BYTES + B_AT(BN, e);                             \
      CP_ASYNC16(to_, ok_ ? pb + B_FROM(BN, e, kt, row_b) : pb, ok_);               \
    }                                                                               \
  } while (0)

  float d[BN / 2];
#pragma unroll
  for (int i = 0; i < BN / 2; ++i) d[i] = 0.0f;
  for (int st = 0; st < STAGES - 1; ++st) {
    if (st < steps) LOAD_STEP(st, st);
    CP_ASYNC_COMMIT();
  }
  for (int kt = 0; kt < steps; ++kt) {
    // Step kt has landed; the engine reads local memory through the async proxy, so the copies
    // are fenced for it before the barrier publishes them.
    CP_ASYNC_WAIT(STAGES - 2);
    SM90A("fence.proxy.async.shared::cta;");
    barrier(CLK_LOCAL_MEM_FENCE);
    const uint so = kt % STAGES * STAGE_BYTES;
    SM90A("wgmma.fence.sync.aligned;");
#pragma unroll
    for (int j = 0; j < ROWB / 32; ++j) {  // 32 bytes of K each
      MMA_STEP(so, j);
    }
    SM90A("wgmma.commit_group.sync.aligned;");
    // Every warpgroup finished step kt - 1 before this step's barrier (the wait below), so its
    // stage takes step kt + STAGES - 1 while the engine runs step kt. Keeping step kt in flight
    // past a second barrier instead (wait_group 1) measured no faster on the H100.
    if (kt + STAGES - 1 < steps) LOAD_STEP(kt + STAGES - 1, (kt + STAGES - 1) % STAGES);
    CP_ASYNC_COMMIT();
    SM90A("wgmma.wait_group.sync.aligned 0;");
  }
  // Rows 16 warp + lane / 4 (+ 8) of the warpgroup's 64, columns 8 j + 2 (lane % 4) (+ 1); every
  // value before any store (warp_gemm.cl says why).
#define RESULT_AT(j, e)                                              \
  const int r = m0 + wg * 64 + warp * 16 + lane / 4 + (e) / 2 * 8;   \
  const int col = n0 + (j) * 8 + 2 * (lane % 4) + (e) % 2;           \
  const bool in = EVEN || (r < M && col < N)
#pragma unroll
  for (int j = 0; j < BN / 8; ++j)
#pragma unroll
    for (int e = 0; e < 4; ++e) {
      RESULT_AT(j, e);
      if (in) d[4 * j + e] = C_VALUE(c, C_AT(r, col), d[4 * j + e]);
    }
#pragma unroll
  for (int j = 0; j < BN / 8; ++j)
#pragma unroll
    for (int e = 0; e < 4; ++e) {
      RESULT_AT(j, e);
      if (in) C_PUT(c, C_AT(r, col), d[4 * j + e]);
    }
#undef RESULT_AT
}
// A program holds many kernels: nothing defined here outlives the template.
#undef A_AT
#undef A_BYTES
#undef A_DESC
#undef A_ELEM
#undef A_FROM
#undef A_OK
#undef B_AT
#undef B_DESC
#undef B_ELEM
#undef B_FROM
#undef B_OK
#undef CHUNKS
#undef C_AT
#undef C_VALUE
#undef C_PUT
#undef DESC
#undef KSTEP
#undef K_AT
#undef K_DESC
#undef K_ELEM
#undef K_FROM
#undef K_OK
#undef LOAD_STEP
#undef LOCAL_ELEM
#undef MMA_STEP
#undef MN_AT
#undef MN_DESC
#undef MN_ELEM
#undef MN_FROM
#undef MN_OK
#undef STAGE_BYTES
#undef SWIZZLE
#undef T_C
#undef WG
