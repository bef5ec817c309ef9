#include "runtime/tuning_db.h"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <limits>
#include <sstream>

#include "core/error.h"
#include "core/file_io.h"
#include "runtime/cl/program_cache.h"
#include "runtime/json_fields.h"

namespace texel::runtime {
namespace {

constexpr int kFormatVersion = 1;
// How far a nearest entry may be (the sum of |log2(a/b)| over integer items): shapes within a
// factor of 4 in all. Farther, another shape's choice is a guess worse than the heuristic's: at
// batch 32 on an H100, MobileNetV2's kernels took batch-1 entries and ran 1.7x slower.
constexpr double kNearestWithin = 2.0;

constexpr auto kKeyFields = [](auto& k, auto&& f) {
  f("device", k.device), f("driver", k.driver), f("platform", k.platform);
  f("family", k.family), f("family_version", k.family_version), f("signature", k.signature);
};

TuningEntry ParseLine(const std::string& line) {
  json j = json::parse(line);
  if (!j.is_object()) Fail(ErrorCode::kInvalidArgument, "not a JSON object");
  if (Num<int>(j.at("v")) != kFormatVersion)
    Fail(ErrorCode::kInvalidArgument, "format version {}, this texel reads {}", j.at("v").dump(),
         kFormatVersion);
  TuningEntry e;
  e.key = Read<TuningKey>(j, kKeyFields);
  if (e.key.family.empty() || e.key.family_version < 0)
    Fail(ErrorCode::kInvalidArgument, "no family, or a negative family version");
  const json& params = j.at("params");
  if (!params.is_object()) Fail(ErrorCode::kInvalidArgument, "params is not an object");
  for (const auto& [name, value] : params.items()) e.params[name] = Num<int64_t>(value);
  e.heuristic_us = Num<double>(j.at("heuristic_us"));
  e.tuned_us = Num<double>(j.at("tuned_us"));
  for (double us : {e.heuristic_us, e.tuned_us})
    if (!std::isfinite(us) || us < 0)
      Fail(ErrorCode::kInvalidArgument, "a time that is not a finite, non-negative number");
  return e;
}

// Signature items: name -> value.
std::map<std::string, std::string> Items(const std::string& signature) {
  std::map<std::string, std::string> out;
  std::stringstream list(signature);
  for (std::string item; std::getline(list, item, ',');) {
    size_t eq = item.find('=');
    out[item.substr(0, eq)] = eq == std::string::npos ? "" : item.substr(eq + 1);
  }
  return out;
}

bool ParseInt(const std::string& s, int64_t* v) {
  if (s.empty() || s.find_first_not_of("0123456789") != std::string::npos || s.size() > 18)
    return false;
  *v = std::stoll(s);
  return true;
}

// The distance between two signatures (infinite when they cannot stand for each other).
double Distance(const std::string& a, const std::string& b) {
  auto x = Items(a), y = Items(b);
  if (x.size() != y.size()) return INFINITY;
  double d = 0;
  for (const auto& [name, value] : x) {
    auto it = y.find(name);
    if (it == y.end()) return INFINITY;
    int64_t p, q;
    if (ParseInt(value, &p) && ParseInt(it->second, &q))
      d += std::abs(std::log2((p + 1.0) / (q + 1.0)));
    else if (value != it->second)
      return INFINITY;
  }
  return d;
}

// Adds e, or replaces the entry of its key.
void Upsert(std::vector<TuningEntry>& entries, TuningEntry e) {
  auto it = std::find_if(entries.begin(), entries.end(),
                         [&](const TuningEntry& x) { return x.key == e.key; });
  if (it != entries.end())
    *it = std::move(e);
  else
    entries.push_back(std::move(e));
}

}  // namespace

bool TuningKey::SameFamily(const TuningKey& o) const {
  return device == o.device && driver == o.driver && platform == o.platform && family == o.family &&
         family_version == o.family_version;
}

TuningKey TuningKey::For(const cl::DeviceInfo& device, std::string family, int family_version,
                         std::string signature) {
  return {device.name,       device.driver_version, device.platform_version,
          std::move(family), family_version,        std::move(signature)};
}

std::string TuningDb::EntryLine(const TuningEntry& e) {
  json j = Write(e.key, kKeyFields);
  j["v"] = kFormatVersion;
  json params = json::object();
  for (const auto& [name, value] : e.params) params[name] = value;
  j["params"] = params;
  j["heuristic_us"] = e.heuristic_us;
  j["tuned_us"] = e.tuned_us;
  return j.dump();
}

TuningDb TuningDb::Load(const std::string& path, const Check& check) {
  TuningDb db;
  std::ifstream f(path, std::ios::binary);
  if (!f) return db;
  std::string line;
  for (int number = 1; std::getline(f, line); ++number) {
    if (line.empty()) continue;
    std::string why;
    try {
      TuningEntry e = ParseLine(line);
      if (!check || check(e, &why)) {
        Upsert(db.entries_, std::move(e));  // a key on two lines (an edited file): the later
        continue;
      }
    } catch (const json::exception& e) {
      why = e.what();
    } catch (const Error& e) {
      why = e.message();
    }
    db.notices_.push_back(fmt::format("{}:{}: entry ignored: {}", path, number, why));
  }
  return db;
}

const TuningEntry* TuningDb::Find(const TuningKey& key) const {
  for (const TuningEntry& e : entries_)
    if (e.key == key) return &e;
  return nullptr;
}

const TuningEntry* TuningDb::FindNearest(
    const TuningKey& key, const std::function<bool(const TuningEntry&)>& accept) const {
  const TuningEntry* best = nullptr;
  double best_distance = INFINITY;
  for (const TuningEntry& e : entries_) {
    if (!e.key.SameFamily(key) || (accept && !accept(e))) continue;
    double d = Distance(e.key.signature, key.signature);
    if (d <= kNearestWithin && d < best_distance) best = &e, best_distance = d;
  }
  return best;
}

void TuningDb::Store(const std::string& path, const std::vector<TuningEntry>& entries) {
  std::error_code ec;
  std::filesystem::path dir = std::filesystem::path(path).parent_path();
  if (!dir.empty()) std::filesystem::create_directories(dir, ec);
  std::string lock_path = path + ".lock";
  int lock = ::open(lock_path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (lock < 0 || ::flock(lock, LOCK_EX) != 0) {
    if (lock >= 0) ::close(lock);
    Fail(ErrorCode::kIo, "{}: cannot lock {}", path, lock_path);
  }
  try {
    TuningDb db = Load(path);  // as it is now, under the lock
    for (const TuningEntry& e : entries) Upsert(db.entries_, e);
    std::string text;
    for (const TuningEntry& e : db.entries_) text += EntryLine(e) + "\n";
    WriteFileAtomically(path, text);
  } catch (...) {
    ::close(lock);
    throw;
  }
  ::close(lock);
}

std::string TuningDb::DefaultPath(const cl::DeviceInfo& device) {
  cl::ProgramCache cache = cl::ProgramCache::Default();
  if (!cache.enabled()) return "";
  std::string name = device.name;
  for (char& c : name)
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '-' && c != '.') c = '_';
  return cache.dir() + "/tuning/" + name + ".jsonl";
}

}  // namespace texel::runtime
