// One table per enum maps values to the names users write in JSON and on the command line, so
// that parsing, printing and error hints all come from the same place.
#pragma once

#include <array>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

namespace shardplan {

template <class E, size_t N>
using EnumNames = std::array<std::pair<E, std::string_view>, N>;

template <class E, size_t N>
constexpr std::string_view enum_name(E value, const EnumNames<E, N>& names) {
  for (const auto& [v, n] : names)
    if (v == value) return n;
  return "?";
}

template <class E, size_t N>
std::optional<E> enum_from_name(std::string_view name, const EnumNames<E, N>& names) {
  for (const auto& [v, n] : names)
    if (n == name) return v;
  return std::nullopt;
}

// "gelu | swiglu", for error hints.
template <class E, size_t N>
std::string enum_choices(const EnumNames<E, N>& names) {
  std::string out;
  for (const auto& [v, n] : names) out += (out.empty() ? "" : " | ") + std::string(n);
  return out;
}

}  // namespace shardplan
