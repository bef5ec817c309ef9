// The texture pool: where image values live. An image cannot be carved out of one allocation
// the way buffers share the arena, so values whose lifetimes do not overlap share whole
// images instead. Values are taken in the order of their first use; each goes to a free block
// of its format (channel type) that needs the least growth to hold it (texels added to the
// block's width x height), then wastes the least (the block's texels beyond the value's), or to a
// new block when none is free. A block is free once the last step of its current value is over.
// Thread safety: a pure function.
#pragma once

#include <cstdint>
#include <vector>

namespace texel::runtime {

struct TextureRequest {
  int64_t width = 0, height = 0;  // texels
  bool half = false;              // CL_HALF_FLOAT channels, else CL_FLOAT
  int first = 0, last = 0;        // steps that use it, inclusive
};

struct TextureBlock {
  int64_t width = 0, height = 0;
  bool half = false;
  int64_t bytes() const { return width * height * 4 * (half ? 2 : 4); }
};

struct TexturePool {
  std::vector<TextureBlock> blocks;
  std::vector<int> block_of;  // request -> block
  int64_t pool_bytes = 0;     // the blocks' sum
  int64_t request_bytes = 0;  // the requests' sum: the memory without sharing
};

TexturePool PlanTexturePool(const std::vector<TextureRequest>& requests);

}  // namespace texel::runtime
