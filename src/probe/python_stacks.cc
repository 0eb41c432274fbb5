#include "probe/python_stacks.h"

#include <charconv>

#include "core/text.h"

namespace stallscope {
namespace {

// "Thread 0x00007f..." / "Current thread 0x00007f..." -> the thread.
std::optional<PythonThreadStack> ThreadHeader(std::string_view line) {
  PythonThreadStack t;
  if (StartsWith(line, "Current thread 0x")) {
    t.current = true;
    line.remove_prefix(17);
  } else if (StartsWith(line, "Thread 0x")) {
    line.remove_prefix(9);
  } else {
    return std::nullopt;
  }
  const auto [end, ec] = std::from_chars(line.data(), line.data() + line.size(), t.thread_id, 16);
  if (ec != std::errc()) return std::nullopt;
  return t;
}

// `  File "PATH", line N in NAME` -> the frame.
std::optional<PythonFrame> FrameLine(std::string_view line) {
  line = Trim(line);
  if (!StartsWith(line, "File \"")) return std::nullopt;
  line.remove_prefix(6);
  const size_t close = line.rfind("\", line ");
  if (close == std::string_view::npos) return std::nullopt;
  PythonFrame f;
  f.file = std::string(line.substr(0, close));
  std::string_view rest = line.substr(close + 8);
  const auto [end, ec] = std::from_chars(rest.data(), rest.data() + rest.size(), f.line);
  if (ec != std::errc()) return std::nullopt;
  rest = rest.substr(static_cast<size_t>(end - rest.data()));
  if (StartsWith(rest, " in ")) f.function = std::string(rest.substr(4));
  return f;
}

bool LibraryFile(std::string_view file) {
  // The standard library (not the packages installed under it), torch, the hook.
  const bool stdlib = (StartsWith(file, "/usr/lib/python3") ||
                       StartsWith(file, "/usr/local/lib/python3") || StartsWith(file, "<frozen")) &&
                      file.find("-packages/") == std::string_view::npos;
  return stdlib || file.find("/torch/") != std::string_view::npos ||
         file.find("/stallscope/") != std::string_view::npos;
}

}  // namespace

std::string PythonFrame::Where() const {
  return file + ":" + std::to_string(line) + (function.empty() ? "" : " in " + function);
}

std::vector<PythonThreadStack> ParseFaulthandlerDump(std::string_view text) {
  std::vector<PythonThreadStack> threads;
  for (std::string_view line : SplitLines(text)) {
    if (std::optional<PythonThreadStack> t = ThreadHeader(line)) {
      // A thread seen again is a new dump: only the last one counts.
      for (const PythonThreadStack& seen : threads) {
        if (seen.thread_id == t->thread_id) {
          threads.clear();
          break;
        }
      }
      if (threads.size() < kMaxStackThreads) threads.push_back(std::move(*t));
    } else if (std::optional<PythonFrame> f = FrameLine(line)) {
      if (!threads.empty() && threads.back().frames.size() < kMaxStackFrames) {
        threads.back().frames.push_back(std::move(*f));
      }
    }
  }
  return threads;
}

std::optional<PythonThreadStack> MainThreadStack(const std::vector<PythonThreadStack>& threads,
                                                 uint64_t thread_id) {
  const PythonThreadStack* current = nullptr;
  for (const PythonThreadStack& t : threads) {
    if (thread_id != 0 && t.thread_id == thread_id) return t;
    if (t.current && current == nullptr) current = &t;
  }
  if (current) return *current;
  if (!threads.empty()) return threads.front();
  return std::nullopt;
}

std::optional<PythonFrame> JobFrame(const PythonThreadStack& stack) {
  for (const PythonFrame& f : stack.frames) {
    if (!LibraryFile(f.file)) return f;
  }
  if (stack.frames.empty()) return std::nullopt;
  return stack.frames.front();
}

bool InCollectiveFrame(const PythonThreadStack& stack) {
  for (const PythonFrame& f : stack.frames) {
    if (f.file.find("/torch/distributed/") != std::string::npos) return true;
  }
  return false;
}

}  // namespace stallscope
