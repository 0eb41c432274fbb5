// `stallscope doctor [--json] [--rules] [--interval S]`: the ordered triage.
// So far the memory layer; later layers join the same report.
#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <cstdio>
#include <memory>

#include "analyze/catalog.h"
#include "analyze/memory_rules.h"
#include "analyze/network_rules.h"
#include "cli/commands.h"
#include "cli/progress.h"
#include "net/host_observation.h"
#include "probe/snapshot.h"
#include "render/report.h"

namespace stallscope {
namespace {

std::string RulesText() {
  std::string out;
  for (const Rule& r : RuleCatalog()) {
    out += fmt::format("{}  [{}]\n  checks:    {}\n  fires:     {}\n  because:   {}\n\n", r.id,
                       LayerName(r.layer), r.checks, r.threshold, r.source);
  }
  return out;
}

nlohmann::ordered_json RulesJson() {
  nlohmann::ordered_json out = nlohmann::ordered_json::array();
  for (const Rule& r : RuleCatalog()) {
    out.push_back({{"id", r.id},
                   {"layer", LayerName(r.layer)},
                   {"checks", r.checks},
                   {"threshold", r.threshold},
                   {"source", r.source}});
  }
  return out;
}

}  // namespace

CommandRunner SetupDoctor(CLI::App& app) {
  struct Flags {
    double interval = 1.0;
    bool json = false;
    bool rules = false;
    std::vector<std::string> peers;
  };
  auto flags = std::make_shared<Flags>();
  app.add_flag("--json", flags->json, "machine output (schema stallscope.report/1)");
  app.add_flag("--rules", flags->rules, "print the rule catalog: id, layer, threshold, source");
  app.add_option("--interval", flags->interval, "seconds of sampling for swap and disk activity")
      ->capture_default_str();
  app.add_option("--peer", flags->peers,
                 "a host the job talks to (repeatable): the route to it is checked against "
                 "NCCL_SOCKET_IFNAME / GLOO_SOCKET_IFNAME, as MASTER_ADDR is");
  return [flags]() {
    if (flags->rules) {
      std::string out = flags->json ? RulesJson().dump(2) + "\n" : RulesText();
      std::fputs(out.c_str(), stdout);
      return kExitOk;
    }
    const net::RdmaBaseline rdma_before = net::ReadRdmaBaseline(Root("/"));
    Result<Snapshot> snapshot = [&] {
      ProgressLine progress(fmt::format("checking memory for {:.1f} s...", flags->interval));
      return TakeSnapshot(Root("/"), SnapshotOptions{flags->interval});
    }();
    if (!snapshot.ok()) {
      bool usage = snapshot.status().code() == Status::Code::kInvalidArgument;
      std::fprintf(stderr, "stallscope doctor: %s\n", snapshot.status().message().c_str());
      return usage ? kExitUsage : kExitCouldNotRun;
    }
    std::vector<std::string> notes = snapshot->notes;
    notes.push_back("io, distributed and code layers are not checked yet");
    std::vector<Finding> findings = CheckMemory(ObserveMemory(*snapshot));
    std::vector<Finding> network =
        CheckNetwork(net::ObserveHostNetwork(Root("/"), *snapshot, flags->peers, rdma_before));
    findings.insert(findings.end(), network.begin(), network.end());
    Report report =
        MakeReport(std::move(findings), {Layer::kMemory, Layer::kNetwork}, notes);
    ReportHeader header{"doctor", snapshot->hostname, snapshot->time_utc,
                        snapshot->interval_seconds};
    std::string out = flags->json ? ReportToJson(header, report).dump(2) + "\n"
                                  : RenderReportText(header, report);
    std::fputs(out.c_str(), stdout);
    return kExitOk;
  };
}

}  // namespace stallscope
