// texel._texel: the compiled half of the Python package (python/texel), a thin layer over the C
// API (include/texel/texel.hpp). It checks what Python hands it (array types, shapes, layout)
// before texel sees a pointer, reaches array memory through the buffer protocol only (so one
// build works with numpy 1 and 2, whose C structs differ), releases the GIL around compiling,
// loading and running, and turns texel's statuses into the texel.Error classes that
// texel/_errors.py defines. Built twice from this file: over libtexel.so, and with
// TEXEL_PYTHON_RUNTIME_ONLY over libtexel_runtime.so (no compiler: compile_* raise
// texel.UnsupportedError).
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <mutex>
#include <string>
#include <texel/texel.hpp>
#include <vector>

namespace py = pybind11;

namespace {

// Status -> Python class, registered once by texel/_errors.py (set_error_classes).
py::dict& ErrorClasses() {
  static py::dict* classes = new py::dict();  // never freed: outlives interpreter teardown
  return *classes;
}

[[noreturn]] void Throw(texel_status_t status, const std::string& message) {
  throw texel::Exception(status, message);
}

// numpy's name for each texel_dtype_t, in enum order.
constexpr const char* kNumpyNames[] = {"float32", "float16", "float64", "int8",  "uint8",  "int16",
                                       "uint16",  "int32",   "uint32",  "int64", "uint64", "bool"};

// numpy, imported once (runs look up its ndarray, dtype and empty); never freed, as ErrorClasses.
py::module_& Numpy() {
  static py::module_* numpy = new py::module_(py::module_::import("numpy"));
  return *numpy;
}
py::object NumpyDtype(texel_dtype_t d) { return Numpy().attr("dtype")(kNumpyNames[d]); }

// As Python prints a tuple: (1, 3, 224, 224), (5,), ().
std::string ShapeStr(const std::vector<int64_t>& shape) {
  std::string s = "(";
  for (size_t i = 0; i < shape.size(); ++i)
    s += std::to_string(shape[i]) + (i + 1 < shape.size() ? ", " : "");
  return s + (shape.size() == 1 ? ",)" : ")");
}

// An input or output as Python sees it.
struct TensorInfo {
  std::string name;
  texel_dtype_t dtype;
  std::vector<int64_t> shape;
  size_t bytes;
};

std::vector<TensorInfo> Infos(const std::vector<texel_tensor_info_t>& list) {
  std::vector<TensorInfo> out;
  for (const auto& t : list)
    out.push_back({t.name, t.dtype, std::vector<int64_t>(t.shape, t.shape + t.rank), t.bytes});
  return out;
}

// A model from bytes or a path (both taken while the GIL is held), made with it released.
template <class Make>
texel::Model FromSource(const py::object& source, Make make) {
  bool bytes = py::isinstance<py::bytes>(source);
  std::string text = source.cast<std::string>();
  py::gil_scoped_release unlocked;
  return make(text, bytes);
}

texel::Model Compile(const texel::Context& ctx, const py::object& source,
                     const texel::ModelOptions& options) {
#ifdef TEXEL_PYTHON_RUNTIME_ONLY
  (void)ctx, (void)source, (void)options;
  Throw(TEXEL_ERROR_UNSUPPORTED,
        "this texel package was built over libtexel_runtime.so, without the compiler: load a "
        ".texel artifact (texel.load) made by a full texel");
#else
  return FromSource(source, [&](const std::string& s, bool bytes) {
    return bytes ? texel::Model::FromMemory(ctx, s, options)
                 : texel::Model::FromFile(ctx, s, options);
  });
#endif
}

texel::Model Load(const texel::Context& ctx, const py::object& source) {
  return FromSource(source, [&](const std::string& s, bool bytes) {
    return bytes ? texel::Model::LoadMemory(ctx, s) : texel::Model::Load(ctx, s);
  });
}

// One texel session and the lock that keeps it to one thread at a time (texel.h: a session is
// used by one thread at a time), so that a Python session may be shared between threads.
class Session {
 public:
  explicit Session(const texel::Model& model)
      : model_(model),
        session_(model),
        inputs_(Infos(model.inputs())),
        outputs_(Infos(model.outputs())) {}

