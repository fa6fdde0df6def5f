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
  // No line ends in the spaces before a cut, nor goes on with those after one: words cut after
  // ' ', or a list cut after ", ".
  for (size_t i = 0; i < lines.size(); ++i) {
    lines[i].erase(lines[i].find_last_not_of(' ') + 1);
    if (i > 0) lines[i].erase(0, lines[i].find_first_not_of(' '));
  }
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

std::string paragraph(std::string_view text, bool wide, size_t indent, size_t margin) {
  return std::string(margin, ' ') +
         (wide ? std::string(text) + "\n" : wrap_words(text, kTableColumns - margin, indent));
}

std::string row_with_wrapped_last(const std::string& cells, std::string_view last, size_t columns,
                                  char separator) {
  const size_t width = columns > cells.size() ? columns - cells.size() : 1;
  std::string out;
  for (const std::string& line : wrap_after(last, width, separator))
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
