// The JavaScript every report page inlines, embedded at build time (report/CMakeLists.txt writes
// report_assets.cpp from the files): Chart.js 3 from Debian's libjs-chart.js, and report.js.
#pragma once

namespace shardplan::report {

extern const char kChartJs[];   // /usr/share/javascript/chart.js/chart.min.js (MIT)
extern const char kReportJs[];  // report/report.js: draws the sections from the page's data

}  // namespace shardplan::report