  // Runs on arrays in the model's input order; returns fresh arrays in its output order, which
  // texel writes directly (no copy on the Python side).
  py::list Run(const py::list& arrays) {
    if (arrays.size() != inputs_.size())
      Throw(TEXEL_ERROR_INVALID_ARGUMENT, "the model has " + std::to_string(inputs_.size()) +
                                              " inputs; " + std::to_string(arrays.size()) +
                                              " arrays were given");
    // Buffer views (released when they go, with the GIL held again) and texel's descriptions.
    std::vector<py::buffer_info> views;
    std::vector<texel::Tensor> in_memory, out_memory;
    for (size_t i = 0; i < inputs_.size(); ++i) {
      CheckInput(inputs_[i], arrays[i]);
      views.push_back(py::reinterpret_borrow<py::buffer>(arrays[i]).request());
      in_memory.push_back(
          texel::Tensor::Host(static_cast<const void*>(views.back().ptr), Bytes(views.back())));
    }
    py::list result;
    for (const auto& o : outputs_) {
      py::object array = Numpy().attr("empty")(py::cast(o.shape), NumpyDtype(o.dtype));
      views.push_back(py::reinterpret_borrow<py::buffer>(array).request(/*writable=*/true));
      out_memory.push_back(texel::Tensor::Host(views.back().ptr, Bytes(views.back())));
      result.append(array);
    }
    py::gil_scoped_release unlocked;
    std::lock_guard<std::mutex> lock(mutex_);
    for (size_t i = 0; i < inputs_.size(); ++i) session_.BindInput(inputs_[i].name, in_memory[i]);
    for (size_t i = 0; i < outputs_.size(); ++i)
      session_.BindOutput(outputs_[i].name, out_memory[i]);
    session_.Run();
    return result;
  }

 private:
  static size_t Bytes(const py::buffer_info& b) {
    return static_cast<size_t>(b.size) * static_cast<size_t>(b.itemsize);
  }

  static void CheckInput(const TensorInfo& info, const py::handle& value) {
    std::string what = "input '" + info.name + "'";
    if (!py::isinstance(value, Numpy().attr("ndarray")))
      Throw(TEXEL_ERROR_INVALID_ARGUMENT,
            what + ": expected a numpy.ndarray, got " +
                py::str(py::type::of(value).attr("__name__")).cast<std::string>());
    py::object want = NumpyDtype(info.dtype), got = value.attr("dtype");
    if (!got.equal(want))
      Throw(TEXEL_ERROR_INVALID_ARGUMENT, what + ": expected dtype " +
                                              py::str(want).cast<std::string>() + ", got " +
                                              py::str(got).cast<std::string>());
    auto shape = value.attr("shape").cast<std::vector<int64_t>>();
    if (shape != info.shape)
      Throw(TEXEL_ERROR_INVALID_ARGUMENT,
            what + ": expected shape " + ShapeStr(info.shape) + ", got " + ShapeStr(shape));
    if (!value.attr("flags").attr("c_contiguous").cast<bool>())
      Throw(TEXEL_ERROR_INVALID_ARGUMENT,
            what +
                ": the array is not C-contiguous (a transposed or sliced view); pass "
                "numpy.ascontiguousarray(x)");
  }

  texel::Model model_;  // keeps the model alive as long as the session
  texel::Session session_;
  std::vector<TensorInfo> inputs_, outputs_;
  std::mutex mutex_;
};

}  // namespace

