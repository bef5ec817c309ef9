// Reduction over a set of axes. With LW == 1 one work-item per output element loops over the R
// reduced elements (r is also the position along the axis when one axis is reduced, for
// ArgMax). With LW > 1 (the rows family's choice, codegen/opencl/generate_reduce.cpp: on GPUs
// rows of adjacent elements, or few long rows) a work-group of LW work-items shares
// each output: work-item l takes r = l, l + LW, ... (adjacent work-items read adjacent elements
// when the innermost axis is reduced), then the partial results meet in a tree through local
// memory. ArgMax / ArgMin keep LW == 1.
// Parameters: KERNEL_NAME, T / T_STORE / LOAD (input storage), T_ACC (accumulator type),
// T_OUT / STORE_OUT(p, i, v) (output storage), N (outputs), R (elements per output), LW (a
// power of two), BASE_OFFSET (statements: output index i -> input offset `base`), RED_OFFSET
// (statements: reduced index r -> offset `roff`), INIT, ACC(acc, arg, v, r), COMBINE(a, b)
// (two partial accumulators, LW > 1), FINISH(acc, arg), EPILOGUE(v, i) / EPILOGUE_PARAMS
// (fused elementwise ops on each result).
__kernel void KERNEL_NAME(__global const T_STORE* x, __global T_OUT* out EPILOGUE_PARAMS) {
#if LW == 1
  const long i = get_global_id(0);
  const int l = 0;
  if (i >= N) return;
#else
  const long i = get_group_id(0);
  const int l = get_local_id(0);
#endif
  long base = 0;
  BASE_OFFSET
  T_ACC acc = INIT;
  long arg = 0;
  for (long r = l; r < R; r += LW) {
    long roff = 0;
    RED_OFFSET
    ACC(acc, arg, LOAD(x, base + roff), r);
  }
#if LW > 1
  __local T_ACC part[LW];
  part[l] = acc;
  barrier(CLK_LOCAL_MEM_FENCE);
  for (int h = LW / 2; h > 0; h /= 2) {
    if (l < h) part[l] = COMBINE(part[l], part[l + h]);
    barrier(CLK_LOCAL_MEM_FENCE);
  }
  if (l != 0) return;
  acc = part[0];
#endif
  STORE_OUT(out, i, EPILOGUE(FINISH(acc, arg), i));
}
