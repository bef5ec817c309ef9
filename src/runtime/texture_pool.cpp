#include "runtime/texture_pool.h"

#include <algorithm>
#include <numeric>

namespace texel::runtime {

TexturePool PlanTexturePool(const std::vector<TextureRequest>& requests) {
  TexturePool pool;
  pool.block_of.assign(requests.size(), -1);
  std::vector<size_t> order(requests.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t a, size_t b) { return requests[a].first < requests[b].first; });
  std::vector<int> busy_until;  // block -> last step of its current value
  for (size_t r : order) {
    const TextureRequest& q = requests[r];
    pool.request_bytes += TextureBlock{q.width, q.height, q.half}.bytes();
    int best = -1;
    int64_t best_growth = 0, best_waste = 0;
    for (size_t b = 0; b < pool.blocks.size(); ++b) {
      const TextureBlock& k = pool.blocks[b];
      if (k.half != q.half || busy_until[b] >= q.first) continue;
      int64_t w = std::max(k.width, q.width), h = std::max(k.height, q.height);
      int64_t growth = w * h - k.width * k.height, waste = w * h - q.width * q.height;
      if (best < 0 || growth < best_growth || (growth == best_growth && waste < best_waste))
        best = static_cast<int>(b), best_growth = growth, best_waste = waste;
    }
    if (best < 0) {
      best = static_cast<int>(pool.blocks.size());
      pool.blocks.push_back({q.width, q.height, q.half});
      busy_until.push_back(q.last);
    }
    TextureBlock& k = pool.blocks[best];
    k.width = std::max(k.width, q.width);
    k.height = std::max(k.height, q.height);
    busy_until[best] = q.last;
    pool.block_of[r] = best;
  }
  for (const TextureBlock& k : pool.blocks) pool.pool_bytes += k.bytes();
  return pool;
}

}  // namespace texel::runtime