PYBIND11_MODULE(_texel, m) {
  m.doc() = "texel's compiled core; use the texel package, not this module";

  py::register_exception_translator([](std::exception_ptr p) {
    try {
      if (p) std::rethrow_exception(p);
    } catch (const texel::Exception& e) {
      py::object cls = ErrorClasses().contains(py::int_(static_cast<int>(e.status())))
                           ? ErrorClasses()[py::int_(static_cast<int>(e.status()))]
                           : py::object(py::reinterpret_borrow<py::object>(PyExc_RuntimeError));
      PyErr_SetString(cls.ptr(), e.what());
    }
  });
  m.def(
      "set_error_classes", [](const py::dict& classes) { ErrorClasses() = classes; },
      "status number -> exception class (texel/_errors.py)");
  m.def("version", [] { return std::string(texel_version()); });
#ifdef TEXEL_PYTHON_RUNTIME_ONLY
  m.attr("has_compiler") = false;
#else
  m.attr("has_compiler") = true;
#endif

  m.def("devices", [] {
    size_t n = 0;
    texel::Check(texel_device_count(&n));
    py::list out;
    for (size_t i = 0; i < n; ++i) {
      texel_device_info_t d;
      texel::Check(texel_device_get_info(i, &d));
      out.append(py::make_tuple(d.label, d.name, d.vendor, d.type));
    }
    return out;
  });

  py::class_<texel::Context>(m, "Context")
      .def(py::init([](const std::string& device) {
             py::gil_scoped_release unlocked;
             return texel::Context(device);
           }),
           py::arg("device") = "")
      .def_property_readonly("device",
                             [](const texel::Context& c) { return std::string(c.device().label); });

  py::class_<TensorInfo>(m, "TensorInfo")
      .def_readonly("name", &TensorInfo::name)
      .def_property_readonly("dtype", [](const TensorInfo& t) { return NumpyDtype(t.dtype); })
      .def_property_readonly("shape",
                             [](const TensorInfo& t) {
                               py::tuple s(t.shape.size());
                               for (size_t i = 0; i < t.shape.size(); ++i) s[i] = t.shape[i];
                               return s;
                             })
      .def_readonly("bytes", &TensorInfo::bytes);

  py::class_<texel::Model>(m, "Model")
      .def(
          "save",
          [](const texel::Model& model, const std::string& path, bool binaries) {
            py::gil_scoped_release unlocked;
            model.Save(path, binaries);
          },
          py::arg("path"), py::arg("binaries") = false)
      .def_property_readonly("inputs",
                             [](const texel::Model& model) { return Infos(model.inputs()); })
      .def_property_readonly("outputs",
                             [](const texel::Model& model) { return Infos(model.outputs()); });

  // Options as (name, value) pairs of the C API's option table; compile_options() lists it.
  m.def(
      "compile",
      [](const texel::Context& ctx, const py::object& source,
         const std::vector<std::pair<std::string, std::string>>& options,
         const py::object& on_notice) {
        texel::ModelOptions o;
        if (!on_notice.is_none())
          // Called on this thread, the GIL released by Compile: taken back for the call. What
          // the callable raises cannot cross the C API; Python reports it as unraisable.
          o.on_notice = [on_notice](const std::string& message) {
            py::gil_scoped_acquire locked;
            try {
              on_notice(message);
            } catch (py::error_already_set& e) {
              e.discard_as_unraisable("texel compile notice callback");
            }
          };
        for (const auto& [name, value] : options) {
          if (name.find_first_of("=\n") != std::string::npos ||
              value.find('\n') != std::string::npos)
            Throw(TEXEL_ERROR_INVALID_ARGUMENT,
                  "compile option " + name + "=" + value + ": names and values are one line");
          o.settings += name + "=" + value + "\n";
        }
        return Compile(ctx, source, o);
      },
      py::arg("context"), py::arg("source"), py::arg("options"), py::arg("on_notice") = py::none());
  m.def("compile_options", [] {
    py::list out;
#ifndef TEXEL_PYTHON_RUNTIME_ONLY
    for (size_t i = 0; i < texel_compile_option_count(); ++i) {
      texel_compile_option_info_t info;
      texel::Check(texel_compile_option_get_info(i, &info));
      out.append(py::make_tuple(info.name, info.values, info.help, info.repeatable != 0));
    }
#endif
    return out;
  });
  m.def("load", &Load, py::arg("context"), py::arg("source"));

  py::class_<Session>(m, "Session")
      .def(py::init<const texel::Model&>(), py::arg("model"))
      .def("run", &Session::Run, py::arg("inputs"));
}
