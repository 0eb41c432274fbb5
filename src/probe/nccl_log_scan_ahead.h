// The lines of a large text scanned on a second thread while the caller
// reads the lines before them: the NCCL log parser (probe/nccl_log.h) spends
// about a fifth of its time finding lines, which another core can do for it
// (nccl-log reads 1 GB logs; its goal is three quarters of grep's speed).
//
// A text (at most kScanAheadMaxBytes, complete lines) is cut at newlines
// into pieces of about kScanAheadPieceBytes; the caller's thread scans the
// first while the worker scans the rest in order, and the caller then takes
// them one at a time, each as soon as it is scanned. The worker holds views
// of the text only until the last piece is taken, so the text (a mapped
// window of the file) must outlive the round, not the object. Memory is
// bounded by the pieces of one text. The worker starts on the first text
// large enough, and only where the process may run on two CPUs; it is
// joined when the object goes. One caller thread.
#pragma once

#include <condition_variable>
#include <cstddef>
#include <mutex>
#include <string_view>
#include <thread>
#include <vector>

#include "probe/nccl_log_scan.h"

namespace stallscope {

inline constexpr size_t kScanAheadPieceBytes = 128 << 10;
inline constexpr size_t kScanAheadMinBytes = 2 * kScanAheadPieceBytes;  // less: one thread
inline constexpr size_t kScanAheadMaxBytes = 2 << 20;

class ScanAhead {
 public:
  ScanAhead() = default;
  ~ScanAhead();
  ScanAhead(const ScanAhead&) = delete;
  ScanAhead& operator=(const ScanAhead&) = delete;

  // Whether texts of `size` bytes are worth a worker here.
  static bool Worthwhile(size_t size);
  // Starts a round on `text` (kScanAheadMinBytes to kScanAheadMaxBytes,
  // ending with '\n'); the previous round must have been read to its end.
  void Start(std::string_view text);
  // The lines of the round's next piece, in order; nullptr at its end.
  const std::vector<ScannedLine>* Next();

 private:
  struct Piece {
    std::string_view text;
    std::vector<ScannedLine> lines;
  };
  void Work();
  static void Scan(Piece& piece);

  std::vector<Piece> pieces_;
  size_t count_ = 0;  // pieces in this round
  size_t taken_ = 0;  // pieces handed to the caller
  std::mutex mutex_;
  std::condition_variable changed_;
  uint64_t round_ = 0;   // rounds started
  size_t scanned_ = 0;   // pieces of this round the worker has scanned (from 1)
  bool stop_ = false;
  std::thread worker_;
};

}  // namespace stallscope
