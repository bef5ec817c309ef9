// What the C API tests play: a host framework with its own OpenCL context, queue, buffers and
// kernels, made with plain OpenCL calls. texel is seen only through its public headers.
#pragma once

#include <gtest/gtest.h>
#include <texel/texel.h>

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <mutex>
#include <random>
#include <sstream>
#include <string>
#include <texel/texel.hpp>
#include <vector>

namespace texel_test {

#define CL_OK(call) ASSERT_EQ((call), CL_SUCCESS) << #call
#define TEXEL_OK_OR_FAIL(call) ASSERT_EQ((call), TEXEL_OK) << #call << ": " << texel_last_error()

// tests/data; env TEXEL_TEST_DATA_DIR overrides it (for a copy run on another machine).
inline std::string DataPath(const std::string& name) {
  const char* dir = std::getenv("TEXEL_TEST_DATA_DIR");
  return std::string(dir && *dir ? dir : TEXEL_TEST_DATA_DIR) + "/" + name;
}

inline std::string ReadFile(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  std::stringstream s;
  s << f.rdbuf();
  return s.str();
}

// The fragment of the tests: tests/data/matmul_add.mlir, arg2 = arg0 x arg1 + arg0.
constexpr int kM = 64, kK = 128, kN = 128;
constexpr size_t kBytesA = kM * kK * 4, kBytesB = kK * kN * 4, kBytesC = kM * kN * 4;

inline std::vector<float> Random(size_t n, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  std::vector<float> v(n);
  for (float& x : v) x = u(rng);
  return v;
}

inline std::vector<float> Reference(const std::vector<float>& a, const std::vector<float>& b) {
  std::vector<float> c(kM * kN);
  for (int i = 0; i < kM; ++i)
    for (int j = 0; j < kN; ++j) {
      double s = a[i * kK + j];  // + arg0 (K == N)
      for (int k = 0; k < kK; ++k) s += double(a[i * kK + k]) * b[k * kN + j];
      c[i * kN + j] = static_cast<float>(s);
    }
  return c;
}

// ||got - want|| / ||want||.
inline double RelL2(const std::vector<float>& got, const std::vector<float>& want) {
  double err = 0, norm = 0;
  for (size_t i = 0; i < got.size(); ++i) {
    err += (double(got[i]) - want[i]) * (double(got[i]) - want[i]);
    norm += double(want[i]) * want[i];
  }
  return std::sqrt(err / norm);
}

inline void ExpectNear(const std::vector<float>& got, const std::vector<float>& want,
                       const char* what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  EXPECT_LT(RelL2(got, want), 1e-5) << what;
}

// The host's kernels: a scale between two buffers, and a seeded fill.
constexpr const char* kHostKernels = R"(
__kernel void host_scale(__global const float* x, __global float* y, float s) {
  size_t i = get_global_id(0);
  y[i] = x[i] * s;
}
__kernel void host_fill(__global float* x, uint seed) {
  uint h = (uint)get_global_id(0) * 2654435761u ^ seed;
  h ^= h >> 15; h *= 0x2c1b3c6dU; h ^= h >> 12;
  x[get_global_id(0)] = (float)(h & 0xffff) / 32768.0f - 1.0f;
}
)";

