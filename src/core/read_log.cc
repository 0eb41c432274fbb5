#include "core/read_log.h"

#include <atomic>

namespace stallscope {
namespace {
std::atomic<ReadLog*> current{nullptr};
}  // namespace

ReadLog* CurrentReadLog() { return current.load(std::memory_order_relaxed); }

ScopedReadLog::ScopedReadLog(ReadLog* log) { current.store(log, std::memory_order_relaxed); }
ScopedReadLog::~ScopedReadLog() { current.store(nullptr, std::memory_order_relaxed); }

void NoteLinksRead(const std::string& path) {
  if (ReadLog* log = CurrentReadLog()) log->NoteLinks(path);
}

void NoteWrittenForCapture(const std::string& path, std::string_view text) {
  if (ReadLog* log = CurrentReadLog()) log->NoteWritten(path, text);
}

}  // namespace stallscope
