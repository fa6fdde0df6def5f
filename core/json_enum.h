// Reading an enum by name from strict JSON: the value must be one of the names in the enum's
// table, and an error lists them.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include <fmt/format.h>

#include "core/enum_names.h"
#include "core/json_reader.h"

namespace shardplan {

template <class E, size_t N>
E read_enum(ObjectReader& r, std::string_view key, const EnumNames<E, N>& names) {
  const std::string name = r.string(key);
  const std::optional<E> v = enum_from_name(name, names);
  if (!v) r.fail(key, fmt::format("unknown value \"{}\"", name), "expected " + enum_choices(names));
  return *v;
}

template <class E, size_t N>
E read_enum_or(ObjectReader& r, std::string_view key, E fallback, const EnumNames<E, N>& names) {
  if (r.has(key)) return read_enum(r, key, names);
  r.ignore({key});
  return fallback;
}

}  // namespace shardplan
