// The second half of a split-K product (kernels/matmul.cl with SPLITS > 1): out[o] =
// EPILOGUE(sum over s of parts[s][i] + BIAS(b, row), o) with o = OUT_AT(b, row, col) of the
// slices' element i = (b, row, col), one work-item per output element.
// Parameters: KERNEL_NAME; T, T_STORE, LOAD, STORE; M, N, BATCH, SPLITS; BIAS_PARAM, BIAS(b, row);
// OUT_AT(b, r, c) (the output's index of the slices' row-major element, matmul.cl);
// EPILOGUE(v, i), EPILOGUE_PARAMS, EPILOGUE_T, EPILOGUE_STORE (the output's type and store).
__kernel void KERNEL_NAME(__global const T* restrict parts BIAS_PARAM,
                          __global EPILOGUE_T* restrict out EPILOGUE_PARAMS) {
  const long i = get_global_id(0);
  const long total = (long)BATCH * M * N;
  if (i >= total) return;
  T acc = 0;
#pragma unroll
  for (int s = 0; s < SPLITS; ++s) acc += parts[s * total + i];
  const long row = i / N % M, batch = i / ((long)M * N), o = OUT_AT(batch, row, i % N);
  EPILOGUE_STORE(out, o, EPILOGUE(acc + BIAS(batch, row), o));
}
