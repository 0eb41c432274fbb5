// NodeRecorder: the ReadLog (core/read_log.h) a capture is taken through.
// It keeps every file, directory and symbolic link the probes read under
// its root, in the first sample's tree (`before/`) until
// StartSecondSample(), then in the node's tree (`node/`), laid out as the
// probes read them under a non-live root: a path through a symbolic link is
// kept as the link and the file at its target, so reading it back resolves
// the same way. Only the allowed places are kept (AllowedInCapture); a
// process's environment keeps the training variables only. Not
// thread-safe: the probes it records run on the capturing thread.
#pragma once

#include <map>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "capture/capture_archive.h"
#include "core/file.h"
#include "core/read_log.h"

namespace stallscope {

// Whether the file at `path` (as under a probe root: "/proc/meminfo") may go
// into a capture: /proc, /sys, /dev/kmsg, ethtool/, stallscope/{nvml,
// addresses}.json and the container markers (/.dockerenv, empty),
// less what could hold a secret or a command line (environ but the own
// one's training variables, cmdline, mem, maps, fd/...). Pure.
bool AllowedInCapture(std::string_view path);

class NodeRecorder : public ReadLog {
 public:
  explicit NodeRecorder(Root root);

  void StartSecondSample() { tree_ = "node"; }

  // Both trees' entries, directories first, in path order.
  std::vector<CaptureEntry> Entries() const;
  // What was left out (a place not allowed): path -> why, for the manifest.
  const std::set<std::string>& left_out() const { return left_out_; }

  void NoteFile(const std::string& path, std::string_view text) override;
  void NoteDirectory(const std::string& path) override;
  void NoteLinks(const std::string& path) override;
  void NoteWritten(const std::string& path, std::string_view text) override;

 private:
  // `path` (a full path under the root) as the capture names it
  // ("/proc/meminfo"), or "" when it is not under the root.
  std::string UnderRoot(const std::string& path) const;
  // The path with every symbolic link on the way noted and followed; ""
  // when a link leaves the root or loops.
  std::string FollowLinks(const std::string& inside);
  void Keep(const std::string& inside, CaptureEntry::Kind kind, std::string data);

  Root root_;
  std::string real_dir_;  // the root's directory, symbolic links resolved
  std::string tree_ = "before";
  std::map<std::string, CaptureEntry> kept_;  // "before/proc/stat" -> entry
  std::set<std::string> left_out_;
};

}  // namespace stallscope
