// Reduction over a set of axes. One work-item per output element loops over the R reduced
// elements (r is also the position along the axis when one axis is reduced, for ArgMax).
// Parameters: KERNEL_NAME, T / T_STORE / LOAD (input storage), T_ACC (accumulator type),
// T_OUT / STORE_OUT(p, i, v) (output storage), N (outputs), R (elements per output),
// BASE_OFFSET (statements: output index i -> input offset `base`), RED_OFFSET (statements:
// reduced index r -> offset `roff`), INIT, ACC(acc, arg, v, r), FINISH(acc, arg),
// EPILOGUE(v, i) / EPILOGUE_PARAMS (fused elementwise ops on each result).
__kernel void KERNEL_NAME(__global const T_STORE* x, __global T_OUT* out EPILOGUE_PARAMS) {
  const long i = get_global_id(0);
  if (i >= N) return;
  long base = 0;
  BASE_OFFSET
  T_ACC acc = INIT;
  long arg = 0;
  for (long r = 0; r < R; ++r) {
    long roff = 0;
    RED_OFFSET
    ACC(acc, arg, LOAD(x, base + roff), r);
  }
  STORE_OUT(out, i, EPILOGUE(FINISH(acc, arg), i));
}
