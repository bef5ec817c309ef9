// The compile options, declared once: each option's name, values, help, how it is applied to
// CompileOptions and how a compile's options are described. The CLI's flags (--NAME, with '-'
// for '_'), the C API (texel_compile_options_t::settings, texel_compile_option_info) and the
// Python package's keyword arguments are all made from this table.
#pragma once

#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "api/compiler.h"

namespace texel {

struct CompileOptionSpec {
  std::string name;    // "precision", "input_shape"
  std::string values;  // "fp32|fp16|tf32|tf32x3", "NAME=DIMS"
  std::string help;
  bool repeatable = false;           // given several times, each value adds one
  std::vector<std::string> choices;  // the values allowed; empty: any, checked by apply
  // Applies one value; throws Error(kInvalidArgument) naming the option and the value.
  std::function<void(CompileOptions&, const std::string&)> apply;
  // The option as flags for PlanInfo ("--precision fp16"), one per value; none when default.
  std::function<std::vector<std::string>(const CompileOptions&)> describe;

  std::string flag() const;  // "--input-shape"
};

// Every option, in the order DescribeOptions lists them.
const std::vector<CompileOptionSpec>& CompileOptionTable();

// The option of that name ('-' and '_' alike; a leading "--" ignored); nullptr when none.
const CompileOptionSpec* FindCompileOption(std::string_view name);

// Applies name=value; an unknown name, or a value outside the option's choices, fails with
// Error(kInvalidArgument) naming it (and the names or values there are).
void ApplyCompileOption(CompileOptions& options, std::string_view name, const std::string& value);

// Applies "NAME=VALUE" lines (separated by '\n'; empty lines skipped): the C API's settings.
void ApplyCompileSettings(CompileOptions& options, std::string_view settings);

// The options as the CLI's flags ("--partition estimate --storage buffer --precision fp16"), for
// PlanInfo::options.
std::string DescribeOptions(const CompileOptions& options);

}  // namespace texel
