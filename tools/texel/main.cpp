// texel: the command-line program. See `texel --help` and README.md.
#include <cstdio>
#include <new>

#include "commands.h"
#include "core/error.h"
#include "core/version.h"

int main(int argc, char** argv) {
  CLI::App app{"texel: an ahead-of-time inference compiler and runtime for OpenCL devices"};
  app.require_subcommand(1);
  app.set_version_flag("--version", std::string("texel ") + texel::kVersion);
  std::vector<std::pair<CLI::App*, texel::cli::Runner>> commands;
  auto add = [&](texel::cli::Runner (*f)(CLI::App&)) {
    size_t before = app.get_subcommands({}).size();
    texel::cli::Runner r = f(app);
    commands.emplace_back(app.get_subcommands({})[before], std::move(r));
  };
  add(texel::cli::AddDevicesCommand);
  add(texel::cli::AddRunCommand);
  add(texel::cli::AddCompileCommand);
  add(texel::cli::AddBenchCommand);
  add(texel::cli::AddPartitionCommand);
  add(texel::cli::AddInspectCommand);
  add(texel::cli::AddTuneCommand);
  add(texel::cli::AddCompileWorkerCommand);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    if (e.get_exit_code() == 0) return app.exit(e);  // --help, --version
    // Usage errors read like every other error: one line, naming the subcommand.
    std::string sub;
    for (const auto& command : commands)
      if (command.first->parsed()) sub = command.first->get_name();
    std::fprintf(stderr, "texel: error: %s%s%s (see texel %s%s--help)\n", sub.c_str(),
                 sub.empty() ? "" : ": ", e.what(), sub.c_str(), sub.empty() ? "" : " ");
    return 1;
  }
  try {
    for (auto& [sub, run] : commands)
      if (sub->parsed()) return run();
  } catch (const texel::Error& e) {
    std::fprintf(stderr, "texel: error: %s\n", e.what());
    return 1;
  } catch (const std::bad_alloc&) {
    // Within texel's limits (docs/reliability.md) but beyond this machine's memory.
    std::fprintf(stderr,
                 "texel: error: out of host memory (the model is within texel's limits, "
                 "TEXEL_MAX_TENSOR_BYTES and TEXEL_MAX_HOST_BYTES, but not this machine's)\n");
    return 1;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "texel: internal error: %s\n", e.what());
    return 2;
  }
  return 0;
}
