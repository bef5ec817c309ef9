// texel_gemm's operand packing: one batch entry of a stored operand X (R rows along M or N by K)
// copied into a dense k-contiguous matrix P [R][KP], zeros for K <= k < KP, so that the
// warpgroup kernel, which reads whole 64-byte steps of K (in tf32 of k-contiguous operands
// only), takes any layout, alignment and depth (gemm_pack.h). Elements are copied as bits (T:
// uint or ushort): nothing is rounded.
// A work-group moves a 32 x 32 tile through local memory, so that both its reads and its writes
// run along contiguous memory whichever way X is stored.
// Parameters: KERNEL_NAME; T; K_MAJOR (X stored [K][R], element (r, k) at k * ld + r; else [R][K]).
__kernel __attribute__((reqd_work_group_size(32, 8, 1))) void KERNEL_NAME(
    __global const T* restrict x, long x_offset, int ld, long x_stride, int R, int K, int KP,
    __global T* restrict p, long p_offset) {
  __local T tile[32][33];  // [k][r]; the odd row length spreads a column over the banks
  const int tx = get_local_id(0), ty = get_local_id(1);
  const int k0 = get_group_id(0) * 32, r0 = get_group_id(1) * 32;
  const long z = get_group_id(2);
  x += x_offset + z * x_stride;
  p += p_offset + z * R * (long)KP;
  for (int i = ty; i < 32; i += 8) {
#if K_MAJOR
    const int k = k0 + i, r = r0 + tx;  // along r
    tile[i][tx] = k < K && r < R ? x[(long)k * ld + r] : (T)0;
#else
    const int k = k0 + tx, r = r0 + i;  // along k
    tile[tx][i] = k < K && r < R ? x[(long)r * ld + k] : (T)0;
#endif
  }
  barrier(CLK_LOCAL_MEM_FENCE);
  for (int i = ty; i < 32; i += 8) {
    const int k = k0 + tx, r = r0 + i;
    if (r < R && k < KP) p[(long)r * KP + k] = tile[tx][i];
  }
}
