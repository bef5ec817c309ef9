// texel compile-worker DIR (hidden): compiles a compile job's programs for `texel tune`, which
// starts it (runtime/cl/compile_workers.h). Not for users: its interface is the job directory.
#include "commands.h"
#include "runtime/cl/compile_workers.h"

namespace texel::cli {

Runner AddCompileWorkerCommand(CLI::App& app) {
  auto* cmd = app.add_subcommand("compile-worker", "");
  cmd->group("");  // hidden from --help
  auto dir = std::make_shared<std::string>();
  cmd->add_option("dir", *dir)->required();
  return [dir] { return cl::RunCompileWorker(*dir); };
}

}  // namespace texel::cli
