// Tests for core/npy: round trips, files written by numpy, and the errors users will meet.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>

#include "core/error.h"
#include "core/npy.h"

namespace texel {
namespace {

namespace fs = std::filesystem;

// Fixtures generated with numpy 1.24 (np.lib.format.write_array), kept inline so the unit tests
// need no Python. Each comment shows the array.
// np.array([[1.5, -2, 0.25], [3, 1e-3, -1e6]], dtype='<f4')
constexpr char kNumpyF32[] =
    "\x93NUMPY\x01\x00v\x00{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }"
    "                                                          \x0a\x00\x00\xc0\x3f\x00"
    "\x00\x00\xc0\x00\x00\x80>\x00\x00@@o\x12\x83:\x00$t\xc9";
// np.array([-1, 2**40, 7], dtype='<i8'), format version 2.0
constexpr char kNumpyI64V2[] =
    "\x93NUMPY\x02\x00t\x00\x00\x00{'descr': '<i8', 'fortran_order': False, 'shape': ("
    "3,), }                                                          \x0a\xff\xff\xff\xff"
    "\xff\xff\xff\xff\x00\x00\x00\x00\x00\x01\x00\x00\x07\x00\x00\x00\x00\x00\x00\x00";
// np.array([True, False, True]), format version 3.0
constexpr char kNumpyBoolV3[] =
    "\x93NUMPY\x03\x00t\x00\x00\x00{'descr': '|b1', 'fortran_order': False, 'shape': ("
    "3,), }                                                          \x0a\x01\x00\x01";
// np.array(0.5, dtype='<f2')
constexpr char kNumpyF16Scalar[] =
    "\x93NUMPY\x01\x00v\x00{'descr': '<f2', 'fortran_order': False, 'shape': (), }    "
    "                                                          \x0a\x00"
    "8";
// np.zeros((0, 4), dtype='u1')
constexpr char kNumpyU8Empty[] =
    "\x93NUMPY\x01\x00v\x00{'descr': '|u1', 'fortran_order': False, 'shape': (0, 4), }"
    "                                                          \x0a";

std::string Bytes(const char* literal, size_t size_with_nul) {
  return std::string(literal, size_with_nul - 1);
}
#define FIXTURE(name) Bytes(name, sizeof(name))

class NpyTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    dir_ =
        fs::temp_directory_path() / ("texel_npy_" + std::to_string(getpid()) + "_" + info->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  std::string PathOf(const std::string& name) const { return (dir_ / name).string(); }

  std::string WriteFile(const std::string& name, const std::string& bytes) const {
    std::string path = PathOf(name);
    std::ofstream(path, std::ios::binary) << bytes;
    return path;
  }

  std::string ReadFile(const std::string& path) const {
    std::ifstream in(path, std::ios::binary);
    return std::string(std::istreambuf_iterator<char>(in), {});
  }

  // A version 1.0 file with the given header dict (padded like numpy) followed by `data`.
  std::string WriteNpyText(const std::string& name, std::string dict, const std::string& data) {
    while ((10 + dict.size() + 1) % 64 != 0) dict += ' ';
    dict += '\n';
    std::string bytes("\x93NUMPY\x01\x00", 8);
    bytes += static_cast<char>(dict.size() & 0xff);
    bytes += static_cast<char>(dict.size() >> 8);
    return WriteFile(name, bytes + dict + data);
  }

  // Reads `path`, expecting an error with `code` whose message names the file and has `text`.
  void ExpectError(const std::string& path, ErrorCode code, const std::string& text) {
    try {
      ReadNpy(path);
      FAIL() << "expected an error reading " << path;
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), code) << e.what();
      EXPECT_NE(e.message().find(path), std::string::npos) << e.what();
      EXPECT_NE(e.message().find(text), std::string::npos) << e.what();
    }
  }

  fs::path dir_;
};

template <typename T>
HostTensor MakeTensor(DType dtype, Shape shape, std::initializer_list<T> values) {
  HostTensor t(dtype, std::move(shape));
  EXPECT_EQ(static_cast<size_t>(t.size()), values.size());
  std::memcpy(t.bytes.data(), std::data(values), t.bytes.size());
  return t;
}

