// Batched matrix product C[b] = A[b] x B[b] with broadcast batch dims, row-major.
// One work-item per output element; dim 0 runs along N so that B reads are contiguous.
// Parameters: KERNEL_NAME, T / T_STORE / LOAD / STORE (element storage), M, N, K, BATCH,
// A_OFFSET(b), B_OFFSET(b) (element offsets of the matrices of output batch b).
__kernel void KERNEL_NAME(__global const T_STORE* a, __global const T_STORE* b,
                          __global T_STORE* out) {
  const int col = get_global_id(0);
  const int row = get_global_id(1);
  const int batch = get_global_id(2);
  if (col >= N || row >= M || batch >= BATCH) return;
  const long a0 = A_OFFSET(batch) + (long)row * K;
  const long b0 = B_OFFSET(batch) + col;
  T acc = 0;
  for (int k = 0; k < K; ++k) acc += LOAD(a, a0 + k) * LOAD(b, b0 + (long)k * N);
  STORE(out, ((long)batch * M + row) * N + col, acc);
}
