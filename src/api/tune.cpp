#include "api/tune.h"

#include "api/compiler.h"
#include "api/tuner.h"
#include "runtime/tuning_db.h"

namespace texel {

TuneResult TuneModel(const std::string& model_path, const std::shared_ptr<cl::Context>& ctx,
                     const TuneOptions& options,
                     const std::function<void(const TuneProgress&)>& progress,
                     const std::function<void(const std::string&)>& log) {
  if (options.jobs < 0 || options.jobs > 64)
    Fail(ErrorCode::kInvalidArgument, "tune: jobs must be 0 (automatic) to 64, not {}",
         options.jobs);
  TuneResult result;
  result.db = options.db.empty() ? runtime::TuningDb::DefaultPath(ctx->info()) : options.db;
  if (result.db.empty())
    Fail(ErrorCode::kInvalidArgument,
         "no tuning database: caching is off (TEXEL_CACHE_DIR) and no --db FILE was given");
  tuning::Tuner tuner(ctx, options, progress, log, result);
  CompileOptions copts = options.compile;
  copts.tuning = false;
  std::unique_ptr<ir::Graph> graph = ImportAndOptimizeFor(model_path, ctx, copts);
  tuner.Collect(*graph);
  tuner.PrepareModelCheck(*graph);
  tuner.TimeHeuristics();
  tuner.ReadyModelCheck();
  tuner.Search();
  tuner.CheckInModel(*graph);
  tuner.Finish();
  return result;
}

}  // namespace texel