void ExpectSame(const HostTensor& a, const HostTensor& b) {
  EXPECT_EQ(a.dtype, b.dtype);
  EXPECT_EQ(a.shape, b.shape);
  EXPECT_EQ(a.bytes, b.bytes);
}

TEST_F(NpyTest, RoundTripF32) {
  auto t = MakeTensor<float>(DType::kFloat32, {2, 1, 3}, {1.5f, -2.f, 0.f, 1e-30f, 3e38f, -0.f});
  WriteNpy(PathOf("a.npy"), t);
  ExpectSame(ReadNpy(PathOf("a.npy")), t);
}

TEST_F(NpyTest, RoundTripI64) {
  auto t = MakeTensor<int64_t>(DType::kInt64, {4}, {-1, 0, int64_t{1} << 40, INT64_MIN});
  WriteNpy(PathOf("a.npy"), t);
  ExpectSame(ReadNpy(PathOf("a.npy")), t);
}

TEST_F(NpyTest, RoundTripBool) {
  auto t = MakeTensor<uint8_t>(DType::kBool, {2, 2}, {1, 0, 0, 1});
  WriteNpy(PathOf("a.npy"), t);
  ExpectSame(ReadNpy(PathOf("a.npy")), t);
  EXPECT_NE(ReadFile(PathOf("a.npy")).find("'descr': '|b1'"), std::string::npos);
}

TEST_F(NpyTest, RoundTripF16) {
  HostTensor t(DType::kFloat16, {3});
  t.data<uint16_t>()[0] = FloatToHalf(1.0f);
  t.data<uint16_t>()[1] = FloatToHalf(-0.5f);
  t.data<uint16_t>()[2] = FloatToHalf(65504.0f);
  WriteNpy(PathOf("a.npy"), t);
  HostTensor r = ReadNpy(PathOf("a.npy"));
  ExpectSame(r, t);
  EXPECT_EQ(r.GetDouble(2), 65504.0);
}

TEST_F(NpyTest, RoundTripScalar) {
  auto t = MakeTensor<double>(DType::kFloat64, {}, {3.25});
  WriteNpy(PathOf("a.npy"), t);
  EXPECT_NE(ReadFile(PathOf("a.npy")).find("'shape': ()"), std::string::npos);
  HostTensor r = ReadNpy(PathOf("a.npy"));
  ExpectSame(r, t);
  EXPECT_EQ(r.size(), 1);
}

TEST_F(NpyTest, RoundTripEveryDTypeAndRank) {
  for (int d = 0; d <= static_cast<int>(DType::kBool); ++d) {
    for (const Shape& shape : {Shape{}, Shape{5}, Shape{0, 3}, Shape{2, 3, 1, 2, 1, 1, 1, 2}}) {
      HostTensor t(static_cast<DType>(d), shape);
      for (size_t i = 0; i < t.bytes.size(); ++i) t.bytes[i] = static_cast<uint8_t>(i * 7 % 2);
      std::string path = PathOf("a.npy");
      WriteNpy(path, t);
      SCOPED_TRACE(std::string(DTypeName(t.dtype)) + " " + ShapeStr(shape));
      ExpectSame(ReadNpy(path), t);
      // Version 1.0, data aligned to 64 bytes, header ends in '\n'.
      std::string bytes = ReadFile(path);
      ASSERT_GE(bytes.size(), 10u);
      EXPECT_EQ(bytes[6], '\x01');
      size_t header_len = static_cast<uint8_t>(bytes[8]) | static_cast<uint8_t>(bytes[9]) << 8;
      EXPECT_EQ((10 + header_len) % 64, 0u);
      EXPECT_EQ(bytes[10 + header_len - 1], '\n');
      EXPECT_EQ(bytes.size(), 10 + header_len + t.bytes.size());
    }
  }
}

