// The kernel templates (src/codegen/opencl/kernels/*.cl) as text: a plan joins many kernels'
// sources into one program, so every macro a template defines must be undefined by its end, or
// the next kernel of another template (or of the same one with other parameters) sees it.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <regex>
#include <set>
#include <sstream>
#include <string>

namespace texel {
namespace {

TEST(KernelTemplateTest, EveryMacroIsUndefinedByTheEnd) {
  const std::filesystem::path dir = std::filesystem::path(TEXEL_TEST_DATA_DIR) / ".." / ".." /
                                    "src" / "codegen" / "opencl" / "kernels";
  const std::regex define(R"(^\s*#\s*define\s+([A-Za-z_]\w*))"), undef(R"(^\s*#\s*undef\s+(\w+))");
  int templates = 0;
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    if (entry.path().extension() != ".cl") continue;
    ++templates;
    std::ifstream in(entry.path());
    std::set<std::string> open;  // defined and not yet undefined
    std::string line;
    std::smatch m;
    while (std::getline(in, line)) {
      if (std::regex_search(line, m, define)) open.insert(m[1]);
      if (std::regex_search(line, m, undef)) open.erase(m[1]);
    }
    std::ostringstream left;
    for (const std::string& name : open) left << ' ' << name;
    EXPECT_TRUE(open.empty()) << entry.path().filename() << " leaves defined:" << left.str();
  }
  EXPECT_GT(templates, 20);
}

}  // namespace
}  // namespace texel
