// `bench allreduce` rendering: see allreduce.h.
#include "render/allreduce.h"

#include <fmt/format.h>

#include "core/version.h"

namespace stallscope {

double AverageBusBandwidth(const std::vector<AllreduceRow>& rows) {
  if (rows.empty()) return 0;
  double sum = 0;
  for (const AllreduceRow& r : rows) sum += r.busbw_gbps;
  return sum / static_cast<double>(rows.size());
}

std::string RenderAllreduceText(const AllreduceRun& run) {
  std::string hosts;
  for (const std::string& h : run.hosts) hosts += (hosts.empty() ? "" : ",") + h;
  std::string out = fmt::format(
      "# stallscope bench allreduce: {} ranks on {} host(s) ({}), backend {} ({})\n"
      "# out of place, {} iterations after {} warm-up; time is the slowest rank's mean\n"
      "#\n"
      "# {:>12} {:>12} {:>6} {:>6} {:>12} {:>11} {:>11} {:>8}\n"
      "# {:>12} {:>12} {:>6} {:>6} {:>12} {:>11} {:>11} {:>8}\n",
      run.ranks, run.hosts.size(), hosts, run.backend, run.description, run.plan.iterations,
      run.plan.warmup, "size", "count", "type", "redop", "time", "algbw", "busbw", "#wrong", "(B)",
      "(elements)", "", "", "(us)", "(GB/s)", "(GB/s)", "");
  for (const AllreduceRow& r : run.rows) {
    out += fmt::format("  {:>12} {:>12} {:>6} {:>6} {:>12.2f} {:>11.2f} {:>11.2f} {:>8}\n",
                       r.size_bytes, r.count, "float", "sum", r.time_us, r.algbw_gbps, r.busbw_gbps,
                       r.wrong);
  }
  int64_t wrong = 0;
  for (const AllreduceRow& r : run.rows) wrong += r.wrong;
  out += fmt::format("# Out of bounds values : {} {}\n", wrong, wrong == 0 ? "OK" : "FAILED");
  out += fmt::format("# Avg bus bandwidth    : {:.4f} GB/s\n", AverageBusBandwidth(run.rows));
  out += "#\n# is this bandwidth normal? " + run.judgement.note + "\n";
  return out;
}

nlohmann::ordered_json AllreduceToJson(const AllreduceRun& run) {
  nlohmann::ordered_json j;
  j["schema"] = "stallscope.bench_allreduce/1";
  j["version"] = Version();
  j["backend"] = run.backend;
  j["library"] = run.description;
  j["ranks"] = run.ranks;
  j["hosts"] = run.hosts;
  j["iterations"] = run.plan.iterations;
  j["warmup"] = run.plan.warmup;
  j["in_place"] = false;
  nlohmann::ordered_json rows = nlohmann::ordered_json::array();
  for (const AllreduceRow& r : run.rows) {
    rows.push_back({{"size_bytes", r.size_bytes},
                    {"count", r.count},
                    {"type", "float"},
                    {"redop", "sum"},
                    {"time_us", r.time_us},
                    {"algbw_gbps", r.algbw_gbps},
                    {"busbw_gbps", r.busbw_gbps},
                    {"wrong", r.wrong}});
  }
  j["rows"] = rows;
  j["avg_busbw_gbps"] = AverageBusBandwidth(run.rows);
  nlohmann::ordered_json line;
  if (run.link) {
    line["link"] = run.link->name;
    line["kind"] = run.link->kind;
    line["chosen_by"] = run.link->chosen_by;
    line["line_rate_gbit_per_s"] =
        run.link->line_rate_gbps ? nlohmann::ordered_json(*run.link->line_rate_gbps) : nullptr;
  }
  line["applies"] = run.judgement.percent_of_line_rate.has_value();
  line["percent_of_line_rate"] = run.judgement.percent_of_line_rate
                                     ? nlohmann::ordered_json(*run.judgement.percent_of_line_rate)
                                     : nullptr;
  line["note"] = run.judgement.note;
  j["line_rate"] = line;
  return j;
}

}  // namespace stallscope
