// NonMaxSuppression in one work-item: greedy selection is sequential, and the output rows must
// come in (batch, class, selection) order. For each batch and class, candidates are visited in
// descending score order (ties: lower box index first) without sorting: each step finds the
// best box ranked after the previous one. A box is kept unless its IoU with a box already kept
// for this class exceeds IOU_THR. Rows past `count` are left unwritten.
// Parameters: KERNEL_NAME, B (batches), C (classes), NB (boxes), MAX_PER_CLASS (at most NB),
// IOU_THR, HAS_SCORE_THR (0 or 1), SCORE_THR, CENTER (1: boxes are [xc, yc, w, h]; 0: two
// corners [y0, x0, y1, x1] in any order).
__kernel void KERNEL_NAME(__global const float* boxes, __global const float* scores,
                          __global long* selected, __global long* count) {
  if (get_global_id(0) != 0) return;
  long n = 0;
  for (long b = 0; b < B; ++b) {
    __global const float* bx = boxes + b * NB * 4;
    for (long c = 0; c < C; ++c) {
      __global const float* sc = scores + (b * C + c) * NB;
      const long first = n;  // this class's rows start here
      float prev_s = INFINITY;
      long prev_i = -1;
      while (n - first < MAX_PER_CLASS) {
        long best = -1;
        float best_s = 0;
        for (long i = 0; i < NB; ++i) {
          const float s = sc[i];
          if (HAS_SCORE_THR && !(s > SCORE_THR)) continue;
          if (!(s < prev_s || (s == prev_s && i > prev_i))) continue;  // not ranked after
          if (best < 0 || s > best_s) {
            best = i;
            best_s = s;
          }
        }
        if (best < 0) break;
        prev_s = best_s;
        prev_i = best;
        int keep = 1;
        __global const float* q = bx + best * 4;
        for (long k = first; k < n && keep; ++k) {
          __global const float* p = bx + selected[k * 3 + 2] * 4;
#if CENTER
          const float px0 = p[0] - p[2] / 2, px1 = p[0] + p[2] / 2;
          const float py0 = p[1] - p[3] / 2, py1 = p[1] + p[3] / 2;
          const float qx0 = q[0] - q[2] / 2, qx1 = q[0] + q[2] / 2;
          const float qy0 = q[1] - q[3] / 2, qy1 = q[1] + q[3] / 2;
#else
          const float py0 = fmin(p[0], p[2]), py1 = fmax(p[0], p[2]);
          const float px0 = fmin(p[1], p[3]), px1 = fmax(p[1], p[3]);
          const float qy0 = fmin(q[0], q[2]), qy1 = fmax(q[0], q[2]);
          const float qx0 = fmin(q[1], q[3]), qx1 = fmax(q[1], q[3]);
#endif
          const float ix = fmin(px1, qx1) - fmax(px0, qx0);
          const float iy = fmin(py1, qy1) - fmax(py0, qy0);
          if (ix <= 0 || iy <= 0) continue;
          const float inter = ix * iy;
          const float pa = (px1 - px0) * (py1 - py0), qa = (qx1 - qx0) * (qy1 - qy0);
          const float uni = pa + qa - inter;
          if (pa <= 0 || qa <= 0 || uni <= 0) continue;
          if (inter / uni > IOU_THR) keep = 0;
        }
        if (keep) {
          selected[n * 3] = b;
          selected[n * 3 + 1] = c;
          selected[n * 3 + 2] = best;
          ++n;
        }
      }
    }
  }
  *count = n;
}
