// Structs as JSON objects, each struct's fields listed once: kXFields(s, f) calls f(key, field)
// for each, and Write and Read walk the same list, so that no field is written without being
// read back (artifacts' plans, device facts). Numbers are range-checked on reading.
#pragma once

#include <limits>
#include <nlohmann/json.hpp>
#include <string>
#include <type_traits>
#include <vector>

#include "core/dtype.h"
#include "core/error.h"
#include "runtime/cl/device.h"

namespace texel::runtime {

using nlohmann::json;

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

inline json ToJson(DType t) { return DTypeName(t); }
inline json ToJson(cl::DeviceKind k) { return cl::DeviceKindName(k); }
template <class T>
json ToJson(const T& v) {
  return v;
}

template <class T>
void FromJson(const json& j, T* v) {
  if constexpr (std::is_same_v<T, std::string> || std::is_same_v<T, bool> ||
                std::is_same_v<T, std::vector<std::string>>) {
    *v = j.get<T>();
  } else if constexpr (std::is_same_v<T, DType>) {
    if (!ParseDType(j.get<std::string>(), v))
      Fail(ErrorCode::kInvalidModel, "element type '{}' is unknown", j.get<std::string>());
  } else if constexpr (std::is_same_v<T, cl::DeviceKind>) {
    if (!cl::ParseDeviceKind(j.get<std::string>(), v))
      Fail(ErrorCode::kInvalidModel, "device kind '{}' is unknown", j.get<std::string>());
  } else if constexpr (std::is_arithmetic_v<T>) {
    *v = Num<T>(j);
  } else {
    *v = Nums<typename T::value_type>(j);
  }
}

// FromJson of field `key`, whose errors name it.
template <class T>
void FieldFromJson(const json& j, const char* key, T* v) {
  try {
    FromJson(j, v);
  } catch (Error& e) {
    e.AddContext(key);
    throw;
  }
}

// The fields that Fields lists of s, as a JSON object.
template <class S, class Fields>
json Write(const S& s, Fields fields) {
  json j = json::object();
  fields(s, [&j](const char* key, const auto& v) { j[key] = ToJson(v); });
  return j;
}

// s's listed fields from the JSON object j; Error(kInvalidModel) or json::exception when one is
// missing or of another type.
template <class S, class Fields>
S Read(const json& j, Fields fields) {
  S s;
  fields(s, [&j](const char* key, auto& v) { FieldFromJson(j.at(key), key, &v); });
  return s;
}

// The listed fields of s that j has, others left as they are: fields added in a later format
// version, which older files lack.
template <class S, class Fields>
void ReadPresent(const json& j, Fields fields, S* s) {
  fields(*s, [&j](const char* key, auto& v) {
    if (j.contains(key)) FieldFromJson(j.at(key), key, &v);
  });
}

}  // namespace texel::runtime
