// The last rank into each bucket's all-reduce: see bucket_arrivals.h.
#include "analyze/run/bucket_arrivals.h"

#include <algorithm>
#include <set>
#include <tuple>

#include "core/stats.h"

namespace stallscope {
namespace {

struct Entry {
  int rank = 0;
  size_t part = 0;  // the file it came from: its recorder's clock
  double launch = 0, done = 0;
};
using Key = std::pair<int64_t, int>;  // step, bucket

// Per part, the offset of its clock from the first part's, from the
// buckets' completions.
std::vector<double> PartOffsets(const std::map<Key, std::vector<Entry>>& complete, size_t parts) {
  std::vector<std::vector<double>> diffs(parts);
  for (const auto& [key, entries] : complete) {
    std::vector<double> done;
    for (const Entry& e : entries) done.push_back(e.done);
    const double middle = Median(done);
    for (const Entry& e : entries) diffs[e.part].push_back(e.done - middle);
  }
  std::vector<double> out(parts, 0);
  bool based = false;
  double base = 0;
  for (size_t p = 0; p < parts; ++p) {
    if (diffs[p].empty()) continue;
    out[p] = Median(diffs[p]);
    if (!based) {
      base = out[p];
      based = true;
    }
  }
  for (double& o : out) o -= base;
  return out;
}

}  // namespace

BucketArrivals FindBucketArrivals(const std::vector<const std::vector<BucketSync>*>& parts,
                                  int64_t warmup_steps) {
  BucketArrivals out;
  std::map<Key, std::vector<Entry>> by_bucket;
  std::set<int> reporting;
  std::set<size_t> parts_used;
  for (size_t p = 0; p < parts.size(); ++p) {
    if (parts[p] == nullptr) continue;
    for (const BucketSync& b : *parts[p]) {
      if (b.step < warmup_steps) continue;
      by_bucket[{b.step, b.bucket}].push_back({b.rank, p, b.launch_seconds, b.done_seconds});
      reporting.insert(b.rank);
      parts_used.insert(p);
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
  out.aligned = parts_used.size() > 1;
  std::vector<double> offset(parts.size(), 0);
  if (out.aligned) offset = PartOffsets(complete, parts.size());
  auto launch = [&](const Entry& e) { return e.launch - offset[e.part]; };
  std::set<int64_t> steps;
  for (const auto& [key, entries] : complete) {
    const Entry* last = &entries.front();
    for (const Entry& e : entries) {
      if (launch(e) > launch(*last)) last = &e;
    }
    const double arrival = launch(*last);
    double wait = 0;
    for (const Entry& e : entries) {
      if (&e != last) wait += std::max(0.0, arrival - launch(e));
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
