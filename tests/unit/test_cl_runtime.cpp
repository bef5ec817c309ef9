// Tests for the OpenCL runtime layer on the real (PoCL CPU) device. Kernel builds are kept few:
// PoCL compiles each program with LLVM.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <optional>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "core/error.h"
#include "core/file_io.h"
#include "kernel_test_util.h"
#include "runtime/cl/context.h"
#include "runtime/cl/device.h"
#include "runtime/cl/program_cache.h"
#include "temp_dir.h"

namespace texel::cl {
namespace {

namespace fs = std::filesystem;
using testing::ScopedEnv;

using testing::TempDir;

// The tests' device (PoCL's CPU, or TEXEL_TEST_DEVICE's: these ran on "cpu" alone before, and
// failed on a machine with only a GPU).
const Context& SharedContext() { return *testing::SharedContext(); }

// The file's bytes (the test fails where it cannot be read).
std::string ReadFile(const fs::path& path) {
  std::optional<std::string> data = texel::ReadFile(path.string());
  EXPECT_TRUE(data.has_value()) << path;
  return data.value_or("");
}

void WriteFile(const fs::path& path, const std::string& data) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(data.data(), static_cast<std::streamsize>(data.size()));
}

constexpr const char* kVectorAddSource = R"CL(
// texel-kernel: vadd
__kernel void vadd(__global const float* a, __global const float* b, __global float* c,
                   const int n) {
  int i = get_global_id(0);
  if (i < n) c[i] = a[i] + b[i];
}
)CL";

// Runs vadd from program on n random elements and checks every output.
void CheckVectorAdd(const Context& ctx, const Program& program, int n) {
  std::mt19937 rng(1234 + n);
  std::uniform_real_distribution<float> dist(-100.0f, 100.0f);
  std::vector<float> a(n), b(n), c(n, 0.0f);
  for (int i = 0; i < n; ++i) {
    a[i] = dist(rng);
    b[i] = dist(rng);
  }
  const size_t bytes = sizeof(float) * n;
  Buffer buf_a(ctx, bytes), buf_b(ctx, bytes), buf_c(ctx, bytes);
  buf_a.Write(ctx, a.data(), bytes);
  buf_b.Write(ctx, b.data(), bytes);

  Kernel kernel(program.get(), "vadd");
  EXPECT_EQ(kernel.name(), "vadd");
  kernel.SetArg(0, buf_a);
  kernel.SetArg(1, buf_b);
  kernel.SetArg(2, buf_c);
  kernel.SetArg(3, sizeof(n), &n);
  const size_t local = 64;
  const size_t global = (static_cast<size_t>(n) + local - 1) / local * local;
  Event event;
  Launch(ctx, kernel, {global}, {local}, &event);
  event.Wait();
  EXPECT_NE(event.get(), nullptr);
  (void)event.DurationNs();  // profiling must be enabled on the queue, or this throws
  buf_c.Read(ctx, c.data(), bytes);
  for (int i = 0; i < n; ++i) ASSERT_EQ(c[i], a[i] + b[i]) << "at index " << i;
}

// ---- devices ----

TEST(ClDeviceTest, ListsDevices) {
  std::vector<DeviceInfo> devices = ListDevices();
  ASSERT_FALSE(devices.empty());
  const DeviceInfo& d = devices.front();
  EXPECT_EQ(d.platform_index, 0);
  EXPECT_EQ(d.device_index, 0);
  EXPECT_NE(d.device, nullptr);
  EXPECT_NE(d.platform, nullptr);
  EXPECT_FALSE(d.name.empty());
  EXPECT_FALSE(d.platform_name.empty());
  EXPECT_EQ(d.device_version.rfind("OpenCL ", 0), 0u) << d.device_version;
  EXPECT_GT(d.compute_units, 0u);
  EXPECT_GT(d.global_mem_bytes, 0u);
  EXPECT_GT(d.max_alloc_bytes, 0u);
  EXPECT_GT(d.max_work_group_size, 0u);
  EXPECT_FALSE(d.max_work_item_sizes.empty());
  EXPECT_FALSE(d.extensions.empty());
  EXPECT_FALSE(d.svm.empty());
  EXPECT_EQ(d.fp64, d.HasExtension("cl_khr_fp64"));
  EXPECT_EQ(d.fp16, d.HasExtension("cl_khr_fp16"));
  EXPECT_FALSE(d.HasExtension("cl_texel_no_such_extension"));
  EXPECT_EQ(d.Label(), "0:0 " + d.name + " (" + d.platform_name + ")");
  if (!d.HasExtension("cl_nv_device_attribute_query")) {
    EXPECT_EQ(d.nv_cc_major, -1);
  }
}

