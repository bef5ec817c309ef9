#include "core/npy.h"

#include <fmt/ranges.h>

#include <bit>
#include <cctype>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <optional>
#include <string_view>

#include "core/error.h"

namespace texel {
namespace {

// Host bytes are copied verbatim to and from '<' files.
static_assert(std::endian::native == std::endian::little, "npy I/O assumes a little-endian host");

constexpr char kMagic[] = "\x93NUMPY";
constexpr size_t kMagicLen = 6;
constexpr size_t kAlign = 64;

struct DescrEntry {
  std::string_view code;  // kind + item size, as in '<f4' without the byte-order char
  DType dtype;
};

constexpr DescrEntry kDescrs[] = {
    {"f4", DType::kFloat32}, {"f2", DType::kFloat16}, {"f8", DType::kFloat64},
    {"i1", DType::kInt8},    {"u1", DType::kUInt8},   {"i2", DType::kInt16},
    {"u2", DType::kUInt16},  {"i4", DType::kInt32},   {"u4", DType::kUInt32},
    {"i8", DType::kInt64},   {"u8", DType::kUInt64},  {"b1", DType::kBool},
};

// The header is a Python dict literal, e.g.
//   {'descr': '<f4', 'fortran_order': False, 'shape': (1, 3, 224, 224), }
// This parser accepts the subset of Python literals that any .npy writer produces: strings,
// True/False/None, integers and (nested) tuples/lists. A list-valued 'descr' (structured dtype)
// therefore parses, and is rejected afterwards as unsupported.
struct Value {
  enum Kind { kString, kBool, kNone, kInt, kSequence } kind = kNone;
  std::string str;
  bool boolean = false;
  int64_t integer = 0;
  std::vector<Value> items;
};

class HeaderParser {
 public:
  HeaderParser(const std::string& path, std::string_view text) : path_(path), text_(text) {}

  // Returns the dict's entries in file order.
  std::vector<std::pair<std::string, Value>> ParseDict() {
    std::vector<std::pair<std::string, Value>> entries;
    Expect('{');
    while (!Consume('}')) {
      Value key = ParseValue();
      if (key.kind != Value::kString) Bad("dict keys must be strings");
      Expect(':');
      entries.emplace_back(key.str, ParseValue());
      if (!Consume(',')) {
        Expect('}');
        break;
      }
    }
    SkipSpace();
    if (pos_ != text_.size()) Bad("unexpected text after the dict");
    return entries;
  }

 private:
  [[noreturn]] void Bad(std::string_view why) {
    Fail(ErrorCode::kInvalidArgument, "{}: malformed .npy header: {} (at offset {} of \"{}\")",
         path_, why, pos_, Printable());
  }

  std::string Printable() const {
    std::string s;
    for (char c : text_.substr(0, 200)) s += (c == '\n') ? ' ' : c;
    return s;
  }

  void SkipSpace() {
    while (pos_ < text_.size() && (text_[pos_] == ' ' || text_[pos_] == '\t' ||
                                   text_[pos_] == '\n' || text_[pos_] == '\r'))
      ++pos_;
  }

  bool Consume(char c) {
    SkipSpace();
    if (pos_ < text_.size() && text_[pos_] == c) {
      ++pos_;
      return true;
    }
    return false;
  }

  void Expect(char c) {
    if (!Consume(c)) Bad(fmt::format("expected '{}'", c));
  }

  Value ParseValue() {
    SkipSpace();
    if (pos_ >= text_.size()) Bad("unexpected end of header");
    char c = text_[pos_];
    Value v;
    if (c == '\'' || c == '"') {
      v.kind = Value::kString;
      ++pos_;
      while (pos_ < text_.size() && text_[pos_] != c) {
        if (text_[pos_] == '\\') Bad("escapes in strings are not supported");
        v.str += text_[pos_++];
      }
      if (pos_ >= text_.size()) Bad("unterminated string");
      ++pos_;
    } else if (c == '(' || c == '[') {
      v.kind = Value::kSequence;
      char close = (c == '(') ? ')' : ']';
      ++pos_;
      while (!Consume(close)) {
        v.items.push_back(ParseValue());
        if (!Consume(',')) {
          Expect(close);
          break;
        }
      }
    } else if (c == '-' || (c >= '0' && c <= '9')) {
      v.kind = Value::kInt;
      bool negative = Consume('-');
      size_t start = pos_;
      uint64_t n = 0;
      while (pos_ < text_.size() && text_[pos_] >= '0' && text_[pos_] <= '9') {
        n = n * 10 + static_cast<uint64_t>(text_[pos_++] - '0');
        if (n > static_cast<uint64_t>(std::numeric_limits<int64_t>::max()))
          Bad("integer too large");
      }
      if (pos_ == start) Bad("expected digits");
      if (pos_ < text_.size() && (text_[pos_] == 'L' || text_[pos_] == 'l')) ++pos_;  // Python 2
      v.integer = negative ? -static_cast<int64_t>(n) : static_cast<int64_t>(n);
    } else {
      size_t start = pos_;
      while (pos_ < text_.size() && std::isalpha(static_cast<unsigned char>(text_[pos_]))) ++pos_;
      std::string_view word = text_.substr(start, pos_ - start);
      if (word == "True" || word == "False") {
        v.kind = Value::kBool;
        v.boolean = (word == "True");
      } else if (word == "None") {
        v.kind = Value::kNone;
      } else {
        pos_ = start;
        Bad("unexpected token");
      }
    }
    return v;
  }