TEST_F(NpyTest, ReadsNumpyF32) {
  HostTensor t = ReadNpy(WriteFile("f32.npy", FIXTURE(kNumpyF32)));
  ExpectSame(t, MakeTensor<float>(DType::kFloat32, {2, 3}, {1.5f, -2.f, 0.25f, 3.f, 1e-3f, -1e6f}));
}

TEST_F(NpyTest, ReadsNumpyVersion2I64) {
  HostTensor t = ReadNpy(WriteFile("i64.npy", FIXTURE(kNumpyI64V2)));
  ExpectSame(t, MakeTensor<int64_t>(DType::kInt64, {3}, {-1, int64_t{1} << 40, 7}));
}

TEST_F(NpyTest, ReadsNumpyVersion3Bool) {
  HostTensor t = ReadNpy(WriteFile("b.npy", FIXTURE(kNumpyBoolV3)));
  ExpectSame(t, MakeTensor<uint8_t>(DType::kBool, {3}, {1, 0, 1}));
}

TEST_F(NpyTest, ReadsNumpyF16Scalar) {
  HostTensor t = ReadNpy(WriteFile("h.npy", FIXTURE(kNumpyF16Scalar)));
  EXPECT_EQ(t.dtype, DType::kFloat16);
  EXPECT_EQ(t.shape, Shape{});
  EXPECT_EQ(t.GetDouble(0), 0.5);
}

TEST_F(NpyTest, ReadsNumpyEmpty) {
  HostTensor t = ReadNpy(WriteFile("e.npy", FIXTURE(kNumpyU8Empty)));
  EXPECT_EQ(t.dtype, DType::kUInt8);
  EXPECT_EQ(t.shape, (Shape{0, 4}));
  EXPECT_TRUE(t.bytes.empty());
}

TEST_F(NpyTest, WritesTheSameBytesAsNumpy) {
  WriteNpy(PathOf("a.npy"), ReadNpy(WriteFile("f32.npy", FIXTURE(kNumpyF32))));
  EXPECT_EQ(ReadFile(PathOf("a.npy")), FIXTURE(kNumpyF32));
  WriteNpy(PathOf("h.npy"), ReadNpy(WriteFile("h16.npy", FIXTURE(kNumpyF16Scalar))));
  EXPECT_EQ(ReadFile(PathOf("h.npy")), FIXTURE(kNumpyF16Scalar));
}

TEST_F(NpyTest, AcceptsHeaderVariants) {
  std::string four(4, '\0');
  // Native byte order, double quotes, Python 2 longs, no trailing comma, other key order.
  HostTensor t = ReadNpy(
      WriteNpyText("a.npy", R"({"shape": (2L,), "fortran_order": False, "descr": "=i2"})", four));
  EXPECT_EQ(t.dtype, DType::kInt16);
  EXPECT_EQ(t.shape, Shape{2});
  // Byte order is irrelevant for single-byte types.
  for (const char* descr : {"|i1", "<i1", "=u1", ">u1", "|b1"}) {
    std::string dict =
        fmt::format("{{'descr': '{}', 'fortran_order': False, 'shape': (4,), }}", descr);
    EXPECT_EQ(ReadNpy(WriteNpyText("b.npy", dict, four)).shape, Shape{4}) << descr;
  }
  // Scalars; trailing bytes after the data are ignored, as numpy does.
  t = ReadNpy(WriteNpyText("c.npy", "{'descr': '<u4', 'fortran_order': False, 'shape': ()}",
                           four + "extra"));
  EXPECT_EQ(t.GetInt(0), 0);
}

TEST_F(NpyTest, MissingFile) {
  ExpectError(PathOf("missing.npy"), ErrorCode::kNotFound, "no such");
}

TEST_F(NpyTest, BadMagic) {
  ExpectError(WriteFile("x.npy", "PK\x03\x04 this is a zip file"), ErrorCode::kInvalidArgument,
              "not a .npy file (bad magic)");
  ExpectError(WriteFile("y.npy", ""), ErrorCode::kInvalidArgument, "bad magic");
}

