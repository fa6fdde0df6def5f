#include "report/page.h"

#include <string_view>

#include "report/assets.h"

namespace shardplan::report {
namespace {

// No fetch of any kind: scripts and styles are inline, images data: URLs (none so far).
constexpr std::string_view kContentSecurityPolicy =
    "default-src 'none'; script-src 'unsafe-inline'; style-src 'unsafe-inline'; img-src data:";

constexpr std::string_view kStyle = R"(
body { font: 14px/1.45 system-ui, sans-serif; margin: 0 auto; max-width: 1360px; padding: 0 16px;
       color: #1d2430; }
h1 { font-size: 22px; margin: 18px 0 4px; }
h2 { font-size: 17px; margin: 28px 0 8px; border-bottom: 1px solid #d5dae1; padding-bottom: 4px; }
.inputs, .note, .caption { color: #5b6472; font-size: 13px; }
.note { background: #f6f7f9; border-left: 3px solid #c9ced6; padding: 4px 10px; margin: 4px 0; }
.row { display: flex; gap: 20px; flex-wrap: wrap; align-items: flex-start; }
.row > * { flex: 1 1 560px; min-width: 0; }
.row > .wide { flex: 3 1 760px; }
.row > .side { flex: 2 1 440px; }
.chart { position: relative; height: 360px; }
table { border-collapse: collapse; font-size: 12.5px; width: 100%; }
th, td { padding: 3px 6px; text-align: right; border-bottom: 1px solid #eceef2; white-space: nowrap; }
th { cursor: pointer; user-select: none; background: #f6f7f9; position: sticky; top: 0; }
td.layout, th.layout { text-align: left; white-space: normal; overflow-wrap: anywhere; min-width: 220px;
                      font-family: ui-monospace, monospace; }
tr.pareto td.layout::after { content: " \25C6"; color: #c2410c; }
.scroll { max-height: 420px; overflow: auto; }
)";

// `text` safe inside HTML text and attribute values.
std::string escape_html(std::string_view text) {
  std::string out;
  for (char c : text) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      default: out += c;
    }
  }
  return out;
}

// JSON inside <script>: "</" only appears in strings, where "<\/" reads back the same.
std::string script_safe(const std::string& json) {
  std::string out;
  out.reserve(json.size());
  for (size_t i = 0; i < json.size(); ++i) {
    out += json[i];
    if (json[i] == '<' && i + 1 < json.size() && json[i + 1] == '/') out += '\\';
  }
  return out;
}

}  // namespace

std::string report_page(const nlohmann::json& data) {
  const std::string title = escape_html(data.at("title").get<std::string>());
  std::string page = "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n";
  page += "<meta http-equiv=\"Content-Security-Policy\" content=\"" +
          std::string(kContentSecurityPolicy) + "\">\n";
  page += "<title>shardplan report: " + title + "</title>\n<style>" + std::string(kStyle) +
          "</style>\n</head>\n";
  // report.js first: it records errors and blocked fetches from the start, and draws on load.
  page += "<body data-status=\"loading\">\n<script>\n" + std::string(kReportJs) + "</script>\n";
  page += "<h1>" + title + "</h1>\n<main id=\"report\"></main>\n";
  page += "<script type=\"application/json\" id=\"report-data\">" +
          script_safe(data.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace)) +
          "</script>\n";
  page += "<script>\n" + std::string(kChartJs) + "</script>\n</body>\n</html>\n";
  return page;
}

}  // namespace shardplan::report
