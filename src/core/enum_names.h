// Name tables for small enums, as data: one table per enum, read by NameIn and ParseIn, so that
// printing and parsing a flag's value cannot drift apart. Thread safety: pure functions.
#pragma once

#include <cstddef>
#include <string_view>

namespace texel {

template <class E>
struct EnumName {
  E value;
  const char* name;
};

template <class E, size_t N>
const char* NameIn(const EnumName<E> (&table)[N], E value) {
  for (const EnumName<E>& e : table)
    if (e.value == value) return e.name;
  return "?";
}

// False (and *out untouched) when text names no value.
template <class E, size_t N>
bool ParseIn(const EnumName<E> (&table)[N], std::string_view text, E* out) {
  for (const EnumName<E>& e : table)
    if (text == e.name) {
      *out = e.value;
      return true;
    }
  return false;
}

}  // namespace texel
