#include "data/tar_reader.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <optional>

#include "core/file.h"
#include "core/text.h"

namespace stallscope {
namespace {

bool AllZero(std::string_view block) {
  return std::all_of(block.begin(), block.end(), [](char c) { return c == 0; });
}

std::string_view CField(std::string_view block, size_t off, size_t len) {
  std::string_view f = block.substr(off, len);
  size_t nul = f.find('\0');
  return nul == std::string_view::npos ? f : f.substr(0, nul);
}

// Octal, space/NUL padded, or base-256 (high bit of the first byte set).
std::optional<uint64_t> Numeric(std::string_view field) {
  if (!field.empty() && (static_cast<uint8_t>(field[0]) & 0x80)) {
    if (static_cast<uint8_t>(field[0]) != 0x80) return std::nullopt;  // negative or huge
    uint64_t v = 0;
    for (size_t i = 1; i < field.size(); ++i) {
      if (v >> 56) return std::nullopt;
      v = (v << 8) | static_cast<uint8_t>(field[i]);
    }
    return v;
  }
  uint64_t v = 0;
  bool any = false;
  size_t i = 0;
  while (i < field.size() && field[i] == ' ') ++i;
  for (; i < field.size() && field[i] >= '0' && field[i] <= '7'; ++i) {
    if (v >> 61) return std::nullopt;
    v = v * 8 + static_cast<uint64_t>(field[i] - '0');
    any = true;
  }
  for (; i < field.size(); ++i)
    if (field[i] != ' ' && field[i] != '\0') return std::nullopt;
  if (!any) return std::nullopt;
  return v;
}

uint64_t Padded(uint64_t n) { return (n + kTarBlock - 1) / kTarBlock * kTarBlock; }

struct PaxOverrides {
  std::optional<std::string> path;
  std::optional<uint64_t> size;
};

// Records "LEN key=value\n", LEN counting the whole record.
Status ParsePax(std::string_view data, std::string_view source, PaxOverrides& out) {
  while (!data.empty()) {
    size_t space = data.find(' ');
    if (space == std::string_view::npos || space > 20)
      return Status::ParseError(source, 0, "pax record without a length");
    std::optional<uint64_t> len = ParseUint(data.substr(0, space));
    if (!len || *len <= space + 1 || *len > data.size() || data[*len - 1] != '\n')
      return Status::ParseError(source, 0, "pax record length out of range");
    std::string_view rec = data.substr(space + 1, *len - space - 2);
    size_t eq = rec.find('=');
    if (eq == std::string_view::npos)
      return Status::ParseError(source, 0, "pax record without '='");
    std::string_view key = rec.substr(0, eq), value = rec.substr(eq + 1);
    if (key == "path") {
      out.path = std::string(value);
    } else if (key == "size") {
      std::optional<uint64_t> size = ParseUint(value);
      if (!size) return Status::ParseError(source, 0, "pax size is not a number");
      out.size = *size;
    }
    data.remove_prefix(*len);
  }
  return Status::Ok();
}

}  // namespace

std::pair<std::string_view, std::string_view> SplitKey(std::string_view path) {
  size_t slash = path.rfind('/');
  size_t base = slash == std::string_view::npos ? 0 : slash + 1;
  size_t dot = path.find('.', base);
  if (dot == std::string_view::npos) return {path, {}};
  return {path.substr(0, dot), path.substr(dot + 1)};
}

Result<TarRun> ParseTarMembers(std::string_view buf, uint64_t base, std::string_view source) {
  TarRun run;
  uint64_t pos = 0;
  PaxOverrides pax;
  uint64_t pending_header = 0;
  bool in_pax = false;
  while (pos < buf.size()) {
    std::string where = fmt::format("{}@{}", source, base + pos);
    if (buf.size() - pos < kTarBlock) return Status::ParseError(where, 0, "truncated tar header");
    std::string_view h = buf.substr(pos, kTarBlock);
    if (AllZero(h)) {
      if (in_pax) return Status::ParseError(where, 0, "pax header followed by the end of archive");
      run.end_of_archive = true;
      break;
    }
    std::optional<uint64_t> stored = Numeric(h.substr(148, 8));
    uint64_t sum = 0;
    for (size_t i = 0; i < kTarBlock; ++i)
      sum += (i >= 148 && i < 156) ? ' ' : static_cast<uint8_t>(h[i]);
    if (!stored || *stored != sum)
      return Status::ParseError(where, 0, "tar header checksum mismatch");
    if (h.substr(257, 5) != "ustar") return Status::ParseError(where, 0, "not a ustar header");
    std::optional<uint64_t> size = Numeric(h.substr(124, 12));
    if (!size) return Status::ParseError(where, 0, "tar size field is not a number");
    char type = h[156];
    if (!in_pax) pending_header = base + pos;
    uint64_t data_pos = pos + kTarBlock;
    if (type == 'x' || type == 'g') {
      if (*size > buf.size() - data_pos)
        return Status::ParseError(where, 0, "pax header data runs past the range");
      if (type == 'x') {
        if (Status s = ParsePax(buf.substr(data_pos, *size), where, pax); !s.ok()) return s;
        in_pax = true;
      }
      pos = data_pos + Padded(*size);
      continue;
    }
    if (type != '0' && type != '\0')
      return Status::ParseError(
          where, 0,
          fmt::format("tar member of type '{}', not a regular file", type == 0 ? '?' : type));
    TarMember m;
    if (pax.path) {
      m.name = *pax.path;
    } else {
      std::string_view prefix = CField(h, 345, 155), name = CField(h, 0, 100);
      m.name = prefix.empty() ? std::string(name) : fmt::format("{}/{}", prefix, name);
    }
    m.size = pax.size.value_or(*size);
    if (m.name.empty()) return Status::ParseError(where, 0, "tar member with an empty name");
    if (m.size > buf.size() - data_pos || Padded(m.size) > buf.size() - data_pos)
      return Status::ParseError(
          where, 0, fmt::format("member \"{}\" of {} bytes runs past the range", m.name, m.size));
    m.header_offset = pending_header;
    m.data_offset = base + data_pos;
    m.data = buf.substr(data_pos, m.size);
    pos = data_pos + Padded(m.size);
    run.members.push_back(std::move(m));
    pax = PaxOverrides{};
    in_pax = false;
  }
  if (in_pax) return Status::ParseError(source, 0, "pax header without its member");
  run.end = base + pos;
  return run;
}

Result<TarFile> TarFile::Open(const std::string& path) {
  Result<OpenedFile> file = OpenForReading(path);
  if (!file.ok()) return file.status();
  return TarFile(file->fd, path, file->size);
}

TarFile::TarFile(TarFile&& other) noexcept
    : fd_(other.fd_),
      path_(std::move(other.path_)),
      size_(other.size_),
      buf_(std::move(other.buf_)) {
  other.fd_ = -1;
}

TarFile::~TarFile() {
  if (fd_ >= 0) ::close(fd_);
}

Result<TarRun> TarFile::ReadRange(uint64_t offset, uint64_t length) {
  std::string source = fmt::format("{}@{}", path_, offset);
  if (offset > size_ || length > size_ - offset)
    return Status::ParseError(source, 0,
                              fmt::format("range of {} bytes past the end of the file", length));
  buf_.resize(length);
  uint64_t done = 0;
  while (done < length) {
    ssize_t n = pread(fd_, buf_.data() + done, length - done, static_cast<off_t>(offset + done));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return Status::FromErrno(source, errno);
    if (n == 0) return Status::ParseError(source, 0, "file shrank while reading");
    done += static_cast<uint64_t>(n);
  }
  return ParseTarMembers(buf_, offset, path_);
}

}  // namespace stallscope