class HostFramework {
 public:
  explicit HostFramework(bool out_of_order = false) {
    cl_uint n = 0;
    EXPECT_EQ(clGetPlatformIDs(1, &platform, &n), CL_SUCCESS);
    EXPECT_EQ(clGetDeviceIDs(platform, CL_DEVICE_TYPE_ALL, 1, &device, nullptr), CL_SUCCESS);
    cl_int err = CL_SUCCESS;
    context = clCreateContext(nullptr, 1, &device, nullptr, nullptr, &err);
    EXPECT_EQ(err, CL_SUCCESS);
    cl_queue_properties props[] = {
        CL_QUEUE_PROPERTIES,
        static_cast<cl_queue_properties>(out_of_order ? CL_QUEUE_OUT_OF_ORDER_EXEC_MODE_ENABLE : 0),
        0};
    queue = clCreateCommandQueueWithProperties(context, device, props, &err);
    EXPECT_EQ(err, CL_SUCCESS);
    const char* src = kHostKernels;
    program = clCreateProgramWithSource(context, 1, &src, nullptr, &err);
    EXPECT_EQ(clBuildProgram(program, 1, &device, "", nullptr, nullptr), CL_SUCCESS);
    scale = clCreateKernel(program, "host_scale", &err);
    fill = clCreateKernel(program, "host_fill", &err);
  }
  ~HostFramework() {
    for (cl_mem m : buffers) clReleaseMemObject(m);
    clReleaseKernel(scale);
    clReleaseKernel(fill);
    clReleaseProgram(program);
    clReleaseCommandQueue(queue);
    clReleaseContext(context);
  }
  cl_mem Buffer(size_t bytes, cl_mem_flags flags = CL_MEM_READ_WRITE) {
    cl_int err = CL_SUCCESS;
    cl_mem m = clCreateBuffer(context, flags, bytes, nullptr, &err);
    EXPECT_EQ(err, CL_SUCCESS);
    std::lock_guard<std::mutex> lock(buffers_mu);  // threads of one test make buffers too
    buffers.push_back(m);
    return m;
  }
  void Write(cl_mem m, const std::vector<float>& v, size_t offset = 0) {
    EXPECT_EQ(clEnqueueWriteBuffer(queue, m, CL_TRUE, offset, v.size() * 4, v.data(), 0, nullptr,
                                   nullptr),
              CL_SUCCESS);
  }
  std::vector<float> Read(cl_mem m, size_t floats, size_t offset = 0) {
    std::vector<float> v(floats);
    EXPECT_EQ(
        clEnqueueReadBuffer(queue, m, CL_TRUE, offset, floats * 4, v.data(), 0, nullptr, nullptr),
        CL_SUCCESS);
    return v;
  }
  // y = x * s on the host's queue after wait; returns the kernel's event.
  cl_event Scale(cl_mem x, cl_mem y, float s, size_t n, std::vector<cl_event> wait = {}) {
    clSetKernelArg(scale, 0, sizeof(cl_mem), &x);
    clSetKernelArg(scale, 1, sizeof(cl_mem), &y);
    clSetKernelArg(scale, 2, sizeof(float), &s);
    cl_event e = nullptr;
    EXPECT_EQ(clEnqueueNDRangeKernel(queue, scale, 1, nullptr, &n, nullptr,
                                     static_cast<cl_uint>(wait.size()),
                                     wait.empty() ? nullptr : wait.data(), &e),
              CL_SUCCESS);
    return e;
  }
  cl_event Fill(cl_mem x, cl_uint seed, size_t n) {
    clSetKernelArg(fill, 0, sizeof(cl_mem), &x);
    clSetKernelArg(fill, 1, sizeof(cl_uint), &seed);
    cl_event e = nullptr;
    EXPECT_EQ(clEnqueueNDRangeKernel(queue, fill, 1, nullptr, &n, nullptr, 0, nullptr, &e),
              CL_SUCCESS);
    return e;
  }

  cl_platform_id platform = nullptr;
  cl_device_id device = nullptr;
  cl_context context = nullptr;
  cl_command_queue queue = nullptr;
  cl_program program = nullptr;
  cl_kernel scale = nullptr, fill = nullptr;
  std::vector<cl_mem> buffers;
  std::mutex buffers_mu;
};

// The plain texel run: texel's own context, host memory in and out, on the device the host
// framework uses (its first platform's first device: texel's "0:0").
inline std::vector<float> PlainRun(const std::vector<float>& a, const std::vector<float>& b) {
  texel::Context ctx("0:0");
  texel::Session s(texel::Model::FromFile(ctx, DataPath("matmul_add.mlir")));
  std::vector<float> c(kM * kN, -7.0f);
  s.BindInput("arg0", texel::Tensor::Host(a.data(), kBytesA))
      .BindInput("arg1", texel::Tensor::Host(b.data(), kBytesB))
      .BindOutput("arg2", texel::Tensor::Host(c.data(), kBytesC))
      .Run();
  return c;
}

}  // namespace texel_test
