// A failure in an NCCL log, whatever its words (see failures.h).
#include "analyze/nccl_log/failures.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <set>

#include "analyze/nccl_log/causes.h"
#include "core/text.h"

namespace stallscope {
namespace {

bool Has(std::string_view text, std::string_view needle) {
  return text.find(needle) != std::string_view::npos;
}

std::string ResultText(int code) {
  if (code < 0) return "not printed (no error-return line after it)";
  std::string_view name = NcclResultName(code);
  return name.empty() ? fmt::format("{}", code) : fmt::format("{} ({})", name, code);
}

// "transport/net_ib.cc:123" -> "transport/net_ib.cc".
std::string_view FileOf(std::string_view source) {
  size_t colon = source.rfind(':');
  return colon == std::string_view::npos ? source : source.substr(0, colon);
}

// Words that name the network in a WARN raised where both the network and
// the ranks' set-up are handled (bootstrap, the proxy): a socket, an
// interface, a connection, an address with its port ("10.0.0.2<43211>").
bool NamesNetwork(std::string_view text) {
  for (std::string_view w : {"socket", "Socket", "interface", "IFNAME", "onnect", "NET/", "peer"}) {
    if (Has(text, w)) return true;
  }
  size_t lt = text.find('<');
  return lt != std::string_view::npos && lt + 1 < text.size() && text[lt + 1] >= '0' &&
         text[lt + 1] <= '9';
}

// NCCL's network code, and the net plugins' own sources (nccl-rdma-sharp-
// plugins' ib_plugin.c, p2p_plugin.c, ucx_plugin.c, sharp_plugin.c;
// aws-ofi-nccl's nccl_ofi_*.c).
bool NetworkFile(std::string_view file) {
  return StartsWith(file, "transport/net") || StartsWith(file, "transport/coll_net") ||
         StartsWith(file, "net_") || StartsWith(file, "plugin/net") || file == "net.cc" ||
         Has(file, "socket") || Has(file, "ibv") || Has(file, "mlx5") || Has(file, "gdr") ||
         Has(file, "ib_plugin") || Has(file, "p2p_plugin") || Has(file, "ucx_plugin") ||
         Has(file, "sharp_plugin") || Has(file, "nccl_ofi");
}

// The caller's use of NCCL: arguments checked, collectives enqueued, groups.
bool UsageFile(std::string_view file) {
  return file == "enqueue.cc" || file == "misc/argcheck.cc" || file == "group.cc" ||
         StartsWith(file, "collectives");
}

// NCCL's lines the process printed other than WARNs.
bool PrintedInfo(const NcclLogSummary& log, const NcclProcess& p) {
  for (const NcclRank& r : log.ranks) {
    if (&log.processes[r.process] == &p && r.lines > r.warnings) return true;
  }
  return false;
}

int RankNumber(const NcclLogSummary& log, const NcclProcess& p, int dev) {
  int any = -1;
  for (const NcclRank& r : log.ranks) {
    if (&log.processes[r.process] != &p || r.rank < 0) continue;
    if (r.cuda_dev == dev) return r.rank;
    if (any < 0) any = r.rank;
  }
  return any;
}

std::string Place(const NcclJudgedWarn& j, std::string_view source) {
  return NcclLogPlace(source, j.at->line);
}

// The WARN's source, else the first error-return line's.
std::string_view RaisedAt(const NcclJudgedWarn& j) {
  return !j.at->source.empty() ? std::string_view(j.at->source)
                               : std::string_view(j.at->chain_source);
}

std::string NextFor(std::string_view id, std::string_view host, std::string_view file,
                    std::string_view place) {
  if (id == "network.nccl_error") {
    return fmt::format(
        "on {}: read the lines before {} (NCCL's {} raised it); `ip -br addr` and "
        "NCCL_SOCKET_IFNAME for sockets, `ibv_devinfo` and `ibstat` for IB, `nc -vz` the "
        "peers; rerun with NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=INIT,NET to see the call that "
        "failed",
        host, place, file.empty() ? "network code" : file);
  }
  if (id == "code.nccl_usage_error") {
    return fmt::format(
        "NCCL refused how it was called ({} at {}): the job's collectives must match across "
        "ranks (same order, sizes, dtypes, roots) and its streams and groups be used as "
        "NCCL documents; find the call with TORCH_DISTRIBUTED_DEBUG=DETAIL or "
        "NCCL_DEBUG_SUBSYS=COLL",
        file.empty() ? "its checks" : file, place);
  }
  return fmt::format(
      "on {}: read the lines before {} (NCCL's {} raised it): every rank started with the "
      "same WORLD_SIZE, its own RANK and the same NCCL version (`stallscope nccl-log` lists "
      "them); in containers, /dev/shm large enough (--shm-size, or --ipc=host); rerun with "
      "NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=INIT",
      host, place, file.empty() ? "set-up" : file);
}

}  // namespace

bool NcclWarningLostPeer(std::string_view t) {
  static constexpr std::string_view kLost[] = {
      "Connect to ",           "connect to ",
      "PollConnect",           "Call to recv",
      "Call to send",          "Connection closed",
      "Call to connect",       "exceeded timeouts",
      "exceeded retries",      "connect returned",
      "remote process exited", "Connection reset",
      "Connection refused",    "Failed to execute operation Connect"};
  for (std::string_view k : kLost) {
    if (Has(t, k)) return true;
  }
  return false;
}

std::string_view NcclFailureId(std::string_view source, int result, std::string_view text) {
  constexpr std::string_view kNetwork = "network.nccl_error";
  constexpr std::string_view kSetup = "distributed.nccl_setup_error";
  constexpr std::string_view kUsage = "code.nccl_usage_error";
  constexpr std::string_view kCuda = "distributed.nccl_cuda_failure";
  const std::string_view file = FileOf(source);
  if (result == 1) return kCuda;  // ncclUnhandledCudaError
  if (NetworkFile(file)) return kNetwork;
  if (UsageFile(file)) return result == 6 ? kNetwork : kUsage;
  // A file not of NCCL's own tree (its sources end in .cc, .h, .cu; a
  // plugin's in .c or .cpp), or none: the tag of a net plugin's WARN
  // ("NET/IB :", "NET/OFI ...") says it is the network's.
  const bool own = EndsWith(file, ".cc") || EndsWith(file, ".h") || EndsWith(file, ".cu");
  if (!own && (StartsWith(text, "NET/") || Has(text.substr(0, 24), " NET/"))) return kNetwork;
  if (result == 6) return kNetwork;  // ncclRemoteError: a peer went away
  if (file == "bootstrap.cc" || file == "proxy.cc" || file.empty()) {
    if (result == 2) return kNetwork;  // ncclSystemError from a socket call
    return NamesNetwork(text) ? kNetwork : kSetup;
  }
  return kSetup;
}

// Where a failure showed: its error-return line, else the WARN's own.
uint64_t FailedAt(const NcclJudgedWarn& j) {
  return j.at->chain_result > 0 ? j.at->chain_line : j.at->line;
}

// Blank or stray lines a launcher may print between a WARN and the job's
// error report; more, and the job was doing its own work after the WARN.
constexpr uint64_t kLinesBeforeTheError = 2;

// Whether, after `line`, another process showed it went on while `p`
// stopped: it completed init, or lost `p` as a peer (a connect failure).
bool OthersWentOn(const NcclLogSummary& log, const NcclProcess& p, uint64_t line) {
  for (const NcclProcess& q : log.processes) {
    if (&q != &p && q.init_done_line > line) return true;
  }
  const std::string name = p.Name();
  for (const NcclPeerFailure& f : log.peer_failures) {
    if (f.first_line > line && f.first_seen_by != name) return true;
  }
  return false;
}

std::vector<NcclJudgedWarn> JudgeNcclWarnings(const NcclLogSummary& log) {
  std::vector<NcclJudgedWarn> out;
  const bool info_level = log.info_lines > 0;
  for (const NcclProcess& p : log.processes) {
    if (p.warns.empty()) continue;
    const bool printed_info = info_level && PrintedInfo(log, p);
    const size_t begin = out.size();
    for (const NcclWarnOnProcess& w : p.warns) {
      if (w.warning >= log.warnings.size()) continue;
      NcclJudgedWarn j;
      j.warning = &log.warnings[w.warning];
      j.process = &p;
      j.at = &w;
      const std::string_view text = j.warning->text;
      if (w.init_completed_after && !w.aborted_after) {
        j.why = "NCCL carried on: the process completed init after it";
      } else if (w.chain_result > 0) {
        j.failure = true;
        j.why = fmt::format("an error return followed it on the process ({} -> {}, line {})",
                            w.chain_source, ResultText(w.chain_result), w.chain_line);
      } else if (w.aborted_after) {
        j.failure = true;
        j.why = "the process aborted its communicator after it";
      } else if (!w.init_done_before && printed_info && !w.progress_after &&
                 !NcclWarningBenign(text) && !NcclWarningFallback(text) &&
                 OthersWentOn(log, p, w.line)) {
        j.failure = true;
        j.why =
            "the process printed nothing more of its init after it while the others went "
            "on (completed init, or lost it as a peer)";
      } else if (!w.progress_after && log.job_error_line > w.line &&
                 log.job_error_other_lines <= w.other_lines_before + kLinesBeforeTheError &&
                 // After init, only the report that follows at once: between
                 // a WARN and a hang's timeout other ranks' lines may stand.
                 (!w.init_done_before ||
                  log.job_error_report_line <= w.line + 1 + kLinesBeforeTheError)) {
        j.failure = true;
        j.why = fmt::format(
            "the job's error report follows it (line {}), with none of the job's "
            "own lines between",
            log.job_error_line);
      } else {
        j.why = w.progress_after ? "NCCL carried on: the process printed more after it"
                                 : "nothing after it shows the process stopped";
      }
      j.carried_on = !j.failure && ((w.init_completed_after && !w.aborted_after) ||
                                    (w.init_done_before && w.progress_after));
      out.push_back(std::move(j));
    }
    // Its cause: the failure shown first, by its error return where it has
    // one (another thread's WARN may stand before it, failing later).
    NcclJudgedWarn* first = nullptr;
    for (size_t i = begin; i < out.size(); ++i) {
      if (out[i].failure && (!first || FailedAt(out[i]) < FailedAt(*first))) first = &out[i];
    }
    if (first) first->first_on_process = true;
  }
  return out;
}

uint64_t NcclFirstFailureLine(const std::vector<NcclJudgedWarn>& judged, const NcclProcess& p) {
  for (const NcclJudgedWarn& j : judged) {
    if (j.process == &p && j.first_on_process) return j.at->line;
  }
  return 0;
}

namespace {
// The WARNs no rule reads that were no failure, as one info finding
// (distributed.nccl_warning), each with what followed it.
void NoteNcclWarnings(const NcclLogSummary& log, const std::vector<NcclJudgedWarn>& judged,
                      const std::set<std::string_view>& failed_texts, std::string_view source,
                      std::vector<Finding>& out);
}  // namespace

std::vector<std::string> NcclCudaFailureTexts(const std::vector<NcclJudgedWarn>& judged) {
  std::vector<std::string> out;
  for (const NcclJudgedWarn& j : judged) {
    if (!j.first_on_process) continue;
    if (NcclFailureId(RaisedAt(j), j.at->chain_result, j.warning->text) !=
        "distributed.nccl_cuda_failure") {
      continue;
    }
    if (std::find(out.begin(), out.end(), j.warning->text) == out.end()) {
      out.push_back(j.warning->text);
    }
  }
  return out;
}

bool NcclFindingQuotes(const Finding& f, const NcclLogSummary& log, const NcclWarning& w,
                       std::string_view source) {
  const std::string_view part = std::string_view(w.text).substr(0, 40);
  if (!part.empty() && Has(f.summary, part)) return true;
  std::vector<std::string> places = {NcclLogPlace(source, w.first_line)};
  const size_t index = static_cast<size_t>(&w - log.warnings.data());
  for (const NcclProcess& p : log.processes) {
    for (const NcclWarnOnProcess& at : p.warns) {
      if (at.warning == index) places.push_back(NcclLogPlace(source, at.line));
    }
  }
  for (const Evidence& e : f.evidence) {
    const std::string* v = std::get_if<std::string>(&e.value);
    if (!v) continue;
    if (!part.empty() && Has(*v, part)) return true;
    if (e.name == "first_at" && std::find(places.begin(), places.end(), *v) != places.end()) {
      return true;
    }
  }
  return false;
}

void CheckNcclFailures(const NcclLogSummary& log, const std::vector<NcclJudgedWarn>& judged,
                       std::string_view source, std::vector<Finding>& out) {
  // Lost peers are read by the connect rules whatever their number.
  bool connect_rule = false;
  for (const Finding& f : out) {
    connect_rule = connect_rule || f.id == "network.connect_failed" ||
                   f.id == "network.connect_timeout" || f.id == "network.root_unreachable";
  }
  // A failure is raised here unless a critical finding of another rule
  // quotes it (its words, or the FILE:LINE of its line).
  auto covered = [&](const NcclJudgedWarn& j) {
    const NcclWarning& w = *j.warning;
    if (connect_rule && NcclWarningLostPeer(w.text)) {
      for (const NcclPeerFailure& pf : log.peer_failures) {
        if (pf.first_seen_by == j.process->Name()) return true;
      }
    }
    for (const Finding& f : out) {
      if (f.severity != Severity::kCritical || f.id == "distributed.init_incomplete") continue;
      if (NcclFindingQuotes(f, log, w, source)) return true;
    }
    return false;
  };
  std::map<std::string, std::vector<const NcclJudgedWarn*>> by_id;
  std::set<std::string_view> failed_texts;  // a failure somewhere: no note
  for (const NcclJudgedWarn& j : judged) {
    if (!j.failure) continue;
    failed_texts.insert(j.warning->text);
    if (!j.first_on_process || covered(j)) continue;
    std::string_view id = NcclFailureId(RaisedAt(j), j.at->chain_result, j.warning->text);
    if (id == "distributed.nccl_cuda_failure") continue;  // CheckNcclCudaFailure's
    by_id[std::string(id)].push_back(&j);
  }
  for (auto& [id, list] : by_id) {
    std::sort(list.begin(), list.end(), [](const NcclJudgedWarn* a, const NcclJudgedWarn* b) {
      return a->at->line < b->at->line;
    });
    const NcclJudgedWarn& first = *list.front();
    const NcclProcess& p = *first.process;
    const int rank = RankNumber(log, p, first.at->cuda_dev);
    const std::string raised(RaisedAt(first));
    const std::string rank_text = rank >= 0 ? fmt::format("rank {}", rank) : "rank not printed";
    std::vector<std::string> all;
    for (const NcclJudgedWarn* j : list) {
      all.push_back(fmt::format("\"{}\" on {} at {} ({})", j->warning->text, j->process->Name(),
                                Place(*j, source), j->why));
    }
    Finding f;
    f.id = id;
    f.layer = LayerFromName(id.substr(0, id.find('.'))).value_or(Layer::kDistributed);
    f.severity = Severity::kCritical;
    f.summary =
        fmt::format("NCCL failed on {} ({}, process {}{}): \"{}\"{}", p.host, rank_text, p.Name(),
                    first.at->time.empty() ? "" : ", at " + first.at->time, first.warning->text,
                    raised.empty() ? "" : fmt::format(" ({})", raised));
    f.evidence = {{"warn", first.warning->text},
                  {"raised_at", raised.empty() ? "not printed" : raised},
                  {"result", ResultText(first.at->chain_result)},
                  {"host", p.host},
                  {"process", p.Name()},
                  {"rank", rank_text},
                  {"time", first.at->time.empty() ? "not printed" : first.at->time},
                  {"failure_because", first.why},
                  {"first_at", Place(first, source)}};
    if (list.size() > 1) {
      f.evidence.push_back({"failures", NcclJoined(all)});
      f.evidence.push_back({"failure_count", static_cast<int64_t>(list.size())});
    }
    f.next = NextFor(id, p.host, FileOf(raised), Place(first, source));
    // A proxy's failure names the rank that asked: its own output first.
    for (const NcclProxyFailure& pf : log.proxy_failures) {
      if (pf.first_line != first.at->line) continue;
      std::string_view result = NcclResultName(pf.retcode);
      f.next = fmt::format(
          "on {}: rank {} asked rank {}'s proxy to {} and it failed (retcode {}{}{}): read rank "
          "{}'s own output there and the lines of {} before {}; rerun with "
          "NCCL_DEBUG_SUBSYS=INIT,PROXY,NET to see the connection it set up; then {}",
          pf.host, pf.from_rank, pf.proxy_rank, pf.operation, pf.retcode,
          result.empty() ? "" : ", ", result, pf.from_rank, pf.proxy_process, Place(first, source),
          f.next);
      break;
    }
    out.push_back(std::move(f));
  }
  NoteNcclWarnings(log, judged, failed_texts, source, out);
}

namespace {

void NoteNcclWarnings(const NcclLogSummary& log, const std::vector<NcclJudgedWarn>& judged,
                      const std::set<std::string_view>& failed_texts, std::string_view source,
                      std::vector<Finding>& out) {
  bool no_subnet = false;
  for (const NcclPeerFailure& pf : log.peer_failures) {
    no_subnet = no_subnet || pf.reason == "no local interface in the same subnet";
  }
  std::vector<std::string> listed;
  uint64_t lines = 0;
  for (const NcclWarning& w : log.warnings) {
    if (NcclWarningExplained(w.text) || NcclWarningBenign(w.text)) continue;
    if (failed_texts.count(w.text)) continue;               // a failure's, or after one
    if (no_subnet && Has(w.text, "bind failed")) continue;  // network.root_unreachable's
    if (Has(w.text, "output empty list")) continue;         // a libfabric provider's absence
    std::string who = w.first_seen_by.empty() ? "(no prefix)" : w.first_seen_by;
    if (w.first_seen_dev >= 0) who += fmt::format(" [{}]", w.first_seen_dev);
    std::string judged_as;
    for (const NcclJudgedWarn& j : judged) {
      if (j.warning == &w) {
        judged_as = j.why;
        break;
      }
    }
    listed.push_back(fmt::format("{} ({}, {}{}{})", w.text, NcclLogPlace(source, w.first_line), who,
                                 w.count > 1 ? fmt::format(", {}x", w.count) : "",
                                 judged_as.empty() ? "" : "; " + judged_as));
    lines += w.count;
  }
  if (listed.empty()) return;
  Finding f;
  f.id = "distributed.nccl_warning";
  f.layer = Layer::kDistributed;
  f.severity = Severity::kInfo;
  f.summary = fmt::format("NCCL warned {} time(s) and nothing shows a process stopped there: {}",
                          lines, listed.front());
  f.evidence = {{"warnings", NcclJoined(listed)},
                {"distinct", static_cast<int64_t>(listed.size())},
                {"lines", static_cast<int64_t>(lines)}};
  f.next =
      "nothing stopped after these; read each at its FILE:LINE if the job misbehaves: NCCL's "
      "source file:line in the WARN names the check (github.com/NVIDIA/nccl at the version "
      "printed)";
  out.push_back(std::move(f));
}

}  // namespace

void DemoteNcclConsequences(const NcclLogSummary& log, const std::vector<NcclJudgedWarn>& judged,
                            std::vector<Finding>& out) {
  const int consequence_rank = NcclCauseRank("network.connect_timeout");
  Finding* cause = nullptr;
  for (Finding& f : out) {
    if (f.severity != Severity::kCritical || NcclCauseRank(f.id) >= consequence_rank) continue;
    if (!cause || NcclCauseRank(f.id) < NcclCauseRank(cause->id)) cause = &f;
  }
  // The first failure of each process that is no lost peer.
  std::vector<const NcclJudgedWarn*> roots;
  for (const NcclJudgedWarn& j : judged) {
    if (j.first_on_process && !NcclWarningLostPeer(j.warning->text)) roots.push_back(&j);
  }
  std::vector<std::string> consequences;
  for (Finding& f : out) {
    if (f.severity != Severity::kCritical) continue;
    if (f.id == "network.connect_failed") {
      // Lost peers follow another process's failure, or an earlier one of
      // the same process.
      const NcclPeerFailure* first = log.peer_failures.empty() ? nullptr : &log.peer_failures[0];
      const NcclJudgedWarn* before = nullptr;
      for (const NcclJudgedWarn* r : roots) {
        bool other = !first || r->process->Name() != first->first_seen_by;
        if (other || r->at->line < first->first_line) {
          before = r;
          break;
        }
      }
      if (!before || !cause) continue;
      f.severity = Severity::kInfo;
      f.evidence.push_back({"consequence_of", cause->id});
      consequences.push_back(fmt::format("network.connect_failed: {}", f.summary));
    } else if (f.id == "distributed.init_incomplete" && cause) {
      f.severity = Severity::kInfo;
      f.evidence.push_back({"consequence_of", cause->id});
      consequences.push_back(fmt::format("distributed.init_incomplete: {}", f.summary));
    }
  }
  if (cause && !consequences.empty()) {
    cause->evidence.push_back({"consequences", NcclJoined(consequences)});
  }
}

void GradeNcclCarriedOn(const NcclLogSummary& log, const std::vector<NcclJudgedWarn>& judged,
                        std::string_view source, std::vector<Finding>& out) {
  if (judged.empty()) return;
  // The finding that quotes the first failure of a process, by process.
  auto cause_of = [&](const NcclProcess* p) -> std::string {
    for (const NcclJudgedWarn& j : judged) {
      if (j.process != p || !j.first_on_process) continue;
      for (const Finding& f : out) {
        if (f.severity == Severity::kCritical && NcclFindingQuotes(f, log, *j.warning, source)) {
          return f.id;
        }
      }
      return fmt::format("the first failure of {} ({})", p->Name(),
                         NcclLogPlace(source, j.at->line));
    }
    return "";
  };
  for (Finding& f : out) {
    // An init left open is judged on its own evidence, not on a WARN's.
    if (f.severity != Severity::kCritical || f.id == "distributed.init_incomplete") continue;
    bool quotes = false;
    bool kept = false;   // a quoted WARN NCCL is not shown to have carried on from
    bool cause = false;  // a quoted WARN that is no later failure of its process
    const NcclProcess* after = nullptr;
    for (const NcclWarning& w : log.warnings) {
      if (!NcclFindingQuotes(f, log, w, source)) continue;
      quotes = true;
      bool judged_any = false;  // a WARN no process printed (no prefix) is kept
      for (const NcclJudgedWarn& j : judged) {
        if (j.warning != &w) continue;
        judged_any = true;
        kept = kept || !j.carried_on;
        const uint64_t first = NcclFirstFailureLine(judged, *j.process);
        if (!j.first_on_process && first != 0 && j.at->line > first) {
          after = j.process;
        } else {
          cause = true;
        }
      }
      kept = kept || !judged_any;
      cause = cause || !judged_any;
    }
    if (!quotes) continue;
    if (!kept) {
      f.severity = Severity::kWarning;
      f.evidence.push_back({"carried_on",
                            "NCCL went on after every WARN this rests on: no error "
                            "return, no stop, init completed after it"});
    } else if (!cause && after) {
      // Every WARN it rests on came after its process had already failed.
      const std::string first = cause_of(after);
      if (first == f.id) continue;
      f.severity = Severity::kInfo;
      f.evidence.push_back({"consequence_of", first});
    }
  }
}

}  // namespace stallscope
