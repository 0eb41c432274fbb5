// The progress line DESIGN.md asks for: work over a second says what it is
// doing on stderr, only when stderr is a terminal (never in pipes or logs),
// and erases itself when done. Not thread-safe; one per command.
#pragma once

#include <string_view>

namespace stallscope {

class ProgressLine {
 public:
  explicit ProgressLine(std::string_view text);
  ~ProgressLine();
  // Replaces the text (a bar, a count); a no-op when stderr is not a terminal.
  void Update(std::string_view text);
  ProgressLine(const ProgressLine&) = delete;
  ProgressLine& operator=(const ProgressLine&) = delete;

 private:
  bool shown_ = false;
};

}  // namespace stallscope
