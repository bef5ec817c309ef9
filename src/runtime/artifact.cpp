#include "runtime/artifact.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstring>
#include <limits>
#include <type_traits>

#include "core/error.h"
#include "core/file_io.h"
#include "core/sha256.h"
#include "core/version.h"
#include "runtime/json_fields.h"
#include "runtime/plan_check.h"

namespace texel::runtime {
namespace {

// Header: magic | u32 format version | u32 section count | u64 file size | 8 zero bytes.
// Table entry: name (16 bytes, NUL-padded) | u64 offset | u64 size | sha256 (64 hex chars).
// Integers are little-endian.
constexpr char kMagic[8] = {'T', 'E', 'X', 'E', 'L', 'A', 'R', 'T'};
constexpr size_t kHeaderSize = 32;
constexpr size_t kNameSize = 16;
constexpr size_t kDigestSize = 64;
constexpr size_t kEntrySize = kNameSize + 8 + 8 + kDigestSize;
constexpr uint32_t kMaxSections = 1024;
constexpr uint64_t kSectionAlignment = 64;
constexpr uint64_t kPageAlignment = 4096;  // the constants section, so that it can be mapped

uint64_t AlignUp(uint64_t x, uint64_t a) { return (x + a - 1) / a * a; }

// ---- the plan as JSON ----
// Each struct's fields are listed once (kXFields(s, f) calls f(key, field) for each); the writer
// and the reader walk the same list, so that no field is written without being read back.

constexpr auto kInfoFields = [](auto& i, auto&& f) {
  f("texel_version", i.texel_version), f("options", i.options);
  f("model_sha256", i.model_sha256), f("device_name", i.device_name);
  f("device_vendor", i.device_vendor), f("device_type", i.device_type);
  f("driver_version", i.driver_version), f("platform_version", i.platform_version);
  f("device_version", i.device_version);
};

constexpr auto kBinaryKeyFields = [](auto& b, auto&& f) {
  f("device_name", b.device_name), f("driver_version", b.driver_version);
  f("platform_version", b.platform_version), f("device_version", b.device_version);
  f("texel_version", b.texel_version);
};

constexpr auto kNeedsFields = [](auto& n, auto&& f) {
  f("inline_ptx", n.inline_ptx), f("tensor_cores", n.tensor_cores);
};

constexpr auto kBufferFields = [](auto& b, auto&& f) {
  f("bytes", b.bytes), f("image_width", b.image_width), f("image_height", b.image_height);
  f("image_half", b.image_half), f("zeroed", b.zeroed);
};

// Format version 2 (buffers aliasing part of another): absent in version 1 files.
constexpr auto kBufferAliasFields = [](auto& b, auto&& f) {
  f("alias_of", b.alias_of), f("alias_offset", b.alias_offset);
};

constexpr auto kBindingFields = [](auto& t, auto&& f) {
  f("name", t.name), f("dtype", t.dtype), f("shape", t.shape), f("buffer", t.buffer);
  f("rows_buffer", t.rows_buffer);
};

constexpr auto kStepFields = [](auto& s, auto&& f) {
  f("kernel", s.kernel), f("buffers", s.buffers), f("call", s.call);
  f("call_args", s.call_args), f("global", s.global), f("local", s.local), f("node", s.node);
  f("op", s.op), f("backend", s.backend), f("flops", s.flops), f("bytes", s.bytes);
};

constexpr auto kBlockFields = [](auto& k, auto&& f) {
  f("width", k.width), f("height", k.height), f("half", k.half);
};

constexpr auto kMemoryFields = [](auto& m, auto&& f) {
  f("alignment", m.alignment), f("arena_bytes", m.arena_bytes), f("lower_bound", m.lower_bound);
  f("unshared_bytes", m.unshared_bytes), f("offsets", m.offsets);
  f("constant_bytes", m.constant_bytes), f("io_bytes", m.io_bytes);
  f("texture_block", m.texture_block), f("texture_pool_bytes", m.texture_pool_bytes);
  f("texture_unshared_bytes", m.texture_unshared_bytes);
};

// The plan without its constants' bytes and source; constants: where each constant's bytes go in
// the constants section (appended here).
json PlanJson(const Plan& plan, const std::map<int, std::string_view>& views,
              std::string* constants) {
  json buffers = json::array();
  for (const BufferDesc& b : plan.buffers) {
    json jb = Write(b, kBufferFields);
    jb.update(Write(b, kBufferAliasFields));
    if (b.constant) {
      auto view = views.find(static_cast<int>(buffers.size()));
      std::string_view bytes =
          b.constant->bytes.empty() && view != views.end()
              ? view->second
              : std::string_view(reinterpret_cast<const char*>(b.constant->bytes.data()),
                                 b.constant->bytes.size());
      constants->resize(AlignUp(constants->size(), kSectionAlignment), '\0');
      jb["constant"] = {{"dtype", DTypeName(b.constant->dtype)},
                        {"shape", b.constant->shape},
                        {"offset", constants->size()},
                        {"bytes", bytes.size()}};
      constants->append(bytes);
    }
    buffers.push_back(std::move(jb));
  }
  json inputs = json::array(), outputs = json::array(), steps = json::array(),
       blocks = json::array();
  for (const TensorBinding& t : plan.inputs) inputs.push_back(Write(t, kBindingFields));
  for (const TensorBinding& t : plan.outputs) outputs.push_back(Write(t, kBindingFields));
  for (const KernelStep& s : plan.steps) steps.push_back(Write(s, kStepFields));
  for (const TextureBlock& k : plan.memory.texture_blocks) blocks.push_back(Write(k, kBlockFields));
  json memory = Write(plan.memory, kMemoryFields);
  memory["texture_blocks"] = blocks;
  return {{"needs", Write(plan.needs, kNeedsFields)},
          {"build_options", plan.build_options},
          {"buffers", buffers},
          {"inputs", inputs},
          {"outputs", outputs},
          {"steps", steps},
          {"memory", memory}};
}

Plan PlanOf(const json& j, std::string_view constants, std::map<int, std::string_view>* views) {
  Plan plan;
  plan.build_options = j.at("build_options").get<std::string>();
  plan.needs = Read<DeviceNeeds>(j.at("needs"), kNeedsFields);
  for (const json& jb : j.at("buffers")) {
    BufferDesc b = Read<BufferDesc>(jb, kBufferFields);
    ReadPresent(jb, kBufferAliasFields, &b);
    if (jb.contains("constant")) {
      const json& c = jb.at("constant");
      uint64_t offset = Num<uint64_t>(c.at("offset")), bytes = Num<uint64_t>(c.at("bytes"));
      if (offset > constants.size() || bytes > constants.size() - offset)
        Fail(ErrorCode::kInvalidModel,
             "buffer {}: its constant ({} bytes at {}) lies outside the constants section ({} "
             "bytes)",
             plan.buffers.size(), bytes, offset, constants.size());
      if (static_cast<int64_t>(bytes) != b.bytes)
        Fail(ErrorCode::kInvalidModel, "buffer {}: its constant holds {} bytes, the buffer {}",
             plan.buffers.size(), bytes, b.bytes);
      auto t = std::make_shared<HostTensor>();  // type and shape; the bytes stay in the section
      FromJson(c.at("dtype"), &t->dtype);
      FromJson(c.at("shape"), &t->shape);
      (*views)[static_cast<int>(plan.buffers.size())] = constants.substr(offset, bytes);
      b.constant = std::move(t);
    }
    plan.buffers.push_back(std::move(b));
  }
  for (const json& t : j.at("inputs"))
    plan.inputs.push_back(Read<TensorBinding>(t, kBindingFields));
  for (const json& t : j.at("outputs"))
    plan.outputs.push_back(Read<TensorBinding>(t, kBindingFields));
  for (const json& s : j.at("steps")) plan.steps.push_back(Read<KernelStep>(s, kStepFields));
  const json& jm = j.at("memory");
  plan.memory = Read<MemoryPlan>(jm, kMemoryFields);
  for (const json& k : jm.at("texture_blocks"))
    plan.memory.texture_blocks.push_back(Read<TextureBlock>(k, kBlockFields));
  return plan;
}

}  // namespace

ProgramBinary ProgramBinary::KeyFor(const cl::DeviceInfo& d) {
  ProgramBinary b;
  b.device_name = d.name;
  b.driver_version = d.driver_version;
  b.platform_version = d.platform_version;
  b.device_version = d.device_version;
  b.texel_version = kVersion;
  return b;
}

bool ProgramBinary::Matches(const cl::DeviceInfo& d) const {
  ProgramBinary k = KeyFor(d);
  return device_name == k.device_name && driver_version == k.driver_version &&
         platform_version == k.platform_version && device_version == k.device_version &&
         texel_version == k.texel_version;
}

bool LooksLikeArtifact(std::string_view bytes) {
  return bytes.size() >= sizeof(kMagic) && std::memcmp(bytes.data(), kMagic, sizeof(kMagic)) == 0;
}

uint32_t FormatVersionOf(const Plan& plan) {
  bool parts = std::any_of(plan.buffers.begin(), plan.buffers.end(),
                           [](const BufferDesc& b) { return b.alias_of >= 0; });
  return parts ? 2 : 1;
}

std::string WriteArtifact(const Artifact& a) {
  const uint32_t version = FormatVersionOf(a.plan);
  std::string constants;
  json plan = PlanJson(a.plan, a.constant_bytes, &constants);
  json binaries = json::array();
  std::vector<std::string> binary_names;
  for (size_t i = 0; i < a.binaries.size(); ++i) {
    binary_names.push_back(fmt::format("binary.{}", i));
    json key = Write(a.binaries[i], kBinaryKeyFields);
    key["section"] = binary_names.back();
    binaries.push_back(std::move(key));
  }
  json meta = Write(a.plan.info, kInfoFields);
  meta["format_version"] = version;
  meta["binaries"] = binaries;
  const std::string meta_text = meta.dump(1), plan_text = plan.dump(1);
  std::vector<NamedSection> sections = {{"meta", meta_text},
                                        {"plan", plan_text},
                                        {"source", a.plan.source},
                                        {"constants", constants}};
  for (size_t i = 0; i < a.binaries.size(); ++i)
    sections.push_back(
        {binary_names[i],
         {reinterpret_cast<const char*>(a.binaries[i].bytes.data()), a.binaries[i].bytes.size()}});
  return PackSections(sections, version);
}

std::string PackSections(const std::vector<NamedSection>& sections, uint32_t format_version) {
  uint64_t offset = kHeaderSize + kEntrySize * sections.size();
  std::vector<uint64_t> offsets;
  for (const NamedSection& s : sections) {
    offset = AlignUp(offset, s.name == "constants" ? kPageAlignment : kSectionAlignment);
    offsets.push_back(offset);
    offset += s.bytes.size();
  }
  std::string out(kMagic, sizeof(kMagic));
  AppendLittleEndian(out, format_version, 4);
  AppendLittleEndian(out, sections.size(), 4);
  AppendLittleEndian(out, offset, 8);
  out.append(8, '\0');
  for (size_t i = 0; i < sections.size(); ++i) {
    std::string name = sections[i].name;
    name.resize(kNameSize, '\0');
    out += name;
    AppendLittleEndian(out, offsets[i], 8);
    AppendLittleEndian(out, sections[i].bytes.size(), 8);
    out += Sha256Hex(sections[i].bytes);
  }
  for (size_t i = 0; i < sections.size(); ++i) {
    out.resize(offsets[i], '\0');
    out.append(sections[i].bytes);
  }
  return out;
}

std::vector<ArtifactSection> ReadArtifactSections(
    std::string_view bytes, const std::string& what, uint32_t* format_version,
    const std::function<void(std::string_view)>& release) {
  auto bad = [&](const std::string& why) { Fail(ErrorCode::kInvalidModel, "{}: {}", what, why); };
  if (!LooksLikeArtifact(bytes))
    bad("not a texel artifact (the file does not start with TEXELART)");
  if (bytes.size() < kHeaderSize)
    bad(fmt::format("truncated: {} bytes, shorter than the header", bytes.size()));
  uint32_t version = static_cast<uint32_t>(ReadLittleEndian(bytes.data() + 8, 4));
  if (version == 0 || version > kArtifactFormatVersion)
    bad(
        fmt::format("format version {}; this texel ({}) reads versions 1 to {}: load it with a "
                    "newer texel, or compile the model again",
                    version, kVersion, kArtifactFormatVersion));
  if (format_version) *format_version = version;
  uint64_t count = ReadLittleEndian(bytes.data() + 12, 4),
           size = ReadLittleEndian(bytes.data() + 16, 8);
  if (size != bytes.size())
    bad(fmt::format("truncated or extended: the header says {} bytes, the file has {}", size,
                    bytes.size()));
  if (ReadLittleEndian(bytes.data() + 24, 8) != 0) bad("the header's reserved bytes are not zero");
  if (count > kMaxSections || kHeaderSize + count * kEntrySize > bytes.size())
    bad(fmt::format("a table of {} sections does not fit the file", count));
  std::vector<ArtifactSection> sections;
  uint64_t end_of_table = kHeaderSize + count * kEntrySize;
  for (uint64_t i = 0; i < count; ++i) {
    size_t at = kHeaderSize + i * kEntrySize;
    std::string_view raw = bytes.substr(at, kNameSize);
    ArtifactSection s;
    s.name = std::string(raw.substr(0, raw.find('\0')));
    if (s.name.empty() ||
        s.name.find_first_not_of("abcdefghijklmnopqrstuvwxyz0123456789._-") != std::string::npos ||
        raw.find_first_not_of('\0', s.name.size()) != std::string_view::npos)
      bad(fmt::format("section {} has an invalid name", i));
    for (const ArtifactSection& o : sections)
      if (o.name == s.name) bad(fmt::format("section '{}' appears twice", s.name));
    s.offset = ReadLittleEndian(bytes.data() + at + kNameSize, 8);
    s.size = ReadLittleEndian(bytes.data() + at + kNameSize + 8, 8);
    s.sha256 = std::string(bytes.substr(at + kNameSize + 16, kDigestSize));
    if (s.offset < end_of_table || s.offset > bytes.size() || s.size > bytes.size() - s.offset)
      bad(fmt::format("section '{}' ({} bytes at {}) lies outside the file ({} bytes)", s.name,
                      s.size, s.offset, bytes.size()));
    if (Sha256Hex(bytes.substr(s.offset, s.size)) != s.sha256)
      bad(fmt::format("section '{}' is corrupt: its sha256 does not match the table", s.name));
    if (release) release(bytes.substr(s.offset, s.size));
    sections.push_back(std::move(s));
  }
  // Sections do not overlap, and every byte between them is zero: any flipped bit is caught.
  std::vector<std::pair<uint64_t, uint64_t>> spans;
  for (const ArtifactSection& s : sections) spans.emplace_back(s.offset, s.offset + s.size);
  std::sort(spans.begin(), spans.end());
  uint64_t at = end_of_table;
  for (const auto& [begin, end] : spans) {
    if (begin < at) bad("sections overlap");
    if (bytes.substr(at, begin - at).find_first_not_of('\0') != std::string_view::npos)
      bad(fmt::format("the padding before byte {} is not zero", begin));
    at = end;
  }
  if (bytes.substr(at).find_first_not_of('\0') != std::string_view::npos)
    bad("the padding after the last section is not zero");
  return sections;
}

Artifact ReadArtifact(std::string_view bytes, const std::string& what,
                      std::function<void(std::string_view)> release) {
  Artifact a;
  a.sections = ReadArtifactSections(bytes, what, &a.format_version, release);
  const std::vector<ArtifactSection>& sections = a.sections;
  a.release = std::move(release);
  auto section = [&](const std::string& name) -> std::string_view {
    for (const ArtifactSection& s : sections)
      if (s.name == name) return bytes.substr(s.offset, s.size);
    Fail(ErrorCode::kInvalidModel, "{}: section '{}' is missing", what, name);
  };
  std::string part = "meta";
  try {
    json meta = json::parse(section("meta"));
    part = "plan";
    a.plan = PlanOf(json::parse(section("plan")), section("constants"), &a.constant_bytes);
    part = "meta";
    a.plan.info = Read<PlanInfo>(meta, kInfoFields);
    a.plan.source = std::string(section("source"));
    for (const json& jb : meta.at("binaries")) {
      ProgramBinary b = Read<ProgramBinary>(jb, kBinaryKeyFields);
      std::string_view bin = section(jb.at("section").get<std::string>());
      b.bytes.assign(bin.begin(), bin.end());
      a.binaries.push_back(std::move(b));
    }
    part = "plan";
    CheckPlan(a.plan);
  } catch (const json::exception& e) {
    Fail(ErrorCode::kInvalidModel, "{}: section '{}': {}", what, part, e.what());
  } catch (Error& e) {
    e.AddContext(fmt::format("{}: section '{}'", what, part));
    throw;
  }
  return a;
}

}  // namespace texel::runtime
