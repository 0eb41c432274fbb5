#include "cli/progress.h"

#include <unistd.h>

#include <cstdio>

namespace stallscope {

ProgressLine::ProgressLine(std::string_view text) {
  if (!isatty(STDERR_FILENO)) return;
  std::fprintf(stderr, "%.*s", static_cast<int>(text.size()), text.data());
  std::fflush(stderr);
  shown_ = true;
}

void ProgressLine::Update(std::string_view text) {
  if (!shown_) return;
  std::fprintf(stderr, "\r\033[K%.*s", static_cast<int>(text.size()), text.data());
  std::fflush(stderr);
}

ProgressLine::~ProgressLine() {
  if (shown_) std::fputs("\r\033[K", stderr);
}

}  // namespace stallscope
