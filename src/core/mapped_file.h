// MappedFile: a file's bytes through a read-only memory mapping, so that large files (artifacts'
// constants) are read by the page as they are used, never copied onto the heap.
// Thread safety: immutable once open.
#pragma once

#include <memory>
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

}  // namespace texel