// A kind of device this machine has, as SelectDevice names it: "cpu" where there is one (PoCL
// in CI), else "gpu" (the GPU machine); and that kind.
std::pair<std::string, DeviceKind> KindHere() {
  for (const DeviceInfo& d : ListDevices())
    if (d.kind == DeviceKind::kCpu) return {"cpu", DeviceKind::kCpu};
  return {"gpu", DeviceKind::kGpu};
}

TEST(ClDeviceTest, SelectsByTypeIndexAndSubstring) {
  auto [spec, kind] = KindHere();
  DeviceInfo by_kind = SelectDevice(spec);
  EXPECT_EQ(by_kind.kind, kind);
  EXPECT_EQ(SelectDevice(DeviceKindName(kind)).device, by_kind.device);

  DeviceInfo first = SelectDevice("0:0");
  EXPECT_EQ(first.platform_index, 0);
  EXPECT_EQ(first.device_index, 0);

  // A case-flipped middle part of the name selects the same device.
  std::string part = first.name.substr(first.name.size() / 4, 6);
  for (char& ch : part) {
    ch = std::isupper(static_cast<unsigned char>(ch))
             ? static_cast<char>(std::tolower(static_cast<unsigned char>(ch)))
             : static_cast<char>(std::toupper(static_cast<unsigned char>(ch)));
  }
  EXPECT_EQ(SelectDevice(part).device, first.device) << part;
}

TEST(ClDeviceTest, BadSpecThrowsNotFound) {
  for (const char* spec : {"no-such-device-xyz", "9:9"}) {
    try {
      SelectDevice(spec);
      FAIL() << "expected an error for " << spec;
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ErrorCode::kNotFound);
      EXPECT_NE(e.message().find(std::string("'") + spec + "'"), std::string::npos) << e.message();
      EXPECT_NE(e.message().find("available: 0:0 "), std::string::npos) << e.message();
    }
  }
}

TEST(ClDeviceTest, HonoursTexelDeviceEnv) {
  {
    ScopedEnv env("TEXEL_DEVICE", "0:0");
    DeviceInfo d = SelectDevice("");
    EXPECT_EQ(d.platform_index, 0);
    EXPECT_EQ(d.device_index, 0);
  }
  {
    ScopedEnv env("TEXEL_DEVICE", "bogus-env-device");
    try {
      SelectDevice("");
      FAIL() << "TEXEL_DEVICE was ignored";
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ErrorCode::kNotFound);
      EXPECT_NE(e.message().find("bogus-env-device"), std::string::npos) << e.message();
    }
    // An explicit spec wins over the environment.
    auto [spec, kind] = KindHere();
    EXPECT_EQ(SelectDevice(spec).kind, kind);
  }
  {
    ScopedEnv env("TEXEL_DEVICE", std::nullopt);
    EXPECT_NO_THROW(SelectDevice(""));
  }
}

