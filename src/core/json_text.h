// JSON as every --json output and JSON file of stallscope prints it. What the
// tool reads from a host is not always UTF-8 (a command line, an environment
// value, a file name): such bytes are written as U+FFFD instead of making
// nlohmann::json throw, which would end the command with no output at all.
// Header-only; thread-safe.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

namespace stallscope {

// `indent` as nlohmann's dump(): -1 is one line, 2 is the outputs' layout.
template <typename Json>
std::string JsonText(const Json& j, int indent = 2) {
  return j.dump(indent, ' ', false, Json::error_handler_t::replace);
}

}  // namespace stallscope
