// `stallscope history --html F`: one self-contained page per call, readable
// offline. Per job: the verdict, a line per change with its causes, a chart
// per figure over the runs (step median and p90, data wait, sync wait,
// steps/s; inline SVG by render/svg_chart.h, x in UTC dates) with every
// change point marked, and the table of runs. No request leaves the page:
// no external URL, font, script or style.
//
// Pure: data in, a string out; every outside text (commands, paths, hosts,
// loader settings, notes) is HTML-escaped. Thread-safe.
#pragma once

#include <string>
#include <vector>

#include "analyze/run/history.h"

namespace stallscope {

std::string RenderHistoryHtml(const std::vector<HistoryJob>& jobs, HistoryMetric metric,
                              const std::vector<std::string>& notes);

}  // namespace stallscope
