// `stallscope bench allreduce [-b 8] [-e 128M] [-f 2] [--iters 20]
// [--warmup 5] [--backend mpi|nccl] [--json]` under mpirun/srun: wires the
// flags to RunAllreduce (bench/allreduce.h) over the chosen backend, and on
// rank 0 judges the bandwidth against the link in use (analyze/
// allreduce_rules.h) and prints. Ranks agree on every failure that happens
// before the first collective of the run, so they all exit with one message
// from rank 0 instead of hanging; a failure in the middle aborts the job.
#include <fmt/format.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <cstdio>
#include <ctime>
#include <map>
#include <memory>

#include "analyze/fleet/allreduce_rules.h"
#include "analyze/report.h"
#include "bench/allreduce.h"
#include "bench/nccl_backend.h"
#include "cli/bench_command.h"
#include "cli/distributed_common.h"
#include "core/byte_size.h"
#include "core/file.h"
#include "core/json_text.h"
#include "net/route.h"
#include "probe/infiniband.h"
#include "probe/net_dev.h"
#include "render/allreduce.h"
#include "render/report.h"

namespace stallscope {
namespace {

// What the probes say about the link, read on rank 0 only.
std::optional<AllreduceLink> LinkInUse(const std::string& backend,
                                       const std::vector<std::string>& hosts,
                                       const std::string& my_host,
                                       std::vector<std::string>* notes) {
  AllreduceLinkInput in;
  in.backend = backend;
  Root root("/");
  Result<InterfaceAddresses> addresses = ReadLiveAddresses();
  Result<std::vector<NetInterface>> interfaces =
      ReadInterfaces(root, addresses.ok() ? *addresses : InterfaceAddresses{});
  if (interfaces.ok())
    in.interfaces = *interfaces;
  else
    notes->push_back("interfaces: " + interfaces.status().message());
  Result<std::vector<InfinibandDevice>> ib = ReadInfinibandDevices(root);
  if (ib.ok()) in.infiniband = *ib;
  EnvLookup env = ProcessEnvLookup();
  in.nccl_socket_ifname = env("NCCL_SOCKET_IFNAME");
  in.nccl_ib_hca = env("NCCL_IB_HCA");
  in.nccl_ib_disable = env("NCCL_IB_DISABLE");
  in.ompi_tcp_if_include = env("OMPI_MCA_btl_tcp_if_include");
  for (const std::string& h : hosts) {
    if (h == my_host) continue;
    PeerRoute route = net::RouteTo(h, h);
    in.route_peer = h;
    in.route_interface = route.interface;
    if (!route.error.empty()) notes->push_back(fmt::format("route to {}: {}", h, route.error));
    break;
  }
  return ChooseAllreduceLink(in);
}

}  // namespace

CommandRunner SetupBenchAllreduce(CLI::App& app) {
  struct Flags {
    std::string begin = "8";
    std::string end = "128M";
    uint64_t factor = 2;
    int iterations = 20;
    int warmup = 5;
    std::string backend = "mpi";
    bool json = false;
  };
  auto flags = std::make_shared<Flags>();
  app.add_option("-b,--minbytes", flags->begin, "smallest size (nccl-tests -b; 8, 1K, 1M)")
      ->capture_default_str();
  app.add_option("-e,--maxbytes", flags->end, "largest size (nccl-tests -e; binary units)")
      ->capture_default_str();
  app.add_option("-f,--stepfactor", flags->factor, "multiply the size by this each step")
      ->capture_default_str();
  app.add_option("-n,--iters", flags->iterations, "timed iterations per size")
      ->capture_default_str();
  app.add_option("-w,--warmup", flags->warmup, "untimed iterations per size before them")
      ->capture_default_str();
  app.add_option("--backend", flags->backend,
                 "mpi: host buffers over MPI (the CPU path); nccl: GPU buffers over NCCL, one GPU "
                 "per rank")
      ->check(CLI::IsMember({"mpi", "nccl"}))
      ->capture_default_str();
  app.add_flag("--json", flags->json,
               "machine output on rank 0: stallscope.report/1 with a \"bench\" object "
               "(stallscope.bench_allreduce/1)");
  return [flags]() {
    const char* name = "bench allreduce";
    AllreducePlan plan;
    plan.factor = flags->factor;
    plan.iterations = flags->iterations;
    plan.warmup = flags->warmup;
    std::optional<uint64_t> begin = ParseByteSize(flags->begin);
    std::optional<uint64_t> end = ParseByteSize(flags->end);
    if (!begin)
      return Fail(name, fmt::format("-b {}: not a size (8, 1K, 1M)", flags->begin), kExitUsage);
    if (!end) return Fail(name, fmt::format("-e {}: not a size (1M, 1G)", flags->end), kExitUsage);
    plan.begin_bytes = *begin;
    plan.end_bytes = *end;
    if (Status s = ValidateAllreducePlan(plan); !s.ok()) return Fail(name, s.message(), kExitUsage);
    JoinedWorld joined = JoinWorld(name);
    if (!joined.world) return joined.exit_code;
    MpiWorld& world = *joined.world;
    std::time_t started = joined.started;
    const std::vector<std::string>& rank_hosts = joined.rank_hosts;
    LocalPlace place = LocalPlaceOf(rank_hosts, world.rank());

    std::unique_ptr<AllreduceBackend> backend;
    Status opened = Status::Ok();
    if (flags->backend == "nccl") {
      Result<std::unique_ptr<NcclAllreduceBackend>> nccl =
          NcclAllreduceBackend::Open(place.local_rank, place.local_ranks);
      if (nccl.ok()) {
        backend = std::move(*nccl);
      } else {
        opened = nccl.status();
      }
    } else {
      backend = std::make_unique<MpiAllreduceBackend>(world);
    }
    if (!AgreeOrReport(world, name, opened)) return kExitCouldNotRun;
    if (auto* nccl = dynamic_cast<NcclAllreduceBackend*>(backend.get())) {
      if (!AgreeOrReport(world, name, nccl->Connect(world))) return kExitCouldNotRun;
    }

    Result<std::vector<AllreduceRow>> rows = RunAllreduce(world, *backend, plan);
    if (!rows.ok()) {
      std::fprintf(stderr, "stallscope %s: rank %d (%s): %s\n", name, world.rank(),
                   rank_hosts[world.rank()].c_str(), rows.status().message().c_str());
      // Others may wait in a collective this rank will never join.
      world.Abort(kExitCouldNotRun);
    }
    if (world.rank() != 0) return kExitOk;

    AllreduceRun run;
    run.backend = backend->Name();
    run.description = backend->Description();
    run.ranks = world.size();
    run.hosts = DistinctInOrder(rank_hosts);
    run.plan = plan;
    run.rows = *rows;
    std::vector<std::string> notes;
    run.link = LinkInUse(run.backend, run.hosts, rank_hosts[0], &notes);
    AllreduceJudgeInput judge;
    judge.ranks = run.ranks;
    judge.hosts = static_cast<int>(run.hosts.size());
    if (!run.rows.empty()) {
      judge.largest_bytes = run.rows.back().size_bytes;
      judge.largest_busbw_gbps = run.rows.back().busbw_gbps;
    }
    for (const AllreduceRow& r : run.rows) {
      judge.wrong_total += r.wrong;
      judge.sizes_with_wrong += r.wrong > 0;
    }
    judge.link = run.link;
    run.judgement = JudgeAllreduce(judge);
    Report report =
        MakeReport(run.judgement.findings, {Layer::kNetwork, Layer::kDistributed}, notes);
    ReportHeader header{"bench allreduce", rank_hosts[0], UtcTime(started),
                        static_cast<double>(std::time(nullptr) - started)};
    std::string out;
    if (flags->json) {
      nlohmann::ordered_json json = ReportToJson(header, report);
      json["bench"] = AllreduceToJson(run);
      out = JsonText(json) + "\n";
    } else {
      out = RenderAllreduceText(run) + "\n" + RenderReportText(header, report);
    }
    std::fputs(out.c_str(), stdout);
    std::fflush(stdout);
    return kExitOk;
  };
}

}  // namespace stallscope
