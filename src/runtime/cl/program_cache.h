// On-disk cache of OpenCL program binaries.
// Key = sha256(cache format version, source, build options, device name, driver version,
// platform version). Entries are written to a temp file and renamed atomically; an entry that
// fails to load or build is deleted and rebuilt, never trusted.
// Directory: env TEXEL_CACHE_DIR, else $XDG_CACHE_HOME/texel, else ~/.cache/texel. An empty
// TEXEL_CACHE_DIR="off" disables the cache.
// Thread safety: safe to use from several threads and processes (atomic renames).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "runtime/cl/device.h"

namespace texel::cl {

class ProgramCache {
 public:
  explicit ProgramCache(std::string dir);
  // The cache at the default location (see above); nullptr-equivalent disabled when "off".
  static ProgramCache Default();
  bool enabled() const { return !dir_.empty(); }
  const std::string& dir() const { return dir_; }

  static std::string Key(const DeviceInfo& dev, const std::string& source,
                         const std::string& options);
  std::optional<std::vector<uint8_t>> Load(const std::string& key) const;
  // Best effort. build_seconds > 0: what the build from source took, kept beside the entry
  // (<key>.sec) for BuildSeconds.
  void Store(const std::string& key, const std::vector<uint8_t>& binary,
             double build_seconds = 0) const;
  // What the entry's build from source took (a tune sizes the build of a program not yet
  // compiled by it); nullopt when not recorded.
  std::optional<double> BuildSeconds(const std::string& key) const;
  void Remove(const std::string& key) const;

 private:
  std::string dir_;
};

}  // namespace texel::cl
