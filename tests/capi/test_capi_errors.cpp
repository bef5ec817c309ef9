// The C API on bad input: each mistake a clear status and message, nothing crashes, and the
// host's queue stays usable (checked by running the host's kernel on it at the end).
#include "host_framework.h"

namespace texel_test {
namespace {

// The status of call, and texel_last_error() containing every word in expected.
#define EXPECT_FAILS(call, status, ...)                                               \
  do {                                                                                \
    texel_status_t got_ = (call);                                                     \
    EXPECT_EQ(got_, status) << #call << ": " << texel_status_name(got_);              \
    std::string message_ = texel_last_error();                                        \
    for (const char* word : {__VA_ARGS__})                                            \
      EXPECT_NE(message_.find(word), std::string::npos) << #call << ": " << message_; \
  } while (0)

class CApiErrorsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    TEXEL_OK_OR_FAIL(texel_context_adopt(host.context, host.device, host.queue, &ctx));
    TEXEL_OK_OR_FAIL(
        texel_model_compile_file(ctx, DataPath("matmul_add.mlir").c_str(), nullptr, &model));
    TEXEL_OK_OR_FAIL(texel_session_create(model, &session));
  }
  void TearDown() override {
    // The host's queue still works: its own kernel, after every failure above.
    cl_mem x = host.Buffer(16 * 4), y = host.Buffer(16 * 4);
    std::vector<float> v = Random(16, 9);
    host.Write(x, v);
    cl_event e = host.Scale(x, y, 3.0f, 16);
    EXPECT_EQ(clWaitForEvents(1, &e), CL_SUCCESS);
    clReleaseEvent(e);
    std::vector<float> w = host.Read(y, 16);
    for (int i = 0; i < 16; ++i) EXPECT_EQ(w[i], v[i] * 3.0f);
    EXPECT_EQ(texel_session_release(session), TEXEL_OK);
    EXPECT_EQ(texel_model_release(model), TEXEL_OK);
    EXPECT_EQ(texel_context_release(ctx), TEXEL_OK);
  }
  texel_tensor_t Buffer(cl_mem m, size_t offset = 0) {
    texel_tensor_t t;
    texel_tensor_init(&t);
    t.kind = TEXEL_MEMORY_CL_BUFFER;
    t.buffer = m;
    t.offset = offset;
    return t;
  }
  HostFramework host;
  texel_context_t ctx = nullptr;
  texel_model_t model = nullptr;
  texel_session_t session = nullptr;
};

TEST_F(CApiErrorsTest, NullHandlesAndPointers) {
  texel_tensor_t t = Buffer(host.Buffer(kBytesA));
  EXPECT_FAILS(texel_session_run(nullptr), TEXEL_ERROR_INVALID_ARGUMENT, "texel_session_run",
               "session is NULL");
  EXPECT_FAILS(texel_session_bind_input(nullptr, "arg0", &t), TEXEL_ERROR_INVALID_ARGUMENT,
               "session is NULL");
  EXPECT_FAILS(texel_session_bind_input(session, nullptr, &t), TEXEL_ERROR_INVALID_ARGUMENT,
               "name is NULL");
  EXPECT_FAILS(texel_session_bind_input(session, "arg0", nullptr), TEXEL_ERROR_INVALID_ARGUMENT,
               "tensor is NULL");
  EXPECT_FAILS(texel_session_enqueue(session, 1, nullptr, nullptr), TEXEL_ERROR_INVALID_ARGUMENT,
               "wait_events");
  EXPECT_FAILS(texel_model_compile_file(nullptr, "x.mlir", nullptr, &model),
               TEXEL_ERROR_INVALID_ARGUMENT, "context is NULL");
  EXPECT_FAILS(texel_session_create(nullptr, &session), TEXEL_ERROR_INVALID_ARGUMENT,
               "model is NULL");
  EXPECT_FAILS(texel_context_release(nullptr), TEXEL_ERROR_INVALID_ARGUMENT, "context is NULL");
  EXPECT_FAILS(texel_context_adopt(host.context, host.device, nullptr, &ctx),
               TEXEL_ERROR_INVALID_ARGUMENT, "cl_command_queue is null");
  texel_model_t none = nullptr;
  EXPECT_FAILS(texel_model_compile_memory(ctx, "", 0, nullptr, &none), TEXEL_ERROR_INVALID_ARGUMENT,
               "0 bytes");
  EXPECT_EQ(none, nullptr);
  EXPECT_STREQ(texel_status_name(TEXEL_ERROR_UNSUPPORTED), "TEXEL_ERROR_UNSUPPORTED");
}

