// Layer / RMS normalisation of each row of R contiguous elements (the dims >= axis): a
// work-group of LW work-items per row (LW == 1: one work-item per row), each taking
// k = l, l + LW, ... (coalesced); the sums meet through ROW_SUM. Two passes over the row for
// the statistics (mean, then the sum of squared differences: no cancellation), a third writes;
// with XN > 0 a work-item's XN elements are read once into registers for all three.
// Element k of row r is X_AT(x, r, k): by default LOAD from a strided view (a transposed NCHW
// tensor normalised over C: X_OFFSET + r * X_ROW + k * X_STEP); after a split product, the sum
// of its slices with the product's epilogue applied (PROLOGUE); after a Gather, the gathered
// element (x the table, X_PARAMS its indices) with the Gather's epilogue applied (PROLOGUE).
// The output is row-major.
// With WRITE_X the elements as read also go to xo (XOUT_PARAM), row-major: the product's result
// when others read it too.
// Parameters: KERNEL_NAME, T / T_STORE / LOAD / STORE (element storage), X_TYPE (the element
// type behind x), X_PARAMS (parameters after x), ROWS, R, EPS, RMS (0 or 1: no centring),
// X_AT(x, r, k), XN, LW, ROW_SUM(v) (v summed over the work-group, returned to every work-item),
// PROLOGUE_PARAMS, WRITE_X,
// XOUT_PARAM, EPILOGUE(v, i) / EPILOGUE_PARAMS (fused elementwise ops: scale, bias, ...) /
// EPILOGUE_T and EPILOGUE_STORE (the output's type and store: a fused Cast may change it).
__kernel void KERNEL_NAME(__global const X_TYPE* x X_PARAMS PROLOGUE_PARAMS XOUT_PARAM,
                          __global EPILOGUE_T* out EPILOGUE_PARAMS) {
#if LW == 1
  const long row = get_global_id(0);
  const int l = 0;
  if (row >= ROWS) return;
#else
  const long row = get_group_id(0);
  const int l = get_local_id(0);
  __local T part[LW];
#endif
  const long obase = row * R;
#if XN > 0
  T xv[XN];
#pragma unroll
  for (int j = 0; j < XN; ++j) {
    xv[j] = l + j * LW < R ? X_AT(x, row, l + j * LW) : 0;
#if WRITE_X
    if (l + j * LW < R) STORE(xo, obase + l + j * LW, xv[j]);
#endif
  }
#define X_K(k, j) xv[j]
#else
#define X_K(k, j) X_AT(x, row, k)
#endif
#if RMS
  const T mean = 0;
#else
  T s = 0;
  for (int k = l, j = 0; k < R; k += LW, ++j) s += X_K(k, j);
  const T mean = ROW_SUM(s) / R;
#endif
  T q = 0;
  for (int k = l, j = 0; k < R; k += LW, ++j) {
    const T d = X_K(k, j) - mean;
    q += d * d;
  }
  const T inv = rsqrt(ROW_SUM(q) / R + (T)EPS);
  for (int k = l, j = 0; k < R; k += LW, ++j) {
#if WRITE_X && XN == 0
    STORE(xo, obase + k, X_K(k, j));
#endif
    EPILOGUE_STORE(out, obase + k, EPILOGUE((X_K(k, j) - mean) * inv, obase + k));
  }
#undef X_K
}
