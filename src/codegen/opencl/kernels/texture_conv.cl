// 2-D convolution over texture storage (core/texture_layout.h): x an NCHW4c activation image,
// w an OIHW4o weight image, the result an NCHW4c image. A work-item computes one output texel
// (4 output channels of one pixel); depthwise (DEPTHWISE 1) multiplies lane by lane.
// Rows and columns outside the input are skipped: a row outside [0, IH) would be another
// channel quad's row, and a pooled image may be wider than the value it holds (the texture
// pool reuses images), so the sampler's border is not relied on there. Input channels past
// C_IN read zero texels (padded lanes written as zeros; weight columns past the weight image's
// width read the CLAMP border, zero), so they add nothing.
// Parameters: KERNEL_NAME; READ_TEXEL(img, pos) (a float4, through the program-scope sampler);
// PARAMS (x, w[, bias], out, extra
// operands, qualifiers inferred); C_IN4, C_OUT4; IH, IW, OH, OW, KH, KW, SH, SW, PH, PW, DH, DW;
// DEPTHWISE; BIAS4(c4) (the bias of 4 output channels, zeros without one); STORE_TEXEL(acc, n,
// c4, h, w) (applies the fused epilogue per lane and writes the texel).
__kernel void KERNEL_NAME(PARAMS) {
  const int ow = get_global_id(0), oh = get_global_id(1), z = get_global_id(2);
  if (ow >= OW || oh >= OH) return;
  const int n = z / C_OUT4, c4 = z % C_OUT4;
  float4 acc = BIAS4(c4);
  for (int kh = 0; kh < KH; ++kh) {
    const int ih = oh * SH - PH + kh * DH;
    if (ih < 0 || ih >= IH) continue;
    for (int kw = 0; kw < KW; ++kw) {
      const int iw = ow * SW - PW + kw * DW;
      if (iw < 0 || iw >= IW) continue;
#if DEPTHWISE
      const float4 xv = READ_TEXEL(x, (int2)(iw, (n * C_IN4 + c4) * IH + ih));
      acc = mad(xv, READ_TEXEL(w, (int2)(kh * KW + kw, c4)), acc);
#else
      for (int i4 = 0; i4 < C_IN4; ++i4) {
        const float4 xv = READ_TEXEL(x, (int2)(iw, (n * C_IN4 + i4) * IH + ih));
        const int wx = (i4 * 4 * KH + kh) * KW + kw;
        acc = mad(xv.x, READ_TEXEL(w, (int2)(wx, c4)), acc);
        acc = mad(xv.y, READ_TEXEL(w, (int2)(wx + KH * KW, c4)), acc);
        acc = mad(xv.z, READ_TEXEL(w, (int2)(wx + 2 * KH * KW, c4)), acc);
        acc = mad(xv.w, READ_TEXEL(w, (int2)(wx + 3 * KH * KW, c4)), acc);
      }
#endif
    }
  }
  STORE_TEXEL(acc, n, c4, oh, ow);
}
