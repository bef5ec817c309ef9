// Pointwise kernel: every output element is computed on its own from its coordinates.
// Elementwise ops (with numpy broadcasting) and data movement (transpose, slice, gather, pad,
// concat, expand) share it; they differ only in BODY.
// Parameters: KERNEL_NAME, PARAMS (buffer parameter list), T_OUT, N (output elements),
// COORDS (statements that decompose the flat index i into coordinates c0, c1, ...),
// BODY (statements that leave the output value in v), STORE(i, v) (writes it: `out[i] = v`, or
// vstore_half for f16 outputs of arithmetic ops).
__kernel void KERNEL_NAME(PARAMS) {
  const long i = get_global_id(0);
  if (i >= N) return;
  COORDS
  T_OUT v;
  BODY
  STORE(i, v);
}
