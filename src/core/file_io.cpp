#include "core/file_io.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <random>

#include "core/error.h"

namespace texel {

std::shared_ptr<const MappedFile> MappedFile::Open(const std::string& path) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  struct stat st {};
  if (fd < 0 || ::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    if (fd >= 0) ::close(fd);
    Fail(ErrorCode::kNotFound, "{}: no such file", path);
  }
  std::shared_ptr<MappedFile> f(new MappedFile);
  f->size_ = static_cast<size_t>(st.st_size);
  if (f->size_ > 0) {
    void* p = ::mmap(nullptr, f->size_, PROT_READ, MAP_PRIVATE, fd, 0);
    int err = errno;
    ::close(fd);
    if (p == MAP_FAILED) Fail(ErrorCode::kIo, "{}: cannot map ({})", path, std::strerror(err));
    f->data_ = p;
  } else {
    ::close(fd);
  }
  return f;
}

void MappedFile::Release(std::string_view range) const {
  const uintptr_t page = static_cast<uintptr_t>(::sysconf(_SC_PAGESIZE));
  const uintptr_t lo = reinterpret_cast<uintptr_t>(data_);
  uintptr_t begin = reinterpret_cast<uintptr_t>(range.data());
  uintptr_t end = begin + range.size();
  if (range.empty() || begin < lo || end > lo + size_) return;
  begin = (begin + page - 1) / page * page;
  end = end / page * page;
  if (end > begin) ::madvise(reinterpret_cast<void*>(begin), end - begin, MADV_DONTNEED);
}

MappedFile::~MappedFile() {
  if (data_ != nullptr) ::munmap(data_, size_);
}

std::optional<std::string> ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return std::nullopt;
  // A failed read (a directory opens, then reading it fails) throws from the stream buffer.
  try {
    return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  } catch (const std::ios_base::failure&) {
    return std::nullopt;
  }
}

void WriteFileAtomically(const std::string& path, std::string_view bytes) {
  // A name no other thread or process picks: pid, a random number and a counter.
  static std::atomic<uint64_t> counter{0};
  thread_local std::mt19937_64 rng{std::random_device{}()};
  const std::string tmp =
      fmt::format("{}.tmp.{}.{:x}{}", path, static_cast<long>(::getpid()), rng(), counter++);
  std::error_code ec;
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    if (!out) Fail(ErrorCode::kIo, "{}: cannot write ({})", path, std::strerror(errno));
    out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
    out.close();
    if (!out) {
      std::filesystem::remove(tmp, ec);
      Fail(ErrorCode::kIo, "{}: cannot write ({})", path, std::strerror(errno));
    }
  }
  std::filesystem::rename(tmp, path, ec);
  if (ec) {
    std::filesystem::remove(tmp, ec);
    Fail(ErrorCode::kIo, "{}: cannot write ({})", path, ec.message());
  }
}

}  // namespace texel