TEST_F(CApiErrorsTest, BuffersThatDoNotFit) {
  texel_tensor_t small = Buffer(host.Buffer(kBytesA - 4));
  EXPECT_FAILS(texel_session_bind_input(session, "arg0", &small), TEXEL_ERROR_INVALID_ARGUMENT,
               "input 'arg0'", "32768 bytes", "32764");
  texel_tensor_t past = Buffer(host.Buffer(kBytesA), 256);
  EXPECT_FAILS(texel_session_bind_input(session, "arg0", &past), TEXEL_ERROR_INVALID_ARGUMENT,
               "after offset 256");
  texel_tensor_t read_only = Buffer(host.Buffer(kBytesC, CL_MEM_READ_ONLY));
  EXPECT_FAILS(texel_session_bind_output(session, "arg2", &read_only), TEXEL_ERROR_INVALID_ARGUMENT,
               "output 'arg2'", "CL_MEM_READ_ONLY");
  texel_tensor_t host_small;
  texel_tensor_init(&host_small);
  float x[4];
  host_small.pointer = x;
  host_small.bytes = sizeof(x);
  EXPECT_FAILS(texel_session_bind_input(session, "arg1", &host_small), TEXEL_ERROR_INVALID_ARGUMENT,
               "input 'arg1'", "host pointer", "65536 bytes");
  texel_tensor_t unset{};  // not through texel_tensor_init
  EXPECT_FAILS(texel_session_bind_input(session, "arg0", &unset), TEXEL_ERROR_INVALID_ARGUMENT,
               "texel_tensor_init");
  texel_tensor_t good = Buffer(host.Buffer(kBytesA));
  EXPECT_FAILS(texel_session_bind_input(session, "arg7", &good), TEXEL_ERROR_NOT_FOUND,
               "no input named 'arg7'");
  EXPECT_FAILS(texel_session_run(session), TEXEL_ERROR_INVALID_ARGUMENT,
               "input 'arg0' is not bound");
}

TEST_F(CApiErrorsTest, WrongKindsForTheDevice) {
  size_t ext_size = 0;
  clGetDeviceInfo(host.device, CL_DEVICE_EXTENSIONS, 0, nullptr, &ext_size);
  std::string ext(ext_size, '\0');
  clGetDeviceInfo(host.device, CL_DEVICE_EXTENSIONS, ext_size, ext.data(), nullptr);
  alignas(16) static float usm[kM * kK];
  texel_tensor_t t;
  texel_tensor_init(&t);
  t.kind = TEXEL_MEMORY_USM;
  t.pointer = usm;
  t.bytes = sizeof(usm);
  if (ext.find("cl_intel_unified_shared_memory") == std::string::npos)
    EXPECT_FAILS(texel_session_bind_input(session, "arg0", &t), TEXEL_ERROR_UNSUPPORTED,
                 "input 'arg0'", "USM pointer", "cl_intel_unified_shared_memory");
  // A misaligned SVM pointer; a kind that is no kind.
  cl_device_svm_capabilities caps = 0;
  clGetDeviceInfo(host.device, CL_DEVICE_SVM_CAPABILITIES, sizeof(caps), &caps, nullptr);
  if (caps & CL_DEVICE_SVM_COARSE_GRAIN_BUFFER) {
    char* svm = static_cast<char*>(clSVMAlloc(host.context, CL_MEM_READ_WRITE, kBytesA + 64, 0));
    t.kind = TEXEL_MEMORY_SVM;
    t.pointer = svm + 4;
    EXPECT_FAILS(texel_session_bind_input(session, "arg0", &t), TEXEL_ERROR_INVALID_ARGUMENT,
                 "SVM pointer", "16-byte aligned");
    clSVMFree(host.context, svm);
  }
  int bad_kind = 42;  // as a C caller could store it
  std::memcpy(&t.kind, &bad_kind, sizeof(bad_kind));
  EXPECT_FAILS(texel_session_bind_input(session, "arg0", &t), TEXEL_ERROR_INVALID_ARGUMENT,
               "memory kind 42");
}

