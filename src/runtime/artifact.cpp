#include "runtime/artifact.h"

#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <nlohmann/json.hpp>
#include <type_traits>

#include "core/error.h"
#include "core/sha256.h"
#include "core/version.h"
#include "runtime/plan_check.h"

namespace texel::runtime {
namespace {

using nlohmann::json;

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

void AppendLe(std::string& out, uint64_t value, int bytes) {
  for (int i = 0; i < bytes; ++i) out.push_back(static_cast<char>((value >> (8 * i)) & 0xff));
}

uint64_t ReadLe(std::string_view bytes, size_t at, int n) {
  uint64_t value = 0;
  for (int i = 0; i < n; ++i) value |= uint64_t{static_cast<uint8_t>(bytes[at + i])} << (8 * i);
  return value;
}

uint64_t AlignUp(uint64_t x, uint64_t a) { return (x + a - 1) / a * a; }

// Numbers read from JSON, range-checked (nlohmann's get<int>() of 1e300 would be undefined).
template <class T>
T Num(const json& j) {
  if constexpr (std::is_floating_point_v<T>) {
    if (!j.is_number()) Fail(ErrorCode::kInvalidModel, "{} is not a number", j.dump());
    return j.get<T>();
  } else {
    if (j.is_number_unsigned()) {
      uint64_t v = j.get<uint64_t>();
      if (v > static_cast<uint64_t>(std::numeric_limits<T>::max()))
        Fail(ErrorCode::kInvalidModel, "{} is out of range", v);
      return static_cast<T>(v);
    }
    if (!j.is_number_integer()) Fail(ErrorCode::kInvalidModel, "{} is not an integer", j.dump());
    int64_t v = j.get<int64_t>();
    if (v < static_cast<int64_t>(std::numeric_limits<T>::min()) ||
        (v > 0 && static_cast<uint64_t>(v) > static_cast<uint64_t>(std::numeric_limits<T>::max())))
      Fail(ErrorCode::kInvalidModel, "{} is out of range", v);
    return static_cast<T>(v);
  }
}

template <class T>
std::vector<T> Nums(const json& j) {
  if (!j.is_array()) Fail(ErrorCode::kInvalidModel, "{} is not an array", j.dump().substr(0, 40));
  std::vector<T> out;
  out.reserve(j.size());
  for (const json& x : j) out.push_back(Num<T>(x));
  return out;
}

// ---- the plan as JSON ----

json ShapeJson(const Shape& s) { return json(std::vector<int64_t>(s.begin(), s.end())); }

json BindingJson(const TensorBinding& t) {
  return {{"name", t.name},
          {"dtype", DTypeName(t.dtype)},
          {"shape", ShapeJson(t.shape)},
          {"buffer", t.buffer},
          {"rows_buffer", t.rows_buffer}};
}

DType DTypeOf(const json& j) {
  DType t;
  if (!ParseDType(j.get<std::string>(), &t))
    Fail(ErrorCode::kInvalidModel, "element type '{}' is unknown", j.get<std::string>());
  return t;
}

TensorBinding BindingOf(const json& j) {
  TensorBinding t;
  t.name = j.at("name").get<std::string>();
  t.dtype = DTypeOf(j.at("dtype"));
  t.shape = Nums<int64_t>(j.at("shape"));
  t.buffer = Num<int>(j.at("buffer"));
  t.rows_buffer = Num<int>(j.at("rows_buffer"));
  return t;
}

json InfoJson(const PlanInfo& i) {
  return {{"texel_version", i.texel_version},   {"options", i.options},
          {"model_sha256", i.model_sha256},     {"device_name", i.device_name},
          {"device_vendor", i.device_vendor},   {"device_type", i.device_type},
          {"driver_version", i.driver_version}, {"platform_version", i.platform_version},
          {"device_version", i.device_version}};
}

PlanInfo InfoOf(const json& j) {
  PlanInfo i;
  for (auto [field, key] : {std::pair{&i.texel_version, "texel_version"},
                            {&i.options, "options"},
                            {&i.model_sha256, "model_sha256"},
                            {&i.device_name, "device_name"},
                            {&i.device_vendor, "device_vendor"},
                            {&i.device_type, "device_type"},
                            {&i.driver_version, "driver_version"},
                            {&i.platform_version, "platform_version"},
                            {&i.device_version, "device_version"}})
    *field = j.at(key).get<std::string>();
  return i;
}

json BinaryKeyJson(const ProgramBinary& b, const std::string& section) {
  return {{"device_name", b.device_name},           {"driver_version", b.driver_version},
          {"platform_version", b.platform_version}, {"device_version", b.device_version},
          {"texel_version", b.texel_version},       {"section", section}};
}

// The plan without its constants' bytes and source; constants: where each constant's bytes go in
// the constants section (appended here).
json PlanJson(const Plan& plan, const std::map<int, std::string_view>& views,
              std::string* constants) {
  json buffers = json::array();
  for (const BufferDesc& b : plan.buffers) {
    json jb = {{"bytes", b.bytes},
               {"image_width", b.image_width},
               {"image_height", b.image_height},
               {"image_half", b.image_half},
               {"zeroed", b.zeroed}};
    if (b.constant) {
      auto view = views.find(static_cast<int>(buffers.size()));
      std::string_view bytes =
          b.constant->bytes.empty() && view != views.end()
              ? view->second
              : std::string_view(reinterpret_cast<const char*>(b.constant->bytes.data()),
                                 b.constant->bytes.size());
      constants->resize(AlignUp(constants->size(), kSectionAlignment), '\0');
      jb["constant"] = {{"dtype", DTypeName(b.constant->dtype)},
                        {"shape", ShapeJson(b.constant->shape)},
                        {"offset", constants->size()},
                        {"bytes", bytes.size()}};
      constants->append(bytes);
    }
    buffers.push_back(std::move(jb));
  }
  json inputs = json::array(), outputs = json::array(), steps = json::array();
  for (const TensorBinding& t : plan.inputs) inputs.push_back(BindingJson(t));
  for (const TensorBinding& t : plan.outputs) outputs.push_back(BindingJson(t));
  for (const KernelStep& s : plan.steps)
    steps.push_back({{"kernel", s.kernel},
                     {"buffers", s.buffers},
                     {"call", s.call},
                     {"call_args", s.call_args},
                     {"global", s.global},
                     {"local", s.local},
                     {"node", s.node},
                     {"op", s.op},
                     {"backend", s.backend},
                     {"flops", s.flops},
                     {"bytes", s.bytes}});
  const MemoryPlan& m = plan.memory;
  json blocks = json::array();
  for (const TextureBlock& k : m.texture_blocks)
    blocks.push_back({{"width", k.width}, {"height", k.height}, {"half", k.half}});
  json memory = {{"alignment", m.alignment},
                 {"arena_bytes", m.arena_bytes},
                 {"lower_bound", m.lower_bound},
                 {"unshared_bytes", m.unshared_bytes},
                 {"offsets", m.offsets},
                 {"constant_bytes", m.constant_bytes},
                 {"io_bytes", m.io_bytes},
                 {"texture_block", m.texture_block},
                 {"texture_blocks", blocks},
                 {"texture_pool_bytes", m.texture_pool_bytes},
                 {"texture_unshared_bytes", m.texture_unshared_bytes}};
  return {
      {"needs", {{"inline_ptx", plan.needs.inline_ptx}, {"tensor_cores", plan.needs.tensor_cores}}},
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
  plan.needs.inline_ptx = j.at("needs").at("inline_ptx").get<bool>();
  plan.needs.tensor_cores = j.at("needs").at("tensor_cores").get<bool>();
  for (const json& jb : j.at("buffers")) {
    BufferDesc b;
    b.bytes = Num<int64_t>(jb.at("bytes"));
    b.image_width = Num<int64_t>(jb.at("image_width"));
    b.image_height = Num<int64_t>(jb.at("image_height"));
    b.image_half = jb.at("image_half").get<bool>();
    b.zeroed = jb.at("zeroed").get<bool>();
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
      t->dtype = DTypeOf(c.at("dtype"));
      t->shape = Nums<int64_t>(c.at("shape"));
      (*views)[static_cast<int>(plan.buffers.size())] = constants.substr(offset, bytes);
      b.constant = std::move(t);
    }
    plan.buffers.push_back(std::move(b));
  }
  for (const json& t : j.at("inputs")) plan.inputs.push_back(BindingOf(t));
  for (const json& t : j.at("outputs")) plan.outputs.push_back(BindingOf(t));
  for (const json& js : j.at("steps")) {
    KernelStep s;
    s.kernel = js.at("kernel").get<std::string>();
    s.buffers = Nums<int>(js.at("buffers"));
    s.call = js.at("call").get<std::string>();
    s.call_args = Nums<int64_t>(js.at("call_args"));
    s.global = Nums<size_t>(js.at("global"));
    s.local = Nums<size_t>(js.at("local"));
    s.node = js.at("node").get<std::string>();
    s.op = js.at("op").get<std::string>();
    s.backend = js.at("backend").get<std::string>();
    s.flops = Num<double>(js.at("flops"));
    s.bytes = Num<double>(js.at("bytes"));
    plan.steps.push_back(std::move(s));
  }
  const json& jm = j.at("memory");
  MemoryPlan& m = plan.memory;
  m.alignment = Num<int64_t>(jm.at("alignment"));
  m.arena_bytes = Num<int64_t>(jm.at("arena_bytes"));
  m.lower_bound = Num<int64_t>(jm.at("lower_bound"));
  m.unshared_bytes = Num<int64_t>(jm.at("unshared_bytes"));
  m.offsets = Nums<int64_t>(jm.at("offsets"));
  m.constant_bytes = Num<int64_t>(jm.at("constant_bytes"));
  m.io_bytes = Num<int64_t>(jm.at("io_bytes"));
  m.texture_block = Nums<int>(jm.at("texture_block"));
  for (const json& k : jm.at("texture_blocks"))
    m.texture_blocks.push_back(
        {Num<int64_t>(k.at("width")), Num<int64_t>(k.at("height")), k.at("half").get<bool>()});
  m.texture_pool_bytes = Num<int64_t>(jm.at("texture_pool_bytes"));
  m.texture_unshared_bytes = Num<int64_t>(jm.at("texture_unshared_bytes"));
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

std::string WriteArtifact(const Artifact& a) {
  std::string constants;
  json plan = PlanJson(a.plan, a.constant_bytes, &constants);
  json binaries = json::array();
  std::vector<std::string> binary_names;
  for (size_t i = 0; i < a.binaries.size(); ++i) {
    binary_names.push_back(fmt::format("binary.{}", i));
    binaries.push_back(BinaryKeyJson(a.binaries[i], binary_names.back()));
  }
  json meta = InfoJson(a.plan.info);
  meta["format_version"] = a.format_version;
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
  return PackSections(sections, a.format_version);
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
  AppendLe(out, format_version, 4);
  AppendLe(out, sections.size(), 4);
  AppendLe(out, offset, 8);
  out.append(8, '\0');
  for (size_t i = 0; i < sections.size(); ++i) {
    std::string name = sections[i].name;
    name.resize(kNameSize, '\0');
    out += name;
    AppendLe(out, offsets[i], 8);
    AppendLe(out, sections[i].bytes.size(), 8);
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
  uint32_t version = static_cast<uint32_t>(ReadLe(bytes, 8, 4));
  if (version == 0 || version > kArtifactFormatVersion)
    bad(
        fmt::format("format version {}; this texel ({}) reads versions 1 to {}: load it with a "
                    "newer texel, or compile the model again",
                    version, kVersion, kArtifactFormatVersion));
  if (format_version) *format_version = version;
  uint64_t count = ReadLe(bytes, 12, 4), size = ReadLe(bytes, 16, 8);
  if (size != bytes.size())
    bad(fmt::format("truncated or extended: the header says {} bytes, the file has {}", size,
                    bytes.size()));
  if (ReadLe(bytes, 24, 8) != 0) bad("the header's reserved bytes are not zero");
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
    s.offset = ReadLe(bytes, at + kNameSize, 8);
    s.size = ReadLe(bytes, at + kNameSize + 8, 8);
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
  std::vector<ArtifactSection> sections =
      ReadArtifactSections(bytes, what, &a.format_version, release);
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
    a.plan.info = InfoOf(meta);
    a.plan.source = std::string(section("source"));
    for (const json& jb : meta.at("binaries")) {
      ProgramBinary b;
      b.device_name = jb.at("device_name").get<std::string>();
      b.driver_version = jb.at("driver_version").get<std::string>();
      b.platform_version = jb.at("platform_version").get<std::string>();
      b.device_version = jb.at("device_version").get<std::string>();
      b.texel_version = jb.at("texel_version").get<std::string>();
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

void WriteFileBytes(const std::string& path, std::string_view bytes) {
  std::string tmp = fmt::format("{}.tmp.{}", path, static_cast<long>(::getpid()));
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    if (!out) Fail(ErrorCode::kIo, "{}: cannot write ({})", path, std::strerror(errno));
    out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
    out.close();
    if (!out) {
      std::error_code ec;
      std::filesystem::remove(tmp, ec);
      Fail(ErrorCode::kIo, "{}: cannot write ({})", path, std::strerror(errno));
    }
  }
  std::error_code ec;
  std::filesystem::rename(tmp, path, ec);
  if (ec) {
    std::filesystem::remove(tmp, ec);
    Fail(ErrorCode::kIo, "{}: cannot write ({})", path, ec.message());
  }
}

}  // namespace texel::runtime
