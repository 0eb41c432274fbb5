// The last rank into each bucket's all-reduce: see bucket_arrivals.h.
#include "analyze/bucket_arrivals.h"

#include <algorithm>
#include <set>
#include <tuple>

#include "core/stats.h"

namespace stallscope {
namespace {

struct Entry {
  int rank = 0;
  double launch = 0, done = 0;
};
using Key = std::pair<int64_t, int>;  // step, bucket

std::map<int, std::string> HostsOf(const std::vector<RankInfo>* ranks) {
  std::map<int, std::string> out;
  if (ranks == nullptr) return out;
  for (const RankInfo& r : *ranks) out[r.rank] = r.hostname;
  return out;
}

// Per host, the offset of its clock from the first host's, from the
// buckets' completions.
std::map<std::string, double> HostOffsets(const std::map<Key, std::vector<Entry>>& complete,
                                          const std::map<int, std::string>& host_of) {
  std::map<std::string, std::vector<double>> diffs;
  for (const auto& [key, entries] : complete) {
    std::vector<double> done;
    for (const Entry& e : entries) done.push_back(e.done);
    const double middle = Median(done);
    for (const Entry& e : entries) {
      auto h = host_of.find(e.rank);
      diffs[h == host_of.end() ? std::string() : h->second].push_back(e.done - middle);
    }
  }
  std::map<std::string, double> out;
  for (auto& [host, d] : diffs) out[host] = Median(d);
  if (!out.empty()) {
    const double base = out.begin()->second;
    for (auto& [host, o] : out) o -= base;
  }
  return out;
}

}  // namespace

BucketArrivals FindBucketArrivals(const std::vector<const std::vector<BucketSync>*>& parts,
                                  const std::vector<RankInfo>* ranks, int64_t warmup_steps) {
  BucketArrivals out;
  std::map<Key, std::vector<Entry>> by_bucket;
  std::set<int> reporting;
  for (const std::vector<BucketSync>* part : parts) {
    if (part == nullptr) continue;
    for (const BucketSync& b : *part) {
      if (b.step < warmup_steps) continue;
      by_bucket[{b.step, b.bucket}].push_back({b.rank, b.launch_seconds, b.done_seconds});
      reporting.insert(b.rank);
    }
  }
  if (reporting.size() < 2) return out;
  // Only the buckets every reporting rank reported, once each.
  std::map<Key, std::vector<Entry>> complete;
  for (auto& [key, entries] : by_bucket) {
    std::set<int> seen;
    for (const Entry& e : entries) seen.insert(e.rank);
    if (seen.size() == reporting.size() && entries.size() == seen.size()) {
      complete.emplace(key, std::move(entries));
    }
  }
  const std::map<int, std::string> host_of = HostsOf(ranks);
  std::set<std::string> hosts;
  for (int r : reporting) {
    auto h = host_of.find(r);
    hosts.insert(h == host_of.end() ? std::string() : h->second);
  }
  std::map<std::string, double> offset;
  out.aligned = hosts.size() > 1;
  if (out.aligned) offset = HostOffsets(complete, host_of);
  auto shift = [&](int rank) {
    if (!out.aligned) return 0.0;
    auto h = host_of.find(rank);
    return offset[h == host_of.end() ? std::string() : h->second];
  };
  std::set<int64_t> steps;
  for (const auto& [key, entries] : complete) {
    const Entry* last = nullptr;
    for (const Entry& e : entries) {
      if (last == nullptr || e.launch - shift(e.rank) > last->launch - shift(last->rank)) {
        last = &e;
      }
    }
    const double arrival = last->launch - shift(last->rank);
    double wait = 0;
    for (const Entry& e : entries) {
      if (&e != last) wait += std::max(0.0, arrival - (e.launch - shift(e.rank)));
    }
    ++out.buckets;
    steps.insert(key.first);
    ++out.last_in[last->rank];
    out.others_wait_s[last->rank] += wait / static_cast<double>(entries.size() - 1);
  }
  out.steps = steps.size();
  return out;
}

}  // namespace stallscope
