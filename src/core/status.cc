#include "core/status.h"

#include <cstring>
#include <string>

namespace stallscope {

Status Status::FromErrno(std::string_view context, int err) {
  std::string message(context);
  message += ": ";
  message += std::strerror(err);
  Code code = Code::kIoError;
  if (err == ENOENT || err == ENOTDIR) code = Code::kNotFound;
  if (err == EACCES || err == EPERM) code = Code::kPermissionDenied;
  return Status(code, message);
}

Status Status::ParseError(std::string_view source, int line, std::string_view what) {
  std::string message(source);
  if (line > 0) message += ":" + std::to_string(line);
  message += ": ";
  message += what;
  return Status(Code::kParseError, message);
}

std::string Status::ToString() const { return ok() ? "OK" : message_; }

}  // namespace stallscope