TEST_F(CApiErrorsTest, ObjectsOfAnotherContext) {
  HostFramework other;
  texel_context_t adopted = nullptr;
  EXPECT_FAILS(texel_context_adopt(host.context, host.device, other.queue, &adopted),
               TEXEL_ERROR_INVALID_ARGUMENT, "queue belongs to another OpenCL context");
  EXPECT_EQ(adopted, nullptr);
  texel_tensor_t foreign = Buffer(other.Buffer(kBytesA));
  EXPECT_FAILS(texel_session_bind_input(session, "arg0", &foreign), TEXEL_ERROR_INVALID_ARGUMENT,
               "input 'arg0'", "another OpenCL context");
}

TEST_F(CApiErrorsTest, BadFragments) {
  // arg1 is 128x128 but the matmul is told it is 64x128.
  const std::string mismatch =
      R"(func.func @entry(%arg0: memref<64x128xf32>, %arg1: memref<128x128xf32>, %arg2: memref<64x128xf32>) {
  %0 = bufferization.to_tensor %arg0 restrict : memref<64x128xf32>
  %1 = bufferization.to_tensor %arg1 restrict : memref<64x128xf32>
  bufferization.materialize_in_destination %0 in restrict writable %arg2 : (tensor<64x128xf32>, memref<64x128xf32>) -> ()
  return
}
)";
  texel_model_t bad = nullptr;
  texel_status_t st =
      texel_model_compile_memory(ctx, mismatch.data(), mismatch.size(), nullptr, &bad);
  EXPECT_NE(st, TEXEL_OK);
  EXPECT_TRUE(st == TEXEL_ERROR_INVALID_MODEL || st == TEXEL_ERROR_INVALID_ARGUMENT)
      << texel_status_name(st);
  EXPECT_NE(std::string(texel_last_error()).find(":3:"), std::string::npos) << texel_last_error();
  EXPECT_EQ(bad, nullptr);
  const std::string unsupported =
      R"(func.func @entry(%arg0: memref<4x4xf32>, %arg1: memref<4x4xf32>) {
  %0 = bufferization.to_tensor %arg0 restrict : memref<4x4xf32>
  %1 = tensor.empty() : tensor<4x4xf32>
  %2 = linalg.softmax dimension(1) ins(%0 : tensor<4x4xf32>) outs(%1 : tensor<4x4xf32>) -> tensor<4x4xf32>
  bufferization.materialize_in_destination %2 in restrict writable %arg1 : (tensor<4x4xf32>, memref<4x4xf32>) -> ()
  return
}
)";
  EXPECT_FAILS(
      texel_model_compile_memory(ctx, unsupported.data(), unsupported.size(), nullptr, &bad),
      TEXEL_ERROR_UNSUPPORTED, "linalg.softmax");
  EXPECT_FAILS(texel_model_compile_file(ctx, "/no/such/fragment.mlir", nullptr, &bad),
               TEXEL_ERROR_NOT_FOUND, "/no/such/fragment.mlir");
  texel_compile_options_t opts;
  texel_compile_options_init(&opts);
  opts.storage = "sideways";
  EXPECT_FAILS(texel_model_compile_file(ctx, DataPath("matmul_add.mlir").c_str(), &opts, &bad),
               TEXEL_ERROR_INVALID_ARGUMENT, "storage 'sideways'");
  texel_compile_options_init(&opts);
  opts.precision = "fp8";
  EXPECT_FAILS(texel_model_compile_file(ctx, DataPath("matmul_add.mlir").c_str(), &opts, &bad),
               TEXEL_ERROR_INVALID_ARGUMENT, "precision 'fp8'");
  texel_compile_options_init(&opts);
  opts.settings = "precison=fp16";
  EXPECT_FAILS(texel_model_compile_file(ctx, DataPath("matmul_add.mlir").c_str(), &opts, &bad),
               TEXEL_ERROR_INVALID_ARGUMENT, "no compile option 'precison'");
  opts.settings = "disable_pass=fuse\nno equals sign";
  EXPECT_FAILS(texel_model_compile_file(ctx, DataPath("matmul_add.mlir").c_str(), &opts, &bad),
               TEXEL_ERROR_INVALID_ARGUMENT, "'no equals sign': expected NAME=VALUE");
}