TEST(ClDeviceTest, FormatsDevices) {
  std::vector<DeviceInfo> devices = ListDevices();
  std::string text = FormatDevices(devices);
  EXPECT_EQ(text.rfind("[0:0] " + devices.front().name, 0), 0u) << text;
  for (const char* field : {"  platform        ", "  compute units   ", "  memory          ",
                            "  fp16 / fp64     ", "  nvidia cc       ", "  extensions      "}) {
    EXPECT_NE(text.find(field), std::string::npos) << field;
  }
  EXPECT_NE(text.find(devices.front().extensions.front()), std::string::npos);
  std::string no_devices = FormatDevices({});
  EXPECT_NE(no_devices.find("no OpenCL device found"), std::string::npos);
}

TEST(ClErrorTest, NamesAndChecks) {
  EXPECT_STREQ(CLErrorName(CL_SUCCESS), "CL_SUCCESS");
  EXPECT_STREQ(CLErrorName(CL_OUT_OF_RESOURCES), "CL_OUT_OF_RESOURCES");
  EXPECT_STREQ(CLErrorName(CL_INVALID_KERNEL_ARGS), "CL_INVALID_KERNEL_ARGS");
  EXPECT_STREQ(CLErrorName(-1001), "CL_PLATFORM_NOT_FOUND_KHR");
  EXPECT_STREQ(CLErrorName(-12345), "CL_UNKNOWN_ERROR");
  EXPECT_NO_THROW(CheckCL(CL_SUCCESS, "clFoo"));
  try {
    CheckCL(CL_OUT_OF_RESOURCES, "clEnqueueNDRangeKernel");
    FAIL() << "CheckCL did not throw";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kDevice);
    EXPECT_EQ(e.message(), "clEnqueueNDRangeKernel failed: CL_OUT_OF_RESOURCES (-5)");
  }
}

// ---- context, buffers, kernels ----

TEST(ClRuntimeTest, VectorAdd) {
  const Context& ctx = SharedContext();
  Program program(ctx, kVectorAddSource, "-cl-std=CL1.2", nullptr);
  EXPECT_FALSE(program.from_cache());
  CheckVectorAdd(ctx, program, 1000);  // not a multiple of the work-group size
}

TEST(ClRuntimeTest, BuffersMoveAndHandleZeroBytes) {
  const Context& ctx = SharedContext();
  Buffer empty(ctx, 0);
  EXPECT_NE(empty.mem(), nullptr);
  EXPECT_EQ(empty.bytes(), 0u);
  empty.Write(ctx, nullptr, 0);

  Buffer a(ctx, 16);
  cl_mem mem = a.mem();
  Buffer b(std::move(a));
  EXPECT_EQ(a.mem(), nullptr);
  EXPECT_EQ(a.bytes(), 0u);
  EXPECT_EQ(b.mem(), mem);
  Buffer c;
  c = std::move(b);
  EXPECT_EQ(b.mem(), nullptr);
  EXPECT_EQ(c.mem(), mem);
  EXPECT_EQ(c.bytes(), 16u);

  const int values[4] = {1, 2, 3, 4};
  int back[2] = {0, 0};
  c.Write(ctx, values, sizeof(values));
  c.Read(ctx, back, sizeof(back), 2 * sizeof(int));
  EXPECT_EQ(back[0], 3);
  EXPECT_EQ(back[1], 4);
  EXPECT_THROW(c.Read(ctx, back, sizeof(back), 12), Error);  // past the end
  ctx.Finish();
}

TEST(ClRuntimeTest, BuildFailureNamesKernel) {
  const std::string source = R"CL(
// texel-kernel: good_one
__kernel void good_one(__global float* a) { a[0] = 1.0f; }

// texel-kernel: bad_two
__kernel void bad_two(__global float* a) {
  a[0] = 2.0f +* ;
}
)CL";
  try {
    Program program(SharedContext(), source, "", nullptr);
    FAIL() << "build should have failed";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kBuild);
    const std::string& msg = e.message();
    std::string first_line = msg.substr(0, msg.find('\n'));
    EXPECT_EQ(first_line, "OpenCL build failed in kernel(s) bad_two") << msg;
    ASSERT_NE(msg.find('\n'), std::string::npos);
    EXPECT_NE(msg.find("error", first_line.size()), std::string::npos) << msg;  // the log
  }
}

