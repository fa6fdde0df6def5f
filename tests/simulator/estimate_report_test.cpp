// The estimate's report for people: within a terminal's columns by default, whole with --wide.
#include "simulator/estimate_report.h"

#include <fmt/format.h>

#include <algorithm>
#include <catch2/catch.hpp>
#include <sstream>
#include <string>

#include "core/human_format.h"
#include "core/layout.h"
#include "simulator/estimate.h"
#include "simulator_fixtures.h"

using namespace shardplan;

namespace {

// Llama 3 70B as `estimate` prices it in tests/cli/estimate_llama3_70b: its notes, headings and
// collectives table are the widest of the report.
Estimate llama3_70b() {
  const Model m = test::preset_model("llama3-70b");
  const Cluster c = test::preset_cluster("dgx-h100", 8);
  Training t = test::training(512, 8192);
  const Layout l = resolve_layout(parse_layout_string("tp=8,pp=4,zero=1,sp=1,recompute=selective"),
                                  m, c, t, "test");
  return estimate(m, c, t, l);
}

size_t widest_line(const std::string& text) {
  std::istringstream in(text);
  size_t widest = 0;
  for (std::string line; std::getline(in, line);) widest = std::max(widest, line.size());
  return widest;
}

}  // namespace

TEST_CASE("an estimate's report fits a terminal, and --wide keeps its old rows",
          "[estimate][report]") {
  const Estimate e = llama3_70b();
  const std::string narrow = format_estimate_table(e);
  CHECK(widest_line(narrow) <= kTableColumns);

  const std::string wide = format_estimate_table(e, true);
  CHECK(widest_line(wide) > kTableColumns);
  const RankMemory& r = e.memory();
  CHECK(wide.find(fmt::format("  {:26} {:>16} B {:>12}  allocated: the items after the runtime's "
                              "three, but the cache\n",
                              "peak", r.peak_bytes(),
                              format_gib(static_cast<double>(r.peak_bytes())))) !=
        std::string::npos);
  CHECK(wide.find("  name                                 group         level     size (B)  calls"
                  "   per call   busbw      total    exposed\n") != std::string::npos);
  // Narrow leaves the time per call to --wide and the JSON.
  CHECK(narrow.find("per call   busbw") == std::string::npos);
  CHECK(narrow.find("busbw     total   exposed\n") != std::string::npos);
}
