// BLAS-style GEMM C = alpha * op(A) op(B) + beta * C (row-major, batched by get_group_id(2)) on
// Hopper's warpgroup MMA: wgmma.mma_async reads both operands from local memory through matrix
// descriptors and accumulates in fp32 registers. The instructions are sm_90a's, which NVIDIA's
// OpenCL compiler does not assemble: each is a PTX comment (SM90A, "// sm_90a: ") that the
// runtime makes live when it rebuilds the program from its PTX (runtime/cl/ptx_sm90a.h).
//
// A work-group of BM / 64 warpgroups (128 work-items each) computes a BM x BN tile; warpgroup w
// rows [64 w, 64 w + 64), all BN columns, as one m64nBNk16 (f16) or m64nBNk8 (tf32) instruction
// per 32 bytes of K. Each stage holds ROWB bytes of K (64 or 128) of both tiles, copied by
// cp.async STAGES - 1 steps ahead, in the engine's 64- or 128-byte swizzle, which spreads its
// reads over every bank (the unswizzled layouts ran at a third of the speed on the H100):
// - k-contiguous operands (A [M, K], B stored [N, K]): tile row r at ROWB r, its 16-byte chunk c
//   at (c ^ ((r >> 1) & 3)) * 16 (64-byte rows) or (c ^ (r & 7)) * 16 (128-byte rows); 8-row
//   groups 8 ROWB bytes apart (the descriptor's stride).
// - m- or n-contiguous ones (TRANS_A: A stored [K, M]; !TRANS_B: B stored [K, N]; f16 only, the
//   instruction transposing them; 64-byte rows only): 512-byte atoms of 8 k by 32 elements, row k % 8 at 64 (k % 8)
//   with the same chunk swizzle; atoms along M or N 512 bytes apart (the descriptor's leading
//   offset), 8-k groups R / 32 atoms apart (its stride), R the tile's extent.
// A stage's tiles start on 1 KiB boundaries, as the swizzle is of address bits. Work-groups run
// down M first (get_group_id(0)): in the probe of docs/precision.md, tf32 at n = 4096 was 4%
// faster than across N first.
// Parameters: BM, BN, STAGES, ROWB, ELEM (bytes per operand element: 2 for f16, 4 for tf32 on f32),
// TRANS_A, TRANS_B, WGMMA(d, da, db) (one instruction over d[BN / 2]), T_STORE, LOAD(p, i),
// STORE(p, i, v) (generator.h DefineStorage), CP_ASYNC16, CP_ASYNC_COMMIT, CP_ASYNC_WAIT
// (generator.h DefineAsyncCopy). Sizes: M % BM, N % BN and K % (ROWB / ELEM) are 0, and each
// operand's offset, leading dimension and batch stride are multiples of 16 bytes (wgmma_gemm.h
// WgmmaApplies).
#define WG (BM / 64 * 128)
#define KSTEP (ROWB / ELEM)  // elements of K per stage
#define CHUNKS (ROWB / 16)   // 16-byte chunks per stored row of a stage
#define A_BYTES (BM * ROWB)
#define STAGE_BYTES ((BM + BN) * ROWB)
#define SM90A(x) __asm volatile("// sm_90a: " x ::: "memory")
// A descriptor: start address, leading and stride byte offsets, the swizzle (mode 2: 64 bytes,
// 1: 128 bytes).
#define DESC(addr, lead, stride)                                   \
  ((ulong)(((addr)&0x3FFFF) >> 4) | ((ulong)((lead) >> 4) << 16) | \
   ((ulong)((stride) >> 4) << 32) | ((ROWB == 128 ? 1ul : 2ul) << 62))
// Where chunk c (16 bytes) of swizzled row r goes within its 8-row group or atom.
#if ROWB == 128
#define SWIZZLE(r, c) ((r)*128 + (((c) ^ ((r)&7)) << 4))
#else
#define SWIZZLE(r, c) ((r)*64 + (((c) ^ (((r) >> 1) & 3)) << 4))
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

