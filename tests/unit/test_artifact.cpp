// Artifacts (runtime/artifact.h): a compiled model written and read back runs bit for bit as
// compiled; the same model gives the same bytes; program binaries are used only on their device;
// every kind of damage and inconsistency is refused with an error naming it; a device that lacks
// what the plan needs is told what.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <cstring>
#include <optional>
#include <string>

#include "api/compiler.h"
#include "core/error.h"
#include "core/file_io.h"
#include "core/sha256.h"
#include "kernel_test_util.h"
#include "runtime/artifact.h"
#include "runtime/executable.h"
#include "runtime/memory_plan.h"
#include "runtime/plan_check.h"
#include "temp_dir.h"

namespace texel {
namespace {

using runtime::Artifact;
using testing::SharedContext;

std::string DataPath(const char* name) { return std::string(TEXEL_TEST_DATA_DIR) + "/" + name; }

CompiledModel CompileFile(const char* name, CompileOptions opts = {}) {
  return Compile(DataPath(name), SharedContext(), opts);
}

std::vector<HostTensor> RunOnce(const runtime::Executable& exe, uint32_t seed) {
  runtime::Session s(exe);
  std::map<std::string, HostTensor> in;
  for (const auto& t : exe.plan().inputs) in[t.name] = testing::RandomF32(t.shape, seed);
  return s.Run(in);
}

std::unique_ptr<runtime::Executable> Load(const std::string& bytes) {
  cl::ProgramCache cache = cl::ProgramCache::Default();
  return runtime::Executable::FromArtifact(SharedContext(), runtime::ReadArtifact(bytes, "t.texel"),
                                           &cache, "t.texel");
}

// The error ReadArtifact throws for bytes, or "" when it reads them.
std::string ReadError(std::string_view bytes) {
  try {
    runtime::ReadArtifact(bytes, "t.texel");
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kInvalidModel) << e.what();
    return e.what();
  }
  return "";
}

TEST(ArtifactTest, RoundTripIsBitIdentical) {
  CompileOptions texture;
  texture.storage = passes::StoragePolicy::kTexture;
  texture.half_texels = true;
  CompileOptions clblast;
  clblast.backends = {"clblast", "native"};
  clblast.partition = passes::PartitionPolicy::kFirst;
  for (auto [name, opts] : {std::pair{"tiny_conv.onnx", CompileOptions{}},
                            {"tiny_conv.onnx", texture},
                            {"tiny_matmul.onnx", clblast},
                            {"tiny_pools.onnx", CompileOptions{}}}) {
    SCOPED_TRACE(name);
    CompiledModel m = CompileFile(name, opts);
    std::string bytes = runtime::WriteArtifact(m.executable->ToArtifact(false));
    auto loaded = Load(bytes);
    std::vector<HostTensor> want = RunOnce(*m.executable, 7), got = RunOnce(*loaded, 7);
    ASSERT_EQ(want.size(), got.size());
    for (size_t i = 0; i < want.size(); ++i) EXPECT_EQ(want[i].bytes, got[i].bytes);
    // Loaded and saved again: the same bytes.
    EXPECT_EQ(runtime::WriteArtifact(loaded->ToArtifact(false)), bytes);
    EXPECT_EQ(loaded->plan().info.model_sha256,
              Sha256Hex(MappedFile::Open(DataPath(name))->bytes()));
    EXPECT_NE(loaded->plan().info.options.find("--partition"), std::string::npos);
  }
}

TEST(ArtifactTest, SameModelSameBytes) {
  std::string a =
      runtime::WriteArtifact(CompileFile("tiny_conv.onnx").executable->ToArtifact(false));
  std::string b =
      runtime::WriteArtifact(CompileFile("tiny_conv.onnx").executable->ToArtifact(false));
  EXPECT_EQ(a, b);
}

TEST(ArtifactTest, BinaryOnlyWhereItsKeyMatches) {
  CompiledModel m = CompileFile("tiny_conv.onnx");
  Artifact a = m.executable->ToArtifact(true);
  ASSERT_EQ(a.binaries.size(), 1u) << "PoCL gives program binaries";
  EXPECT_TRUE(a.binaries[0].Matches(SharedContext()->info()));
  auto with_binary = Load(runtime::WriteArtifact(a));
  EXPECT_TRUE(with_binary->program_from_binary());
  a.binaries[0].driver_version += "-other";
  auto from_source = Load(runtime::WriteArtifact(a));
  EXPECT_FALSE(from_source->program_from_binary());
  EXPECT_EQ(RunOnce(*with_binary, 3)[0].bytes, RunOnce(*from_source, 3)[0].bytes);
}

TEST(ArtifactTest, PoclBinaryCarriesTheLaunchedKernels) {
  // PoCL compiles each kernel for its work-group size at its first launch; the artifact's binary
  // holds those kernels (PoCL's binary names them as its cache does: "8-8-1-goffs0-smallgrid"),
  // not only the generic ones, whatever PoCL's cache held before.
  CompiledModel m = CompileFile("tiny_conv.onnx");
  if (SharedContext()->info().platform_name.find("Portable Computing Language") ==
      std::string::npos)
    GTEST_SKIP() << "not PoCL";
  Artifact a = m.executable->ToArtifact(true);
  ASSERT_EQ(a.binaries.size(), 1u);
  std::string binary(a.binaries[0].bytes.begin(), a.binaries[0].bytes.end());
  int named = 0;
  for (const auto& step : m.executable->plan().steps) {
    if (step.local.empty()) continue;
    std::string name = fmt::format("{}-{}-{}-goffs0-smallgrid", step.local[0],
                                   step.local.size() > 1 ? step.local[1] : 1,
                                   step.local.size() > 2 ? step.local[2] : 1);
    EXPECT_NE(binary.find(name), std::string::npos) << name;
    ++named;
  }
  EXPECT_GT(named, 0);
}

TEST(ArtifactTest, DamageIsNamed) {
  std::string good =
      runtime::WriteArtifact(CompileFile("tiny_conv.onnx").executable->ToArtifact(false));
  ASSERT_EQ(ReadError(good), "");
  EXPECT_NE(ReadError("PK\x03\x04 not an artifact").find("not a texel artifact"),
            std::string::npos);
  EXPECT_NE(ReadError(good.substr(0, 20)).find("truncated"), std::string::npos);
  EXPECT_NE(ReadError(good.substr(0, good.size() - 1)).find("truncated"), std::string::npos);
  EXPECT_NE(ReadError(good + "x").find("truncated or extended"), std::string::npos);
  std::string future = good;
  future[8] = static_cast<char>(runtime::kArtifactFormatVersion + 1);
  EXPECT_NE(
      ReadError(future).find(fmt::format("format version {}", runtime::kArtifactFormatVersion + 1)),
      std::string::npos);
  std::string zero = good;
  zero[8] = 0;
  EXPECT_NE(ReadError(zero).find("format version 0"), std::string::npos);
  // A flipped byte in each section is named by the section.
  for (const runtime::ArtifactSection& s : runtime::ReadArtifactSections(good, "t.texel")) {
    std::string bad = good;
    bad[s.offset + s.size / 2] ^= 0x10;
    EXPECT_NE(ReadError(bad).find("section '" + s.name + "' is corrupt"), std::string::npos)
        << s.name;
  }
  // A bit flipped in any byte of the file (header, table, sections, padding): refused.
  for (size_t i = 0; i < good.size(); ++i) {
    std::string bad = good;
    bad[i] ^= static_cast<char>(1 << (i % 8));
    ASSERT_NE(ReadError(bad), "") << "byte " << i;
  }
}

// Plans that pass the checksums but contradict themselves (a crafted file): refused by
// CheckPlan, naming the part.
TEST(ArtifactTest, InconsistentPlanIsRefused) {
  Artifact good = CompileFile("tiny_conv.onnx").executable->ToArtifact(false);
  ASSERT_FALSE(good.plan.steps.empty());
  auto expect = [&](const char* what, auto&& change) {
    Artifact a = good;
    change(a.plan);
    std::string error = ReadError(runtime::WriteArtifact(a));
    EXPECT_NE(error.find(what), std::string::npos) << what << ": " << error;
  };
  int nbuf = static_cast<int>(good.plan.buffers.size());
  expect("does not exist", [&](runtime::Plan& p) { p.steps[0].buffers[0] = nbuf; });
  expect("does not exist", [&](runtime::Plan& p) { p.inputs[0].buffer = -2; });
  expect("do not fit buffer", [&](runtime::Plan& p) { p.outputs[0].shape[0] = 1000; });
  expect("work size", [&](runtime::Plan& p) { p.steps[0].global[0] = 0; });
  expect("dimension", [&](runtime::Plan& p) { p.inputs[0].shape[0] = -1; });
  expect("does not fit the arena", [&](runtime::Plan& p) {
    p.memory.offsets.assign(p.buffers.size(), -1);
    p.memory.offsets[p.inputs[0].buffer] = p.memory.arena_bytes;
  });
  expect("constant holds", [&](runtime::Plan& p) {
    for (auto& b : p.buffers)
      if (b.constant) b.bytes += 4;
  });
  expect("image", [&](runtime::Plan& p) { p.buffers[0].image_width = 3; });
  // A part of a buffer: inside it, of a plain device buffer, of no part itself.
  int out = good.plan.outputs[0].buffer, in = good.plan.inputs[0].buffer;
  expect("which does not exist", [&](runtime::Plan& p) { p.buffers[out].alias_of = nbuf; });
  expect("cannot be part of buffer", [&](runtime::Plan& p) { p.buffers[in].alias_of = out; });
}

TEST(ArtifactTest, MissingFeaturesAreNamed) {
  CompileOptions texture;
  texture.storage = passes::StoragePolicy::kTexture;
  Artifact a = CompileFile("tiny_conv.onnx", texture).executable->ToArtifact(false);
  cl::DeviceInfo device = SharedContext()->info();
  ASSERT_TRUE(runtime::MissingFeatures(a.plan, device).empty());
  cl::DeviceInfo no_images = device;
  no_images.image_support = false;
  auto missing = runtime::MissingFeatures(a.plan, no_images);
  ASSERT_EQ(missing.size(), 1u);
  EXPECT_NE(missing[0].find("images"), std::string::npos);

  // Exact divisions' build option, on a device whose division is not correctly rounded.
  a.plan.build_options = runtime::kCorrectDivideOption;
  cl::DeviceInfo rough = device;
  rough.fp32_correct_divide = false;
  missing = runtime::MissingFeatures(a.plan, rough);
  ASSERT_EQ(missing.size(), 1u);
  EXPECT_NE(missing[0].find("correctly rounded f32 division"), std::string::npos);
  a.plan.build_options.clear();

  a.plan.source = "#pragma OPENCL EXTENSION cl_texel_imaginary : enable\n" + a.plan.source;
  a.plan.needs.inline_ptx = true;
  cl::DeviceInfo not_nvidia = device;  // whichever device runs the tests
  not_nvidia.nv_warp_size = 0;
  missing = runtime::MissingFeatures(a.plan, not_nvidia);
  ASSERT_EQ(missing.size(), 2u);
  EXPECT_EQ(missing[0], "extension cl_texel_imaginary");
  EXPECT_NE(missing[1].find("NVIDIA"), std::string::npos);
  try {
    Load(runtime::WriteArtifact(a));
    ADD_FAILURE() << "loaded an artifact the device cannot run";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kUnsupported);
    EXPECT_NE(std::string(e.what()).find("cl_texel_imaginary"), std::string::npos) << e.what();
  }
}

