#include "runtime/memory_plan.h"

#include <algorithm>
#include <limits>

#include "core/error.h"

namespace texel::runtime {
namespace {

int64_t AlignUp(int64_t x, int64_t a) { return (x + a - 1) / a * a; }

struct Planned {
  int buffer;
  int64_t bytes;
  int first, last;  // steps, inclusive
};

struct Placed {
  int64_t offset, end;  // end: offset + the size rounded up to the alignment
  int first, last;
};

// One greedy pass over the buffers in the given order: each goes into the smallest gap, between
// the already placed buffers whose lifetimes overlap its own, that holds it; else above them all.
// Sets offsets (by index into planned) and returns the arena size.
int64_t Place(const std::vector<Planned>& planned, const std::vector<int>& order, int64_t alignment,
              std::vector<int64_t>* offsets) {
  std::vector<Placed> placed;  // sorted by offset
  placed.reserve(order.size());
  int64_t arena = 0;
  for (int i : order) {
    const Planned& p = planned[i];
    const int64_t size = AlignUp(p.bytes, alignment);
    int64_t best = -1, best_gap = std::numeric_limits<int64_t>::max(), top = 0;
    for (const Placed& q : placed) {
      if (q.last < p.first || q.first > p.last) continue;  // never live at the same time
      int64_t gap = q.offset - top;
      if (gap >= size && gap < best_gap) {
        best = top;
        best_gap = gap;
      }
      top = std::max(top, q.end);
    }
    if (best < 0) best = top;
    Placed q{best, best + size, p.first, p.last};
    placed.insert(
        std::upper_bound(placed.begin(), placed.end(), q,
                         [](const Placed& a, const Placed& b) { return a.offset < b.offset; }),
        q);
    (*offsets)[i] = best;
    arena = std::max(arena, best + p.bytes);
  }
  return arena;
}

// The steps at which each buffer is first and last used (-1: never), a buffer that is part of
// another (BufferDesc::alias_of) counted in the whole one, which lives from the first use of
// either to the last.
void Lifetimes(const Plan& plan, std::vector<int>* first, std::vector<int>* last) {
  const size_t n = plan.buffers.size();
  first->assign(n, -1);
  last->assign(n, -1);
  for (size_t s = 0; s < plan.steps.size(); ++s) {
    for (int b : plan.steps[s].buffers) {
      if (first->at(b) < 0) (*first)[b] = static_cast<int>(s);
      (*last)[b] = static_cast<int>(s);
    }
  }
  for (size_t i = 0; i < n; ++i) {
    int whole = plan.buffers[i].alias_of;
    if (whole < 0 || (*first)[i] < 0) continue;
    first->at(whole) = (*first)[whole] < 0 ? (*first)[i] : std::min((*first)[whole], (*first)[i]);
    (*last)[whole] = std::max((*last)[whole], (*last)[i]);
  }
}

// The arena's lower bound (the bytes live at the busiest of `steps` steps), then the best of
// several greedy placements of `planned` into it: m's lower_bound, arena_bytes and offsets.
void PlaceInArena(const std::vector<Planned>& planned, size_t steps, int64_t alignment,
                  MemoryPlan* m) {
  std::vector<int64_t> delta(steps + 1, 0);
  for (const Planned& p : planned) {
    delta[p.first] += p.bytes;
    delta[p.last + 1] -= p.bytes;
  }
  int64_t live = 0;
  for (int64_t d : delta) m->lower_bound = std::max(m->lower_bound, live += d);

  // Greedy by size: largest first, ties by first use.
  std::vector<int> order(planned.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = static_cast<int>(i);
  std::sort(order.begin(), order.end(), [&](int x, int y) {
    const Planned &a = planned[x], &b = planned[y];
    if (a.bytes != b.bytes) return a.bytes > b.bytes;
    if (a.first != b.first) return a.first < b.first;
    return a.buffer < b.buffer;
  });
  // Then "squeaky wheel" passes: the buffers that ended up above the lower bound go first next
  // time, keeping their relative order. Size order alone can box a long-lived buffer in (a
  // residual between blocks whose large buffers it cannot fit beside); placed first, the large
  // ones arrange around it. Each pass costs O(n^2), so large plans get fewer.
  const double n2 = static_cast<double>(planned.size()) * static_cast<double>(planned.size());
  const int passes = static_cast<int>(std::clamp(2e8 / n2, 1.0, 16.0));
  std::vector<int64_t> offsets(planned.size()), best_offsets;
  m->arena_bytes = std::numeric_limits<int64_t>::max();
  for (int pass = 0; pass < passes; ++pass) {
    int64_t arena = Place(planned, order, alignment, &offsets);
    if (arena < m->arena_bytes) {
      m->arena_bytes = arena;
      best_offsets = offsets;
    }
    if (arena <= m->lower_bound) break;
    std::stable_partition(order.begin(), order.end(),
                          [&](int i) { return offsets[i] + planned[i].bytes > m->lower_bound; });
  }
  for (size_t i = 0; i < planned.size(); ++i) m->offsets[planned[i].buffer] = best_offsets[i];
}

// Each buffer that is part of another at its place in that one.
void PlaceParts(const Plan& plan, int64_t alignment, MemoryPlan* m) {
  for (size_t i = 0; i < plan.buffers.size(); ++i) {
    const BufferDesc& b = plan.buffers[i];
    if (b.alias_of < 0) continue;
    int64_t whole = m->offsets.at(b.alias_of);
    if (whole < 0)
      Fail(ErrorCode::kInvalidModel, "buffer {} is part of buffer {}, which is not planned", i,
           b.alias_of);
    if (b.alias_offset % alignment != 0)
      Fail(ErrorCode::kUnsupported,
           "buffer {} lies {} bytes into buffer {}, not a multiple of this device's {}-byte "
           "alignment: compile the model for this device",
           i, b.alias_offset, b.alias_of, alignment);
    m->offsets[i] = whole + b.alias_offset;
  }
}

}  // namespace

MemoryPlan PlanMemory(const Plan& plan, int64_t alignment) {
  TEXEL_CHECK(alignment > 0, "arena alignment {} must be positive", alignment);
  const size_t n = plan.buffers.size();
  MemoryPlan m;
  m.alignment = alignment;
  m.offsets.assign(n, -1);

  // Host-visible buffers stay on their own: the host writes inputs and reads outputs between
  // runs, so their lifetime is not the steps'.
  std::vector<bool> host(n, false);
  for (const TensorBinding& in : plan.inputs) host.at(in.buffer) = true;
  for (const TensorBinding& out : plan.outputs) {
    host.at(out.buffer) = true;
    if (out.rows_buffer >= 0) host.at(out.rows_buffer) = true;
  }
  std::vector<int> first, last;
  Lifetimes(plan, &first, &last);
  std::vector<Planned> planned;
  std::vector<TextureRequest> images;
  std::vector<int> image_buffer;  // request -> buffer index
  for (size_t i = 0; i < n; ++i) {
    const BufferDesc& b = plan.buffers[i];
    if (b.is_image() && !b.constant) {
      TEXEL_CHECK(!host[i] && first[i] >= 0, "image buffer {} is host-visible or unused", i);
      images.push_back({b.image_width, b.image_height, b.image_half, first[i], last[i]});
      image_buffer.push_back(static_cast<int>(i));
      continue;
    }
    if (b.alias_of >= 0) continue;
    if (b.constant) {
      m.constant_bytes += b.bytes;
    } else if (host[i] || b.zeroed) {
      m.io_bytes += b.bytes;
    } else if (b.bytes > 0 && first[i] >= 0) {
      planned.push_back({static_cast<int>(i), b.bytes, first[i], last[i]});
      m.unshared_bytes += b.bytes;
    }
  }
  if (!images.empty()) {
    TexturePool pool = PlanTexturePool(images);
    m.texture_block.assign(n, -1);
    for (size_t r = 0; r < images.size(); ++r) m.texture_block[image_buffer[r]] = pool.block_of[r];
    m.texture_blocks = pool.blocks;
    m.texture_pool_bytes = pool.pool_bytes;
    m.texture_unshared_bytes = pool.request_bytes;
  }
  if (planned.empty()) return m;
  PlaceInArena(planned, plan.steps.size(), alignment, &m);
  PlaceParts(plan, alignment, &m);
  return m;
}

bool SubBuffersUsable(const cl::DeviceInfo& device) {
  return device.vendor.find("NVIDIA") == std::string::npos;
}

int64_t ArenaAlignment(const cl::DeviceInfo& device) {
  // The spec's minimum is the size of the largest built-in type (long16, 128 bytes); a device
  // that reports nothing gets that.
  int64_t bytes = device.mem_base_addr_align_bits / 8;
  return bytes > 0 ? bytes : 128;
}

}  // namespace texel::runtime
