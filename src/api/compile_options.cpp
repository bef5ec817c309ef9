#include "api/compile_options.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>

#include "api/assignments.h"
#include "core/error.h"
#include "core/npy.h"
#include "core/precision.h"

namespace texel {
namespace {

std::string Dashed(std::string s) {
  std::replace(s.begin(), s.end(), '_', '-');
  return s;
}

std::vector<std::string> ComputeModes() {
  std::vector<std::string> out;
  for (const auto& m : kComputeModeNames) out.push_back(m.name);
  return out;
}

std::vector<std::string> PassNames() {
  std::vector<std::string> out;
  for (const passes::Pass& p : passes::Pipeline()) out.push_back(p.name);
  return out;
}

using Opts = CompileOptions;
using Values = std::vector<std::string>;

// "--flag item" for each item of a list option.
Values EachAs(const char* flag, const std::vector<std::string>& items) {
  Values out;
  for (const std::string& item : items) out.push_back(fmt::format("{} {}", flag, item));
  return out;
}

// An option that takes one of choices; current(o) names the value o holds.
CompileOptionSpec OneOf(std::string name, std::string help, std::vector<std::string> choices,
                        void (*apply)(Opts&, const std::string&),
                        std::string (*current)(const Opts&)) {
  CompileOptionSpec spec{std::move(name),
                         fmt::format("{}", fmt::join(choices, "|")),
                         std::move(help),
                         false,
                         std::move(choices),
                         apply,
                         {}};
  spec.describe = [flag = spec.flag(), current](const Opts& o) {
    return Values{flag + " " + current(o)};
  };
  return spec;
}

std::vector<CompileOptionSpec> MakeTable() {
  std::vector<CompileOptionSpec> t;
  t.push_back({"input_shape",
               "NAME=DIMS",
               "fix an input's shape, e.g. input=1x3x224x224",
               true,
               {},
               [](Opts& o, const std::string& v) {
                 auto [name, dims] = *ParseInputShapes({v}, "--input-shape").begin();
                 if (o.import.input_shapes.count(name))
                   Fail(ErrorCode::kInvalidArgument, "--input-shape {}: given twice", name);
                 o.import.input_shapes[name] = dims;
               },
               [](const Opts& o) {
                 Values out;
                 for (const auto& [name, shape] : o.import.input_shapes)
                   out.push_back(fmt::format("--input-shape {}={}", name, fmt::join(shape, "x")));
                 return out;
               }});
  t.push_back({"freeze",
               "NAME=FILE.npy",
               "bind an input at compile time: it becomes a constant",
               true,
               {},
               [](Opts& o, const std::string& v) {
                 auto given = ParseAssignments<HostTensor>(
                     {v}, "--freeze", [](const std::string& path) { return ReadNpy(path); });
                 auto& [name, tensor] = *given.begin();
                 if (o.import.frozen_inputs.count(name))
                   Fail(ErrorCode::kInvalidArgument, "--freeze {}: given twice", name);
                 o.import.frozen_inputs[name] = std::move(tensor);
               },
               [](const Opts& o) {
                 Values out;
                 for (const auto& [name, t] : o.import.frozen_inputs)
                   out.push_back("--freeze " + name);
                 return out;
               }});
  t.push_back({"backends",
               "A,B",
               "allowed backends in order of preference, e.g. clblast,native "
               "(default: native)",
               false,
               {},
               [](Opts& o, const std::string& v) {
                 o.backends.clear();
                 std::string name;
                 for (char c : v + ",") {
                   if (c != ',') {
                     name += c;
                   } else if (!name.empty()) {
                     o.backends.push_back(name);
                     name.clear();
                   }
                 }
               },
               [](const Opts& o) {
                 return o.backends.empty()
                            ? Values{}
                            : Values{fmt::format("--backends {}", fmt::join(o.backends, ","))};
               }});
  t.push_back({"deny",
               "BACKEND:Op",
               "keep Op away from BACKEND",
               true,
               {},
               [](Opts& o, const std::string& v) { o.deny.push_back(v); },
               [](const Opts& o) { return EachAs("--deny", o.deny); }});
  t.push_back(OneOf(
      "partition",
      "how to choose a node's backend: estimate (least estimated time), measure (least measured "
      "time, cached), first (first in --backends that takes it)",
      {"estimate", "measure", "first"},
      [](Opts& o, const std::string& v) { passes::ParsePolicy(v, &o.partition); },
      [](const Opts& o) -> std::string { return passes::PolicyName(o.partition); }));
  t.push_back(OneOf(
      "storage",
      "where activations live: buffer (default), texture (2D images wherever a texture kernel "
      "computes them), auto (texture on mobile GPUs)",
      {"buffer", "texture", "auto"},
      [](Opts& o, const std::string& v) { passes::ParseStoragePolicy(v, &o.storage); },
      [](const Opts& o) -> std::string { return passes::StoragePolicyName(o.storage); }));
  t.push_back({"texture_precision",
               "fp32|fp16",
               "channel type of images: fp32 (default) or fp16",
               false,
               {"fp32", "fp16"},
               [](Opts& o, const std::string& v) { o.half_texels = v == "fp16"; },
               [](const Opts& o) {
                 return o.half_texels ? Values{"--texture-precision fp16"} : Values{};
               }});
  t.push_back(OneOf(
      "precision",
      "fp32 (default); fp16: f16 storage, fp32 arithmetic in every kernel (a rule keeps softmax "
      "inputs, exp and large sums in fp32); tf32, tf32x3: matrix products on the tensor cores "
      "where the device has them, and convolutions in channels-last regions (tf32x3, fp32-level "
      "accuracy: only products of 2^30 multiply-adds or more; docs/precision.md)",
      ComputeModes(), [](Opts& o, const std::string& v) { ParseComputeMode(v, &o.precision); },
      [](const Opts& o) -> std::string { return ComputeModeName(o.precision); }));
  t.push_back(OneOf(
      "tuning",
      "kernel parameters from the tuning database (on, the default) or the heuristics' (off; "
      "--no-tuning), to compare",
      {"on", "off"}, [](Opts& o, const std::string& v) { o.tuning = v == "on"; },
      [](const Opts& o) -> std::string { return o.tuning ? "on" : "off"; }));
  t.push_back({"db",
               "FILE",
               "the tuning database to read (default: the device's, in the cache directory)",
               false,
               {},
               [](Opts& o, const std::string& v) { o.tuning_db = v; },
               [](const Opts& o) {
                 return o.tuning_db.empty() ? Values{} : Values{"--db " + o.tuning_db};
               }});
  t.push_back({"disable_pass", "PASS", "skip a pass of the pipeline (e.g. attention, normalize)",
               true, PassNames(),
               [](Opts& o, const std::string& v) { o.disabled_passes.push_back(v); },
               [](const Opts& o) { return EachAs("--disable-pass", o.disabled_passes); }});
  return t;
}

}  // namespace

std::string CompileOptionSpec::flag() const { return "--" + Dashed(name); }

const std::vector<CompileOptionSpec>& CompileOptionTable() {
  static const std::vector<CompileOptionSpec> table = MakeTable();
  return table;
}

const CompileOptionSpec* FindCompileOption(std::string_view name) {
  if (name.substr(0, 2) == "--") name.remove_prefix(2);
  std::string want = Dashed(std::string(name));
  for (const auto& spec : CompileOptionTable())
    if (Dashed(spec.name) == want) return &spec;
  return nullptr;
}

void ApplyCompileOption(CompileOptions& options, std::string_view name, const std::string& value) {
  const CompileOptionSpec* spec = FindCompileOption(name);
  if (!spec) {
    std::vector<std::string> names;
    for (const auto& s : CompileOptionTable()) names.push_back(s.name);
    Fail(ErrorCode::kInvalidArgument, "no compile option '{}' (options: {})", name,
         fmt::join(names, ", "));
  }
  if (!spec->choices.empty() &&
      std::find(spec->choices.begin(), spec->choices.end(), value) == spec->choices.end())
    Fail(ErrorCode::kInvalidArgument, "{} '{}' is not {}", Dashed(spec->name), value,
         fmt::join(spec->choices, ", "));
  spec->apply(options, value);
}

void ApplyCompileSettings(CompileOptions& options, std::string_view settings) {
  size_t at = 0;
  while (at <= settings.size()) {
    size_t end = settings.find('\n', at);
    if (end == std::string_view::npos) end = settings.size();
    std::string_view line = settings.substr(at, end - at);
    at = end + 1;
    if (line.empty()) continue;
    size_t eq = line.find('=');
    if (eq == std::string_view::npos || eq == 0)
      Fail(ErrorCode::kInvalidArgument, "setting '{}': expected NAME=VALUE", line);
    ApplyCompileOption(options, line.substr(0, eq), std::string(line.substr(eq + 1)));
  }
}

std::string DescribeOptions(const CompileOptions& o) {
  std::vector<std::string> flags;
  for (const auto& spec : CompileOptionTable())
    for (std::string& f : spec.describe(o)) flags.push_back(std::move(f));
  return fmt::format("{}", fmt::join(flags, " "));
}

}  // namespace texel
