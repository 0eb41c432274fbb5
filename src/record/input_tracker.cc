// The job's input files, summed over samples (see input_tracker.h).
#include "record/input_tracker.h"

#include <algorithm>

namespace stallscope {

void InputTracker::Add(double t, const std::string& role, const std::vector<OpenInput>& files) {
  for (const OpenInput& f : files) {
    auto key = std::pair(f.path, role);
    auto it = kept_.find(key);
    if (it == kept_.end()) {
      if (kept_.size() >= kMaxInputsKept) {
        ++dropped_;
        continue;
      }
      Kept k;
      k.seen.path = f.path;
      k.seen.role = role;
      k.seen.first_t = t;
      k.seen.fs_type = f.fs_type;
      k.seen.remote = f.remote;
      k.seen.device = f.device;
      k.seen.format = f.format.kind;
      k.seen.archive = f.format.archive;
      k.seen.compressed = f.format.compressed;
      k.seen.method = f.format.method;
      k.major = f.major;
      k.minor = f.minor;
      it = kept_.emplace(std::move(key), std::move(k)).first;
    }
    Kept& k = it->second;
    // One descriptor or several of one process: once per sample and pid.
    auto [reader, first] = k.pids.try_emplace(f.pid, t);
    if (!first && reader->second == t) {
      k.seen.max_position = std::max(k.seen.max_position, f.position);
      continue;
    }
    reader->second = t;
    ++k.seen.samples;
    k.seen.last_t = std::max(k.seen.last_t, t);
    k.seen.readers = static_cast<int>(k.pids.size());
    k.seen.deleted = k.seen.deleted || f.deleted;
    k.seen.size_bytes = f.size;
    k.seen.max_position = std::max(k.seen.max_position, f.position);
  }
}

std::optional<std::pair<uint32_t, uint32_t>> InputTracker::DataDevice() const {
  for (const char* role : {"worker", "rank"}) {
    std::map<std::pair<uint32_t, uint32_t>, int64_t> samples;
    for (const auto& [key, k] : kept_) {
      if (key.second != role || k.seen.device.empty()) continue;
      samples[{k.major, k.minor}] += k.seen.samples;
    }
    auto best = std::max_element(samples.begin(), samples.end(),
                                 [](const auto& a, const auto& b) { return a.second < b.second; });
    if (best != samples.end()) return best->first;
  }
  return std::nullopt;
}

std::vector<InputSeen> InputTracker::Inputs() const {
  std::vector<InputSeen> out;
  out.reserve(kept_.size());
  for (const auto& [key, k] : kept_) out.push_back(k.seen);
  return out;
}

}  // namespace stallscope
