// The C API on a host's context, queue and memory: every external tensor kind PoCL has (cl_mem
// with and without offsets, SVM), in-order and out-of-order queues, runs ordered by events
// alone, sessions on several threads; each result equal to the plain texel run.
#include <dlfcn.h>

#include <cstddef>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>
#include <thread>

#include "host_framework.h"

namespace texel_test {
namespace {

class CApiTest : public ::testing::Test {
 protected:
  void SetUp() override {
    a = Random(kM * kK, 1);
    b = Random(kK * kN, 2);
    plain = PlainRun(a, b);
    ExpectNear(plain, Reference(a, b), "plain run");
  }
  std::vector<float> a, b, plain;
};

TEST_F(CApiTest, AdoptedQueueAndBuffersEqualThePlainRun) {
  HostFramework host;
  texel::Context ctx = texel::Context::Adopt(host.context, host.device, host.queue);
  cl_uint refs = 0, refs_after = 0;
  clGetCommandQueueInfo(host.queue, CL_QUEUE_REFERENCE_COUNT, sizeof refs, &refs, nullptr);
  EXPECT_EQ(ctx.queue(), host.queue);
  clGetCommandQueueInfo(host.queue, CL_QUEUE_REFERENCE_COUNT, sizeof refs, &refs_after, nullptr);
  EXPECT_EQ(refs_after, refs) << "texel_context_get_queue does not retain the queue";
  texel::Model model = texel::Model::FromFile(ctx, DataPath("matmul_add.mlir"));
  ASSERT_EQ(model.inputs().size(), 2u);
  EXPECT_STREQ(model.inputs()[0].name, "arg0");
  EXPECT_EQ(model.inputs()[0].bytes, kBytesA);
  EXPECT_STREQ(model.outputs()[0].name, "arg2");
  cl_mem A = host.Buffer(kBytesA), B = host.Buffer(kBytesB), C = host.Buffer(kBytesC);
  host.Write(A, a);
  host.Write(B, b);
  texel::Session s(model);
  s.BindInput("arg0", texel::Tensor::Buffer(A))
      .BindInput("arg1", texel::Tensor::Buffer(B))
      .BindOutput("arg2", texel::Tensor::Buffer(C));
  texel_host_counters_t before = ctx.host_counters();
  s.Run();
  texel_host_counters_t after = ctx.host_counters();
  EXPECT_EQ(after.transfers, before.transfers);  // in place: no copy
  EXPECT_EQ(after.syncs, before.syncs + 1);      // the wait for its own event
  EXPECT_EQ(host.Read(C, kM * kN), plain);
  // New contents of the same buffers: the next run reads them.
  std::vector<float> a2 = Random(kM * kK, 3);
  host.Write(A, a2);
  s.Run();
  ExpectNear(host.Read(C, kM * kN), Reference(a2, b), "second run");
}

// --precision fp16 through the C++ API's options: the graph's input and output stay f32, the
// product and sum store f16: within f16's rounding of the fp32 reference.
TEST_F(CApiTest, Fp16PrecisionOption) {
  texel::Context ctx("0:0");
  texel::ModelOptions o;
  o.precision = "fp16";
  texel::Session s(texel::Model::FromFile(ctx, DataPath("matmul_add.mlir"), o));
  std::vector<float> c(kM * kN, -7.0f);
  s.BindInput("arg0", texel::Tensor::Host(a.data(), kBytesA))
      .BindInput("arg1", texel::Tensor::Host(b.data(), kBytesB))
      .BindOutput("arg2", texel::Tensor::Host(c.data(), kBytesC))
      .Run();
  double err = RelL2(c, Reference(a, b));
  EXPECT_LT(err, 5e-3);
  EXPECT_GT(err, 1e-6) << "f16 storage should round something";
}

// What the caller should hear, through texel_compile_options_t::notice: a tuning database with a
// damaged line says so (read around, never trusted), on every device; and through texel.hpp's
// on_notice. A caller built against the struct before the notice fields (its smaller
// struct_size) compiles as before, untold; a struct_size smaller still is refused.
TEST_F(CApiTest, NoticesReachTheCaller) {
  texel::Context ctx("0:0");
  const std::string db = ::testing::TempDir() + "texel_capi_damaged_db.jsonl";
  std::ofstream(db) << "{\"v\":1,\"family\":\n";  // a truncated line
  const std::string settings = "db=" + db;
  std::vector<std::string> heard;
  texel_compile_options_t o;
  texel_compile_options_init(&o);
  o.settings = settings.c_str();
  o.notice = [](const char* message, void* user_data) {
    static_cast<std::vector<std::string>*>(user_data)->push_back(message);
  };
  o.notice_user_data = &heard;
  texel_model_t m = nullptr;
  const std::string path = DataPath("matmul_add.mlir");
  ASSERT_EQ(texel_model_compile_file(ctx.get(), path.c_str(), &o, &m), TEXEL_OK);
  texel_model_release(m);
  ASSERT_EQ(heard.size(), 1u);
  EXPECT_NE(heard[0].find("texel_capi_damaged_db.jsonl:1"), std::string::npos) << heard[0];
  // With no database there is nothing to say.
  heard.clear();
  o.settings = "tuning=off";
  ASSERT_EQ(texel_model_compile_file(ctx.get(), path.c_str(), &o, &m), TEXEL_OK);
  texel_model_release(m);
  EXPECT_TRUE(heard.empty());
  // An older caller's struct: compiled, not told.
  o.settings = settings.c_str();
  o.struct_size = offsetof(texel_compile_options_t, notice);
  ASSERT_EQ(texel_model_compile_file(ctx.get(), path.c_str(), &o, &m), TEXEL_OK);
  texel_model_release(m);
  EXPECT_TRUE(heard.empty());
  o.struct_size = offsetof(texel_compile_options_t, settings);
  EXPECT_EQ(texel_model_compile_file(ctx.get(), path.c_str(), &o, &m),
            TEXEL_ERROR_INVALID_ARGUMENT);
  texel::ModelOptions mo;
  mo.settings = settings;
  mo.on_notice = [&](const std::string& message) { heard.push_back(message); };
  texel::Model::FromFile(ctx, path, mo);
  ASSERT_EQ(heard.size(), 1u);
  EXPECT_NE(heard[0].find("texel_capi_damaged_db.jsonl:1"), std::string::npos) << heard[0];
  std::remove(db.c_str());
}

TEST_F(CApiTest, ClBuffersAtOffsets) {
  HostFramework host;
  texel::Context ctx = texel::Context::Adopt(host.context, host.device, host.queue);
  texel::Session s(texel::Model::FromFile(ctx, DataPath("matmul_add.mlir")));
  cl_uint align_bits = 0;
  CL_OK(clGetDeviceInfo(host.device, CL_DEVICE_MEM_BASE_ADDR_ALIGN, sizeof(align_bits), &align_bits,
                        nullptr));
  size_t align = align_bits / 8;
  // Inputs and outputs at aligned offsets (sub-buffers) and at offsets that are not (copied on
  // the device), in one buffer of the host's.
  for (size_t skew : {size_t{0}, size_t{4}}) {
    size_t off_a = align + skew, off_b = off_a + kBytesA + align,
           off_c = off_b + kBytesB + 3 * align;
    size_t total = off_c + kBytesC + skew + align;
    cl_mem big = host.Buffer(total);
    std::vector<float> sentinel(total / 4, -12345.0f);
    host.Write(big, sentinel);
    host.Write(big, a, off_a);
    host.Write(big, b, off_b);
    s.BindInput("arg0", texel::Tensor::Buffer(big, off_a))
        .BindInput("arg1", texel::Tensor::Buffer(big, off_b))
        .BindOutput("arg2", texel::Tensor::Buffer(big, off_c + skew));
    s.Run();
    EXPECT_EQ(host.Read(big, kM * kN, off_c + skew), plain) << "skew " << skew;
    // The bytes around the output are untouched, and so are the inputs.
    std::vector<float> before = host.Read(big, 16, off_c + skew - 64),
                       after = host.Read(big, 16, off_c + skew + kBytesC);
    for (float v : before) EXPECT_EQ(v, -12345.0f) << "skew " << skew;
    for (float v : after) EXPECT_EQ(v, -12345.0f) << "skew " << skew;
    EXPECT_EQ(host.Read(big, kM * kK, off_a), a) << "skew " << skew;
  }
}

TEST_F(CApiTest, SvmPointers) {
  HostFramework host;
  cl_device_svm_capabilities caps = 0;
  clGetDeviceInfo(host.device, CL_DEVICE_SVM_CAPABILITIES, sizeof(caps), &caps, nullptr);
  if (!(caps & CL_DEVICE_SVM_COARSE_GRAIN_BUFFER)) GTEST_SKIP() << "the device has no SVM";
  texel::Context ctx = texel::Context::Adopt(host.context, host.device, host.queue);
  texel::Session s(texel::Model::FromFile(ctx, DataPath("matmul_add.mlir")));
  void* A = clSVMAlloc(host.context, CL_MEM_READ_WRITE, kBytesA, 0);
  void* B = clSVMAlloc(host.context, CL_MEM_READ_WRITE, kBytesB, 0);
  void* C = clSVMAlloc(host.context, CL_MEM_READ_WRITE, kBytesC, 0);
  ASSERT_TRUE(A && B && C);
  CL_OK(clEnqueueSVMMemcpy(host.queue, CL_TRUE, A, a.data(), kBytesA, 0, nullptr, nullptr));
  CL_OK(clEnqueueSVMMemcpy(host.queue, CL_TRUE, B, b.data(), kBytesB, 0, nullptr, nullptr));
  s.BindInput("arg0", texel::Tensor::Svm(A, kBytesA))
      .BindInput("arg1", texel::Tensor::Svm(B, kBytesB))
      .BindOutput("arg2", texel::Tensor::Svm(C, kBytesC));
  cl_event done = s.Enqueue();
  std::vector<float> c(kM * kN);
  CL_OK(clEnqueueSVMMemcpy(host.queue, CL_TRUE, c.data(), C, kBytesC, 1, &done, nullptr));
  clReleaseEvent(done);
  EXPECT_EQ(c, plain);
  clSVMFree(host.context, A);
  clSVMFree(host.context, B);
  clSVMFree(host.context, C);
}

// host kernel -> texel -> host kernel on an out-of-order queue, ordered by events only; then
// two runs of one session back to back on other buffers, with no wait in between.
TEST_F(CApiTest, OutOfOrderQueueOrderedByEvents) {
  HostFramework host(/*out_of_order=*/true);
  texel::Context ctx = texel::Context::Adopt(host.context, host.device, host.queue);
  texel::Session s(texel::Model::FromFile(ctx, DataPath("matmul_add.mlir")));
  cl_mem A = host.Buffer(kBytesA), B = host.Buffer(kBytesB), C = host.Buffer(kBytesC),
         D = host.Buffer(kBytesC);
  cl_event filled[2] = {host.Fill(A, 11, kM * kK), host.Fill(B, 12, kK * kN)};
  s.BindInput("arg0", texel::Tensor::Buffer(A))
      .BindInput("arg1", texel::Tensor::Buffer(B))
      .BindOutput("arg2", texel::Tensor::Buffer(C));
  texel_host_counters_t before = ctx.host_counters();
  cl_event ran = s.Enqueue({filled[0], filled[1]});
  cl_event scaled = host.Scale(C, D, 2.0f, kM * kN, {ran});
  texel_host_counters_t after = ctx.host_counters();
  EXPECT_EQ(after.transfers, before.transfers);
  EXPECT_EQ(after.syncs, before.syncs);  // no host wait while enqueueing
  CL_OK(clWaitForEvents(1, &scaled));
  std::vector<float> fa = host.Read(A, kM * kK), fb = host.Read(B, kK * kN);
  std::vector<float> want = PlainRun(fa, fb);
  for (float& x : want) x *= 2.0f;
  EXPECT_EQ(host.Read(D, kM * kN), want) << "host -> texel -> host";
  for (cl_event e : {filled[0], filled[1], ran, scaled}) clReleaseEvent(e);

  // Run 1 on (A, B) -> C1, rebind, run 2 on (A2, B) -> C2, with no wait in between: the
  // session orders its own runs. The outputs start as NaN.
  cl_mem A2 = host.Buffer(kBytesA), C1 = host.Buffer(kBytesC), C2 = host.Buffer(kBytesC);
  host.Write(A2, a);
  host.Write(C1, std::vector<float>(kM * kN, NAN));
  host.Write(C2, std::vector<float>(kM * kN, NAN));
  s.BindOutput("arg2", texel::Tensor::Buffer(C1));
  cl_event r1 = s.Enqueue();
  s.BindInput("arg0", texel::Tensor::Buffer(A2)).BindOutput("arg2", texel::Tensor::Buffer(C2));
  cl_event r2 = s.Enqueue();
  CL_OK(clWaitForEvents(1, &r2));
  CL_OK(clWaitForEvents(1, &r1));
  EXPECT_EQ(host.Read(C1, kM * kN), PlainRun(fa, fb)) << "first of two runs";
  EXPECT_EQ(host.Read(C2, kM * kN), PlainRun(a, fb)) << "second of two runs";
  clReleaseEvent(r1);
  clReleaseEvent(r2);
}

// An in-order queue: texel's run between two of the host's kernels, no host wait.
TEST_F(CApiTest, InOrderQueueBetweenHostKernels) {
  HostFramework host;
  texel::Context ctx = texel::Context::Adopt(host.context, host.device, host.queue);
  texel::Session s(texel::Model::FromFile(ctx, DataPath("matmul_add.mlir")));
  cl_mem A0 = host.Buffer(kBytesA), A = host.Buffer(kBytesA), B = host.Buffer(kBytesB),
         C = host.Buffer(kBytesC), D = host.Buffer(kBytesC);
  host.Write(A0, a);
  host.Write(B, b);
  s.BindInput("arg0", texel::Tensor::Buffer(A))
      .BindInput("arg1", texel::Tensor::Buffer(B))
      .BindOutput("arg2", texel::Tensor::Buffer(C));
  texel_host_counters_t before = ctx.host_counters();
  cl_event e1 = host.Scale(A0, A, 1.0f, kM * kK);
  cl_event e2 = s.Enqueue({e1});
  cl_event e3 = host.Scale(C, D, -1.0f, kM * kN, {e2});
  texel_host_counters_t after = ctx.host_counters();
  EXPECT_EQ(after.transfers - before.transfers, 0);
  EXPECT_EQ(after.syncs - before.syncs, 0);
  CL_OK(clWaitForEvents(1, &e3));
  std::vector<float> d = host.Read(D, kM * kN);
  for (size_t i = 0; i < d.size(); ++i) ASSERT_EQ(d[i], -plain[i]) << i;
  for (cl_event e : {e1, e2, e3}) clReleaseEvent(e);
}

TEST_F(CApiTest, SessionsOnSeveralThreads) {
  HostFramework host;
  texel::Context ctx = texel::Context::Adopt(host.context, host.device, host.queue);
  texel::Model model = texel::Model::FromFile(ctx, DataPath("matmul_add.mlir"));
  constexpr int kThreads = 4, kRuns = 3;
  std::vector<std::vector<float>> got(kThreads * kRuns), x(kThreads * kRuns), y(kThreads * kRuns);
  std::vector<std::string> errors(kThreads);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t)
    threads.emplace_back([&, t] {
      try {
        texel::Session s(model);
        cl_int err = CL_SUCCESS;
        cl_mem A = clCreateBuffer(host.context, CL_MEM_READ_WRITE, kBytesA, nullptr, &err);
        cl_mem B = clCreateBuffer(host.context, CL_MEM_READ_WRITE, kBytesB, nullptr, &err);
        cl_mem C = clCreateBuffer(host.context, CL_MEM_READ_WRITE, kBytesC, nullptr, &err);
        s.BindInput("arg0", texel::Tensor::Buffer(A))
            .BindInput("arg1", texel::Tensor::Buffer(B))
            .BindOutput("arg2", texel::Tensor::Buffer(C));
        for (int r = 0; r < kRuns; ++r) {
          int i = t * kRuns + r;
          x[i] = Random(kM * kK, 100 + i);
          y[i] = Random(kK * kN, 200 + i);
          clEnqueueWriteBuffer(host.queue, A, CL_TRUE, 0, kBytesA, x[i].data(), 0, nullptr,
                               nullptr);
          clEnqueueWriteBuffer(host.queue, B, CL_TRUE, 0, kBytesB, y[i].data(), 0, nullptr,
                               nullptr);
          if (r % 2 == 0) {
            s.Run();
          } else {
            cl_event e = s.Enqueue();
            clWaitForEvents(1, &e);
            clReleaseEvent(e);
          }
          got[i].resize(kM * kN);
          clEnqueueReadBuffer(host.queue, C, CL_TRUE, 0, kBytesC, got[i].data(), 0, nullptr,
                              nullptr);
        }
        for (cl_mem m : {A, B, C}) clReleaseMemObject(m);
      } catch (const std::exception& e) {
        errors[t] = e.what();
      }
    });
  for (std::thread& th : threads) th.join();
  for (int t = 0; t < kThreads; ++t) EXPECT_EQ(errors[t], "") << "thread " << t;
  for (int i = 0; i < kThreads * kRuns; ++i) EXPECT_EQ(got[i], PlainRun(x[i], y[i])) << "run " << i;
}

// A product CLBlast computes reads and writes the host's cl_mem in place too; SVM it cannot take.
TEST_F(CApiTest, LibraryCallsOnTheHostsBuffers) {
  HostFramework host;
  texel::Context ctx = texel::Context::Adopt(host.context, host.device, host.queue);
  texel::ModelOptions opts;
  opts.backends = "clblast,native";
  opts.partition = "first";
  texel::Session s(texel::Model::FromFile(ctx, DataPath("matmul_add.mlir"), opts));
  cl_mem A = host.Buffer(kBytesA), B = host.Buffer(kBytesB), C = host.Buffer(kBytesC);
  host.Write(A, a);
  host.Write(B, b);
  s.BindInput("arg0", texel::Tensor::Buffer(A))
      .BindInput("arg1", texel::Tensor::Buffer(B))
      .BindOutput("arg2", texel::Tensor::Buffer(C));
  cl_event done = s.Enqueue();
  CL_OK(clWaitForEvents(1, &done));
  clReleaseEvent(done);
  ExpectNear(host.Read(C, kM * kN), Reference(a, b), "CLBlast on the host's buffers");
  cl_device_svm_capabilities caps = 0;
  clGetDeviceInfo(host.device, CL_DEVICE_SVM_CAPABILITIES, sizeof(caps), &caps, nullptr);
  if (!(caps & CL_DEVICE_SVM_COARSE_GRAIN_BUFFER)) return;
  // Where CLBlast cannot be loaded texel computes the product itself (docs/backends.md), and
  // then the SVM pointer is used in place.
  const char* off = std::getenv("TEXEL_CLBLAST");
  const char* path = std::getenv("TEXEL_CLBLAST_LIBRARY");
  void* lib = dlopen(path && *path ? path : "libclblast.so.1", RTLD_NOW | RTLD_LOCAL);
  bool clblast = lib && !(off && std::string(off) == "off");
  if (lib) dlclose(lib);
  void* svm = clSVMAlloc(host.context, CL_MEM_READ_WRITE, kBytesB, 0);
  CL_OK(clEnqueueSVMMemcpy(host.queue, CL_TRUE, svm, b.data(), kBytesB, 0, nullptr, nullptr));
  try {
    s.BindInput("arg1", texel::Tensor::Svm(svm, kBytesB));
    EXPECT_FALSE(clblast) << "an SVM pointer was bound to a CLBlast operand";
    host.Write(C, std::vector<float>(kM * kN, NAN));
    s.Run();
    ExpectNear(host.Read(C, kM * kN), Reference(a, b), "native kernels on SVM");
  } catch (const texel::Exception& e) {
    EXPECT_TRUE(clblast) << e.what();
    EXPECT_EQ(e.status(), TEXEL_ERROR_UNSUPPORTED);
    EXPECT_NE(std::string(e.what()).find("library call, which takes cl_mem buffers only"),
              std::string::npos)
        << e.what();
  }
  clSVMFree(host.context, svm);
}

// A fragment that copies arg0 to arg1: one Copy kernel reading and writing the caller's buffers;
// binding the input's memory as the output too is refused.
TEST_F(CApiTest, OutputOverlappingAnInputIsRefused) {
  HostFramework host;
  texel::Context ctx = texel::Context::Adopt(host.context, host.device, host.queue);
  const std::string copy = R"(func.func @f(%arg0: memref<64xf32>, %arg1: memref<64xf32>) {
  %0 = bufferization.to_tensor %arg0 restrict : memref<64xf32>
  bufferization.materialize_in_destination %0 in restrict writable %arg1 : (tensor<64xf32>, memref<64xf32>) -> ()
  return
})";
  texel::Session s(texel::Model::FromMemory(ctx, copy));
  cl_mem x = host.Buffer(256), y = host.Buffer(256);
  std::vector<float> v = Random(64, 5);
  host.Write(x, v);
  host.Write(y, std::vector<float>(64, NAN));
  s.BindInput("arg0", texel::Tensor::Buffer(x)).BindOutput("arg1", texel::Tensor::Buffer(y));
  cl_event done = s.Enqueue();
  CL_OK(clWaitForEvents(1, &done));
  clReleaseEvent(done);
  EXPECT_EQ(host.Read(y, 64), v);
  // The same memory as input and output is refused: kernels would read what they overwrite.
  try {
    s.BindOutput("arg1", texel::Tensor::Buffer(x));
    ADD_FAILURE() << "an output overlapping an input was bound";
  } catch (const texel::Exception& e) {
    EXPECT_EQ(e.status(), TEXEL_ERROR_INVALID_ARGUMENT);
    EXPECT_NE(std::string(e.what()).find("overlaps that of input 'arg0'"), std::string::npos)
        << e.what();
  }
}

