// Pointwise kernel: every output element is computed on its own from its coordinates.
// Elementwise ops (with numpy broadcasting) and data movement (transpose, slice, gather, pad,
// concat, expand) share it; they differ only in BODY. A work-item computes ITEMS elements a
// global size apart (adjacent work-items, adjacent elements), every value before the first store:
// the loads of all of them in flight at once (the stores might alias the inputs, so a compiler
// would not move a later element's loads above an earlier one's store).
// Parameters: KERNEL_NAME, PARAMS (buffer parameter list), T_OUT, N (output elements), ITEMS,
// COORDS (statements that decompose the flat index i into coordinates c0, c1, ...),
// BODY (statements that leave the output value in v), STORE(i, v) (writes it: `out[i] = v`, or
// vstore_half for f16 outputs of arithmetic ops).
__kernel void KERNEL_NAME(PARAMS) {
  T_OUT vs[ITEMS];
#pragma unroll
  for (int e = 0; e < ITEMS; ++e) {
    const long i = get_global_id(0) + (long)e * get_global_size(0);
    if (i < N) {
      COORDS
      T_OUT v;
      BODY
      vs[e] = v;
    }
  }
#pragma unroll
  for (int e = 0; e < ITEMS; ++e) {
    const long i = get_global_id(0) + (long)e * get_global_size(0);
    if (i < N) STORE(i, vs[e]);
  }
}
