// The tuning database (issue 17, docs/tuning.md): measured kernel parameters per device, one
// JSON object per line, one file per device in the cache directory. Entries are keyed by the
// device (name, driver and platform versions), the kernel family and its parameter version,
// and the kernel's signature (shapes, types, storage). A line that does not parse, or whose
// fields are missing, of another type or rejected by the caller's check, is skipped with a
// notice, never trusted. Writers merge under a file lock and replace the file atomically, so
// that processes tuning into one database lose no entries.
// Thread safety: a TuningDb is a plain value; Store may be called from any thread or process.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "runtime/cl/device.h"

namespace texel::runtime {

struct TuningKey {
  std::string device, driver, platform;  // whose measurements (DeviceInfo's)
  std::string family;                    // a kernel family: "matmul", "conv_direct", ...
  int family_version = 0;                // what its parameters mean; another version is foreign
  // "NAME=VALUE" items joined by ',' ("m=128,n=768,k=768,dtype=f32"); FindNearest compares the
  // integer values of items present in both and needs the others equal.
  std::string signature;
  bool operator==(const TuningKey&) const = default;
  // Of the same device, driver, platform, family and family version (any signature).
  bool SameFamily(const TuningKey& other) const;
  static TuningKey For(const cl::DeviceInfo& device, std::string family, int family_version,
                       std::string signature);
};

struct TuningEntry {
  TuningKey key;
  std::map<std::string, int64_t> params;  // the family's parameters, by name
  double heuristic_us = 0, tuned_us = 0;  // medians measured when the entry was made
};

class TuningDb {
 public:
  // Checks an entry's parameters against its family's space; false: skipped with a notice.
  using Check = std::function<bool(const TuningEntry&, std::string* why)>;

  // The entries in path (an absent file: none; a key on two lines: the later); skipped lines
  // are named in notices().
  static TuningDb Load(const std::string& path, const Check& check = {});
  const std::vector<TuningEntry>& entries() const { return entries_; }
  const std::vector<std::string>& notices() const { return notices_; }

  // The entry of exactly this key; nullptr when none.
  const TuningEntry* Find(const TuningKey& key) const;
  // Of the same device, family and version, the entry whose signature is nearest among those
  // `accept` takes (all when empty): non-integer items equal, integer items closest by the sum
  // of |log2(a/b)|, which must be at most 2 (within a factor of 4); nullptr when none qualifies.
  const TuningEntry* FindNearest(const TuningKey& key,
                                 const std::function<bool(const TuningEntry&)>& accept = {}) const;

  // Adds entries to the database at path (creating it and its directory), replacing entries of
  // the same key: under an exclusive lock on path + ".lock", reads the file as it is now (its
  // damaged lines dropped), merges, and renames a new file over it. Throws Error(kIo).
  static void Store(const std::string& path, const std::vector<TuningEntry>& entries);

  // <cache directory>/tuning/<device name, made a file name>.jsonl; "" when caching is off.
  static std::string DefaultPath(const cl::DeviceInfo& device);

  static std::string EntryLine(const TuningEntry& entry);  // one JSON line, no newline

 private:
  std::vector<TuningEntry> entries_;
  std::vector<std::string> notices_;
};

}  // namespace texel::runtime
