// texel C++ API: header-only RAII wrappers over the C API (texel/texel.h). A failing call
// throws texel::Exception, which carries the status and texel's message. Lifetimes and thread
// safety are the C API's: handles are reference counted, so copies share one object.
#pragma once

#include <texel/texel.h>

#include <functional>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace texel {

class Exception : public std::runtime_error {
 public:
  Exception(texel_status_t status, const std::string& message)
      : std::runtime_error(message), status_(status) {}
  texel_status_t status() const { return status_; }

 private:
  texel_status_t status_;
};

inline void Check(texel_status_t status) {
  if (status != TEXEL_OK) throw Exception(status, texel_last_error());
}

namespace detail {
// A reference-counted handle: Retain on copy, Release on destruction.
template <class H, texel_status_t (*Retain)(H), texel_status_t (*Release)(H)>
class Handle {
 public:
  Handle() = default;
  explicit Handle(H h) : h_(h) {}  // takes over the caller's reference
  Handle(const Handle& o) : h_(o.h_) {
    if (h_) Retain(h_);
  }
  Handle(Handle&& o) noexcept : h_(std::exchange(o.h_, nullptr)) {}
  Handle& operator=(Handle o) noexcept {
    std::swap(h_, o.h_);
    return *this;
  }
  ~Handle() {
    if (h_) Release(h_);
  }
  H get() const { return h_; }

 private:
  H h_ = nullptr;
};
}  // namespace detail

// Memory the caller lends to a session: see texel_tensor_t.
struct Tensor {
  texel_tensor_t desc;
  static Tensor Buffer(cl_mem buffer, size_t offset = 0) {
    Tensor t = Make(TEXEL_MEMORY_CL_BUFFER);
    t.desc.buffer = buffer;
    t.desc.offset = offset;
    return t;
  }
  static Tensor Host(void* pointer, size_t bytes) {
    return Pointer(TEXEL_MEMORY_HOST, pointer, bytes);
  }
  // An input's host memory: texel only reads it.
  static Tensor Host(const void* pointer, size_t bytes) {
    return Pointer(TEXEL_MEMORY_HOST, const_cast<void*>(pointer), bytes);
  }
  static Tensor Svm(void* pointer, size_t bytes) {
    return Pointer(TEXEL_MEMORY_SVM, pointer, bytes);
  }
  static Tensor Usm(void* pointer, size_t bytes) {
    return Pointer(TEXEL_MEMORY_USM, pointer, bytes);
  }

 private:
  static Tensor Make(texel_memory_kind_t kind) {
    Tensor t;
    texel_tensor_init(&t.desc);
    t.desc.kind = kind;
    return t;
  }
  static Tensor Pointer(texel_memory_kind_t kind, void* pointer, size_t bytes) {
    Tensor t = Make(kind);
    t.desc.pointer = pointer;
    t.desc.bytes = bytes;
    return t;
  }
};

class Context {
 public:
  // texel's own context on a device ("": the default, "gpu", "cpu", "P:D", a name substring).
  explicit Context(const std::string& device = "") {
    texel_context_options_t o;
    texel_context_options_init(&o);
    o.device = device.c_str();
    texel_context_t h = nullptr;
    Check(texel_context_create(&o, &h));
    h_ = Ptr(h);
  }
  // Adopts a host's context, device and queue.
  static Context Adopt(cl_context context, cl_device_id device, cl_command_queue queue) {
    texel_context_t h = nullptr;
    Check(texel_context_adopt(context, device, queue, &h));
    return Context(Ptr(h));
  }
  texel_context_t get() const { return h_.get(); }
  texel_device_info_t device() const {
    texel_device_info_t info;
    Check(texel_context_get_device_info(get(), &info));
    return info;
  }
  cl_command_queue queue() const {
    cl_command_queue q = nullptr;
    Check(texel_context_get_queue(get(), &q));
    return q;
  }
  texel_host_counters_t host_counters() const {
    texel_host_counters_t c;
    Check(texel_context_get_host_counters(get(), &c));
    return c;
  }

 private:
  using Ptr = detail::Handle<texel_context_t, texel_context_retain, texel_context_release>;
  explicit Context(Ptr h) : h_(std::move(h)) {}
  Ptr h_;
};

struct ModelOptions {
  std::string backends, partition, storage, precision;  // empty: texel's defaults
  bool texture_fp16 = false;
  std::string input_shapes;  // "NAME=DIMS;NAME=DIMS" (texel_compile_options_t::input_shapes)
  std::string settings;      // "NAME=VALUE" lines (texel_compile_options_t::settings)
  // What the caller should hear (texel_compile_options_t::notice); empty: not told.
  std::function<void(const std::string&)> on_notice;
};

