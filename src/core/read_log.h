// The seam a capture records through: while a ReadLog is set, every file the
// probes read through core/file.h (and every path they resolve through
// symlinks) is noted to it, and the sources that are not files (an ioctl, a
// library such as NVML, the kernel log's device) hand it their answer in the
// form the probe reads back under a non-live root. Off (nullptr) by
// default: then the hooks cost one load. One log at a time, set and cleared
// by the thread that takes the capture; the probes it runs must not be
// running on other threads meanwhile.
#pragma once

#include <string>
#include <string_view>

namespace stallscope {

class ReadLog {
 public:
  virtual ~ReadLog() = default;
  // A file read whole through ReadFile / ReadAttribute, with what it held.
  virtual void NoteFile(const std::string& path, std::string_view text) = 0;
  // A directory listed through ListDirectory.
  virtual void NoteDirectory(const std::string& path) = 0;
  // A path resolved through its symlinks (realpath, readlink).
  virtual void NoteLinks(const std::string& path) = 0;
  // A file the probe would read under a non-live root, with its text; `path`
  // is the file's place under that root ("/ethtool/eth0"). A path ending in
  // '+' appends to the file (the kernel log, read in chunks).
  virtual void NoteWritten(const std::string& path, std::string_view text) = 0;
};

// The log set now, or nullptr.
ReadLog* CurrentReadLog();

// Sets the log for the life of this object, then clears it.
class ScopedReadLog {
 public:
  explicit ScopedReadLog(ReadLog* log);
  ~ScopedReadLog();
  ScopedReadLog(const ScopedReadLog&) = delete;
  ScopedReadLog& operator=(const ScopedReadLog&) = delete;
};

// The hooks the probes call: each is a no-op without a log.
void NoteLinksRead(const std::string& path);
void NoteWrittenForCapture(const std::string& path, std::string_view text);

}  // namespace stallscope
