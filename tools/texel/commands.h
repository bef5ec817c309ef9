// The texel command-line program: one file per subcommand (cmd_*.cpp), each adding itself to
// the CLI11 app and running when chosen. Errors are texel::Error, reported by main().
#pragma once

#include <CLI/CLI.hpp>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "api/assignments.h"
#include "core/tensor.h"

namespace texel::cli {

// A subcommand's entry point, run after parsing; returns the exit code.
using Runner = std::function<int()>;

Runner AddDevicesCommand(CLI::App& app);
Runner AddRunCommand(CLI::App& app);
Runner AddCompileCommand(CLI::App& app);
Runner AddBenchCommand(CLI::App& app);
Runner AddPartitionCommand(CLI::App& app);
Runner AddInspectCommand(CLI::App& app);
Runner AddTuneCommand(CLI::App& app);
Runner AddCompileWorkerCommand(CLI::App& app);  // hidden: texel tune's compiling processes

// Shared option parsing: "name=value" pairs (SplitAssignment, ParseInputShapes:
// api/assignments.h).
std::map<std::string, HostTensor> ReadNpyAssignments(const std::vector<std::string>& items,
                                                     const char* flag);

}  // namespace texel::cli
