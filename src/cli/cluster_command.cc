// `stallscope cluster [--interval S] [--json]` under mpirun/srun: every rank
// takes a snapshot and reduces it to a NodeSummary (dist/node_summary.h),
// rank 0 measures each rank's clock offset with an MPI ping-pong, gathers
// the summaries and prints what differs between nodes (analyze/
// cluster_rules.h).
#include <fmt/format.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <ctime>
#include <map>
#include <memory>

#include "analyze/fleet/cluster_rules.h"
#include "analyze/report.h"
#include "bench/cuda_runtime.h"
#include "cli/distributed_common.h"
#include "core/file.h"
#include "core/json_text.h"
#include "dist/node_summary.h"
#include "net/route.h"
#include "probe/gpu_probe.h"
#include "probe/snapshot.h"
#include "render/cluster.h"
#include "render/report.h"

namespace stallscope {

namespace {

constexpr int kClockTag = 7001;
constexpr int kClockRounds = 8;

double RealtimeMs() {
  timespec ts{};
  ::clock_gettime(CLOCK_REALTIME, &ts);
  return static_cast<double>(ts.tv_sec) * 1e3 + static_cast<double>(ts.tv_nsec) / 1e6;
}

// Rank 0 asks every rank for its clock kClockRounds times; the round with
// the smallest round trip gives the offset (NTP's estimate: the remote
// reading against the midpoint of the local send and receive).
Result<std::vector<ClockOffset>> MeasureClockOffsets(MpiWorld& world) {
  std::vector<ClockOffset> offsets;
  if (world.rank() == 0) {
    offsets.push_back({0, 0, 0});
    for (int r = 1; r < world.size(); ++r) {
      ClockOffset best{r, 0, -1};
      for (int i = 0; i < kClockRounds; ++i) {
        double sent = RealtimeMs(), remote = 0;
        if (Status s = world.Send(&sent, sizeof(sent), r, kClockTag); !s.ok()) return s;
        if (Status s = world.Recv(&remote, sizeof(remote), r, kClockTag); !s.ok()) return s;
        double received = RealtimeMs();
        double rtt = received - sent;
        if (best.round_trip_ms < 0 || rtt < best.round_trip_ms)
          best = {r, remote - (sent + received) / 2, rtt};
      }
      offsets.push_back(best);
    }
  } else {
    for (int i = 0; i < kClockRounds; ++i) {
      double ping = 0;
      if (Status s = world.Recv(&ping, sizeof(ping), 0, kClockTag); !s.ok()) return s;
      double now = RealtimeMs();
      if (Status s = world.Send(&now, sizeof(now), 0, kClockTag); !s.ok()) return s;
    }
  }
  return offsets;
}

// This rank's summary: the snapshot's facts plus GPUs (NVML), the driver
// and CUDA versions, the CPU model and the route to a peer node.
Result<NodeSummary> SummarizeThisNode(int rank, double interval,
                                      const std::vector<std::string>& rank_hosts,
                                      std::string root_dir) {
  // --root: each rank reads its own tree ("{rank}" names it), so that one
  // host can stand for several nodes in tests.
  for (size_t at; (at = root_dir.find("{rank}")) != std::string::npos;)
    root_dir.replace(at, 6, std::to_string(rank));
  Root root(root_dir.empty() ? "/" : root_dir);
  SnapshotOptions options;
  options.interval_seconds = interval;
  Result<Snapshot> snapshot = TakeSnapshot(root, options);
  if (!snapshot.ok()) return snapshot.status();
  NodeSummary n = SummarizeSnapshot(*snapshot, rank);
  if (Result<std::string> cpuinfo = ReadFile(root.Path("/proc/cpuinfo")); cpuinfo.ok())
    n.cpu_model = ParseCpuModel(*cpuinfo);
  std::unique_ptr<GpuProbe> gpus = GpuProbe::Open(root);
  if (gpus && gpus->available()) {
    GpuObservation seen = gpus->Sample();
    for (const GpuState& g : seen.gpus) n.gpus.push_back(g.name);
    if (Result<std::string> v = ReadFile(root.Path("/proc/driver/nvidia/version")); v.ok())
      n.driver_version = ParseNvidiaDriverVersion(*v);
    if (Result<std::unique_ptr<CudaRuntime>> cuda = CudaRuntime::Load(); cuda.ok())
      n.cuda_version = (*cuda)->DriverVersion();
  } else {
    n.gpu_note = gpus ? gpus->absent_reason() : std::string(kNoGpuLine);
  }
  // The peer: the first other host in rank order (rank 0's for every node
  // but rank 0's own, whose peer is the next node).
  for (const std::string& h : rank_hosts) {
    if (h == n.hostname) continue;
    PeerRoute route = net::RouteTo(h, h);
    n.route_interface = route.interface;
    n.route_peer = h;
    break;
  }
  return n;
}

}  // namespace

CommandRunner SetupCluster(CLI::App& app) {
  struct Flags {
    double interval = 0.2;
    bool json = false;
    std::string root;
  };
  auto flags = std::make_shared<Flags>();
  app.add_option("--interval", flags->interval,
                 "seconds between the two samples of each rank's snapshot")
      ->capture_default_str();
  app.add_flag("--json", flags->json,
               "machine output on rank 0: stallscope.report/1 with a \"cluster\" object "
               "(stallscope.cluster/1)");
  app.add_option("--root", flags->root,
                 "read /proc and /sys under DIR instead of / ({rank} in DIR becomes each "
                 "rank's number: fixture trees standing for nodes)")
      ->type_name("DIR");
  return [flags]() {
    const char* name = "cluster";
    if (!(flags->interval >= 0 && flags->interval <= 60))
      return Fail(name, fmt::format("--interval {}: between 0 and 60 seconds", flags->interval),
                  kExitUsage);
    JoinedWorld joined = JoinWorld(name);
    if (!joined.world) return joined.exit_code;
    MpiWorld& world = *joined.world;
    std::time_t started = joined.started;
    Result<NodeSummary> mine =
        SummarizeThisNode(world.rank(), flags->interval, joined.rank_hosts, flags->root);
    if (!AgreeOrReport(world, name, mine.ok() ? Status::Ok() : mine.status()))
      return kExitCouldNotRun;
    Result<std::vector<ClockOffset>> offsets = MeasureClockOffsets(world);
    if (!AgreeOrReport(world, name, offsets.ok() ? Status::Ok() : offsets.status()))
      return kExitCouldNotRun;
    Result<std::vector<std::string>> wires = world.Gather(SerializeNodeSummary(*mine), 0);
    if (!wires.ok()) {
      std::fprintf(stderr, "stallscope %s: %s\n", name, wires.status().message().c_str());
      world.Abort(kExitCouldNotRun);
    }
    if (world.rank() != 0) return kExitOk;

    std::vector<NodeSummary> ranks;
    std::vector<std::string> notes;
    for (size_t r = 0; r < wires->size(); ++r) {
      Result<NodeSummary> n = ParseNodeSummary((*wires)[r], fmt::format("rank {} summary", r));
      if (n.ok())
        ranks.push_back(std::move(*n));
      else
        notes.push_back(n.status().message());
    }
    ClusterComparison comparison = CompareNodes(ranks, *offsets);
    Report report = MakeReport(comparison.findings, {Layer::kNetwork, Layer::kDistributed}, notes);
    ReportHeader header{"cluster", HostName(), UtcTime(started),
                        static_cast<double>(std::time(nullptr) - started)};
    std::string out;
    if (flags->json) {
      nlohmann::ordered_json json = ReportToJson(header, report);
      json["cluster"] = ClusterToJson(comparison, ranks, *offsets);
      out = JsonText(json) + "\n";
    } else {
      out = RenderClusterText(comparison) + "\n" + RenderReportText(header, report);
    }
    std::fputs(out.c_str(), stdout);
    std::fflush(stdout);
    return kExitOk;
  };
}

}  // namespace stallscope
