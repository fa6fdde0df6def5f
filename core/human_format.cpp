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

std::vector<std::string> wrap_after(std::string_view text, size_t width, char separator) {
  std::vector<std::string> lines(1);
  while (!text.empty()) {
    const size_t cut = text.find(separator);
    const std::string_view piece = text.substr(0, cut == std::string_view::npos ? cut : cut + 1);
    if (!lines.back().empty() && lines.back().size() + piece.size() > width) lines.emplace_back();
    lines.back() += piece;
    text.remove_prefix(piece.size());
  }
  if (separator == ' ')  // words: no line ends in the space it was cut after
    for (std::string& line : lines)
      if (line.ends_with(' ')) line.pop_back();
  return lines;
}

std::string wrap_words(std::string_view text, size_t columns, size_t indent) {
  std::string out, line;
  const auto finish = [&] {
    out += line + "\n";
    line.assign(indent, ' ');
  };
  for (const std::string& word : wrap_after(text, 0, ' ')) {  // one word a line
    const bool fresh = line.find_first_not_of(' ') == std::string::npos;
    if (!fresh && line.size() + 1 + word.size() > columns) finish();
    if (line.find_first_not_of(' ') != std::string::npos) line += ' ';
    line += word;
  }
  if (line.find_first_not_of(' ') != std::string::npos) finish();
  return out;
}

std::string row_with_wrapped_last(const std::string& cells, std::string_view last,
                                  size_t columns) {
  const size_t width = columns > cells.size() ? columns - cells.size() : 1;
  std::string out;
  for (const std::string& line : wrap_after(last, width))
    out += (out.empty() ? cells : std::string(cells.size(), ' ')) + line + "\n";
  return out;
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
