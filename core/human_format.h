// Numbers as people read them in tables: counts with B/M/K suffixes, bytes in GiB, times with a
// fitting unit. One place, so every table prints the same way.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace shardplan {

std::string format_count(double n);               // 6.74 B, 131.1 M, 4.2 K, 512
std::string format_gib(double bytes);             // 75.31 GiB
std::string format_mib(double bytes);             // 147.92 MiB
std::string format_seconds(double s);             // 1.23 s, 45.6 ms, 7.8 us
std::string format_percent(double ratio);         // 0.4312 -> 43.1%
std::string format_signed_percent(double ratio);  // -0.035 -> -3.5%, 0.12 -> +12.0%

// The columns tables fit by default (a terminal's; --wide prints them whole on one line each).
inline constexpr size_t kTableColumns = 100;

// `text` in lines of at most `width` characters, each cut just after a `separator` (a piece longer
// than `width` stays whole on a line of its own): a layout label in a table's last column,
// "tp=4,pp=8,...," then "stages=15,16*6,15"; with ' ', a paragraph's words. The spaces at a cut
// are dropped (a list cut after ", " goes on without its space).
std::vector<std::string> wrap_after(std::string_view text, size_t width, char separator = ',');

// A paragraph's lines ("\n"-ended) of at most `columns` characters, cut between words, each
// after the first indented by `indent` spaces.
std::string wrap_words(std::string_view text, size_t columns = kTableColumns, size_t indent = 0);

// A report's paragraph after `margin` spaces: `text` on one line when `wide` (--wide), else
// wrap_words' lines within kTableColumns, the continuations indented by `indent` (from the edge).
std::string paragraph(std::string_view text, bool wide, size_t indent = 2, size_t margin = 0);

// A table row whose last cell is wrapped to fit `columns`: `cells` (the row up to that cell,
// already aligned) followed by `last`'s lines, cut after `separator` (wrap_after: a layout's
// commas, a note's words with ' '), the continuations indented under it.
std::string row_with_wrapped_last(const std::string& cells, std::string_view last,
                                  size_t columns = kTableColumns, char separator = ',');

}  // namespace shardplan