// ---- program cache ----

TEST(ProgramCacheTest, KeyCoversEveryInput) {
  DeviceInfo dev;
  dev.name = "dev";
  dev.driver_version = "1.0";
  dev.platform_version = "OpenCL 3.0";
  dev.device_version = "OpenCL 3.0";
  const std::string key = ProgramCache::Key(dev, "src", "-O2");
  EXPECT_EQ(key.size(), 64u);
  EXPECT_EQ(key, ProgramCache::Key(dev, "src", "-O2"));
  EXPECT_NE(key, ProgramCache::Key(dev, "src2", "-O2"));
  EXPECT_NE(key, ProgramCache::Key(dev, "src", "-O3"));
  EXPECT_NE(key, ProgramCache::Key(dev, "sr", "c-O2"));  // no ambiguity at part boundaries
  for (std::string DeviceInfo::*field :
       {&DeviceInfo::name, &DeviceInfo::driver_version, &DeviceInfo::platform_version,
        &DeviceInfo::device_version}) {
    DeviceInfo other = dev;
    other.*field += "x";
    EXPECT_NE(key, ProgramCache::Key(other, "src", "-O2"));
  }
}

TEST(ProgramCacheTest, StoreLoadAndRejectDamage) {
  TempDir tmp;
  ProgramCache cache((tmp.path() / "nested" / "dir").string());  // Store creates it
  ASSERT_TRUE(cache.enabled());
  EXPECT_FALSE(cache.Load("k1").has_value());

  const std::vector<uint8_t> payload = {0, 1, 2, 3, 255, 254, 'T', 'X', 'L', 'B'};
  cache.Store("k1", payload);
  std::optional<std::vector<uint8_t>> loaded = cache.Load("k1");
  ASSERT_TRUE(loaded.has_value());
  EXPECT_EQ(*loaded, payload);
  // No temp files are left behind.
  int files = 0;
  for (const auto& entry : fs::directory_iterator(cache.dir())) {
    ++files;
    EXPECT_EQ(entry.path().filename(), "k1.bin");
  }
  EXPECT_EQ(files, 1);

  const fs::path file = fs::path(cache.dir()) / "k1.bin";
  std::string data = ReadFile(file);
  data[0] = 'X';  // bad magic
  WriteFile(file, data);
  EXPECT_FALSE(cache.Load("k1").has_value());
  EXPECT_FALSE(fs::exists(file));  // damaged entries are removed

  cache.Store("k1", payload);
  cache.Remove("k1");
  EXPECT_FALSE(fs::exists(file));

  ProgramCache disabled("");
  EXPECT_FALSE(disabled.enabled());
  disabled.Store("k1", payload);
  EXPECT_FALSE(disabled.Load("k1").has_value());
}

TEST(ProgramCacheTest, DefaultLocation) {
  ScopedEnv home("HOME", "/home/someone");
  ScopedEnv xdg("XDG_CACHE_HOME", std::nullopt);
  {
    ScopedEnv dir("TEXEL_CACHE_DIR", "/tmp/texel-cache-x");
    EXPECT_EQ(ProgramCache::Default().dir(), "/tmp/texel-cache-x");
  }
  {
    ScopedEnv dir("TEXEL_CACHE_DIR", "off");
    EXPECT_FALSE(ProgramCache::Default().enabled());
  }
  ScopedEnv dir("TEXEL_CACHE_DIR", std::nullopt);
  EXPECT_EQ(ProgramCache::Default().dir(), "/home/someone/.cache/texel");
  {
    ScopedEnv xdg_set("XDG_CACHE_HOME", "/var/cache/me");
    EXPECT_EQ(ProgramCache::Default().dir(), "/var/cache/me/texel");
  }
  ScopedEnv no_home("HOME", std::nullopt);
  EXPECT_FALSE(ProgramCache::Default().enabled());
}