class Model {
 public:
  // Compiles an ONNX model or an MLIR linalg fragment from a file.
  static Model FromFile(const Context& ctx, const std::string& path,
                        const ModelOptions& options = {}) {
    texel_compile_options_t o = ToC(options);
    texel_model_t h = nullptr;
    Check(texel_model_compile_file(ctx.get(), path.c_str(), &o, &h));
    return Model(Ptr(h));
  }
  // The same from memory (ONNX bytes or fragment text).
  static Model FromMemory(const Context& ctx, const std::string& bytes,
                          const ModelOptions& options = {}) {
    texel_compile_options_t o = ToC(options);
    texel_model_t h = nullptr;
    Check(texel_model_compile_memory(ctx.get(), bytes.data(), bytes.size(), &o, &h));
    return Model(Ptr(h));
  }
  // Loads an artifact (.texel, written by Save or `texel compile -o`) from a file or from
  // memory; needs no compiler (libtexel_runtime.so has these).
  static Model Load(const Context& ctx, const std::string& path) {
    texel_model_t h = nullptr;
    Check(texel_model_load_file(ctx.get(), path.c_str(), &h));
    return Model(Ptr(h));
  }
  static Model LoadMemory(const Context& ctx, const std::string& bytes) {
    texel_model_t h = nullptr;
    Check(texel_model_load_memory(ctx.get(), bytes.data(), bytes.size(), &h));
    return Model(Ptr(h));
  }
  // Writes the model as an artifact; with_binaries: with the program's binary for its device.
  void Save(const std::string& path, bool with_binaries = false) const {
    Check(texel_model_save(h_.get(), path.c_str(), with_binaries ? 1 : 0));
  }
  texel_model_t get() const { return h_.get(); }
  std::vector<texel_tensor_info_t> inputs() const {
    return List(texel_model_input_count, texel_model_get_input);
  }
  std::vector<texel_tensor_info_t> outputs() const {
    return List(texel_model_output_count, texel_model_get_output);
  }

 private:
  using Ptr = detail::Handle<texel_model_t, texel_model_retain, texel_model_release>;
  explicit Model(Ptr h) : h_(std::move(h)) {}
  static texel_compile_options_t ToC(const ModelOptions& m) {
    texel_compile_options_t o;
    texel_compile_options_init(&o);
    o.backends = m.backends.empty() ? nullptr : m.backends.c_str();
    o.partition = m.partition.empty() ? nullptr : m.partition.c_str();
    o.storage = m.storage.empty() ? nullptr : m.storage.c_str();
    o.texture_fp16 = m.texture_fp16;
    o.precision = m.precision.empty() ? nullptr : m.precision.c_str();
    o.input_shapes = m.input_shapes.empty() ? nullptr : m.input_shapes.c_str();
    o.settings = m.settings.empty() ? nullptr : m.settings.c_str();
    if (m.on_notice) {
      // m outlives the compile that calls this.
      o.notice = [](const char* message, void* user_data) {
        (*static_cast<const std::function<void(const std::string&)>*>(user_data))(message);
      };
      o.notice_user_data = const_cast<std::function<void(const std::string&)>*>(&m.on_notice);
    }
    return o;
  }
  std::vector<texel_tensor_info_t> List(texel_status_t (*count)(texel_model_t, size_t*),
                                        texel_status_t (*get)(texel_model_t, size_t,
                                                              texel_tensor_info_t*)) const {
    size_t n = 0;
    Check(count(h_.get(), &n));
    std::vector<texel_tensor_info_t> out(n);
    for (size_t i = 0; i < n; ++i) Check(get(h_.get(), i, &out[i]));
    return out;
  }
  Ptr h_;
};

// Move-only: a session is used by one thread at a time, so copies sharing one are not offered.
class Session {
 public:
  explicit Session(const Model& model) {
    texel_session_t h = nullptr;
    Check(texel_session_create(model.get(), &h));
    h_ = Ptr(h);
  }
  Session(Session&&) = default;
  Session& operator=(Session&&) = default;
  Session(const Session&) = delete;
  Session& operator=(const Session&) = delete;
  texel_session_t get() const { return h_.get(); }
  Session& BindInput(const std::string& name, const Tensor& t) {
    Check(texel_session_bind_input(get(), name.c_str(), &t.desc));
    return *this;
  }
  Session& BindOutput(const std::string& name, const Tensor& t) {
    Check(texel_session_bind_output(get(), name.c_str(), &t.desc));
    return *this;
  }
  void Run() { Check(texel_session_run(get())); }
  // Returns the run's event; the caller releases it (clReleaseEvent).
  [[nodiscard]] cl_event Enqueue(const std::vector<cl_event>& wait = {}) {
    cl_event done = nullptr;
    Check(texel_session_enqueue(get(), static_cast<cl_uint>(wait.size()),
                                wait.empty() ? nullptr : wait.data(), &done));
    return done;
  }

 private:
  using Ptr = detail::Handle<texel_session_t, texel_session_retain, texel_session_release>;
  Ptr h_;
};

// texel_gemm: a GEMM description with texel_gemm_init's defaults, set field by field, enqueued
// on a context. Returns the product's event (the caller releases it) when `event` is true.
struct Gemm {
  texel_gemm_t desc;
  Gemm() { texel_gemm_init(&desc); }
  cl_event Enqueue(const Context& ctx, cl_command_queue queue = nullptr,
                   const std::vector<cl_event>& wait = {}, bool event = false) const {
    cl_event done = nullptr;
    Check(texel_gemm(ctx.get(), &desc, queue, static_cast<cl_uint>(wait.size()),
                     wait.empty() ? nullptr : wait.data(), event ? &done : nullptr));
    return done;
  }
};

}  // namespace texel
