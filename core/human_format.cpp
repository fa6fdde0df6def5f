#include "core/human_format.h"

#include <fmt/format.h>

#include <cmath>

namespace shardplan {

std::string format_count(double n) {
  const double a = std::fabs(n);
  if (a >= 1e9) return fmt::format("{:.2f} B", n / 1e9);
  if (a >= 1e6) return fmt::format("{:.1f} M", n / 1e6);
  if (a >= 1e3) return fmt::format("{:.1f} K", n / 1e3);
  return fmt::format("{:.0f}", n);
}

std::string format_gib(double bytes) {
  return fmt::format("{:.2f} GiB", bytes / (1024.0 * 1024 * 1024));
}

std::string format_mib(double bytes) {
  return fmt::format("{:.2f} MiB", bytes / (1024.0 * 1024));
}

std::string format_seconds(double s) {
  const double a = std::fabs(s);
  if (a >= 1.0 || a == 0.0) return fmt::format("{:.3f} s", s);
  if (a >= 1e-3) return fmt::format("{:.2f} ms", s * 1e3);
  return fmt::format("{:.2f} us", s * 1e6);
}

std::string format_percent(double ratio) {
  return fmt::format("{:.1f}%", ratio * 100.0);
}

std::string format_signed_percent(double ratio) {
  return fmt::format("{:+.1f}%", ratio * 100);
}

}  // namespace shardplan
