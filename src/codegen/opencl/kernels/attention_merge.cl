// The merge step of attention split over the keys (attention.cl with SPLIT > 1): one work-item
// per VW lanes of an output row combines the SPLIT partial rows: M = max m_p, L = sum l_p
// exp(m_p - M), o = sum acc_p exp(m_p - M) / L.
// Parameters: as attention.cl (BATCH_OFFSETS, O_STORE, VT, VW, DV, SQ, NB, SPLIT) and
// PART_AT(rec, c) (VW lanes c*VW.. of a record, as VT).
__kernel void KERNEL_NAME(__global const T* part, __global T_STORE* o) {
  const long e = get_global_id(0);
  if (e >= (long)NB * SQ * (DV / VW)) return;
  const int c = e % (DV / VW);
  const int i = (e / (DV / VW)) % SQ;
  const long g = e / (DV / VW) / SQ;
  long qo = 0, ko = 0, vo = 0, oo = 0;
  BATCH_OFFSETS
  (void)qo, (void)ko, (void)vo;
  const long stride = (long)NB * SQ * (DV + 2);
  __global const T* rec0 = part + (g * SQ + i) * (DV + 2);
  T mx = -INFINITY;
  for (int p = 0; p < SPLIT; ++p) mx = fmax(mx, rec0[p * stride + DV]);
  T lsum = 0;
  VT acc = (VT)0;
  for (int p = 0; p < SPLIT; ++p) {
    __global const T* rec = rec0 + p * stride;
    const T w = rec[DV] == -INFINITY ? 0 : EXP(rec[DV] - mx);
    lsum += rec[DV + 1] * w;
    acc += w * PART_AT(rec, c);
  }
  O_STORE(i, c, acc / lsum);
}
