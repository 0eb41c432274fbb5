// The command-line helpers `cluster` and `bench allreduce` share (see
// distributed_common.h): joining the world, where a rank sits on its node,
// and turning one rank's failure into one message and the same exit on all.
#include "cli/distributed_common.h"

#include <algorithm>
#include <cstdio>
#include <map>
#include <utility>

#include "analyze/fleet/cluster_rules.h"  // RankRanges

namespace stallscope {

LocalPlace LocalPlaceOf(const std::vector<std::string>& rank_hosts, int rank) {
  LocalPlace p{0, 0};
  for (int r = 0; r < static_cast<int>(rank_hosts.size()); ++r) {
    if (rank_hosts[r] != rank_hosts[rank]) continue;
    if (r < rank) ++p.local_rank;
    ++p.local_ranks;
  }
  return p;
}

std::vector<std::string> DistinctInOrder(const std::vector<std::string>& items) {
  std::vector<std::string> out;
  for (const std::string& s : items)
    if (std::find(out.begin(), out.end(), s) == out.end()) out.push_back(s);
  return out;
}

bool AgreeOrReport(MpiWorld& world, std::string_view command, const Status& status) {
  Result<int64_t> all_ok = world.AllreduceMin(status.ok() ? 1 : 0);
  if (!all_ok.ok()) {
    std::fprintf(stderr, "stallscope %.*s: %s\n", static_cast<int>(command.size()), command.data(),
                 all_ok.status().message().c_str());
    world.Abort(kExitCouldNotRun);
  }
  if (*all_ok == 1) return true;
  std::string mine = status.ok() ? "" : HostName() + "\t" + status.message();
  Result<std::vector<std::string>> all = world.Gather(mine, 0);
  if (world.rank() == 0 && all.ok()) {
    // message -> (ranks, hosts)
    std::vector<std::pair<std::string, std::vector<int>>> by_message;
    std::map<std::string, std::vector<std::string>> hosts_of;
    for (int r = 0; r < static_cast<int>(all->size()); ++r) {
      const std::string& m = (*all)[r];
      if (m.empty()) continue;
      size_t tab = m.find('\t');
      std::string host = m.substr(0, tab), text = m.substr(tab + 1);
      auto it = std::find_if(by_message.begin(), by_message.end(),
                             [&](const auto& e) { return e.first == text; });
      if (it == by_message.end()) {
        by_message.push_back({text, {}});
        it = by_message.end() - 1;
      }
      it->second.push_back(r);
      auto& hs = hosts_of[text];
      if (std::find(hs.begin(), hs.end(), host) == hs.end()) hs.push_back(host);
    }
    for (const auto& [text, ranks] : by_message) {
      std::string hosts;
      for (const std::string& h : hosts_of[text]) hosts += (hosts.empty() ? "" : ",") + h;
      std::fprintf(stderr, "stallscope %.*s: rank%s %s (%s): %s\n",
                   static_cast<int>(command.size()), command.data(), ranks.size() > 1 ? "s" : "",
                   RankRanges(ranks).c_str(), hosts.c_str(), text.c_str());
    }
  }
  return false;
}

JoinedWorld JoinWorld(std::string_view command) {
  JoinedWorld joined;
  std::string name(command);
  if (!DetectLauncher(ProcessEnvLookup())) {
    std::fputs(NotUnderLauncherMessage(name).c_str(), stderr);
    joined.exit_code = kExitUsage;
    return joined;
  }
  joined.started = std::time(nullptr);
  Result<std::unique_ptr<MpiWorld>> world = MpiWorld::Init();
  if (!world.ok()) {
    std::fprintf(stderr, "stallscope %s: %s\n", name.c_str(), world.status().message().c_str());
    joined.exit_code = kExitCouldNotRun;
    return joined;
  }
  Result<std::vector<std::string>> hosts = (*world)->AllGather(HostName());
  if (!hosts.ok()) {
    std::fprintf(stderr, "stallscope %s: %s\n", name.c_str(), hosts.status().message().c_str());
    (*world)->Abort(kExitCouldNotRun);
  }
  joined.world = std::move(*world);
  joined.rank_hosts = std::move(*hosts);
  return joined;
}

}  // namespace stallscope
