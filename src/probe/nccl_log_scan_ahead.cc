// The scan-ahead worker and its hand-over (see nccl_log_scan_ahead.h).
#include "probe/nccl_log_scan_ahead.h"

#include <sched.h>

#include <cstring>

namespace stallscope {

ScanAhead::~ScanAhead() {
  if (!worker_.joinable()) return;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stop_ = true;
  }
  changed_.notify_all();
  worker_.join();
}

bool ScanAhead::Worthwhile(size_t size) {
  if (size < kScanAheadMinBytes || size > kScanAheadMaxBytes) return false;
  // A process pinned to one CPU would only take turns with its worker.
  static const bool two_cpus = [] {
    cpu_set_t set;
    return sched_getaffinity(0, sizeof set, &set) == 0 && CPU_COUNT(&set) >= 2;
  }();
  return two_cpus;
}

void ScanAhead::Scan(Piece& piece) {
  piece.lines.clear();
  LineScanner scanner(piece.text);
  ScannedLine batch[64];
  while (size_t count = scanner.Next(batch, std::size(batch))) {
    piece.lines.insert(piece.lines.end(), batch, batch + count);
  }
}

void ScanAhead::Start(std::string_view text) {
  // Pieces cut after a newline near every kScanAheadPieceBytes.
  count_ = 0;
  taken_ = 0;
  for (size_t from = 0; from < text.size();) {
    size_t end = text.size();
    if (text.size() - from > kScanAheadPieceBytes + kScanAheadPieceBytes / 2) {
      const char* nl = static_cast<const char*>(memchr(text.data() + from + kScanAheadPieceBytes,
                                                       '\n', text.size() - from - kScanAheadPieceBytes));
      if (nl != nullptr) end = static_cast<size_t>(nl - text.data()) + 1;
    }
    if (pieces_.size() <= count_) pieces_.emplace_back();
    pieces_[count_++].text = text.substr(from, end - from);
    from = end;
  }
  if (count_ > 1) {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      ++round_;
      scanned_ = 1;  // the first piece is the caller's
    }
    if (!worker_.joinable()) {
      worker_ = std::thread([this] { Work(); });
    } else {
      changed_.notify_all();
    }
  }
  Scan(pieces_[0]);
}

const std::vector<ScannedLine>* ScanAhead::Next() {
  if (taken_ >= count_) return nullptr;
  const size_t i = taken_++;
  if (i > 0) {
    std::unique_lock<std::mutex> lock(mutex_);
    changed_.wait(lock, [&] { return scanned_ > i; });
  }
  return &pieces_[i].lines;
}

void ScanAhead::Work() {
  uint64_t done_round = 0;
  while (true) {
    size_t count = 0;
    {
      std::unique_lock<std::mutex> lock(mutex_);
      changed_.wait(lock, [&] { return stop_ || round_ != done_round; });
      if (stop_) return;
      done_round = round_;
      count = count_;
    }
    for (size_t i = 1; i < count; ++i) {
      Scan(pieces_[i]);
      {
        std::lock_guard<std::mutex> lock(mutex_);
        scanned_ = i + 1;
      }
      changed_.notify_all();
    }
  }
}

}  // namespace stallscope
