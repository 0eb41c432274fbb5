// `stallscope exporter [--listen 127.0.0.1:9400] [--interval S] [--hook-socket PATH]
// [--web-config FILE]`: Prometheus /metrics for this host and for every job
// reporting through the hook. Wires export/ (the HTTP server, the exposition
// writer, the host and job series) to the command line; the logic lives there.
// The main thread drains the hook socket and ticks; libmicrohttpd's threads
// answer scrapes. One mutex guards the state both read and write; a scrape
// renders its text after letting go of it.
#include <fmt/format.h>
#include <poll.h>
#include <signal.h>
#include <sys/signalfd.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <cstdio>
#include <ctime>
#include <memory>
#include <mutex>
#include <set>

#include "cli/commands.h"
#include "core/atomic_file.h"
#include "core/file.h"
#include "core/host_clock.h"
#include "core/version.h"
#include "export/hook_listener.h"
#include "export/host_metrics.h"
#include "export/http_server.h"
#include "export/job_metrics.h"
#include "export/job_trees.h"
#include "export/sample_clock.h"
#include "export/slurm_job_info.h"
#include "export/web_config.h"
#include "probe/gpu_probe.h"
#include "render/exposition.h"

namespace stallscope {
namespace {

// A rank silent this long is gone: its series end (bounded memory).
constexpr double kJobExpirySeconds = 300;
// Processes tracked at once: far above the ranks one host runs.
constexpr size_t kMaxJobProcesses = 1024;
// Scrapes this close together share one read of the host (100 ms, at most
// half the interval): Prometheus servers scrape every few seconds, so only a
// flood of scrapes ever shares one.
constexpr int64_t kHostSharedNs = 100'000'000;

// The host label: "unknown" when the kernel will not say.
std::string Hostname() {
  std::string name = HostName();
  return name.empty() ? "unknown" : name;
}

struct ExporterFlags {
  std::string listen = "127.0.0.1:9400";
  double interval = 5;
  std::string hook_socket;
  std::string allow_uid;
  std::string root = "/";
  std::string web_config;
  std::string slurm_state = "/run/stallscope";  // the Slurm prolog's state_dir
  std::string textfile;                         // node_exporter's textfile-collector folder
};

void EmitSelf(Exposition& out, const HttpServer::Counts& http, const JobTable& jobs,
              const HookListener& hook, size_t notes, size_t remote_children, double scrape_seconds,
              const SampleClock& clock) {
  out.Family("stallscope_exporter_build_info", MetricType::kGauge,
             "The exporter's version; always 1.");
  out.Add("stallscope_exporter_build_info", {{"version", std::string(Version())}}, 1);
  struct Row {
    const char* name;
    const char* help;
    double value;
  };
  const Row counters[] = {
      {"stallscope_exporter_http_requests_total", "HTTP requests answered.",
       static_cast<double>(http.requests)},
      {"stallscope_exporter_http_bad_requests_total", "Requests refused by the parser (4xx/5xx).",
       static_cast<double>(http.bad_requests)},
      {"stallscope_exporter_http_timeouts_total",
       "Requests cut because their connection was idle past the timeout.",
       static_cast<double>(http.timeouts)},
      {"stallscope_exporter_http_refused_connections_total",
       "Requests answered 503 because too many were in flight.", static_cast<double>(http.refused)},
      {"stallscope_exporter_hook_malformed_lines_total", "Hook records that could not be read.",
       static_cast<double>(jobs.malformed_lines())},
      {"stallscope_exporter_hook_refused_records_total",
       "Hook records ignored because the process table was full.",
       static_cast<double>(jobs.refused_records())},
      {"stallscope_exporter_hook_refused_senders_total",
       "Hook datagrams dropped because their sender's uid is not in --allow-uid.",
       static_cast<double>(hook.refused_senders())},
      {"stallscope_exporter_hook_expired_processes_total",
       "Ranks dropped after reporting nothing for 300 s.",
       static_cast<double>(jobs.expired_processes())},
      {"stallscope_exporter_samples_total", "Host samples taken (one each --interval).",
       static_cast<double>(clock.samples())},
      {"stallscope_exporter_late_samples_total",
       "Host samples taken more than 1.5 intervals after the one before.",
       static_cast<double>(clock.late())},
  };
  for (const Row& r : counters) {
    out.Family(r.name, MetricType::kCounter, r.help);
    out.Add(r.name, {}, r.value);
  }
  const Row gauges[] = {
      {"stallscope_exporter_http_open_connections", "HTTP connections open now.",
       static_cast<double>(http.open)},
      {"stallscope_exporter_hook_processes", "Ranks reporting through the hook now.",
       static_cast<double>(jobs.processes().size())},
      {"stallscope_exporter_notes", "Sources that could not be read in this scrape (see stderr).",
       static_cast<double>(notes)},
      {"stallscope_exporter_scrape_collect_seconds", "Time this scrape took to collect.",
       scrape_seconds},
      {"stallscope_exporter_sample_gap_max_seconds",
       "The longest time between two host samples since the exporter started.",
       clock.longest_gap_seconds()},
      {"stallscope_exporter_remote_file_children",
       "Child processes asking a remote mount about a job's files now (at most 4; one stuck on "
       "a dead mount counts until it ends).",
       static_cast<double>(remote_children)},
  };
  for (const Row& r : gauges) {
    out.Family(r.name, MetricType::kGauge, r.help);
    out.Add(r.name, {}, r.value);
  }
}

int RunExporter(const ExporterFlags& flags) {
  Result<ListenAddress> address = ParseListenAddress(flags.listen);
  if (!address.ok()) return Fail("exporter", "--listen " + address.status().message(), kExitUsage);
  if (!(flags.interval >= 0.1 && flags.interval <= 3600)) {
    return Fail("exporter",
                fmt::format("--interval {}: must be between 0.1 and 3600 seconds", flags.interval),
                kExitUsage);
  }
  std::string socket_path = flags.hook_socket.empty() ? DefaultHookSocketPath() : flags.hook_socket;
  Result<std::vector<uid_t>> allowed_uids = ParseUidList(flags.allow_uid);
  if (!allowed_uids.ok()) return Fail("exporter", allowed_uids.status().message(), kExitUsage);
  Result<HookListener> hook = HookListener::Bind(socket_path);
  if (!hook.ok())
    return Fail("exporter", "--hook-socket " + hook.status().message(), kExitCouldNotRun);
  hook->AllowUids(std::move(*allowed_uids));
  WebConfig web;
  if (!flags.web_config.empty()) {
    Result<WebConfig> loaded = LoadWebConfig(flags.web_config);
    if (!loaded.ok())
      return Fail("exporter", "--web-config " + loaded.status().message(), kExitUsage);
    web = std::move(*loaded);
  }

  sigset_t mask;
  sigemptyset(&mask);
  sigaddset(&mask, SIGINT);
  sigaddset(&mask, SIGTERM);
  sigprocmask(SIG_BLOCK, &mask, nullptr);
  int sfd = signalfd(-1, &mask, SFD_NONBLOCK | SFD_CLOEXEC);
  if (sfd < 0) return Fail("exporter", "signalfd failed", kExitCouldNotRun);
  signal(SIGPIPE, SIG_IGN);

  const Root root(flags.root);
  HostMetrics host(root, GpuProbe::Open(root));
  JobTable jobs(kMaxJobProcesses, kJobExpirySeconds);
  JobTrees trees(root);
  std::string hostname = Hostname();
  std::set<std::string> told;  // notes already printed once
  const int64_t tick_ns = static_cast<int64_t>(flags.interval * 1e9);
  SampleClock clock(tick_ns);

  std::mutex state;  // guards hook, jobs, host, trees, told, clock and server
  std::unique_ptr<HttpServer> server;
  // The host's series, rendered, shared by the scrapes of one short window:
  // under a flood of scrapes the host is read a few times a second, not once
  // per scrape (each read is ~100 files and, on GPU hosts, NVML calls).
  SharedRead host_read(std::min<int64_t>(kHostSharedNs, tick_ns / 2));
  auto host_text = std::make_shared<const std::string>();
  std::vector<std::string> host_notes;
  // A scrape gathers its series under the lock and renders them after it:
  // the lock is held for the gathering only, so the sampling loop and the
  // other scrapes wait less (rendering is most of a scrape's time).
  auto collect = [&]() -> std::string {
    // The Slurm jobs' lines and cpusets: files, read before the lock.
    SlurmJobs slurm_jobs = ReadSlurmJobs(flags.slurm_state);
    for (SlurmJobLine& j : slurm_jobs.jobs) j.cpu_list = SlurmJobCpuList(root, j.job_id, j.uid);
    std::unique_lock<std::mutex> lock(state);
    int64_t start = MonotonicNs();
    hook->Drain([&](std::string_view d, int pid, int64_t uid) {
      jobs.Ingest(d, start, pid, uid);
    });  // the freshest figures
    if (host_read.Stale(start)) {
      Exposition host_out;
      host_notes.clear();
      host.Emit(host_out, host_notes);
      host_text = std::make_shared<const std::string>(RenderExposition(host_out.families()));
      host_read.Made(start);
    }
    Exposition out;
    std::vector<std::string> notes = host_notes;
    if (std::string note = trees.Update(jobs); !note.empty()) notes.push_back(note);
    for (std::string& n : trees.TakeNotes()) notes.push_back(std::move(n));
    jobs.Emit(out, hostname, start);
    EmitSlurmJobInfo(out, slurm_jobs);
    EmitSelf(out, server ? server->counts() : HttpServer::Counts{}, jobs, *hook, notes.size(),
             trees.remote_children(), (MonotonicNs() - start) / 1e9, clock);
    for (const std::string& n : notes) {
      if (told.size() < 64 && told.insert(n).second) {
        std::fprintf(stderr, "stallscope exporter: note: %s\n", n.c_str());
      }
    }
    std::shared_ptr<const std::string> host_part = host_text;
    lock.unlock();
    std::string body = *host_part;
    body += RenderExposition(out.families());
    return body;
  };
  auto metrics = [&]() -> HttpResponse {
    return {200, std::string(kExpositionContentType), collect(), {}};
  };
  // node_exporter's textfile collector reads DIR/*.prom: the file is
  // replaced whole each interval, and removed when the exporter stops so
  // that no stale series outlives it.
  const std::string textfile =
      flags.textfile.empty() ? std::string() : flags.textfile + "/stallscope.prom";
  PasswordCheck check;
  if (!web.users.empty()) {
    check = [&web](std::string_view user, std::string_view password) {
      return CheckWebPassword(web, user, password);
    };
  }
  HttpServerOptions options;
  options.tls_cert_pem = web.cert_pem;
  options.tls_key_pem = web.key_pem;
  {
    std::lock_guard<std::mutex> lock(state);
    Result<std::unique_ptr<HttpServer>> started = HttpServer::Start(
        *address, options,
        [&](const HttpRequest& request) { return AnswerHttpRequest(request, check, metrics); });
    if (!started.ok()) {
      close(sfd);
      return Fail("exporter", "--listen " + started.status().message(), kExitCouldNotRun);
    }
    server = std::move(*started);
  }
  if (!address->loopback && web.users.empty()) {
    std::fprintf(
        stderr,
        "stallscope exporter: warning: --listen %s is not a loopback address: anyone "
        "who can reach this host on that port can read its metrics (there is no "
        "authentication); put it behind a firewall, or set basic auth and TLS with --web-config\n",
        flags.listen.c_str());
  }
  if (!host.gpu_absent_reason().empty()) {
    std::fprintf(stderr, "stallscope exporter: no GPU series: %s\n",
                 host.gpu_absent_reason().c_str());
  }
  std::fprintf(stderr,
               "stallscope exporter: serving %s://%s/metrics (Ctrl-C stops)\n"
               "stallscope exporter: jobs report with this environment (stallscope hook-env "
               "prints it; import stallscope; stallscope.loader(...)):\n",
               server->tls() ? "https" : "http", server->bound_address().c_str());
  for (const auto& [name, value] : HookEnvLines(hook->path())) {
    std::fprintf(stderr, "%s=%s\n", name.c_str(), value.c_str());
  }

  // The main thread: hook datagrams as they come, a tick every interval,
  // until SIGINT or SIGTERM.
  int64_t next_tick = MonotonicNs();
  int64_t next_textfile = next_tick;
  bool textfile_failing = false;
  for (;;) {
    int64_t now = MonotonicNs();
    if (now >= next_tick) {
      std::lock_guard<std::mutex> lock(state);
      clock.Taken(MonotonicNs());  // when the state was ours: a scrape's hold counts
      host.Tick();
      jobs.Expire(now);
      next_tick = now + tick_ns;
    }
    if (!textfile.empty() && now >= next_textfile) {
      Status written = WriteFileAtomically(textfile, collect());
      if (!written.ok() && !textfile_failing) {  // said once, until it works again
        std::fprintf(stderr, "stallscope exporter: --textfile: %s\n", written.message().c_str());
      }
      textfile_failing = !written.ok();
      next_textfile = now + tick_ns;
    }
    struct pollfd fds[2] = {{hook->fd(), POLLIN, 0}, {sfd, POLLIN, 0}};
    int wait_ms = static_cast<int>((next_tick - now) / 1000000) + 1;
    if (poll(fds, 2, wait_ms) < 0 && errno != EINTR) break;
    if (fds[1].revents != 0) break;
    if (fds[0].revents != 0) {
      std::lock_guard<std::mutex> lock(state);
      int64_t at = MonotonicNs();
      hook->Drain([&](std::string_view d, int pid, int64_t uid) { jobs.Ingest(d, at, pid, uid); });
    }
  }
  server.reset();  // stops the connections' threads before what they read goes
  close(sfd);
  if (!textfile.empty()) unlink(textfile.c_str());
  std::fprintf(stderr, "stallscope exporter: stopped\n");
  return kExitOk;
}

}  // namespace

CommandRunner SetupExporter(CLI::App& app) {
  auto flags = std::make_shared<ExporterFlags>();
  app.add_option("--listen", flags->listen,
                 "HOST:PORT to serve /metrics on (IPv4, [IPv6] or localhost; port 0 picks one)")
      ->capture_default_str();
  app.add_option("--interval", flags->interval,
                 "seconds between disk samples (iostat %util and await are over this interval)")
      ->capture_default_str();
  app.add_option(
      "--hook-socket", flags->hook_socket,
      "where jobs send hook records (STALLSCOPE_SOCKET); default " + DefaultHookSocketPath());
  app.add_option("--allow-uid", flags->allow_uid,
                 "only these uids may report through the hook socket (comma separated); "
                 "others are dropped and counted (default: whoever can write the socket)");
  app.add_option("--web-config", flags->web_config,
                 "FILE with TLS (tls_server_config) and basic auth (basic_auth_users, bcrypt) "
                 "for /metrics, in the Prometheus exporter-toolkit's format");
  app.add_option("--root", flags->root,
                 "read /proc, /sys and /dev under DIR instead of / (a copied host tree, a "
                 "test fixture)")
      ->capture_default_str();
  app.add_option("--slurm-state", flags->slurm_state,
                 "the Slurm prolog's state_dir: stallscope_job_info for each job it lists "
                 "(docs/slurm.md)")
      ->capture_default_str();
  app.add_option("--textfile", flags->textfile,
                 "DIR: also write every series to DIR/stallscope.prom each --interval, "
                 "atomically, for node_exporter's textfile collector");
  return [flags]() { return RunExporter(*flags); };
}

}  // namespace stallscope
