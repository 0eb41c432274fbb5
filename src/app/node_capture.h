// Captures: a node's evidence carried to another machine (docs/captures.md).
// TakeCapture runs doctor's reads of the host (the snapshot's two samples,
// the RDMA counters, the network view, the GPU processes' names) through a
// NodeRecorder and writes what they read as one archive, atomically.
// OpenedCapture reads an archive back into a temporary directory (removed
// with it) and gives the probe root, the first sample's tree and the node's
// clock, so that `doctor --from` and `snapshot --from` run the same code as
// on the node. Thread-compatible.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "app/doctor_host.h"
#include "capture/capture_archive.h"
#include "core/file.h"
#include "core/status.h"
#include "probe/snapshot.h"

namespace stallscope {

// What a capture holds and leaves out, for the manifest and the docs.
std::vector<std::string> CaptureRedactions();
std::vector<std::string> CaptureCannotHold();

struct CaptureWritten {
  size_t entries = 0;
  uint64_t bytes = 0;
};

// Takes the capture of `root` over `interval_seconds` into `path`. An
// existing `path` needs `force` (InvalidArgument naming --capture).
Result<CaptureWritten> TakeCapture(const Root& root, const std::string& path, bool force,
                                   double interval_seconds, const Progress& progress);

class OpenedCapture {
 public:
  // Errors name the file and, for a bad entry, the entry.
  static Result<std::unique_ptr<OpenedCapture>> Open(const std::string& path);
  ~OpenedCapture();
  OpenedCapture(const OpenedCapture&) = delete;
  OpenedCapture& operator=(const OpenedCapture&) = delete;

  // The node's tree: the probe root of everything but the first sample.
  Root root() const { return Root(dir_ + "/node"); }
  SnapshotReplay replay() const;
  const CaptureManifest& manifest() const { return contents_.manifest; }
  // Where the capture came from, a newer format, what it cannot hold.
  std::vector<std::string> Notes() const;
  // `text` with the temporary directory's paths named as the capture's
  // entries ("NODE.tar.gz:before/proc/diskstats"), so outputs hold no
  // temporary name and read the same on every run.
  std::string Named(std::string text) const;

 private:
  OpenedCapture() = default;
  std::string path_;
  std::string dir_;
  bool has_before_ = false;
  CaptureContents contents_;
};

// The snapshot of an opened capture, its notes added.
Result<Snapshot> SnapshotFromCapture(const OpenedCapture& capture);

}  // namespace stallscope