TEST_F(NpyTest, TruncatedData) {
  std::string dict = "{'descr': '<f4', 'fortran_order': False, 'shape': (1, 3, 224, 224), }";
  ExpectError(WriteNpyText("x.npy", dict, std::string(1000, '\0')), ErrorCode::kInvalidArgument,
              "truncated: expected 602112 bytes of data, found 1000");
}

TEST_F(NpyTest, TruncatedHeader) {
  std::string bytes = FIXTURE(kNumpyF32).substr(0, 40);
  ExpectError(WriteFile("x.npy", bytes), ErrorCode::kInvalidArgument, "truncated .npy header");
  ExpectError(WriteFile("y.npy", bytes.substr(0, 9)), ErrorCode::kInvalidArgument,
              "truncated .npy header");
}

TEST_F(NpyTest, FortranOrder) {
  std::string dict = "{'descr': '<f4', 'fortran_order': True, 'shape': (2, 3), }";
  ExpectError(WriteNpyText("x.npy", dict, std::string(24, '\0')), ErrorCode::kInvalidArgument,
              "Fortran-order");
}

TEST_F(NpyTest, BigEndian) {
  std::string dict = "{'descr': '>f4', 'fortran_order': False, 'shape': (2,), }";
  ExpectError(WriteNpyText("x.npy", dict, std::string(8, '\0')), ErrorCode::kInvalidArgument,
              "big-endian dtype '>f4'");
}

TEST_F(NpyTest, UnsupportedDTypes) {
  for (const char* descr : {"<c8", "<U4", "|S3", "|O", "<M8[ns]", "|f4"}) {
    std::string dict =
        fmt::format("{{'descr': '{}', 'fortran_order': False, 'shape': (1,), }}", descr);
    ExpectError(WriteNpyText("x.npy", dict, std::string(16, '\0')), ErrorCode::kInvalidArgument,
                descr);
  }
  std::string structured =
      "{'descr': [('a', '<f4'), ('b', '<i4')], 'fortran_order': False, "
      "'shape': (1,), }";
  ExpectError(WriteNpyText("s.npy", structured, std::string(8, '\0')), ErrorCode::kInvalidArgument,
              "structured");
}

TEST_F(NpyTest, MalformedHeaders) {
  for (const char* dict : {
           "{'descr': '<f4', 'fortran_order': False}",                      // no shape
           "{'descr': '<f4', 'fortran_order': False, 'shape': (2, -1), }",  // negative dim
           "{'descr': '<f4', 'fortran_order': 0, 'shape': (2,), }",         // not a bool
           "{'descr': '<f4', 'fortran_order': False, 'shape': 2, }",        // not a tuple
           "{'descr': '<f4', 'fortran_order': False, 'shape': (2,), ",      // unterminated
           "{'descr': '<f4' 'fortran_order': False, 'shape': (2,), }",      // missing comma
           "['descr', '<f4']",                                              // not a dict
           "{'descr': '<f4', 'fortran_order': False, 'shape': (99999999999999999999,), }",
           "{'descr': '<f4', 'fortran_order': False, 'shape': (4294967296, 4294967296), }",
       }) {
    ExpectError(WriteNpyText("x.npy", dict, std::string(8, '\0')), ErrorCode::kInvalidArgument,
                "x.npy");
  }
}

TEST_F(NpyTest, UnsupportedVersion) {
  std::string bytes = FIXTURE(kNumpyF32);
  bytes[6] = '\x04';
  ExpectError(WriteFile("x.npy", bytes), ErrorCode::kInvalidArgument, "version 4.0");
}

TEST_F(NpyTest, DirectoryIsNotAFile) {
  ExpectError(dir_.string(), ErrorCode::kInvalidArgument, "directory");
}

TEST_F(NpyTest, WriteFailureNamesTheFile) {
  std::string path = PathOf("no/such/dir/a.npy");
  try {
    WriteNpy(path, HostTensor(DType::kFloat32, {2}));
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kIo);
    EXPECT_NE(e.message().find(path), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace texel
