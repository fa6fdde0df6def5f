// Numbers as people read them in tables: counts with B/M/K suffixes, bytes in GiB, times with a
// fitting unit. One place, so every table prints the same way.
#pragma once

#include <cstdint>
#include <string>

namespace shardplan {

std::string format_count(double n);               // 6.74 B, 131.1 M, 4.2 K, 512
std::string format_gib(double bytes);             // 75.31 GiB
std::string format_mib(double bytes);             // 147.92 MiB
std::string format_seconds(double s);             // 1.23 s, 45.6 ms, 7.8 us
std::string format_percent(double ratio);         // 0.4312 -> 43.1%
std::string format_signed_percent(double ratio);  // -0.035 -> -3.5%, 0.12 -> +12.0%

}  // namespace shardplan
