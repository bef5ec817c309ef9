#include "frontend/onnx/tensor_proto.h"

#include <algorithm>
#include <charconv>
#include <filesystem>
#include <fstream>

#include "core/error.h"
#include "core/limits.h"

namespace texel::onnx_frontend {

using onnx::TensorProto;

bool DTypeFromOnnx(int t, DType* out) {
  switch (t) {
    case TensorProto::FLOAT: *out = DType::kFloat32; return true;
    case TensorProto::FLOAT16: *out = DType::kFloat16; return true;
    case TensorProto::DOUBLE: *out = DType::kFloat64; return true;
    case TensorProto::INT8: *out = DType::kInt8; return true;
    case TensorProto::UINT8: *out = DType::kUInt8; return true;
    case TensorProto::INT16: *out = DType::kInt16; return true;
    case TensorProto::UINT16: *out = DType::kUInt16; return true;
    case TensorProto::INT32: *out = DType::kInt32; return true;
    case TensorProto::UINT32: *out = DType::kUInt32; return true;
    case TensorProto::INT64: *out = DType::kInt64; return true;
    case TensorProto::UINT64: *out = DType::kUInt64; return true;
    case TensorProto::BOOL: *out = DType::kBool; return true;
    default: return false;
  }
}

const char* OnnxTypeName(int t) {
  if (onnx::TensorProto_DataType_IsValid(t))
    return onnx::TensorProto_DataType_Name(static_cast<TensorProto::DataType>(t)).c_str();
  return "UNKNOWN";
}

namespace {

// Copies a repeated typed field into the tensor, converting each element to the tensor's dtype.
template <typename Field>
void FromField(const Field& field, HostTensor& out, const std::string& name) {
  if (static_cast<int64_t>(field.size()) != out.size())
    Fail(ErrorCode::kInvalidModel, "tensor '{}' has {} values, its shape {} needs {}", name,
         field.size(), ShapeStr(out.shape), out.size());
  VisitDType(out.dtype, [&](auto z) {
    using T = decltype(z);
    for (int64_t i = 0; i < out.size(); ++i) out.data<T>()[i] = static_cast<T>(field.Get(i));
  });
}

std::string ReadExternal(const TensorProto& t, const std::string& base_dir, size_t want) {
  std::string location;
  int64_t offset = 0, length = -1;
  auto parse = [&](const std::string& key, const std::string& text) {
    int64_t v = -1;
    auto [p, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
    if (ec != std::errc() || p != text.data() + text.size() || v < 0)
      Fail(ErrorCode::kInvalidModel, "tensor '{}': external data {} '{}' is not a byte count",
           t.name(), key, text);
    return v;
  };
  for (const auto& kv : t.external_data()) {
    if (kv.key() == "location")
      location = kv.value();
    else if (kv.key() == "offset")
      offset = parse("offset", kv.value());
    else if (kv.key() == "length")
      length = parse("length", kv.value());
  }
  if (location.empty())
    Fail(ErrorCode::kInvalidModel, "tensor '{}' has external data without a location", t.name());
  std::filesystem::path p = std::filesystem::path(location);
  if (p.is_absolute() || location.find("..") != std::string::npos)
    Fail(ErrorCode::kInvalidModel,
         "tensor '{}': external data location '{}' must be relative "
         "to the model's folder",
         t.name(), location);
  p = std::filesystem::path(base_dir) / p;
  // Symbolic links may not lead out of the model's folder either.
  std::error_code ec;
  std::filesystem::path real = std::filesystem::canonical(p, ec);
  if (ec)
    Fail(ErrorCode::kNotFound, "tensor '{}': external data file '{}' not found", t.name(),
         p.string());
  std::filesystem::path folder = std::filesystem::canonical(base_dir.empty() ? "." : base_dir, ec);
  auto rel = real.lexically_relative(folder);
  if (ec || rel.empty() || *rel.begin() == "..")
    Fail(ErrorCode::kInvalidModel,
         "tensor '{}': external data file '{}' is outside the model's folder (it leads to '{}')",
         t.name(), p.string(), real.string());
  std::ifstream f(real, std::ios::binary);
  if (!f)
    Fail(ErrorCode::kNotFound, "tensor '{}': external data file '{}' cannot be read", t.name(),
         p.string());
  if (length < 0) length = static_cast<int64_t>(want);
  if (static_cast<size_t>(length) != want)  // checked before allocating
    Fail(ErrorCode::kInvalidModel,
         "tensor '{}': external data length {} does not match its "
         "type ({} bytes)",
         t.name(), length, want);
  // The file must hold the bytes before they are allocated.
  uintmax_t file_size = std::filesystem::file_size(real, ec);
  if (ec || static_cast<uintmax_t>(offset) > file_size ||
      file_size - static_cast<uintmax_t>(offset) < static_cast<uintmax_t>(length))
    Fail(ErrorCode::kInvalidModel,
         "tensor '{}': external data file '{}' is too short ({} bytes; {} wanted at offset {})",
         t.name(), p.string(), ec ? 0 : file_size, length, offset);
  std::string data(length, '\0');
  f.seekg(offset);
  f.read(data.data(), length);
  if (f.gcount() != length)
    Fail(ErrorCode::kInvalidModel, "tensor '{}': external data file '{}' is too short", t.name(),
         p.string());
  return data;
}

}  // namespace

HostTensor TensorFromProto(const TensorProto& t, const std::string& base_dir) {
  DType dtype;
  if (!DTypeFromOnnx(t.data_type(), &dtype))
    Fail(ErrorCode::kUnsupported, "tensor '{}' has data type {}, which texel does not support",
         t.name(), OnnxTypeName(t.data_type()));
  Shape shape(t.dims().begin(), t.dims().end());
  // Check the size against the limits and the data before allocating: a damaged file must not
  // allocate whatever its dims claim.
  RequireWithinLimits(shape, dtype, /*host=*/true, fmt::format("tensor '{}'", t.name()));
  int64_t count = NumElements(shape);
  size_t want = static_cast<size_t>(count) * DTypeSize(dtype);
  if (t.data_location() != TensorProto::EXTERNAL && t.has_raw_data() && t.raw_data().size() != want)
    Fail(ErrorCode::kInvalidModel, "tensor '{}' has {} bytes of data, its type {}[{}] needs {}",
         t.name(), t.raw_data().size(), DTypeName(dtype), ShapeStr(shape), want);
  int field_size = std::max({t.float_data_size(), t.double_data_size(), t.int64_data_size(),
                             t.int32_data_size(), t.uint64_data_size()});
  if (t.data_location() != TensorProto::EXTERNAL && !t.has_raw_data() && count != field_size &&
      count > 0)
    Fail(ErrorCode::kInvalidModel, "tensor '{}' has {} values, its shape {} needs {}", t.name(),
         field_size, ShapeStr(shape), count);
  HostTensor out(dtype, shape);
  auto from_raw = [&](const std::string& raw) {
    if (raw.size() != want)
      Fail(ErrorCode::kInvalidModel, "tensor '{}' has {} bytes of data, its type {}[{}] needs {}",
           t.name(), raw.size(), DTypeName(dtype), ShapeStr(shape), want);
    std::memcpy(out.bytes.data(), raw.data(), want);
  };
  if (t.data_location() == TensorProto::EXTERNAL) {
    from_raw(ReadExternal(t, base_dir, want));
  } else if (t.has_raw_data()) {
    from_raw(t.raw_data());
  } else if (out.size() == 0) {
  } else if (dtype == DType::kFloat32) {
    FromField(t.float_data(), out, t.name());
  } else if (dtype == DType::kFloat64) {
    FromField(t.double_data(), out, t.name());
  } else if (dtype == DType::kInt64) {
    FromField(t.int64_data(), out, t.name());
  } else if (dtype == DType::kUInt32 || dtype == DType::kUInt64) {
    FromField(t.uint64_data(), out, t.name());
  } else {  // int8..int32, uint8/16, bool and f16 bits all live in int32_data
    FromField(t.int32_data(), out, t.name());
  }
  return out;
}

HostTensor ReadTensorProtoFile(const std::string& path, std::string* name) {
  std::ifstream f(path, std::ios::binary);
  if (!f) Fail(ErrorCode::kNotFound, "{}: file not found", path);
  TensorProto t;
  if (!t.ParseFromIstream(&f)) Fail(ErrorCode::kInvalidArgument, "{}: not a TensorProto", path);
  if (name) *name = t.name();
  try {
    return TensorFromProto(t, std::filesystem::path(path).parent_path().string());
  } catch (Error& e) {
    e.AddContext(path);
    throw;
  }
}

}  // namespace texel::onnx_frontend
