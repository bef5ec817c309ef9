// Files: MappedFile, a file's bytes through a read-only memory mapping, so that large files
// (models, artifacts' constants) are read by the page as they are used, never copied onto the
// heap; WriteFileAtomically, for files that readers may open at any time (program cache entries,
// artifacts). Thread safety: MappedFile is immutable once open; writes of one path from several
// threads or processes leave one whole file.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

namespace texel {

class MappedFile {
 public:
  // Throws Error(kNotFound) when path is not a regular file, Error(kIo) when it cannot be mapped.
  static std::shared_ptr<const MappedFile> Open(const std::string& path);
  ~MappedFile();
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;
  std::string_view bytes() const { return {static_cast<const char*>(data_), size_}; }
  // Drops the resident pages that lie wholly inside range (a part of bytes()) once they have
  // been read: they leave the process's memory and come back from the file if read again.
  void Release(std::string_view range) const;

 private:
  MappedFile() = default;
  void* data_ = nullptr;
  size_t size_ = 0;
};

// Little-endian integers of `bytes` bytes in binary file formats (program cache, artifacts).
inline void AppendLittleEndian(std::string& out, uint64_t value, int bytes) {
  for (int i = 0; i < bytes; ++i) out.push_back(static_cast<char>((value >> (8 * i)) & 0xff));
}
inline uint64_t ReadLittleEndian(const char* p, int bytes) {
  uint64_t value = 0;
  for (int i = 0; i < bytes; ++i) value |= uint64_t{static_cast<uint8_t>(p[i])} << (8 * i);
  return value;
}

// The whole file's bytes, or nullopt where it cannot be opened or read, a directory included
// (small files: the program cache's entries, device facts, kernel templates, a compile job's
// results).
std::optional<std::string> ReadFile(const std::string& path);

// Writes bytes to a temporary file beside path, then renames it to path, so that no reader ever
// sees a partial file. Throws Error(kIo) naming path and the reason.
void WriteFileAtomically(const std::string& path, std::string_view bytes);

}  // namespace texel
