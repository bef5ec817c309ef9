// The tuning database: entries survive the file, lookups fall back to the nearest shape of the
// same family and device, damaged or foreign lines are skipped with a notice, and processes
// storing at once lose nothing.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <random>

#include "runtime/tuning_db.h"

namespace texel::runtime {
namespace {

std::string TempPath(const std::string& name) {
  std::string dir = (std::filesystem::temp_directory_path() /
                     ("texel_tuning_" + std::to_string(::getpid()) + "_" + name))
                        .string();
  std::filesystem::remove_all(dir);
  return dir + "/db.jsonl";
}

TuningEntry Entry(const std::string& signature, int64_t tile, double us = 10) {
  TuningEntry e;
  e.key = {"Device X", "1.0", "OpenCL 3.0", "matmul", 2, signature};
  e.params = {{"tile", tile}, {"vector", 4}};
  e.heuristic_us = us * 1.5, e.tuned_us = us;
  return e;
}

TEST(TuningDbTest, EntriesSurviveTheFileAndTheNearestShapeIsFound) {
  std::string path = TempPath("round_trip");
  std::mt19937 rng(std::random_device{}());
  int64_t tile = 1 + rng() % 64;
  TuningDb::Store(path, {Entry("m=128,n=768,k=768,dtype=f32", tile),
                         Entry("m=512,n=512,k=64,dtype=f32", tile + 1),
                         Entry("m=128,n=768,k=768,dtype=f16", tile + 2)});
  TuningDb db = TuningDb::Load(path);
  EXPECT_TRUE(db.notices().empty());
  ASSERT_EQ(db.entries().size(), 3u);
  const TuningEntry* exact = db.Find(Entry("m=128,n=768,k=768,dtype=f32", 0).key);
  ASSERT_NE(exact, nullptr);
  EXPECT_EQ(exact->params.at("tile"), tile);
  EXPECT_EQ(exact->tuned_us, 10);
  // Not tuned: the nearest shape of the same dtype.
  TuningKey unseen = Entry("m=120,n=700,k=800,dtype=f32", 0).key;
  EXPECT_EQ(db.Find(unseen), nullptr);
  ASSERT_NE(db.FindNearest(unseen), nullptr);
  EXPECT_EQ(db.FindNearest(unseen)->params.at("tile"), tile);
  // Another dtype, family version or device: nothing (the heuristic then).
  EXPECT_EQ(db.FindNearest(Entry("m=128,n=768,k=768,dtype=bf16", 0).key), nullptr);
  TuningKey other = unseen;
  other.family_version = 3;
  EXPECT_EQ(db.FindNearest(other), nullptr);
  other = unseen;
  other.driver = "2.0";
  EXPECT_EQ(db.FindNearest(other), nullptr);
  // Storing a key again replaces its entry.
  TuningDb::Store(path, {Entry("m=128,n=768,k=768,dtype=f32", tile + 7, 5)});
  db = TuningDb::Load(path);
  EXPECT_EQ(db.entries().size(), 3u);
  EXPECT_EQ(db.Find(unseen = Entry("m=128,n=768,k=768,dtype=f32", 0).key)->params.at("tile"),
            tile + 7);
}

TEST(TuningDbTest, DamagedAndForeignLinesAreSkippedWithANotice) {
  std::string path = TempPath("damaged");
  TuningDb::Store(path, {Entry("m=1,n=2,k=3", 8)});
  std::string good = TuningDb::EntryLine(Entry("m=4,n=5,k=6", 16));
  auto with = [&](const std::string& from, const std::string& to) {
    std::string s = good;
    s.replace(s.find(from), from.size(), to);
    return s;
  };
  {
    std::ofstream f(path, std::ios::app);
    f << good.substr(0, good.size() / 2) << "\n"                 // truncated
      << with("\"v\":1", "\"v\":7") << "\n"                      // another format
      << with("\"tile\":16", "\"tile\":\"big\"") << "\n"         // not an integer
      << with("\"tuned_us\":10.0", "\"tuned_us\":-1.0") << "\n"  // impossible time
      << with("\"tile\":16", "\"tile\":100000") << "\n"          // outside the space
      << "\n"
      << good << "\n";
  }
  TuningDb::Check check = [](const TuningEntry& e, std::string* why) {
    if (e.params.at("tile") > 1024) {
      *why = "tile " + std::to_string(e.params.at("tile")) + " is not in the family's space";
      return false;
    }
    return true;
  };
  TuningDb db = TuningDb::Load(path, check);
  EXPECT_EQ(db.entries().size(), 2u);
  ASSERT_EQ(db.notices().size(), 5u);
  EXPECT_NE(db.notices()[0].find(path + ":2: entry ignored"), std::string::npos);
  EXPECT_NE(db.notices()[1].find("format version 7"), std::string::npos);
  EXPECT_NE(db.notices()[2].find(":4:"), std::string::npos);
  EXPECT_NE(db.notices()[3].find("finite, non-negative"), std::string::npos);
  EXPECT_NE(db.notices()[4].find("not in the family's space"), std::string::npos);
  // A store keeps the good entries and drops the damaged lines (the good line of m=4 comes
  // after the one outside the space and replaces it).
  TuningDb::Store(path, {Entry("m=7,n=8,k=9", 32)});
  db = TuningDb::Load(path);
  EXPECT_TRUE(db.notices().empty());
  EXPECT_EQ(db.entries().size(), 3u);
}

TEST(TuningDbTest, ProcessesStoringAtOnceLoseNothing) {
  std::string path = TempPath("concurrent");
  constexpr int kProcesses = 4, kEach = 25;
  std::vector<pid_t> children;
  for (int p = 0; p < kProcesses; ++p) {
    pid_t pid = ::fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
      for (int i = 0; i < kEach; ++i)
        TuningDb::Store(path, {Entry("p=" + std::to_string(p) + ",i=" + std::to_string(i), i)});
      ::_exit(0);
    }
    children.push_back(pid);
  }
  for (pid_t pid : children) {
    int status = 0;
    ASSERT_EQ(::waitpid(pid, &status, 0), pid);
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  }
  TuningDb db = TuningDb::Load(path);
  EXPECT_TRUE(db.notices().empty());
  EXPECT_EQ(db.entries().size(), static_cast<size_t>(kProcesses * kEach));
}

TEST(TuningDbTest, DefaultPathIsInTheCacheDirectory) {
  cl::DeviceInfo d;
  d.name = "NVIDIA H100 80GB HBM3 / x";
  ::setenv("TEXEL_CACHE_DIR", "/tmp/texel-cache-test", 1);
  EXPECT_EQ(TuningDb::DefaultPath(d),
            "/tmp/texel-cache-test/tuning/NVIDIA_H100_80GB_HBM3___x.jsonl");
  ::setenv("TEXEL_CACHE_DIR", "off", 1);
  EXPECT_EQ(TuningDb::DefaultPath(d), "");
  ::unsetenv("TEXEL_CACHE_DIR");
}

}  // namespace
}  // namespace texel::runtime
