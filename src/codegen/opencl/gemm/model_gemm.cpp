// Models' products on either matrix-engine kernel (model_gemm.h).
#include "codegen/opencl/gemm/model_gemm.h"

namespace texel::codegen {
namespace {

TunePoint PointOf(const WgmmaTiling& w) {
  return {{"wgmma", 1},         {"bm", w.bm},          {"bn", w.bn},
          {"stages", w.stages}, {"rowb", w.row_bytes}, {"split", w.split_k}};
}

ModelGemm ModelGemmOf(const TunePoint& q) {
  if (!q.contains("wgmma")) return WarpGemmParamsOf(q);
  WgmmaTiling w;
  w.bm = static_cast<int>(q.at("bm")), w.bn = static_cast<int>(q.at("bn"));
  w.stages = static_cast<int>(q.at("stages"));
  w.row_bytes = static_cast<int>(q.at("rowb"));
  w.split_k = static_cast<int>(q.at("split"));
  return w;
}

}  // namespace

std::optional<ModelGemm> ChooseModelGemm(const GemmOperands& g, const Target& t) {
  std::optional<WarpGemmParams> warp = ChooseModelWarpGemm(g, t);
  if (!warp) return std::nullopt;
  return ModelGemm{*warp};
}

std::optional<Tunable> ModelGemmTunable(const GemmOperands& g, const Target& t) {
  std::optional<Tunable> tn = ModelWarpGemmTunable(g, t);
  if (!tn) return std::nullopt;
  // Distinct from the warp-tiled points by their "wgmma" key; ModelWgmmaTilings has no repeats.
  for (const WgmmaTiling& w : ModelWgmmaTilings(g, t)) tn->candidates.push_back(PointOf(w));
  return tn;
}

std::optional<ModelGemm> TunedModelGemm(const GemmOperands& g, const Target& t) {
  if (t.tuning == nullptr) return ChooseModelGemm(g, t);  // no need for the whole space
  std::optional<Tunable> tn = ModelGemmTunable(g, t);
  if (!tn) return std::nullopt;
  return ModelGemmOf(Choose(*tn, t));
}

std::vector<KernelSpec> GenerateModelGemm(const GemmOperands& g, const std::string& kernel_name,
                                          const Target& t, const ModelGemm& k,
                                          const Chain& epilogue) {
  if (const auto* warp = std::get_if<WarpGemmParams>(&k))
    return GenerateModelWarpGemm(g, kernel_name, t, *warp, epilogue);
  return GenerateModelWgmmaGemm(g, kernel_name, t, std::get<WgmmaTiling>(k), epilogue);
}

}  // namespace texel::codegen
