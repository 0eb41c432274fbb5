// The loader's inputs and its workers' load (see inputs.h).
#include "analyze/run/inputs.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>

#include "core/text.h"
#include "core/units.h"

namespace stallscope {
namespace {

// Files a Python process opens for itself, not for the data.
bool IsInterpreterFile(const std::string& path) {
  for (std::string_view tail : {".py", ".pyc", ".so", ".pth", ".json.lock"}) {
    if (EndsWith(path, tail)) return true;
  }
  for (std::string_view part :
       {"/site-packages/", "/dist-packages/", "/lib/python", "/__pycache__/"}) {
    if (path.find(part) != std::string::npos) return true;
  }
  for (std::string_view top : {"/usr/", "/etc/", "/lib/", "/lib64/", "/opt/conda/lib/"}) {
    if (StartsWith(path, top)) return true;
  }
  return false;
}

// A file caught open at most this many times (once per pid and sample) was
// opened and closed between samples: one of many small files.
constexpr int64_t kTransientSamples = 2;

// Path components: "/" is 0, "/data" 1, "/data/train" 2.
int Depth(const std::string& dir) {
  if (dir == "/") return 0;
  return static_cast<int>(std::count(dir.begin(), dir.end(), '/'));
}

std::string ParentOf(const std::string& path) {
  size_t slash = path.rfind('/');
  return slash == 0 || slash == std::string::npos ? std::string("/") : path.substr(0, slash);
}

// The deepest directory holding both.
std::string CommonDirectory(const std::string& a, const std::string& b) {
  size_t n = 0, last_slash = 0;
  while (n < a.size() && n < b.size() && a[n] == b[n]) {
    if (a[n] == '/') last_slash = n;
    ++n;
  }
  // A whole directory matched when the shorter one ends there.
  if ((n == a.size() && n < b.size() && b[n] == '/') ||
      (n == b.size() && n < a.size() && a[n] == '/') || (n == a.size() && n == b.size())) {
    return a.substr(0, n);
  }
  return last_slash == 0 ? std::string("/") : a.substr(0, last_slash);
}

LoaderInput FromFile(const InputSeen& f) {
  LoaderInput in;
  in.kind = f.archive ? "archive" : "file";
  in.path = f.path;
  in.role = f.role;
  in.samples = f.samples;
  in.size_bytes = f.size_bytes;
  in.fs_type = f.fs_type;
  in.remote = f.remote;
  in.device = f.device;
  in.format = f.format;
  in.compressed = f.compressed;
  in.method = f.method;
  return in;
}

}  // namespace

std::string LoaderInput::Describe() const {
  std::vector<std::string> facts;
  if (kind == "directory") facts.push_back(fmt::format("{} files caught open", files));
  if (!format.empty()) facts.push_back(format);
  if (!method.empty()) facts.push_back(method);
  if (kind != "directory" && size_bytes > 0) facts.push_back(FormatBytes(size_bytes));
  if (!fs_type.empty() && remote) {
    // No disk of this host holds it: the mount is the data's device.
    facts.push_back(fmt::format("on a network file system, {}", fs_type));
  } else if (!fs_type.empty()) {
    facts.push_back(device.empty() ? fs_type : fmt::format("{} on {}", fs_type, device));
  }
  std::string out = path;
  if (!facts.empty()) {
    out += " (";
    for (size_t i = 0; i < facts.size(); ++i) out += (i ? ", " : "") + facts[i];
    out += ")";
  }
  return out;
}

std::vector<LoaderInput> WhatTheLoaderReads(const Timeline& timeline) {
  std::vector<LoaderInput> out;
  const double interval = timeline.info.interval_seconds > 0 ? timeline.info.interval_seconds : 1;
  // The ranks' files stand for the loader's only when no loader has
  // workers (num_workers=0), or without the hook when no worker was caught.
  bool workers_configured = false;
  for (const LoaderConfig& l : timeline.loaders) workers_configured |= l.num_workers > 0;
  for (const char* role : {"worker", "rank"}) {
    if (std::string_view(role) == "rank" && workers_configured) break;
    std::vector<const InputSeen*> kept, transient;
    for (const InputSeen& f : timeline.inputs) {
      if (f.role != role || IsInterpreterFile(f.path)) continue;
      // Held open: caught in most of the samples of the span it was seen
      // in (per reader), and more than a couple of times. A small file
      // re-read every epoch is caught now and then over the whole run.
      const double span_samples = (f.last_t - f.first_t) / interval + 1;
      const bool held = f.samples > kTransientSamples && f.samples >= 0.5 * span_samples;
      (held || f.archive || f.compressed ? kept : transient).push_back(&f);
    }
    for (const InputSeen* f : kept) out.push_back(FromFile(*f));
    // Small files, grouped by folder: a file joins the first group whose
    // folder, widened to hold it, is at most one level above the file's
    // own (class folders under one root join; train/ and val/ stay apart).
    std::vector<LoaderInput> groups;
    for (const InputSeen* f : transient) {
      const std::string parent = ParentOf(f->path);
      LoaderInput* home = nullptr;
      for (LoaderInput& g : groups) {
        const std::string common = CommonDirectory(g.path, parent);
        if (Depth(common) + 1 >= Depth(parent) && Depth(common) >= 1) {
          g.path = common;
          home = &g;
          break;
        }
      }
      if (!home) {
        LoaderInput& g = groups.emplace_back(FromFile(*f));
        g.kind = "directory";
        g.path = parent;
        g.format.clear();
        g.method.clear();
        g.compressed = false;
        g.files = 0;
        g.samples = 0;
        g.size_bytes = 0;
        home = &g;
      }
      ++home->files;
      home->samples += f->samples;
      home->size_bytes += f->size_bytes;
    }
    for (LoaderInput& g : groups) {
      // One file alone is that file.
      if (g.files == 1) {
        for (const InputSeen* f : transient) {
          if (ParentOf(f->path) == g.path) g = FromFile(*f);
        }
      }
      out.push_back(std::move(g));
    }
    if (!out.empty()) break;  // the workers' reads are the loader's
  }
  std::stable_sort(out.begin(), out.end(), [](const LoaderInput& a, const LoaderInput& b) {
    return a.samples > b.samples;
  });
  return out;
}

std::string DataDirOf(const std::vector<LoaderInput>& inputs) {
  if (inputs.empty()) return "DATA_DIR";
  return inputs[0].kind == "directory" ? inputs[0].path : ParentOf(inputs[0].path);
}

std::set<int> WorkerPids(const Timeline& timeline) {
  std::set<int> ranks;
  for (const LoaderConfig& l : timeline.loaders) ranks.insert(l.pid);
  for (const RankInfo& r : timeline.ranks) ranks.insert(r.pid);
  std::set<int> workers;
  if (ranks.empty()) {
    // A run with no root (a Slurm job's processes, `watch --slurm-job`)
    // and no hook: which process loads is not known.
    if (timeline.info.root_pid <= 0) return workers;
    for (const ProcessPoint& p : timeline.processes) {
      if (p.pid != timeline.info.root_pid) workers.insert(p.pid);
    }
    return workers;
  }
  for (const ProcessPoint& p : timeline.processes) {
    if (ranks.contains(p.ppid) && !ranks.contains(p.pid)) workers.insert(p.pid);
  }
  return workers;
}

std::vector<WorkerInterval> WorkerLoad(const Timeline& timeline) {
  const std::set<int> workers = WorkerPids(timeline);
  std::map<double, WorkerInterval> by_t;
  std::set<double> incomplete;
  for (const ProcessPoint& p : timeline.processes) {
    if (!workers.contains(p.pid)) continue;
    if (!p.run_delay_percent) {
      incomplete.insert(p.t);
      continue;
    }
    WorkerInterval& w = by_t[p.t];
    w.t = p.t;
    ++w.workers;
    w.cpu_percent += p.cpu_percent;
    w.run_delay_percent += *p.run_delay_percent;
  }
  std::vector<WorkerInterval> out;
  for (auto& [t, w] : by_t) {
    if (incomplete.contains(t) || w.workers == 0) continue;
    w.cpu_percent /= w.workers;
    w.run_delay_percent /= w.workers;
    out.push_back(w);
  }
  return out;
}

}  // namespace stallscope
