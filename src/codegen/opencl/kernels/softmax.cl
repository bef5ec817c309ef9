// Softmax / LogSoftmax along one axis of a tensor seen as [OUTER, AXIS, INNER].
// One work-item per (outer, inner) row: max, sum of exponentials, then the normalised values.
// Parameters: KERNEL_NAME, T / T_STORE / LOAD / STORE (element storage), OUTER, AXIS, INNER,
// LOG (0 or 1).
__kernel void KERNEL_NAME(__global const T_STORE* x, __global T_STORE* out) {
  const long row = get_global_id(0);
  if (row >= (long)OUTER * INNER) return;
  const long base = (row / INNER) * AXIS * INNER + row % INNER;
  T m = -INFINITY;
  for (int k = 0; k < AXIS; ++k) m = fmax(m, LOAD(x, base + (long)k * INNER));
  T s = 0;
  for (int k = 0; k < AXIS; ++k) s += exp(LOAD(x, base + (long)k * INNER) - m);
#if LOG
  const T ls = log(s);
  for (int k = 0; k < AXIS; ++k)
    STORE(out, base + (long)k * INNER, LOAD(x, base + (long)k * INNER) - m - ls);
#else
  const T inv = 1 / s;
  for (int k = 0; k < AXIS; ++k)
    STORE(out, base + (long)k * INNER, exp(LOAD(x, base + (long)k * INNER) - m) * inv);
#endif
}
