// The .texel artifact: a Plan serialised (docs/artifact.md), with optional program binaries, so
// that a model compiled once runs anywhere the runtime library is. One writer, one reader; the
// artifact is the plan, never a second description of it.
//
// Layout: a 32-byte header (magic, format version, section count, file size), a table of
// sections (name, offset, size, sha256 of the bytes), then the sections at 64-byte aligned
// offsets: "meta" and "plan" (JSON), "source" (OpenCL C), "constants" (raw tensors, the section
// page-aligned and each tensor 64-byte aligned, so that they can be mapped), and one
// "binary.N" per program binary. Writing the same plan twice gives the same bytes.
//
// Compatibility: a reader takes every format version from 1 to kArtifactFormatVersion, and
// ignores sections it does not know; a newer format version is refused with the versions named.
// Thread safety: pure functions.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "runtime/cl/device.h"
#include "runtime/plan.h"

namespace texel::runtime {

// 2: buffers may be parts of another (BufferDesc::alias_of), which a version-1 reader would
// miss. A plan is written in the lowest version that holds it (FormatVersionOf), so that older
// readers keep loading what they can run.
inline constexpr uint32_t kArtifactFormatVersion = 2;

// An OpenCL program binary, used only on the device it was built for by the same texel (every
// field of the key equal); anywhere else the program is built from the source.
struct ProgramBinary {
  std::string device_name, driver_version, platform_version, device_version, texel_version;
  std::vector<uint8_t> bytes;
  static ProgramBinary KeyFor(const cl::DeviceInfo& device);  // the key, without bytes
  bool Matches(const cl::DeviceInfo& device) const;
};

struct ArtifactSection {
  std::string name;
  uint64_t offset = 0, size = 0;
  std::string sha256;  // lower-case hex
};

struct Artifact {
  uint32_t format_version = kArtifactFormatVersion;  // as read; writing takes FormatVersionOf

  Plan plan;
  std::vector<ProgramBinary> binaries;
  // Buffer index -> its constant's bytes where the plan's tensor holds none (its type and shape
  // only): ReadArtifact's views into the bytes it read, valid while those are.
  std::map<int, std::string_view> constant_bytes;
  // Called with parts of the bytes read that are no longer needed (ReadArtifact's release).
  std::function<void(std::string_view)> release;
  std::vector<ArtifactSection> sections;  // ReadArtifact's: the section table as read
};

// The artifact's bytes.
std::string WriteArtifact(const Artifact& artifact);

// Header, table and sections laid out as above, in the order given ("constants" page-aligned):
// what WriteArtifact does once it has the sections' bytes; tests build damaged artifacts with it.
struct NamedSection {
  std::string name;
  std::string_view bytes;
};
std::string PackSections(const std::vector<NamedSection>& sections, uint32_t format_version);

// The lowest format version that holds plan: 2 where a buffer is part of another, else 1.
uint32_t FormatVersionOf(const Plan& plan);

// Parses and verifies bytes: the header, the section table, every section's sha256 and the plan's
// consistency (CheckPlan). Throws Error(kInvalidModel) naming `what` (the file) and the part
// that is wrong; never reads outside bytes. The constants are not copied: constant_bytes views
// them in bytes (map a file with core/file_io.h, and keep it until the Executable is made).
// release: called with each part of bytes once it is read (each section after its checksum,
// each constant once on the device), so that a mapped file's pages can go (MappedFile::Release)
// and the constants are not resident twice.
Artifact ReadArtifact(std::string_view bytes, const std::string& what,
                      std::function<void(std::string_view)> release = {});

// The verified header and section table of bytes (for `texel inspect`); throws as ReadArtifact.
std::vector<ArtifactSection> ReadArtifactSections(
    std::string_view bytes, const std::string& what, uint32_t* format_version = nullptr,
    const std::function<void(std::string_view)>& release = {});

// Whether bytes start like an artifact (its magic).
bool LooksLikeArtifact(std::string_view bytes);

}  // namespace texel::runtime