TEST(ProgramCacheTest, SecondBuildLoadsFromCache) {
  TempDir tmp;
  ProgramCache cache(tmp.path().string());
  const Context& ctx = SharedContext();
  double built_s = 0;
  {
    Program first(ctx, kVectorAddSource, "", &cache);
    EXPECT_FALSE(first.from_cache());
    built_s = first.build_seconds();
    EXPECT_GT(built_s, 0);
  }
  const std::string key = ProgramCache::Key(ctx.info(), kVectorAddSource, "");
  ASSERT_TRUE(fs::exists(tmp.path() / (key + ".bin")));

  // The build from source's time travels with the entry (a tune sizes a new program's build by
  // it where the model's own came from the cache).
  Program second(ctx, kVectorAddSource, "", &cache);
  EXPECT_TRUE(second.from_cache());
  EXPECT_NEAR(second.build_seconds(), built_s, 1e-3);
  CheckVectorAdd(ctx, second, 100);  // the cached binary really works

  const fs::path sec = tmp.path() / (key + ".sec");
  for (std::string damaged : {"", "abc", "-3", "1e99"}) {
    WriteFile(sec, damaged);
    EXPECT_FALSE(cache.BuildSeconds(key).has_value()) << damaged;
    Program unrecorded(ctx, kVectorAddSource, "", &cache);
    EXPECT_TRUE(unrecorded.from_cache());
    EXPECT_EQ(unrecorded.build_seconds(), 0) << damaged;
  }
  // A new entry of the key without a record drops the old one's.
  WriteFile(sec, "2.5");
  ASSERT_TRUE(cache.BuildSeconds(key).has_value());
  cache.Store(key, *cache.Load(key));
  EXPECT_FALSE(cache.BuildSeconds(key).has_value());
  cache.Store(key, *cache.Load(key), 1.25);
  EXPECT_NEAR(*cache.BuildSeconds(key), 1.25, 1e-9);
  cache.Remove(key);
  EXPECT_FALSE(fs::exists(sec));
}

// The rebuilt entry replaced the damaged one. Its size need not equal the first binary's: PoCL
// embeds whatever its own kernel cache holds at the time (other tests may run the same kernel).
void ExpectRewritten(const fs::path& file, size_t first_size) {
  EXPECT_GT(fs::file_size(file), first_size / 2 + 100);
}

TEST(ProgramCacheTest, DamagedEntryIsRebuilt) {
  TempDir tmp;
  ProgramCache cache(tmp.path().string());
  const Context& ctx = SharedContext();
  const std::string key = ProgramCache::Key(ctx.info(), kVectorAddSource, "");
  const fs::path file = tmp.path() / (key + ".bin");
  { Program populate(ctx, kVectorAddSource, "", &cache); }
  const std::string good = ReadFile(file);
  ASSERT_GT(good.size(), 200u);

  // Truncated entry.
  fs::resize_file(file, good.size() / 2);
  {
    Program rebuilt(ctx, kVectorAddSource, "", &cache);
    EXPECT_FALSE(rebuilt.from_cache());
  }
  ExpectRewritten(file, good.size());
  EXPECT_TRUE(cache.Load(key).has_value());

  // One flipped bit in the payload.
  std::string flipped = ReadFile(file);
  flipped[flipped.size() * 3 / 4] ^= 0x10;
  WriteFile(file, flipped);
  {
    Program rebuilt(ctx, kVectorAddSource, "", &cache);
    EXPECT_FALSE(rebuilt.from_cache());
  }
  ExpectRewritten(file, good.size());
  EXPECT_TRUE(cache.Load(key).has_value());

  // An intact entry whose binary the driver rejects.
  cache.Store(key, std::vector<uint8_t>(64, 0xab));
  {
    Program rebuilt(ctx, kVectorAddSource, "", &cache);
    EXPECT_FALSE(rebuilt.from_cache());
  }
  ExpectRewritten(file, good.size());
}

}  // namespace
}  // namespace texel::cl