  const std::string& path_;
  std::string_view text_;
  size_t pos_ = 0;
};

DType ParseDescr(const std::string& path, const Value& descr) {
  if (descr.kind != Value::kString)
    Fail(ErrorCode::kInvalidArgument, "{}: structured .npy dtypes are not supported", path);
  std::string_view s = descr.str;
  char order = '=';
  if (!s.empty() && (s[0] == '<' || s[0] == '>' || s[0] == '|' || s[0] == '=')) {
    order = s[0];
    s.remove_prefix(1);
  }
  for (const auto& e : kDescrs) {
    if (e.code != s) continue;
    // Byte order only matters for multi-byte types; numpy writes '|' for single-byte ones.
    if (DTypeSize(e.dtype) > 1) {
      if (order == '>')
        Fail(ErrorCode::kInvalidArgument,
             "{}: big-endian dtype '{}' is not supported; convert it with "
             "arr.astype(arr.dtype.newbyteorder('<'))",
             path, descr.str);
      if (order == '|')
        Fail(ErrorCode::kInvalidArgument, "{}: invalid dtype '{}' ('|' on a multi-byte type)", path,
             descr.str);
    }
    return e.dtype;
  }
  Fail(ErrorCode::kInvalidArgument,
       "{}: unsupported dtype '{}' (supported: bool, int/uint 8-64, float 16/32/64)", path,
       descr.str);
}

Shape ParseShapeValue(const std::string& path, const Value& v) {
  if (v.kind != Value::kSequence)
    Fail(ErrorCode::kInvalidArgument, "{}: malformed .npy header: 'shape' is not a tuple", path);
  Shape shape;
  int64_t count = 1;
  bool overflow = false, empty = false;
  for (const Value& d : v.items) {
    if (d.kind != Value::kInt || d.integer < 0)
      Fail(ErrorCode::kInvalidArgument,
           "{}: malformed .npy header: 'shape' must hold non-negative integers", path);
    shape.push_back(d.integer);
    if (d.integer == 0) empty = true;
    if (overflow || empty) continue;
    if (count > std::numeric_limits<int64_t>::max() / d.integer)
      overflow = true;
    else
      count *= d.integer;
  }
  if (overflow && !empty)
    Fail(ErrorCode::kInvalidArgument, "{}: .npy shape {} is too large", path, ShapeStr(shape));
  return shape;
}

std::string DescrFor(DType t) {
  for (const auto& e : kDescrs)
    if (e.dtype == t) return fmt::format("{}{}", DTypeSize(t) == 1 ? '|' : '<', e.code);
  TEXEL_CHECK(false, "no .npy descr for dtype {}", DTypeName(t));
  return "";
}

std::string ShapeTuple(const Shape& shape) {
  if (shape.size() == 1) return fmt::format("({},)", shape[0]);
  return fmt::format("({})", fmt::join(shape, ", "));
}

uint32_t LoadLE(const char* p, size_t n) {
  uint32_t v = 0;
  for (size_t i = 0; i < n; ++i) v |= static_cast<uint32_t>(static_cast<uint8_t>(p[i])) << (8 * i);
  return v;
}

}  // namespace

HostTensor ReadNpy(const std::string& path) {
  std::error_code ec;
  if (!std::filesystem::exists(path, ec)) Fail(ErrorCode::kNotFound, "{}: no such file", path);
  if (std::filesystem::is_directory(path, ec))
    Fail(ErrorCode::kInvalidArgument, "{}: is a directory, not a .npy file", path);
  std::ifstream in(path, std::ios::binary);
  if (!in) Fail(ErrorCode::kIo, "{}: cannot open: {}", path, std::strerror(errno));
  auto file_size = std::filesystem::file_size(path, ec);
  if (ec) Fail(ErrorCode::kIo, "{}: cannot stat: {}", path, ec.message());

  // Preamble: magic, version, header length (2 bytes in 1.0, 4 bytes in 2.0 and 3.0).
  char pre[12] = {};
  in.read(pre, kMagicLen + 2);
  if (static_cast<size_t>(in.gcount()) < kMagicLen + 2 || std::memcmp(pre, kMagic, kMagicLen) != 0)
    Fail(ErrorCode::kInvalidArgument, "{}: not a .npy file (bad magic)", path);
  int major = static_cast<uint8_t>(pre[6]);
  int minor = static_cast<uint8_t>(pre[7]);
  if (major < 1 || major > 3)
    Fail(ErrorCode::kInvalidArgument, "{}: unsupported .npy format version {}.{}", path, major,
         minor);
  size_t len_bytes = (major == 1) ? 2 : 4;
  in.read(pre + 8, static_cast<std::streamsize>(len_bytes));
  if (static_cast<size_t>(in.gcount()) < len_bytes)
    Fail(ErrorCode::kInvalidArgument, "{}: truncated .npy header", path);
  size_t header_len = LoadLE(pre + 8, len_bytes);
  size_t data_offset = 8 + len_bytes + header_len;
  if (data_offset > file_size)
    Fail(ErrorCode::kInvalidArgument, "{}: truncated .npy header: expected {} bytes, found {}",
         path, header_len, file_size - 8 - len_bytes);
  std::string header(header_len, '\0');
  in.read(header.data(), static_cast<std::streamsize>(header_len));
  if (static_cast<size_t>(in.gcount()) != header_len)
    Fail(ErrorCode::kIo, "{}: read error in the .npy header", path);

  std::optional<Value> descr, fortran, shape_value;
  for (auto& [key, value] : HeaderParser(path, header).ParseDict()) {
    if (key == "descr") descr = std::move(value);
    if (key == "fortran_order") fortran = std::move(value);
    if (key == "shape") shape_value = std::move(value);
  }
  if (!descr || !fortran || !shape_value)
    Fail(ErrorCode::kInvalidArgument,
         "{}: malformed .npy header: needs 'descr', 'fortran_order' and 'shape'", path);
  if (fortran->kind != Value::kBool)
    Fail(ErrorCode::kInvalidArgument, "{}: malformed .npy header: 'fortran_order' is not a bool",
         path);
  DType dtype = ParseDescr(path, *descr);
  Shape shape = ParseShapeValue(path, *shape_value);
  // numpy writes Fortran order only for arrays that are not also C-contiguous, so the data would
  // need transposing; rare enough to ask the user to convert instead.
  if (fortran->boolean)
    Fail(ErrorCode::kInvalidArgument,
         "{}: Fortran-order arrays are not supported; save np.ascontiguousarray(arr) instead",
         path);

  uint64_t count = static_cast<uint64_t>(NumElements(shape));
  if (count > std::numeric_limits<uint64_t>::max() / DTypeSize(dtype))
    Fail(ErrorCode::kInvalidArgument, "{}: .npy shape {} is too large", path, ShapeStr(shape));
  uint64_t data_bytes = count * DTypeSize(dtype);
  if (file_size - data_offset < data_bytes)
    Fail(ErrorCode::kInvalidArgument, "{}: truncated: expected {} bytes of data, found {}", path,
         data_bytes, file_size - data_offset);
  // Trailing bytes after the data are ignored, as numpy does.

  HostTensor t(dtype, std::move(shape));
  in.read(reinterpret_cast<char*>(t.bytes.data()), static_cast<std::streamsize>(data_bytes));
  if (static_cast<uint64_t>(in.gcount()) != data_bytes)
    Fail(ErrorCode::kIo, "{}: read error in the .npy data", path);
  return t;
}

void WriteNpy(const std::string& path, const HostTensor& t) {
  size_t data_bytes = static_cast<size_t>(NumElements(t.shape)) * DTypeSize(t.dtype);
  TEXEL_CHECK(t.bytes.size() == data_bytes, "tensor {} {} holds {} bytes, expected {}",
              DTypeName(t.dtype), ShapeStr(t.shape), t.bytes.size(), data_bytes);

  std::string dict = fmt::format("{{'descr': '{}', 'fortran_order': False, 'shape': {}, }}",
                                 DescrFor(t.dtype), ShapeTuple(t.shape));
  // Pad with spaces and a final '\n' so that the data starts 64-byte aligned. Version 1.0 has a
  // 16-bit header length; 2.0 is needed only for absurdly high ranks.
  auto padded_header_len = [&](size_t prefix) {
    return (prefix + dict.size() + 1 + kAlign - 1) / kAlign * kAlign - prefix;
  };
  bool v1 = padded_header_len(kMagicLen + 4) <= 0xffff;
  size_t header_len = padded_header_len(kMagicLen + (v1 ? 4 : 6));
  dict.append(header_len - dict.size() - 1, ' ');
  dict += '\n';

  std::string pre(kMagic, kMagicLen);
  pre += static_cast<char>(v1 ? 1 : 2);
  pre += '\0';
  for (size_t i = 0; i < (v1 ? 2u : 4u); ++i)
    pre += static_cast<char>((header_len >> (8 * i)) & 0xff);

  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  if (!out) Fail(ErrorCode::kIo, "{}: cannot open for writing: {}", path, std::strerror(errno));
  out.write(pre.data(), static_cast<std::streamsize>(pre.size()));
  out.write(dict.data(), static_cast<std::streamsize>(dict.size()));
  out.write(reinterpret_cast<const char*>(t.bytes.data()),
            static_cast<std::streamsize>(t.bytes.size()));
  out.close();
  if (!out) Fail(ErrorCode::kIo, "{}: write failed: {}", path, std::strerror(errno));
}

}  // namespace texel
