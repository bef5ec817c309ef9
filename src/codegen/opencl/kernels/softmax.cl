// Softmax / LogSoftmax along one axis of a tensor seen as [OUTER, AXIS, INNER].
// LW == 1: one work-item per (outer, inner) row: max, sum of exponentials, then the normalised
// values. LW > 1 (INNER == 1; the rows family's choice): a work-group of LW work-items per row, each taking
// k = l, l + LW, ... (coalesced), the max and the sum meeting in trees through local memory.
// Parameters: KERNEL_NAME, T / T_STORE / LOAD / STORE (element storage), OUTER, AXIS, INNER,
// LOG (0 or 1), LW (a power of two), ROW_MAX(v) / ROW_SUM(v) (v over the work-group's `part`,
// returned to every work-item; v itself when LW == 1).
__kernel void KERNEL_NAME(__global const T_STORE* x, __global T_STORE* out) {
#if LW == 1
  const long row = get_global_id(0);
  const int l = 0;
  if (row >= (long)OUTER * INNER) return;
#else
  const long row = get_group_id(0);
  const int l = get_local_id(0);
  __local T part[LW];
#endif
  const long base = (row / INNER) * AXIS * INNER + row % INNER;
  T m = -INFINITY;
  for (int k = l; k < AXIS; k += LW) m = fmax(m, LOAD(x, base + (long)k * INNER));
  m = ROW_MAX(m);
  T s = 0;
  for (int k = l; k < AXIS; k += LW) s += exp(LOAD(x, base + (long)k * INNER) - m);
  s = ROW_SUM(s);
#if LOG
  const T ls = log(s);
  for (int k = l; k < AXIS; k += LW)
    STORE(out, base + (long)k * INNER, LOAD(x, base + (long)k * INNER) - m - ls);
#else
  const T inv = 1 / s;
  for (int k = l; k < AXIS; k += LW)
    STORE(out, base + (long)k * INNER, exp(LOAD(x, base + (long)k * INNER) - m) * inv);
#endif
}
