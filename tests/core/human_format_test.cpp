// Wrapping a report's lines to fit a terminal: lists, notes under their column, paragraphs.
#include "core/human_format.h"

#include <catch2/catch.hpp>
#include <string>
#include <vector>

using namespace shardplan;

TEST_CASE("a list cut after its commas goes on without the space", "[human_format]") {
  CHECK(wrap_after("compute 1 s (50%), tp-comm 2 s (25%), dp-comm 3 s (25%)", 40) ==
        std::vector<std::string>{"compute 1 s (50%), tp-comm 2 s (25%),", "dp-comm 3 s (25%)"});
  // A layout has no spaces: cut after its commas as before.
  CHECK(wrap_after("tp=4,pp=8,stages=15,16", 10) ==
        std::vector<std::string>{"tp=4,pp=8,", "stages=15,", "16"});
}

TEST_CASE("a row's note wraps between words under its column", "[human_format]") {
  const std::string cells = "  peak  12 B  ";
  CHECK(row_with_wrapped_last(cells, "allocated: the items after the runtime's three", 34, ' ') ==
        "  peak  12 B  allocated: the\n"
        "              items after the\n"
        "              runtime's three\n");
}

TEST_CASE("a paragraph is one line when wide, else wrapped after its margin", "[human_format]") {
  const std::string text(60, 'x');
  const std::string words = text + " " + text;
  CHECK(paragraph(words, true, 4, 2) == "  " + words + "\n");
  CHECK(paragraph(words, false, 4, 2) == "  " + text + "\n    " + text + "\n");
}
