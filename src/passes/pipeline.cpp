#include "passes/pipeline.h"

#include <algorithm>

#include "core/error.h"
#include "ir/verifier.h"

namespace texel::passes {

const std::vector<Pass>& Pipeline() {
  static const std::vector<Pass> passes = {
      {"fold-constants", "evaluate nodes whose inputs are all constants on the host",
       FoldConstants},
      {"simplify", "drop identities and merge chains of views", Simplify},
      {"merge-projections", "make products of one input with several weights one product",
       MergeProjections},
      {"attention", "make scaled dot-product attention one Attention node", MatchAttention},
      {"normalize", "make layer and RMS normalisations one LayerNorm node each", MatchNorm},
      {"views", "let Concat and elementwise ops read operands through the views producing them",
       Views},
      {"fold-conv-affine", "move per-channel constant scales and shifts into Conv filters and bias",
       FoldConvAffine},
      {"precision",
       "store values in f16 where --precision fp16 allows; mark products with the mode",
       ApplyPrecision},
      {"channels-last",
       "run convolutions on the matrix engine on NHWC images, transposes only at region edges",
       ChannelsLast},
      {"partition", "assign each node to a backend", Partition},
      {"fuse", "run elementwise chains inside the kernel of the node they consume", Fuse},
      {"assign-storage", "put values computed by texture kernels in 2D images", AssignStorage},
  };
  return passes;
}

void RunPipeline(
    ir::Graph& g, const PassContext& ctx,
    const std::function<void(const Pass&, const Stats&, const ir::Graph&)>& after_each) {
  for (const Pass& p : Pipeline()) {
    std::string_view name = p.name;
    if (!ctx.device && (name == "partition" || name == "assign-storage")) continue;
    if (std::find(ctx.disabled.begin(), ctx.disabled.end(), name) != ctx.disabled.end()) continue;
    Stats stats = p.run(g, ctx);
    try {
      ir::Verify(g);
    } catch (Error& e) {
      e.AddContext(fmt::format("after pass '{}'", p.name));
      throw;
    }
    if (after_each) after_each(p, stats, g);
  }
}

}  // namespace texel::passes
