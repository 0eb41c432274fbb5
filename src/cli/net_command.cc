// `stallscope net serve [--bind ADDR] [--port P]` and
// `stallscope net probe HOST [--port P] [--json] [--duration S] [--streams N]
// [--pings N]`: point-to-point TCP throughput, latency and path MTU between
// two hosts (library in src/net/, protocol in docs/net-protocol.md).
#include <fmt/format.h>
#include <signal.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <atomic>
#include <cstdio>
#include <memory>

#include "analyze/host/network_rules.h"
#include "analyze/report.h"
#include "cli/commands.h"
#include "core/host_clock.h"
#include "core/json_text.h"
#include "net/client.h"
#include "net/protocol.h"
#include "net/server.h"
#include "render/net_probe.h"
#include "render/report.h"

namespace stallscope {
namespace {

std::atomic<bool> stop_serving{false};

void StopServing(int) { stop_serving.store(true); }

int Serve(const net::ServeOptions& options) {
  Result<net::NetServer> server = net::NetServer::Listen(options);
  if (!server.ok()) {
    std::fprintf(stderr, "stallscope net serve: %s\n", server.status().message().c_str());
    return server.status().code() == Status::Code::kInvalidArgument ? kExitUsage : kExitCouldNotRun;
  }
  struct sigaction action {};
  action.sa_handler = StopServing;
  sigemptyset(&action.sa_mask);
  sigaction(SIGINT, &action, nullptr);
  sigaction(SIGTERM, &action, nullptr);
  std::printf("net serve: listening on %s port %u (TCP and UDP); Ctrl-C stops\n",
              server->address().c_str(), server->port());
  std::fflush(stdout);
  Status served = server->Serve(stop_serving);
  if (!served.ok()) {
    std::fprintf(stderr, "stallscope net serve: %s\n", served.message().c_str());
    return kExitCouldNotRun;
  }
  return kExitOk;
}

int Probe(const net::ProbeOptions& options, bool json) {
  const bool tty = isatty(STDERR_FILENO);
  Result<net::ProbeResult> result = net::RunProbe(options, [&](const std::string& what) {
    if (tty) std::fprintf(stderr, "\r\033[Knet probe: %s...", what.c_str());
  });
  if (tty) std::fputs("\r\033[K", stderr);
  if (!result.ok()) {
    std::fprintf(stderr, "stallscope net probe: %s\n", result.status().message().c_str());
    return result.status().code() == Status::Code::kInvalidArgument ? kExitUsage : kExitCouldNotRun;
  }
  std::vector<Finding> findings;
  if (std::optional<Finding> mtu = CheckPathMtu(MtuObservationOf(*result))) {
    findings.push_back(std::move(*mtu));
  }
  std::vector<std::string> notes;
  if (!result->mtu.measured) notes.push_back("path MTU not measured: " + result->mtu.note);
  Report report = MakeReport(std::move(findings), {Layer::kNetwork}, notes);
  double window = result->single ? result->single->seconds : 0;
  if (result->parallel) window += result->parallel->seconds;
  ReportHeader header{"net probe", HostName(), UtcNow(), window};
  std::string out;
  if (json) {
    nlohmann::ordered_json j = ReportToJson(header, report);
    j["probe"] = NetProbeToJson(*result);
    out = JsonText(j) + "\n";
  } else {
    out = RenderNetProbeText(*result) + "\n" + RenderReportText(header, report);
  }
  std::fputs(out.c_str(), stdout);
  return kExitOk;
}

}  // namespace

CommandRunner SetupNet(CLI::App& app) {
  struct Flags {
    net::ServeOptions serve;
    net::ProbeOptions probe;
    bool json = false;
    std::string allow;
  };
  auto flags = std::make_shared<Flags>();
  flags->serve.port = net::kDefaultPort;
  flags->serve.log = stderr;
  flags->probe.port = net::kDefaultPort;
  app.require_subcommand(1, 1);

  CLI::App* serve = app.add_subcommand("serve", "answer `net probe` from other hosts");
  serve->add_option("--bind", flags->serve.bind, "address to listen on (IPv4 or IPv6)")
      ->capture_default_str();
  serve->add_option("--port", flags->serve.port, "TCP and UDP port")
      ->capture_default_str()
      ->check(CLI::Range(0, 65535));
  serve->add_option("--allow", flags->allow,
                    "who may connect or probe: IPv4/IPv6 CIDRs or addresses, comma separated "
                    "(default: everyone)");
  serve
      ->add_option("--max-seconds", flags->serve.max_stream_seconds,
                   "the longest throughput stream a client gets; longer asks are cut here")
      ->capture_default_str()
      ->check(CLI::Range(1.0, 86400.0));
  serve->add_option("--max-bytes", flags->serve.max_stream_bytes,
                    "the most one stream may send before it is cut (default: no cap)");
  serve
      ->add_option("--udp-rate", flags->serve.udp_replies_per_second,
                   "path-MTU answers a second per source address (also the burst)")
      ->capture_default_str()
      ->check(CLI::Range(1.0, 1000000.0));

  CLI::App* probe = app.add_subcommand(
      "probe", "TCP throughput, latency and path MTU towards a host running `net serve`");
  probe->add_option("HOST", flags->probe.host, "the host running `stallscope net serve`")
      ->required();
  probe->add_option("--port", flags->probe.port, "its port")
      ->capture_default_str()
      ->check(CLI::Range(1, 65535));
  probe->add_flag("--json", flags->json, "machine output (schema stallscope.report/1 + probe)");
  probe
      ->add_option("--duration", flags->probe.duration_seconds,
                   "seconds per throughput test (single stream, then parallel)")
      ->capture_default_str();
  probe->add_option("--streams", flags->probe.streams, "parallel TCP streams in the second test")
      ->capture_default_str();
  probe->add_option("--pings", flags->probe.pings, "TCP round trips for the latency figures")
      ->capture_default_str();

  return [flags, serve, probe]() {
    if (serve->parsed()) {
      Result<net::AllowList> allow = net::AllowList::Parse(flags->allow);
      if (!allow.ok()) {
        std::fprintf(stderr, "stallscope net serve: %s\n", allow.status().message().c_str());
        return kExitUsage;
      }
      flags->serve.allow = std::move(*allow);
      return Serve(flags->serve);
    }
    if (probe->parsed()) return Probe(flags->probe, flags->json);
    return kExitUsage;
  };
}

}  // namespace stallscope
