// Enum <-> string, written once: every enum a document, a printer or a front end spells has one
// table of (value, name) pairs, and both directions read it.
#pragma once

#include <array>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

namespace scellis {

template <typename E, size_t N>
class EnumTable {
 public:
  constexpr explicit EnumTable(std::array<std::pair<E, const char*>, N> entries)
      : entries_(entries) {}

  // The name of `e`; "?" for a value outside the table (a bug, never user input).
  constexpr const char* Name(E e) const {
    for (const auto& [value, name] : entries_)
      if (value == e) return name;
    return "?";
  }
  constexpr std::optional<E> Parse(std::string_view s) const {
    for (const auto& [value, name] : entries_)
      if (s == name) return value;
    return std::nullopt;
  }
  // "a | b | c", for diagnostics that list what is accepted.
  std::string Choices(std::string_view separator = " | ") const {
    std::string out;
    for (size_t i = 0; i < N; ++i) {
      if (i) out += separator;
      out += entries_[i].second;
    }
    return out;
  }
  constexpr const auto& entries() const { return entries_; }

 private:
  std::array<std::pair<E, const char*>, N> entries_;
};

}  // namespace scellis