TEST_F(CApiErrorsTest, CompileOptionsListedAndSet) {
  // The option table: every CLI flag's option is listed and settable by name.
  std::vector<std::string> names;
  for (size_t i = 0; i < texel_compile_option_count(); ++i) {
    texel_compile_option_info_t info;
    ASSERT_EQ(texel_compile_option_get_info(i, &info), TEXEL_OK);
    EXPECT_GT(std::strlen(info.help), 0u) << info.name;
    names.push_back(info.name);
  }
  for (const char* want : {"input_shape", "freeze", "backends", "deny", "partition", "storage",
                           "texture_precision", "precision", "disable_pass"})
    EXPECT_NE(std::find(names.begin(), names.end(), want), names.end()) << want;
  texel_compile_option_info_t info;
  EXPECT_FAILS(texel_compile_option_get_info(names.size(), &info), TEXEL_ERROR_NOT_FOUND, "option");
  texel_compile_options_t opts;
  texel_compile_options_init(&opts);
  opts.settings = "disable_pass=fuse\ndisable-pass=simplify\n\nbackends=native";
  texel_model_t model = nullptr;
  ASSERT_EQ(texel_model_compile_file(ctx, DataPath("matmul_add.mlir").c_str(), &opts, &model),
            TEXEL_OK)
      << texel_last_error();
  texel_model_release(model);
}

TEST_F(CApiErrorsTest, BadArtifacts) {
  std::string path = ::testing::TempDir() + "/capi_errors.texel";
  texel_model_t bad = nullptr;
  EXPECT_FAILS(texel_model_save(nullptr, path.c_str(), 0), TEXEL_ERROR_INVALID_ARGUMENT, "model");
  EXPECT_FAILS(texel_model_save(model, nullptr, 0), TEXEL_ERROR_INVALID_ARGUMENT, "path");
  EXPECT_FAILS(texel_model_save(model, "/no/such/dir/m.texel", 0), TEXEL_ERROR_IO,
               "/no/such/dir/m.texel");
  EXPECT_FAILS(texel_model_load_file(ctx, "/no/such/m.texel", &bad), TEXEL_ERROR_NOT_FOUND,
               "/no/such/m.texel");
  EXPECT_FAILS(texel_model_load_file(nullptr, path.c_str(), &bad), TEXEL_ERROR_INVALID_ARGUMENT,
               "context");
  EXPECT_FAILS(texel_model_load_memory(ctx, nullptr, 4, &bad), TEXEL_ERROR_INVALID_ARGUMENT,
               "data");
  TEXEL_OK_OR_FAIL(texel_model_save(model, path.c_str(), 0));
  const std::string good = ReadFile(path);
  EXPECT_FAILS(texel_model_load_memory(ctx, good.data(), good.size() / 2, &bad),
               TEXEL_ERROR_INVALID_MODEL, "<memory>", "truncated");
  std::string flipped = good;
  flipped[1500] ^= 0x40;  // in the plan
  EXPECT_FAILS(texel_model_load_memory(ctx, flipped.data(), flipped.size(), &bad),
               TEXEL_ERROR_INVALID_MODEL, "corrupt", "sha256");
  flipped = good;
  flipped[flipped.size() - 3] ^= 0x40;  // padding before the (empty) constants
  EXPECT_FAILS(texel_model_load_memory(ctx, flipped.data(), flipped.size(), &bad),
               TEXEL_ERROR_INVALID_MODEL, "padding");
  const std::string onnx = ReadFile(DataPath("tiny_conv.onnx"));
  EXPECT_FAILS(texel_model_load_memory(ctx, onnx.data(), onnx.size(), &bad),
               TEXEL_ERROR_INVALID_MODEL, "not a texel artifact");
  std::string future = good;
  future[8] = 9;
  EXPECT_FAILS(texel_model_load_memory(ctx, future.data(), future.size(), &bad),
               TEXEL_ERROR_INVALID_MODEL, "format version 9");
  EXPECT_EQ(bad, nullptr);
}

}  // namespace
}  // namespace texel_test
