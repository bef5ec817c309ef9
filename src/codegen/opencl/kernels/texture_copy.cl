// Texture kernels without a window, one texel (4 channels of one pixel of an NCHW4c image)
// per work-item:
//   MODE 0, elementwise: the texel of `x` at the same place goes through the fused chain.
//   MODE 1, to texture: 4 channels gathered from the row-major buffer `x` (zeros past C).
//   MODE 2, to buffer: the texel of image `x` scattered into the row-major buffer `out`.
// Parameters: KERNEL_NAME; READ_TEXEL(img, pos); PARAMS; MODE; C, C4, H, W; STORE_TEXEL(acc, n, c4, h, w)
// (modes 0 and 1); LOAD_X(i) (mode 1), STORE_OUT(i, v) (mode 2): a buffer element as float.
__kernel void KERNEL_NAME(PARAMS) {
  const int w = get_global_id(0), h = get_global_id(1), z = get_global_id(2);
  if (w >= W || h >= H) return;
  const int n = z / C4, c4 = z % C4;
  const int2 pos = (int2)(w, z * H + h);
  const long i0 = (((long)n * C + c4 * 4) * H + h) * W + w, plane = (long)H * W;
#if MODE == 0
  STORE_TEXEL(READ_TEXEL(x, pos), n, c4, h, w);
#elif MODE == 1
  float4 v;
  v.x = LOAD_X(i0);
  v.y = c4 * 4 + 1 < C ? LOAD_X(i0 + plane) : 0.0f;
  v.z = c4 * 4 + 2 < C ? LOAD_X(i0 + 2 * plane) : 0.0f;
  v.w = c4 * 4 + 3 < C ? LOAD_X(i0 + 3 * plane) : 0.0f;
  STORE_TEXEL(v, n, c4, h, w);
#else
  const float4 v = READ_TEXEL(x, pos);
  STORE_OUT(i0, v.x);
  if (c4 * 4 + 1 < C) STORE_OUT(i0 + plane, v.y);
  if (c4 * 4 + 2 < C) STORE_OUT(i0 + 2 * plane, v.z);
  if (c4 * 4 + 3 < C) STORE_OUT(i0 + 3 * plane, v.w);
#endif
}
