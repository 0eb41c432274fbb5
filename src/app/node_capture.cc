#include "app/node_capture.h"

#include <fmt/format.h>
#include <ftw.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>

#include "capture/node_recorder.h"
#include "core/atomic_file.h"
#include "core/read_log.h"
#include "core/version.h"
#include "probe/gpu_capture.h"
#include "probe/gpu_probe.h"

namespace stallscope {
namespace {

// What the archive holds, in words, from the places its entries are under.
std::vector<std::string> WhatWasCaptured(const std::vector<CaptureEntry>& entries) {
  const std::pair<std::string_view, std::string_view> kPlaces[] = {
      {"/proc/",
       "/proc: memory, CPU, disk and network counters at both ends of the interval, "
       "pressure, cgroups, processes' stat and status (no command lines)"},
      {"/sys/", "/sys: block devices, NICs, InfiniBand ports, PCIe links, NUMA topology"},
      {"/dev/kmsg", "kernel log: GPU Xid, NIC port and OOM-killer lines"},
      {"/ethtool/", "NIC driver statistics (ethtool -S) at both ends of the interval"},
      {"/stallscope/nvml.json", "NVML's answers for every GPU at both ends of the interval"},
      {"/stallscope/addresses.json", "the interfaces' IP addresses (getifaddrs)"}};
  std::vector<std::string> out;
  for (const auto& [prefix, words] : kPlaces) {
    for (const CaptureEntry& e : entries) {
      const size_t slash = e.path.find('/');
      if (slash != std::string::npos && e.path.compare(slash, prefix.size(), prefix) == 0) {
        out.emplace_back(words);
        break;
      }
    }
  }
  return out;
}

int RemoveOne(const char* path, const struct stat*, int, struct FTW*) { return ::remove(path); }

}  // namespace

std::vector<std::string> CaptureRedactions() {
  return {
      "environment: only the training variables stallscope reads (NCCL_*, RANK, ...) of "
      "its own environment; other variables and other processes' environments are never read",
      "command lines, open files and memory maps of processes: never read",
      "kernel log: every line but GPU Xid, NIC port and OOM-killer lines is blank (so line "
      "numbers hold)"};
}

std::vector<std::string> CaptureCannotHold() {
  return {"the dataset and its storage bench (doctor --data)", "routes (MASTER_ADDR, --peer)",
          "active benches"};
}

Result<CaptureWritten> TakeCapture(const Root& root, const std::string& path, bool force,
                                   double interval_seconds, const Progress& progress) {
  if (Status s = CheckOutputPath(path, force, "--capture"); !s.ok()) return s;
  NodeRecorder recorder(root);
  DoctorRequest request;
  request.interval_seconds = interval_seconds;
  request.quick = true;
  request.after_first_sample = [&recorder] { recorder.StartSecondSample(); };
  Result<HostDiagnosis> diagnosis = [&] {
    ScopedReadLog scoped(&recorder);
    return DiagnoseHost(root, request, DoctorInputs{}, progress);
  }();
  if (!diagnosis.ok()) return diagnosis.status();
  const Snapshot& s = diagnosis->snapshot;
  CaptureManifest m;
  m.stallscope_version = std::string(Version());
  m.host = s.hostname;
  m.kernel = s.kernel;
  m.time_utc = s.time_utc;
  m.interval_seconds = s.interval_seconds;
  m.before_monotonic_seconds = s.before.monotonic_seconds;
  m.after_monotonic_seconds = s.after.monotonic_seconds;
  std::vector<CaptureEntry> entries = recorder.Entries();
  m.captured = WhatWasCaptured(entries);
  m.not_captured = CaptureCannotHold();
  m.redacted = CaptureRedactions();
  m.node_notes = s.notes;
  Result<std::string> bytes = BuildCaptureArchive(m, entries);
  if (!bytes.ok()) return bytes.status();
  if (Status w = WriteFileAtomically(path, *bytes); !w.ok()) return w;
  return CaptureWritten{entries.size(), bytes->size()};
}

Result<std::unique_ptr<OpenedCapture>> OpenedCapture::Open(const std::string& path) {
  Result<CaptureContents> contents = ReadCaptureFile(path);
  if (!contents.ok()) return contents.status();
  std::unique_ptr<OpenedCapture> out(new OpenedCapture());
  out->path_ = path;
  out->contents_ = std::move(*contents);
  bool has_node = false;
  for (const CaptureEntry& e : out->contents_.entries) {
    has_node = has_node || e.path.rfind("node/", 0) == 0 || e.path == "node";
    out->has_before_ = out->has_before_ || e.path.rfind("before/", 0) == 0;
  }
  if (!has_node) {
    return Status::ParseError(path, 0, "no entry under node/: the capture holds no node");
  }
  const char* tmp = std::getenv("TMPDIR");
  std::string pattern = fmt::format("{}/stallscope-capture-XXXXXX", tmp && *tmp ? tmp : "/tmp");
  if (::mkdtemp(pattern.data()) == nullptr) return Status::FromErrno(pattern, errno);
  out->dir_ = pattern;
  if (Status s = ExtractCapture(out->contents_, out->dir_, path); !s.ok()) return s;
  // Without NVML's answers (an older capture, a tree tarred by hand) the GPU
  // probe must not ask this machine's NVML: the GPUs here are not the node's.
  const std::string nvml = out->root().Path(kNvmlCapturePath);
  if (!PathExists(nvml)) {
    NvmlCapture none{false, fmt::format("{} (the capture holds no NVML answers)", kNoGpuLine), {}};
    if (Status s = WriteFileAtomically(nvml, NvmlCaptureToJson(none)); !s.ok()) {
      // The directory may be missing: the capture had no stallscope/ entry.
      std::string dir = out->root().Path("/stallscope");
      ::mkdir(dir.c_str(), 0755);
      if (Status again = WriteFileAtomically(nvml, NvmlCaptureToJson(none)); !again.ok()) {
        return again;
      }
    }
  }
  return out;
}

OpenedCapture::~OpenedCapture() {
  if (!dir_.empty()) ::nftw(dir_.c_str(), RemoveOne, 16, FTW_DEPTH | FTW_PHYS);
}

SnapshotReplay OpenedCapture::replay() const {
  const CaptureManifest& m = contents_.manifest;
  Root first(dir_ + (has_before_ ? "/before" : "/node"));
  std::vector<std::string> notes = Notes();
  double before = m.before_monotonic_seconds;
  double after = m.after_monotonic_seconds;
  if (!(after > before)) {
    // No clock (a manifest written by hand): rates over the stated interval.
    before = 0;
    after = m.interval_seconds > 0 ? m.interval_seconds : 1.0;
    if (has_before_) {
      notes.push_back(fmt::format(
          "capture: the manifest has no sampling clock; rates are taken over {:.1f} s", after));
    }
  }
  return SnapshotReplay{first, before, after, m.time_utc, std::move(notes), m.node_notes};
}

std::vector<std::string> OpenedCapture::Notes() const {
  const CaptureManifest& m = contents_.manifest;
  std::vector<std::string> out = {
      fmt::format("capture: {}, taken on {} at {} by stallscope {}", path_,
                  m.host.empty() ? "?" : m.host, m.time_utc.empty() ? "?" : m.time_utc,
                  m.stallscope_version.empty() ? "?" : m.stallscope_version)};
  out.insert(out.end(), contents_.notes.begin(), contents_.notes.end());
  if (!has_before_) {
    out.push_back("capture: no first sample (before/): every rate reads as zero");
  }
  for (const std::string& what : m.not_captured) {
    out.push_back(fmt::format("{}: not checked: not in the capture", what));
  }
  return out;
}

std::string OpenedCapture::Named(std::string text) const {
  const std::string from = dir_ + "/";
  const std::string to = path_ + ":";
  for (size_t at = text.find(from); at != std::string::npos; at = text.find(from, at + to.size())) {
    text.replace(at, from.size(), to);
  }
  return text;
}

Result<Snapshot> SnapshotFromCapture(const OpenedCapture& capture) {
  SnapshotOptions options;
  options.interval_seconds =
      capture.manifest().interval_seconds > 0 ? capture.manifest().interval_seconds : 1.0;
  options.replay = capture.replay();
  return TakeSnapshot(capture.root(), options);
}

}  // namespace stallscope
