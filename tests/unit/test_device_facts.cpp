// Device facts (texel devices --facts): every field survives the file, and bad files are named.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "core/error.h"
#include "core/file_io.h"
#include "kernel_test_util.h"
#include "runtime/cl/device_facts.h"

namespace texel {
namespace {

using testing::SharedContext;

std::string Scratch(const std::string& name) {
  return (std::filesystem::temp_directory_path() / ("texel_facts_" + name)).string();
}

TEST(DeviceFactsTest, EveryFieldSurvivesTheFile) {
  cl::DeviceInfo here = SharedContext()->info();
  here.extensions.push_back("cl_texel_test_extension");  // a list that is not empty
  here.intel_sub_group_sizes = {8, 16};
  here.nv_cc_major = 9, here.nv_warp_size = 32;
  std::string path = Scratch("here.json");
  WriteFileAtomically(path, cl::DeviceFactsJson(here));
  cl::DeviceInfo read = cl::ReadDeviceFacts(path);
  // Everything but the handles and indices, compared through the same JSON.
  EXPECT_EQ(cl::DeviceFactsJson(read), cl::DeviceFactsJson(here));
  EXPECT_EQ(read.name, here.name);
  EXPECT_EQ(read.extensions, here.extensions);
  EXPECT_EQ(read.max_work_item_sizes, here.max_work_item_sizes);
  EXPECT_EQ(read.device, nullptr);
}

// Facts files written before a later field (fp32_correct_divide) still read, the field at its
// default (false: divisions not known to be correctly rounded).
TEST(DeviceFactsTest, FilesWithoutLaterFieldsRead) {
  cl::DeviceInfo here = SharedContext()->info();
  here.fp32_correct_divide = true;
  std::string text = cl::DeviceFactsJson(here);
  size_t at = text.find("\"fp32_correct_divide\"");
  ASSERT_NE(at, std::string::npos);
  text.erase(at, text.find('\n', at) - at + 1);
  std::string path = Scratch("older.json");
  std::ofstream(path) << text;
  cl::DeviceInfo read = cl::ReadDeviceFacts(path);
  EXPECT_FALSE(read.fp32_correct_divide);
  EXPECT_EQ(read.name, here.name);
}

std::string ReadError(const std::string& text) {
  std::string path = Scratch("bad.json");
  std::ofstream(path) << text;
  try {
    cl::ReadDeviceFacts(path);
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument);
    EXPECT_NE(std::string(e.what()).find(path), std::string::npos) << e.what();
    return e.what();
  }
  return "";
}

TEST(DeviceFactsTest, BadFilesAreNamed) {
  std::string good = cl::DeviceFactsJson(SharedContext()->info());
  EXPECT_NE(ReadError("{ not json").find("not valid device facts"), std::string::npos);
  EXPECT_NE(ReadError("{}").find("not device facts"), std::string::npos);
  std::string future = good;
  future.replace(future.find("\"texel_device_facts\": 1"), 23, "\"texel_device_facts\": 9");
  EXPECT_NE(ReadError(future).find("version 9"), std::string::npos);
  std::string negative = good;
  size_t at = negative.find("\"compute_units\": ");
  negative = negative.substr(0, at + 17) + "-" + negative.substr(at + 17);
  EXPECT_NE(ReadError(negative).find("out of range"), std::string::npos);
  std::string missing = good;
  at = missing.find("\"fp16\"");
  missing.erase(at, missing.find('\n', at) - at + 1);
  EXPECT_NE(ReadError(missing).find("fp16"), std::string::npos);
  std::string kind = good;
  at = kind.find("\"type\": \"");
  kind.replace(at, kind.find('"', at + 9) - at + 1, "\"type\": \"TPU\"");
  EXPECT_NE(ReadError(kind).find("type: device kind 'TPU' is unknown"), std::string::npos)
      << ReadError(kind);
  EXPECT_THROW(cl::ReadDeviceFacts(Scratch("absent.json")), Error);
  // A directory opens but cannot be read: an error naming it, not the stream's exception.
  try {
    cl::ReadDeviceFacts(::testing::TempDir());
    ADD_FAILURE() << "a directory read as device facts";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kIo) << e.what();
    EXPECT_NE(std::string(e.what()).find("cannot read"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace texel
