// Artifact mutation test: loads corrupted variants of real artifacts and checks that each is
// either refused with texel::Error or loads (to a plan that CheckPlan accepts, and, for a sample,
// to an Executable and a Session on the device), never crashing. Built with AddressSanitizer and
// UndefinedBehaviorSanitizer over the runtime's sources (tests/fuzz/CMakeLists.txt), so that a
// read outside the file or an overflowing size is a failure even where it would not crash.
//
// Half the variants are raw damage (bit flips, bytes overwritten, truncation, extension), which
// the checksums catch; the other half damage one JSON or constants section and repack the file
// with valid checksums (runtime::PackSections), so that the parser and CheckPlan see them.
//
// Usage: artifact_mutation_test VARIANTS SEED FILE.texel...
#include <cstdio>
#include <cstdlib>
#include <random>
#include <string>
#include <vector>

#include "core/error.h"
#include "core/file_io.h"
#include "runtime/artifact.h"
#include "runtime/cl/context.h"
#include "runtime/executable.h"
#include "runtime/plan_check.h"
#include "runtime/session.h"

namespace texel {
namespace {

struct Counts {
  int refused = 0, loaded = 0, executables = 0, refused_by_device = 0;
};

std::string RawDamage(std::string bytes, std::mt19937_64& rng) {
  auto pick = [&](size_t n) { return static_cast<size_t>(rng() % std::max<size_t>(n, 1)); };
  switch (rng() % 5) {
    case 0:  // flip 1-4 bits anywhere
      for (int i = 0, n = 1 + static_cast<int>(rng() % 4); i < n; ++i)
        bytes[pick(bytes.size())] ^= static_cast<char>(1u << (rng() % 8));
      break;
    case 1:  // a byte of the header or the section table set to a random value
      bytes[pick(std::min<size_t>(bytes.size(), 32 + 96 * 8))] = static_cast<char>(rng());
      break;
    case 2:  // truncated
      bytes.resize(pick(bytes.size()));
      break;
    case 3:  // extended
      bytes.append(1 + pick(64), static_cast<char>(rng()));
      break;
    default: {  // a range overwritten with zeros, 0xff or noise
      size_t at = pick(bytes.size()), n = std::min(bytes.size() - at, 1 + pick(32));
      int fill = static_cast<int>(rng() % 3);
      for (size_t i = at; i < at + n; ++i)
        bytes[i] = fill == 0 ? '\0' : fill == 1 ? '\xff' : static_cast<char>(rng());
    }
  }
  return bytes;
}

// Damage inside a section's text: a number replaced by an extreme one, a range deleted or
// duplicated, or a byte changed.
std::string DamageText(std::string text, std::mt19937_64& rng) {
  static const char* kNumbers[] = {"-1",
                                   "0",
                                   "1e308",
                                   "-9223372036854775808",
                                   "18446744073709551615",
                                   "4294967296",
                                   "2.5",
                                   "null",
                                   "\"x\"",
                                   "[]",
                                   "{}",
                                   "true"};
  if (text.empty()) return "x";
  size_t at = rng() % text.size();
  switch (rng() % 4) {
    case 0: {
      size_t digit = text.find_first_of("0123456789", at);
      if (digit == std::string::npos) digit = text.find_first_of("0123456789");
      if (digit == std::string::npos) break;
      size_t end = text.find_first_not_of("0123456789", digit);
      text.replace(digit, (end == std::string::npos ? text.size() : end) - digit,
                   kNumbers[rng() % std::size(kNumbers)]);
      break;
    }
    case 1: text.erase(at, rng() % 64); break;
    case 2: text.insert(at, text.substr(at, rng() % 64)); break;
    default: text[at] = static_cast<char>(rng());
  }
  return text;
}

// One section damaged, the file repacked with valid checksums.
std::string RepackedDamage(const std::string& bytes, std::mt19937_64& rng) {
  std::vector<runtime::ArtifactSection> table = runtime::ReadArtifactSections(bytes, "original");
  std::vector<std::string> contents;
  for (const auto& s : table) contents.push_back(bytes.substr(s.offset, s.size));
  std::vector<size_t> targets;  // the source stays: a changed one would be a new program build
  for (size_t i = 0; i < table.size(); ++i)
    if (table[i].name == "meta" || table[i].name == "plan" || table[i].name == "constants")
      targets.push_back(i);
  size_t t = targets[rng() % targets.size()];
  contents[t] = DamageText(contents[t], rng);
  std::vector<runtime::NamedSection> sections;
  for (size_t i = 0; i < table.size(); ++i) sections.push_back({table[i].name, contents[i]});
  return runtime::PackSections(sections, runtime::kArtifactFormatVersion);
}

void Try(const std::string& bytes, const std::shared_ptr<cl::Context>& ctx, Counts* c) {
  runtime::Artifact a;
  try {
    a = runtime::ReadArtifact(bytes, "variant");
  } catch (const Error&) {
    ++c->refused;
    return;
  }
  ++c->loaded;
  runtime::CheckPlan(a.plan);  // ReadArtifact checked it; must not throw now
  // A sample goes on to the device: program (from the cache), constants, a Session's memory.
  if (c->executables >= 300 || !runtime::MissingFeatures(a.plan, ctx->info()).empty()) return;
  try {
    cl::ProgramCache cache = cl::ProgramCache::Default();
    auto exe = runtime::Executable::FromArtifact(ctx, std::move(a), &cache, "variant");
    runtime::Session session(*exe);
    ++c->executables;
  } catch (const Error&) {
    ++c->refused_by_device;  // e.g. a buffer larger than the device allows, a kernel renamed
  }
}

}  // namespace
}  // namespace texel

int main(int argc, char** argv) {
  if (argc < 4) {
    std::fprintf(stderr, "usage: %s VARIANTS SEED FILE.texel...\n", argv[0]);
    return 2;
  }
  const int variants = std::atoi(argv[1]);
  std::mt19937_64 rng(std::strtoull(argv[2], nullptr, 10));
  try {
    auto ctx = std::make_shared<texel::cl::Context>(texel::cl::SelectDevice("cpu"));
    texel::Counts c;
    for (int f = 3; f < argc; ++f) {
      std::string original(texel::MappedFile::Open(argv[f])->bytes());
      texel::runtime::ReadArtifact(original, argv[f]);  // the original must load
      int n = variants / (argc - 3);
      for (int i = 0; i < n; ++i) {
        std::string bytes =
            i % 2 ? texel::RawDamage(original, rng) : texel::RepackedDamage(original, rng);
        texel::Try(bytes, ctx, &c);
      }
    }
    std::printf(
        "%d variants: %d refused by the reader, %d read (%d made into sessions, %d refused by "
        "the device)\n",
        c.refused + c.loaded, c.refused, c.loaded, c.executables, c.refused_by_device);
    return c.refused + c.loaded >= variants - argc ? 0 : 1;
  } catch (const texel::Error& e) {
    std::fprintf(stderr, "artifact_mutation_test: %s\n", e.what());
    return 1;
  }
}
