// Reduction over a set of axes. One work-item per output element loops over the R reduced
// elements. Parameters: KERNEL_NAME, T (element type), T_ACC (accumulator type), N (outputs),
// R (elements per output), BASE_OFFSET (statements: output index i -> input offset `base`),
// RED_OFFSET (statements: reduced index r -> offset `roff`), INIT, ACC(acc, v), FINISH(acc).
__kernel void KERNEL_NAME(__global const T* x, __global T* out) {
  const long i = get_global_id(0);
  if (i >= N) return;
  long base = 0;
  BASE_OFFSET
  T_ACC acc = INIT;
  for (long r = 0; r < R; ++r) {
    long roff = 0;
    RED_OFFSET
    ACC(acc, x[base + roff]);
  }
  out[i] = FINISH(acc);
}
