// Batched matrix product C[b] = A[b] x B[b] with broadcast batch dims, row-major.
// One work-item per output element; dim 0 runs along N so that B reads are contiguous.
// Parameters: KERNEL_NAME, T (float or double), M, N, K, BATCH, A_OFFSET(b), B_OFFSET(b)
// (element offsets of the matrices of output batch b).
__kernel void KERNEL_NAME(__global const T* a, __global const T* b, __global T* out) {
  const int col = get_global_id(0);
  const int row = get_global_id(1);
  const int batch = get_global_id(2);
  if (col >= N || row >= M || batch >= BATCH) return;
  const __global T* ap = a + A_OFFSET(batch) + (long)row * K;
  const __global T* bp = b + B_OFFSET(batch) + col;
  T acc = 0;
  for (int k = 0; k < K; ++k) acc += ap[k] * bp[(long)k * N];
  out[((long)batch * M + row) * N + col] = acc;
}
