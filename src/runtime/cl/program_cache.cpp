#include "runtime/cl/program_cache.h"

#include <fmt/format.h>

#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <optional>
#include <string_view>
#include <system_error>

#include "core/error.h"
#include "core/file_io.h"
#include "core/sha256.h"

namespace texel::cl {
namespace {

namespace fs = std::filesystem;

// Entry layout: "TXLB" | u32 format version | u64 payload size | 64 hex chars sha256(payload) |
// payload. Integers are little-endian. The checksum catches truncation and bit rot, which a
// driver might otherwise accept as a valid (but wrong) binary.
constexpr char kMagic[4] = {'T', 'X', 'L', 'B'};
constexpr uint32_t kFormatVersion = 1;
constexpr size_t kDigestSize = 64;
constexpr size_t kHeaderSize = sizeof(kMagic) + 4 + 8 + kDigestSize;

std::string_view AsView(const std::vector<uint8_t>& bytes) {
  return {reinterpret_cast<const char*>(bytes.data()), bytes.size()};
}

std::string EnvOrEmpty(const char* name) {
  const char* value = std::getenv(name);
  return value != nullptr ? std::string(value) : std::string();
}

}  // namespace

ProgramCache::ProgramCache(std::string dir) : dir_(std::move(dir)) {}

ProgramCache ProgramCache::Default() {
  std::string dir = EnvOrEmpty("TEXEL_CACHE_DIR");
  if (dir == "off") return ProgramCache("");
  if (!dir.empty()) return ProgramCache(dir);
  // XDG base-dir spec: a relative XDG_CACHE_HOME is invalid and must be ignored.
  std::string xdg = EnvOrEmpty("XDG_CACHE_HOME");
  if (!xdg.empty() && xdg.front() == '/') return ProgramCache(xdg + "/texel");
  std::string home = EnvOrEmpty("HOME");
  if (!home.empty()) return ProgramCache(home + "/.cache/texel");
  return ProgramCache("");
}

std::string ProgramCache::Key(const DeviceInfo& dev, const std::string& source,
                              const std::string& options) {
  // Length prefixes make the concatenation unambiguous ("ab"+"c" != "a"+"bc"). v2: entries
  // record their build's seconds (BuildSeconds); v1's, which do not, are no longer looked up.
  std::string material;
  for (std::string_view part :
       {std::string_view("texel-program-cache-v2"), std::string_view(source),
        std::string_view(options), std::string_view(dev.name), std::string_view(dev.driver_version),
        std::string_view(dev.platform_version), std::string_view(dev.device_version)}) {
    material += fmt::format("{}:", part.size());
    material.append(part);
  }
  return Sha256Hex(material);
}

std::optional<std::vector<uint8_t>> ProgramCache::Load(const std::string& key) const {
  if (!enabled()) return std::nullopt;
  const fs::path path = fs::path(dir_) / (key + ".bin");
  std::optional<std::string> file = ReadFile(path.string());
  if (!file) return std::nullopt;
  const std::string& data = *file;

  bool valid = data.size() >= kHeaderSize && std::memcmp(data.data(), kMagic, 4) == 0 &&
               ReadLittleEndian(data.data() + 4, 4) == kFormatVersion &&
               ReadLittleEndian(data.data() + 8, 8) == data.size() - kHeaderSize;
  std::vector<uint8_t> payload;
  if (valid) {
    payload.assign(data.begin() + kHeaderSize, data.end());
    valid = std::string_view(data.data() + 16, kDigestSize) == Sha256Hex(AsView(payload));
  }
  if (!valid) {
    Remove(key);
    return std::nullopt;
  }
  return payload;
}

void ProgramCache::Store(const std::string& key, const std::vector<uint8_t>& binary,
                         double build_seconds) const {
  if (!enabled()) return;
  std::error_code ec;
  fs::create_directories(dir_, ec);  // best effort: failure shows up as a failed write below

  std::string entry(kMagic, sizeof(kMagic));
  AppendLittleEndian(entry, kFormatVersion, 4);
  AppendLittleEndian(entry, binary.size(), 8);
  entry += Sha256Hex(AsView(binary));
  entry.append(AsView(binary));
  // A record of an earlier entry of the key never stands beside this one.
  fs::remove(fs::path(dir_) / (key + ".sec"), ec);
  try {  // write-then-rename, so that concurrent readers never see a partial entry
    WriteFileAtomically((fs::path(dir_) / (key + ".bin")).string(), entry);
    if (build_seconds > 0)
      WriteFileAtomically((fs::path(dir_) / (key + ".sec")).string(),
                          fmt::format("{:.3f}", build_seconds));
  } catch (const Error&) {
    // Best effort: the program was built; it is only not cached.
  }
}

std::optional<double> ProgramCache::BuildSeconds(const std::string& key) const {
  if (!enabled()) return std::nullopt;
  std::optional<std::string> text = ReadFile((fs::path(dir_) / (key + ".sec")).string());
  if (!text) return std::nullopt;
  char* end = nullptr;
  double seconds = std::strtod(text->c_str(), &end);
  if (end == text->c_str() || !(seconds > 0 && seconds < 1e6)) return std::nullopt;
  return seconds;
}

void ProgramCache::Remove(const std::string& key) const {
  if (!enabled()) return;
  std::error_code ec;
  fs::remove(fs::path(dir_) / (key + ".bin"), ec);
  fs::remove(fs::path(dir_) / (key + ".sec"), ec);
}

}  // namespace texel::cl