// ReadFile: a file's bytes (empty ones too); nothing for a missing file or a directory.
TEST(FileIoTest, ReadFileWholeOrNothing) {
  testing::TempDir dir;
  std::string path = (dir.path() / "f.bin").string(), empty = (dir.path() / "e").string();
  std::string bytes("a\0b\xff" "c", 5);
  WriteFileAtomically(path, bytes);
  WriteFileAtomically(empty, "");
  EXPECT_EQ(ReadFile(path), std::optional<std::string>(bytes));
  EXPECT_EQ(ReadFile(empty), std::optional<std::string>(""));
  EXPECT_EQ(ReadFile((dir.path() / "absent").string()), std::nullopt);
  EXPECT_EQ(ReadFile(dir.path().string()), std::nullopt);
}

// Loaded from a mapped file whose pages are released as they are read (each section after its
// checksum, each constant once uploaded): the same results.
TEST(ArtifactTest, MappedFileReleasedAsRead) {
  CompiledModel m = CompileFile("tiny_conv.onnx");
  testing::TempDir dir;
  std::string path = (dir.path() / "conv.texel").string();
  WriteFileAtomically(path, runtime::WriteArtifact(m.executable->ToArtifact(false)));
  auto file = MappedFile::Open(path);
  int released = 0;
  runtime::Artifact a = runtime::ReadArtifact(file->bytes(), path, [&](std::string_view part) {
    file->Release(part);
    ++released;
  });
  size_t constants = a.constant_bytes.size();
  EXPECT_GT(constants, 0u);
  cl::ProgramCache cache = cl::ProgramCache::Default();
  auto loaded = runtime::Executable::FromArtifact(SharedContext(), std::move(a), &cache, path);
  EXPECT_EQ(released, static_cast<int>(4 + constants));  // meta, plan, source, constants
  EXPECT_EQ(RunOnce(*loaded, 9)[0].bytes, RunOnce(*m.executable, 9)[0].bytes);
}

// A memory plan whose alignment the device does not accept is made again on load.
TEST(ArtifactTest, MemoryPlannedAgainForTheDevice) {
  CompiledModel m = CompileFile("tiny_conv.onnx");
  Artifact a = m.executable->ToArtifact(false);
  a.plan.memory = runtime::PlanMemory(a.plan, 4);
  ASSERT_GT(runtime::ArenaAlignment(SharedContext()->info()), 4);
  auto loaded = Load(runtime::WriteArtifact(a));
  EXPECT_EQ(loaded->plan().memory.alignment, runtime::ArenaAlignment(SharedContext()->info()));
  EXPECT_EQ(RunOnce(*loaded, 5)[0].bytes, RunOnce(*m.executable, 5)[0].bytes);
}

}  // namespace
}  // namespace texel
