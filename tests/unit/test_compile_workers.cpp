// Programs compiled in worker processes (runtime/cl/compile_workers.h), through the texel
// command's hidden compile-worker: each program's binary builds and runs in this process; a
// program that does not compile comes back with its build error, the others unharmed; a worker
// that cannot start is an error naming it (its job's directory removed), workers that all fail
// are an error with their output; a directory that is no job is refused.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <string>
#include <system_error>
#include <vector>

#include "core/error.h"
#include "kernel_test_util.h"
#include "runtime/cl/compile_workers.h"
#include "runtime/cl/context.h"
#include "temp_dir.h"

namespace texel {
namespace {

// The texel command: where the build put it, else beside this test (a bundle copied to another
// machine, bin/ holding both).
std::string Worker() {
  std::error_code ec;
  if (std::filesystem::exists(TEXEL_BINARY, ec)) return TEXEL_BINARY;
  return (std::filesystem::read_symlink("/proc/self/exe", ec).parent_path() / "texel").string();
}

std::string Scale(float by) {
  return "__kernel void scale(__global float* x) { x[get_global_id(0)] *= " + std::to_string(by) +
         "f; }\n";
}

TEST(CompileWorkersTest, BinariesBuildAndRunHereAndErrorsSayWhy) {
  const cl::Context& ctx = *testing::SharedContext();
  std::vector<cl::ProgramSource> programs = {
      {Scale(2), ""}, {"__kernel void broken( { }\n", ""}, {Scale(3), "-cl-fast-relaxed-math"}};
  cl::CompileJob job(Worker(), ctx.info(), programs, 2);
  std::vector<cl::CompileJob::Compiled> out = job.Wait();
  ASSERT_EQ(out.size(), 3u);
  EXPECT_TRUE(out[1].binary.empty());
  // texel's own words (the driver's log after them differs by device: PoCL's says "failed to
  // build", NVIDIA's does not).
  EXPECT_NE(out[1].error.find("OpenCL build failed"), std::string::npos) << out[1].error;
  for (int i : {0, 2}) {
    ASSERT_FALSE(out[i].binary.empty()) << out[i].error;
    EXPECT_GT(out[i].seconds, 0.0) << "the worker says how long it took";
    cl::Program program(ctx, programs[i].source, programs[i].options, nullptr, &out[i].binary);
    EXPECT_TRUE(program.from_binary());
    HostTensor x = testing::RandomF32({64}, 7 + i);
    cl::Buffer buf(ctx, 64 * sizeof(float));
    buf.Write(ctx, x.data<float>(), buf.bytes());
    cl::Kernel kernel(program.get(), "scale");
    kernel.SetArg(0, buf);
    cl::Launch(ctx, kernel, {64}, {});
    HostTensor y(DType::kFloat32, {64});
    buf.Read(ctx, y.data<float>(), buf.bytes());
    for (int64_t e = 0; e < 64; ++e)
      EXPECT_FLOAT_EQ(y.data<float>()[e], x.data<float>()[e] * (i == 0 ? 2 : 3));
  }
}

TEST(CompileWorkersTest, AWorkerThatCannotStartIsAnError) {
  const cl::Context& ctx = *testing::SharedContext();
  testing::TempDir tmp;  // where the job's directory is made, and must not stay
  const char* was = std::getenv("TMPDIR");
  std::string before = was ? was : "";
  setenv("TMPDIR", tmp.path().c_str(), 1);
  try {
    cl::CompileJob job("/nonexistent/texel", ctx.info(), {{Scale(2), ""}}, 1);
    FAIL() << "started a worker that does not exist";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kIo);
    EXPECT_NE(std::string(e.what()).find("/nonexistent/texel"), std::string::npos) << e.what();
  }
  was ? setenv("TMPDIR", before.c_str(), 1) : unsetenv("TMPDIR");
  EXPECT_TRUE(std::filesystem::is_empty(tmp.path())) << "the job's directory was left behind";
}

// A wait told to stop (a tune interrupted) kills the workers at once: no error, and programs
// without binaries say that their worker stopped first.
TEST(CompileWorkersTest, AStoppedWaitKillsTheWorkers) {
  std::vector<cl::ProgramSource> programs(4, {Scale(2), ""});
  cl::CompileJob job(Worker(), testing::SharedContext()->info(), programs, 2);
  std::vector<cl::CompileJob::Compiled> out = job.Wait([] { return true; });
  ASSERT_EQ(out.size(), 4u);
  for (const cl::CompileJob::Compiled& c : out)
    if (c.binary.empty()) {
      EXPECT_NE(c.error.find("stopped before"), std::string::npos) << c.error;
    }
  EXPECT_FALSE(out[3].error.empty()) << "a worker started at once compiled all four";
}

TEST(CompileWorkersTest, WorkersThatAllFailAreAnErrorWithTheirOutput) {
  cl::DeviceInfo other = testing::SharedContext()->info();
  other.name = "a device that is not there";  // each worker refuses the job
  cl::CompileJob job(Worker(), other, {{Scale(2), ""}, {Scale(3), ""}}, 2);
  try {
    job.Wait();
    FAIL() << "failed workers went unnoticed";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kDevice);
    EXPECT_NE(std::string(e.what()).find("not a device that is not there"), std::string::npos)
        << e.what();
  }
}

// Refused before anything makes the calling process a worker: its descriptors stay open (a
// worker closes those it inherited, which in this process had broken the GPU driver's).
TEST(CompileWorkersTest, ADirectoryThatIsNoJobIsRefused) {
  testing::TempDir dir;
  int fd = open("/dev/null", O_RDONLY);
  ASSERT_GE(fd, 3);
  EXPECT_EQ(cl::RunCompileWorker(dir.path().string()), 2);
  EXPECT_EQ(cl::RunCompileWorker(dir.path().string() + "/missing"), 2);
  EXPECT_NE(fcntl(fd, F_GETFD), -1) << "the test process's descriptor was closed";
  close(fd);
}

}  // namespace
}  // namespace texel
