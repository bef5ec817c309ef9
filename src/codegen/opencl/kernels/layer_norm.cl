// Layer / RMS normalisation of each row of R contiguous elements (the dims >= axis): a
// work-group of LW work-items per row (LW == 1: one work-item per row), each taking
// k = l, l + LW, ... (coalesced); the sums meet through ROW_SUM. Two passes over the row for
// the statistics (mean, then the sum of squared differences: no cancellation), a third writes.
// The input may be a strided view (a transposed NCHW tensor normalised over C): element k of
// row r is at X_OFFSET + r * X_ROW + k * X_STEP; the output is row-major.
// Parameters: KERNEL_NAME, T / T_STORE / LOAD / STORE (element storage), ROWS, R, EPS, RMS (0 or
// 1: no centring), X_OFFSET, X_ROW, X_STEP, LW, ROW_SUM(v) (v summed over the work-group,
// returned to every work-item), EPILOGUE(v, i) / EPILOGUE_PARAMS (fused elementwise ops: scale,
// bias, ...).
__kernel void KERNEL_NAME(__global const T_STORE* x, __global T_STORE* out EPILOGUE_PARAMS) {
#if LW == 1
  const long row = get_global_id(0);
  const int l = 0;
  if (row >= ROWS) return;
#else
  const long row = get_group_id(0);
  const int l = get_local_id(0);
  __local T part[LW];
#endif
  const long base = X_OFFSET + row * X_ROW, obase = row * R;
#if RMS
  const T mean = 0;
#else
  T s = 0;
  for (int k = l; k < R; k += LW) s += LOAD(x, base + (long)k * X_STEP);
  const T mean = ROW_SUM(s) / R;
#endif
  T q = 0;
  for (int k = l; k < R; k += LW) {
    const T d = LOAD(x, base + (long)k * X_STEP) - mean;
    q += d * d;
  }
  const T inv = rsqrt(ROW_SUM(q) / R + (T)EPS);
  for (int k = l; k < R; k += LW)
    STORE(out, obase + k, EPILOGUE((LOAD(x, base + (long)k * X_STEP) - mean) * inv, obase + k));
}