__kernel __attribute__((reqd_work_group_size(WG, 1, 1))) void KERNEL_NAME(
    const int M, const int N, const int K, const float alpha, __global const T_STORE* a,
    const long a_off, const int lda, const long stride_a, __global const T_STORE* b,
    const long b_off, const int ldb, const long stride_b, const float beta, __global T_STORE* c,
    const long c_off0, const int ldc, const long stride_c) {
  __local uint4 smem[STAGES * STAGE_BYTES / 16] __attribute__((aligned(1024)));
  const int tid = get_local_id(0), wg = tid / 128, warp = tid % 128 / 32, lane = tid % 32;
  const int z = get_group_id(2), m0 = get_group_id(0) * BM, n0 = get_group_id(1) * BN;
  // The tiles' first elements at k = 0.
  __global const uchar* pa =
      (__global const uchar*)(a + a_off + z * stride_a + (TRANS_A ? m0 : (long)m0 * lda));
  __global const uchar* pb =
      (__global const uchar*)(b + b_off + z * stride_b + (TRANS_B ? (long)n0 * ldb : n0));
  const long row_a = (long)lda * ELEM, row_b = (long)ldb * ELEM;
  const int steps = K / KSTEP;
  const uint base = (uint)(ulong)smem;
  // Step kt's tiles into stage st: R x CHUNKS chunks of 16 bytes per tile, consecutive work-items on
  // consecutive chunks of a stored row.
#define LOAD_STEP(kt, st)                                                        \
  do {                                                                           \
    __local uchar* sa_ = (__local uchar*)smem + (st)*STAGE_BYTES;                \
    for (int e = tid; e < BM * CHUNKS; e += WG)                                  \
      CP_ASYNC16(sa_ + A_AT(BM, e), pa + A_FROM(BM, e, kt, row_a), 1);           \
    for (int e = tid; e < BN * CHUNKS; e += WG)                                  \
      CP_ASYNC16(sa_ + A_BYTES + B_AT(BN, e), pb + B_FROM(BN, e, kt, row_b), 1); \
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
    const uint sa = base + kt % STAGES * STAGE_BYTES, sb = sa + A_BYTES;
    SM90A("wgmma.fence.sync.aligned;");
#pragma unroll
    for (int j = 0; j < ROWB / 32; ++j)  // 32 bytes of K each
      WGMMA(d, A_DESC(sa, BM, wg * 64, j * 32), B_DESC(sb, BN, 0, j * 32));
    SM90A("wgmma.commit_group.sync.aligned;");
    // Every warpgroup finished step kt - 1 before this step's barrier (the wait below), so its
    // stage takes step kt + STAGES - 1 while the engine runs step kt. Keeping step kt in flight
    // past a second barrier instead (wait_group 1) measured no faster on the H100.
    if (kt + STAGES - 1 < steps) LOAD_STEP(kt + STAGES - 1, (kt + STAGES - 1) % STAGES);
    CP_ASYNC_COMMIT();
    SM90A("wgmma.wait_group.sync.aligned 0;");
  }
  // Rows 16 warp + lane / 4 (+ 8) of the warpgroup's 64, columns 8 j + 2 (lane % 4) (+ 1).
  const long c_off = c_off0 + z * stride_c;
  const int r = m0 + wg * 64 + warp * 16 + lane / 4;
#pragma unroll
  for (int j = 0; j < BN / 8; ++j)
#pragma unroll
    for (int e = 0; e < 4; ++e) {
      const long i = c_off + (long)(r + e / 2 * 8) * ldc + n0 + j * 8 + 2 * (lane % 4) + e % 2;
      float x = alpha * d[4 * j + e];
      if (beta != 0) x += beta * LOAD(c, i);
      STORE(c, i, x);
    }
}