TEST_F(CApiTest, CompiledFromMemoryAndOwnContext) {
  texel::Context ctx;  // texel's own context and queue
  texel::Model model =
      texel::Model::FromMemory(ctx, ReadFile(DataPath("matmul_add.mlir")), texel::ModelOptions{});
  texel::Session s(model);
  std::vector<float> c(kM * kN);
  s.BindInput("arg0", texel::Tensor::Host(a.data(), kBytesA))
      .BindInput("arg1", texel::Tensor::Host(b.data(), kBytesB))
      .BindOutput("arg2", texel::Tensor::Host(c.data(), kBytesC));
  cl_event done = s.Enqueue();  // host copies too are enqueued, not blocking
  CL_OK(clWaitForEvents(1, &done));
  clReleaseEvent(done);
  EXPECT_EQ(c, plain);
  EXPECT_GE(ctx.host_counters().transfers, 3);
}

// Saved as an artifact and loaded (from the file and from memory, with and without the program's
// binary) on an adopted context: the same results as the compiled model, bit for bit.
TEST_F(CApiTest, ArtifactSavedAndLoaded) {
  HostFramework host;
  texel::Context ctx = texel::Context::Adopt(host.context, host.device, host.queue);
  texel::Model compiled = texel::Model::FromFile(ctx, DataPath("matmul_add.mlir"));
  std::string path = ::testing::TempDir() + "/capi_matmul_add.texel";
  for (bool binaries : {false, true}) {
    compiled.Save(path, binaries);
    for (texel::Model model :
         {texel::Model::Load(ctx, path), texel::Model::LoadMemory(ctx, ReadFile(path))}) {
      ASSERT_EQ(model.inputs().size(), 2u);
      EXPECT_STREQ(model.outputs()[0].name, "arg2");
      std::vector<float> c(kM * kN);
      texel::Session s(model);
      s.BindInput("arg0", texel::Tensor::Host(a.data(), kBytesA))
          .BindInput("arg1", texel::Tensor::Host(b.data(), kBytesB))
          .BindOutput("arg2", texel::Tensor::Host(c.data(), kBytesC));
      s.Run();
      EXPECT_EQ(c, plain) << "binaries " << binaries;
    }
  }
  EXPECT_NE(std::string(texel_version()).find('.'), std::string::npos);
}

}  // namespace
}  // namespace texel_test
