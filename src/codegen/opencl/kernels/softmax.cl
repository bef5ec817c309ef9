// Softmax / LogSoftmax along one axis of a tensor seen as [OUTER, AXIS, INNER].
// One work-item per (outer, inner) row: max, sum of exponentials, then the normalised values.
// Parameters: KERNEL_NAME, OUTER, AXIS, INNER, LOG (0 or 1).
__kernel void KERNEL_NAME(__global const float* x, __global float* out) {
  const long row = get_global_id(0);
  if (row >= (long)OUTER * INNER) return;
  const long base = (row / INNER) * AXIS * INNER + row % INNER;
  float m = -INFINITY;
  for (int k = 0; k < AXIS; ++k) m = fmax(m, x[base + (long)k * INNER]);
  float s = 0.0f;
  for (int k = 0; k < AXIS; ++k) s += exp(x[base + (long)k * INNER] - m);
#if LOG
  const float ls = log(s);
  for (int k = 0; k < AXIS; ++k) out[base + (long)k * INNER] = x[base + (long)k * INNER] - m - ls;
#else
  const float inv = 1.0f / s;
  for (int k = 0; k < AXIS; ++k) out[base + (long)k * INNER] = exp(x[base + (long)k * INNER] - m) * inv;
#endif
}
