#include "api/measure.h"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>

#include "backends/lower.h"
#include "core/sha256.h"
#include "ir/printer.h"
#include "runtime/session.h"

namespace texel {
namespace {

// The node alone, every input a graph input: the form that is lowered, timed and printed for
// the cache key (names are fixed, so equal nodes print equally). In texture storage the inputs
// are zero constants instead (images cannot be graph inputs): the main one an activation image,
// a Conv's filters a weight image; the result is an image no one reads.
std::unique_ptr<ir::Graph> Alone(const ir::Node& n, std::string_view backend, ir::Storage storage) {
  auto g = std::make_unique<ir::Graph>();
  bool texture = storage != ir::Storage::kBuffer;
  // The main input: an elementwise node's first of the result's shape, else the first.
  size_t main = 0;
  if (n.info().cls == ir::OpClass::kUnary || n.info().cls == ir::OpClass::kBinary)
    for (size_t i = n.inputs.size(); i-- > 0;)
      if (n.inputs[i]->type.shape == n.outputs[0]->type.shape) main = i;
  std::vector<ir::Value*> in;
  for (size_t i = 0; i < n.inputs.size(); ++i) {
    const ir::TensorType& t = n.inputs[i]->type;
    std::string name = fmt::format("in{}", i);
    if (!texture) {
      in.push_back(g->AddInput(name, t));
      continue;
    }
    in.push_back(g->AddConstant(name, std::make_shared<HostTensor>(t.dtype, t.shape)));
    if (i == main) in.back()->storage = ir::Storage::kTexture;
    if (i == 1 && n.op == ir::OpKind::kConv) in.back()->storage = ir::Storage::kTextureWeight;
  }
  ir::Node* m = g->AddNode(n.op, in, n.attrs, "probe");
  m->backend = std::string(backend);
  for (ir::Value* v : m->outputs) {
    if (texture) v->storage = ir::Storage::kTexture;
    if (!texture) g->AddOutput(v);
  }
  return g;
}

double Run(const ir::Graph& g, const std::shared_ptr<cl::Context>& ctx, cl::ProgramCache* cache) {
  runtime::Executable exe(ctx, backends::LowerToPlan(g, ctx->info()), cache);
  runtime::Session session(exe);
  for (const ir::Value* v : g.inputs())
    session.SetInput(v->name, HostTensor(v->type.dtype, v->type.shape));
  // Host wall-clock time of enqueue-to-finish, not profiling events: a library routine may
  // enqueue several kernels and return the event of the last one only (CLBlast does).
  std::vector<double> times;
  for (int r = 0; r < 12; ++r) {
    auto t0 = std::chrono::steady_clock::now();
    session.Execute();
    double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    if (r >= 2) times.push_back(s);
  }
  std::sort(times.begin(), times.end());
  return times[times.size() / 2];
}

}  // namespace

NodeTimer::NodeTimer(std::shared_ptr<cl::Context> ctx)
    : ctx_(std::move(ctx)), cache_(cl::ProgramCache::Default()) {}

double NodeTimer::Seconds(const ir::Node& node, const backends::Backend& backend,
                          ir::Storage storage) {
  std::unique_ptr<ir::Graph> g = Alone(node, backend.name(), storage);
  const cl::DeviceInfo& d = ctx_->info();
  std::string key = Sha256Hex(fmt::format("texel-measure-2\n{}\n{}\n{}\n{}\n{}\n{}", d.name,
                                          d.driver_version, d.platform_version, d.device_version,
                                          backend.name(), ir::PrintGraph(*g)));
  if (auto it = memo_.find(key); it != memo_.end()) return it->second;
  namespace fs = std::filesystem;
  fs::path file = cache_.enabled() ? fs::path(cache_.dir()) / "measure" / key : fs::path();
  double seconds = -1;
  if (!file.empty()) {
    std::ifstream in(file);
    if (!(in >> seconds) || seconds < 0) seconds = -1;  // missing or damaged: measure again
  }
  if (seconds < 0) {
    seconds = Run(*g, ctx_, &cache_);
    if (!file.empty()) {  // best effort, through a temporary name
      std::error_code ec;
      fs::create_directories(file.parent_path(), ec);
      fs::path tmp = file;
      tmp += ".tmp";
      std::ofstream(tmp) << seconds << "\n";
      fs::rename(tmp, file, ec);
    }
  }
  memo_[key] = seconds;
  return seconds;
}

}  // namespace texel
