// BLAS-style GEMM on Intel's matrix engine (cl_intel_subgroup_matrix_multiply_accumulate): f16
// operands, fp32 sums. C = alpha * op(A) op(B) + beta * C, row-major, batched by get_group_id(2),
// with the arguments of warp_gemm.cl. Written against the extension's specification; no device
// with it was available (docs/precision.md).
//
// A work-group is one subgroup of SG work-items (SG: the device's smallest subgroup size, 8 or
// 16, as the extension requires). It computes a (8 MT) x (SG NT) tile of C as MT x NT blocks of
// 8 x SG, 16 deep per step, through intel_sub_group_f16_f16_matrix_mad_k16(a, b, acc), where work
// item i (the lane) holds
//   SG 8:  a.s[r] = A[r][2i] | A[r][2i + 1] << 16   (int8: two halves of row r)
//   SG 16: a.s[r] = A[r][i]                          (short8: one half of row r)
//   b.s[j] = B[2j][i] | B[2j + 1][i] << 16           (int8: column i, k pairs, even k low)
//   acc.s[r] = C[r][i]                               (float8: column i)
// Parameters: SG, MT, NT, A_AT(r, k), B_AT(k, c) (element offsets of op(A)[r, k], op(B)[k, c]),
// F16_STORAGE, T_STORE, GLOAD(p, i), GSTORE(p, i, v),
// EMULATED (the extension's function computed from its definition through local memory, so that
// a CPU checks the kernel's fragment layout), TO_F16, DPAS_EMU (helper names unique to the
// kernel).
#if SG == 8
#define TA int8
#else
#define TA short8
#endif
#define LANE_A(v, r) (((TA_ELEM*)&(v))[r])
#if SG == 8
#define TA_ELEM int
#else
#define TA_ELEM short
#endif

// The f16 bits of element i of p: read as stored, or rounded to nearest even from f32.
#if F16_STORAGE
#define HALF_AT(p, i) (((__global const ushort*)(p))[i])
#else
ushort TO_F16(float x) {
  ushort h;
  vstore_half_rte(x, 0, (half*)&h);
  return h;
}
#define HALF_AT(p, i) TO_F16((p)[i])
#endif

// op(A)[r, k] and op(B)[k, c] as f16 bits, zero outside the matrices.
#define A_HALF(r, k) ((r) < M && (k) < K ? (uint)HALF_AT(a, A_AT(r, k)) : 0u)
#define B_HALF(k, c) ((k) < K && (c) < N ? (uint)HALF_AT(b, B_AT(k, c)) : 0u)

#if EMULATED
// intel_sub_group_f16_f16_matrix_mad_k16 by its definition: lane i returns column i of
// acc + A B (8 x 16 by 16 x SG), A's rows gathered from every lane's a (through local memory),
// B's column i from its own b. Every lane of the work-group (one subgroup) calls it together.
float8 DPAS_EMU(TA a, int8 b, float8 acc, __local TA* lanes) {
  const int i = get_local_id(0);
  barrier(CLK_LOCAL_MEM_FENCE);
  lanes[i] = a;
  barrier(CLK_LOCAL_MEM_FENCE);
  float out[8];
  for (int r = 0; r < 8; ++r) {
    float s = ((float*)&acc)[r];
    for (int k = 0; k < 16; ++k) {
#if SG == 8
      const ushort x = (ushort)((uint)((__local const int*)&lanes[k / 2])[r] >> (16 * (k % 2)));
#else
      const ushort x = ((__local const ushort*)&lanes[k])[r];
#endif
      const ushort y = (ushort)((uint)((int*)&b)[k / 2] >> (16 * (k % 2)));
      s += vload_half(0, (const half*)&x) * vload_half(0, (const half*)&y);
    }
    out[r] = s;
  }
  return vload8(0, out);
}
#define DPAS(a, b, acc) DPAS_EMU(a, b, acc, dpas_lanes)
#define REQD_SUB_GROUP
#else
#define DPAS(a, b, acc) intel_sub_group_f16_f16_matrix_mad_k16(a, b, acc)
#define REQD_SUB_GROUP __attribute__((intel_reqd_sub_group_size(SG)))
#endif

__kernel __attribute__((reqd_work_group_size(SG, 1, 1))) REQD_SUB_GROUP void KERNEL_NAME(
    const int M, const int N, const int K, const float alpha, __global const T_STORE* a,
    const long a_off, const int lda, const long stride_a, __global const T_STORE* b,
    const long b_off, const int ldb, const long stride_b, const float beta, __global T_STORE* c,
    const long c_off, const int ldc, const long stride_c) {
#if EMULATED
  __local TA dpas_lanes[SG];
#endif
  const int i = get_local_id(0);
  const int m0 = get_group_id(1) * 8 * MT, n0 = get_group_id(0) * SG * NT;
  a += a_off + get_group_id(2) * stride_a;
  b += b_off + get_group_id(2) * stride_b;
  c += c_off + get_group_id(2) * stride_c;
  float8 acc[MT][NT];
  for (int mt = 0; mt < MT; ++mt)
    for (int nt = 0; nt < NT; ++nt) acc[mt][nt] = 0;
  for (int k0 = 0; k0 < K; k0 += 16) {
    TA fa[MT];
    int8 fb[NT];
    for (int mt = 0; mt < MT; ++mt)
      for (int r = 0; r < 8; ++r) {
        const int row = m0 + mt * 8 + r;
#if SG == 8
        LANE_A(fa[mt], r) = (int)(A_HALF(row, k0 + 2 * i) | A_HALF(row, k0 + 2 * i + 1) << 16);
#else
        LANE_A(fa[mt], r) = (short)A_HALF(row, k0 + i);
#endif
      }
    for (int nt = 0; nt < NT; ++nt) {
      const int col = n0 + nt * SG + i;
      for (int j = 0; j < 8; ++j)
        ((int*)&fb[nt])[j] = (int)(B_HALF(k0 + 2 * j, col) | B_HALF(k0 + 2 * j + 1, col) << 16);
    }
    for (int mt = 0; mt < MT; ++mt)
      for (int nt = 0; nt < NT; ++nt) acc[mt][nt] = DPAS(fa[mt], fb[nt], acc[mt][nt]);
  }
  for (int mt = 0; mt < MT; ++mt)
    for (int nt = 0; nt < NT; ++nt)
      for (int r = 0; r < 8; ++r) {
        const int row = m0 + mt * 8 + r, col = n0 + nt * SG + i;
        if (row < M && col < N) {
          const long o = (long)row * ldc + col;
          float v = alpha * ((float*)&acc[mt][nt])[r];
          if (beta != 0) v += beta * GLOAD(c, o);
          GSTORE(c, o, v);
        }
      }
}
#undef TA
#undef TA_ELEM
#undef LANE_A
#undef HALF_AT
#undef A_HALF
#undef B_HALF
#undef DPAS
#undef REQD_SUB_GROUP
