#include "capture/capture_archive.h"

#include <errno.h>
#include <fcntl.h>
#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include <memory>
#include <nlohmann/json.hpp>

#include "core/file.h"
#include "core/json_text.h"
#include "core/libarchive_api.h"
#include "core/text.h"

namespace stallscope {
namespace {

using Json = nlohmann::ordered_json;
using ArchivePtr = std::unique_ptr<archive, int (*)(archive*)>;
using EntryPtr = std::unique_ptr<archive_entry, void (*)(archive_entry*)>;

constexpr std::string_view kManifestName = "manifest.json";
constexpr std::string_view kTrees[] = {"before/", "node/"};

la_ssize_t AppendToString(archive*, void* out, const void* buffer, size_t length) {
  static_cast<std::string*>(out)->append(static_cast<const char*>(buffer), length);
  return static_cast<la_ssize_t>(length);
}

Status AddEntry(archive* a, const std::string& path, CaptureEntry::Kind kind,
                std::string_view data) {
  EntryPtr e(archive_entry_new(), archive_entry_free);
  archive_entry_set_pathname(e.get(), path.c_str());
  archive_entry_set_mtime(e.get(), 0, 0);
  switch (kind) {
    case CaptureEntry::Kind::kFile:
      archive_entry_set_filetype(e.get(), AE_IFREG);
      archive_entry_set_perm(e.get(), 0644);
      archive_entry_set_size(e.get(), static_cast<la_int64_t>(data.size()));
      break;
    case CaptureEntry::Kind::kDirectory:
      archive_entry_set_filetype(e.get(), AE_IFDIR);
      archive_entry_set_perm(e.get(), 0755);
      break;
    case CaptureEntry::Kind::kLink:
      archive_entry_set_filetype(e.get(), AE_IFLNK);
      archive_entry_set_perm(e.get(), 0777);
      archive_entry_set_symlink(e.get(), std::string(data).c_str());
      break;
  }
  if (archive_write_header(a, e.get()) != ARCHIVE_OK) {
    return Status::FromErrno(fmt::format("capture entry {}: {}", path, archive_error_string(a)),
                             EIO);
  }
  if (kind == CaptureEntry::Kind::kFile && !data.empty() &&
      archive_write_data(a, data.data(), data.size()) < 0) {
    return Status::FromErrno(fmt::format("capture entry {}: {}", path, archive_error_string(a)),
                             EIO);
  }
  return Status::Ok();
}

std::vector<std::string> Strings(const Json& j, const char* key) {
  std::vector<std::string> out;
  if (!j.contains(key) || !j[key].is_array()) return out;
  for (const Json& s : j[key]) {
    if (s.is_string()) out.push_back(s.get<std::string>());
  }
  return out;
}

template <typename T>
void Get(const Json& j, const char* key, T& into) {
  if (j.contains(key) && !j[key].is_null()) into = j[key].get<T>();
}

Result<CaptureManifest> ParseManifest(std::string_view text, std::string_view source,
                                      std::vector<std::string>& notes) {
  const std::string where = fmt::format("{}: entry {}", source, kManifestName);
  Json j = Json::parse(text, nullptr, false);
  if (j.is_discarded() || !j.is_object()) {
    return Status::ParseError(where, 0, "not JSON: not a stallscope capture");
  }
  CaptureManifest m;
  try {
    m.format.clear();
    Get(j, "format", m.format);
    constexpr std::string_view kPrefix = "stallscope.capture/";
    std::optional<uint64_t> version =
        StartsWith(m.format, kPrefix) ? ParseUint(std::string_view(m.format).substr(kPrefix.size()))
                                      : std::nullopt;
    if (!version) {
      return Status::ParseError(where, 0,
                                fmt::format("format \"{}\": not a stallscope capture", m.format));
    }
    Get(j, "stallscope_version", m.stallscope_version);
    if (*version > static_cast<uint64_t>(kCaptureFormatVersion)) {
      notes.push_back(fmt::format(
          "capture: {} was written by stallscope {} in format {}, newer than this stallscope "
          "reads ({}); what that format added is not read",
          source, m.stallscope_version.empty() ? "(unknown)" : m.stallscope_version, m.format,
          kCaptureFormat));
    }
    Get(j, "host", m.host);
    Get(j, "kernel", m.kernel);
    Get(j, "time_utc", m.time_utc);
    Get(j, "interval_seconds", m.interval_seconds);
    Get(j, "before_monotonic_seconds", m.before_monotonic_seconds);
    Get(j, "after_monotonic_seconds", m.after_monotonic_seconds);
  } catch (const nlohmann::json::exception& e) {
    return Status::ParseError(where, 0, std::string("a field of the wrong type: ") + e.what());
  }
  m.captured = Strings(j, "captured");
  m.not_captured = Strings(j, "not_captured");
  m.redacted = Strings(j, "redacted");
  m.node_notes = Strings(j, "node_notes");
  return m;
}

// "a/b/c" with no empty, "." or ".." component, not absolute.
bool IsPlainRelative(std::string_view path) {
  if (path.empty() || path.front() == '/' || path.size() > 4096) return false;
  for (std::string_view rest = path; !rest.empty();) {
    size_t slash = rest.find('/');
    std::string_view part = rest.substr(0, slash);
    if (part.empty() || part == "." || part == ".." || part.find('\0') != part.npos) return false;
    if (slash == std::string_view::npos) break;
    rest = rest.substr(slash + 1);
  }
  return true;
}

// "./", ".", "./." or ".//": the top of the archive itself.
bool IsTreeRoot(const char* pathname) {
  if (!pathname) return false;
  std::string_view name(pathname);
  while (!name.empty() && (name.front() == '.' || name.front() == '/')) {
    if (name.front() == '.' && name.size() > 1 && name[1] == '.') return false;  // ".."
    name.remove_prefix(1);
  }
  return name.empty() && std::string_view(pathname).find('.') != std::string_view::npos &&
         pathname[0] == '.';
}

// Whether a link at `path` ("node/sys/class/net/eth0") to `target` stays
// inside its tree ("node/"), read as the path's words say.
bool LinkStaysInTree(std::string_view path, std::string_view target) {
  if (target.empty() || target.front() == '/') return false;
  std::vector<std::string_view> parts;
  for (std::string_view rest = path; !rest.empty();) {
    size_t slash = rest.find('/');
    parts.push_back(rest.substr(0, slash));
    if (slash == std::string_view::npos) break;
    rest = rest.substr(slash + 1);
  }
  parts.pop_back();  // the link's own name
  for (std::string_view rest = target; !rest.empty();) {
    size_t slash = rest.find('/');
    std::string_view part = rest.substr(0, slash);
    if (part == "..") {
      if (parts.size() <= 1) return false;  // above the tree
      parts.pop_back();
    } else if (!part.empty() && part != ".") {
      parts.push_back(part);
    }
    if (slash == std::string_view::npos) break;
    rest = rest.substr(slash + 1);
  }
  return true;
}

bool InATree(std::string_view path) {
  for (std::string_view tree : kTrees) {
    if (StartsWith(path, tree) || path == tree.substr(0, tree.size() - 1)) return true;
  }
  return false;
}

// One entry's header checked and its data read.
Status ReadEntry(archive* a, archive_entry* e, std::string_view source, CaptureEntry& out,
                 uint64_t& total) {
  std::string name = archive_entry_pathname(e) ? archive_entry_pathname(e) : "";
  while (StartsWith(name, "./")) name.erase(0, 2);
  while (!name.empty() && name.back() == '/') name.pop_back();
  const std::string where = fmt::format("{}: entry {}", source, name.empty() ? "(no name)" : name);
  if (!IsPlainRelative(name)) {
    return Status::ParseError(where, 0, "not a plain relative path (absolute, empty or \"..\")");
  }
  out.path = name;
  switch (archive_entry_filetype(e)) {
    case AE_IFREG:
      out.kind = CaptureEntry::Kind::kFile;
      break;
    case AE_IFDIR:
      out.kind = CaptureEntry::Kind::kDirectory;
      break;
    case AE_IFLNK:
      out.kind = CaptureEntry::Kind::kLink;
      break;
    default:
      return Status::ParseError(where, 0,
                                "neither a file, a directory nor a symbolic link (a capture "
                                "holds no devices, hard links or fifos)");
  }
  if (out.kind == CaptureEntry::Kind::kLink) {
    const char* target = archive_entry_symlink(e);
    out.data = target ? target : "";
    if (!LinkStaysInTree(name, out.data)) {
      return Status::ParseError(where, 0,
                                fmt::format("symbolic link to \"{}\" leaves its tree", out.data));
    }
    return Status::Ok();
  }
  if (out.kind != CaptureEntry::Kind::kFile) return Status::Ok();
  const la_int64_t size = archive_entry_size(e);
  if (size < 0 || static_cast<uint64_t>(size) > kCaptureMaxEntryBytes) {
    return Status::ParseError(
        where, 0,
        fmt::format("{} bytes: over the limit of {} bytes an entry", size, kCaptureMaxEntryBytes));
  }
  total += static_cast<uint64_t>(size);
  if (total > kCaptureMaxTotalBytes) {
    return Status::ParseError(
        where, 0, fmt::format("the entries pass {} bytes in all", kCaptureMaxTotalBytes));
  }
  out.data.resize(static_cast<size_t>(size));
  size_t have = 0;
  while (have < out.data.size()) {
    la_ssize_t n = archive_read_data(a, out.data.data() + have, out.data.size() - have);
    if (n < 0) return Status::ParseError(where, 0, archive_error_string(a));
    if (n == 0) {
      return Status::ParseError(where, 0,
                                fmt::format("truncated: {} of {} bytes", have, out.data.size()));
    }
    have += static_cast<size_t>(n);
  }
  return Status::Ok();
}

Status MakeDirectoryAt(int parent, const std::string& name, const std::string& where, int& fd) {
  if (::mkdirat(parent, name.c_str(), 0755) != 0 && errno != EEXIST) {
    return Status::FromErrno(where, errno);
  }
  fd = ::openat(parent, name.c_str(), O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC | O_RDONLY);
  if (fd < 0) {
    return Status::FromErrno(where + " (a symbolic link or a file where a directory goes)", errno);
  }
  return Status::Ok();
}

// Opens the directory that holds `path` under `root`, creating it, never
// following a symbolic link on the way. The caller closes the descriptor.
Result<int> OpenParent(int root, const std::string& path, const std::string& where,
                       std::string& leaf) {
  int dir = ::dup(root);
  size_t start = 0;
  for (size_t slash; (slash = path.find('/', start)) != std::string::npos; start = slash + 1) {
    int next = -1;
    Status s = MakeDirectoryAt(dir, path.substr(start, slash - start), where, next);
    ::close(dir);
    if (!s.ok()) return s;
    dir = next;
  }
  leaf = path.substr(start);
  return dir;
}

Status ExtractEntry(int root, const CaptureEntry& entry, const std::string& where) {
  std::string leaf;
  Result<int> parent = OpenParent(root, entry.path, where, leaf);
  if (!parent.ok()) return parent.status();
  Status out = Status::Ok();
  if (entry.kind == CaptureEntry::Kind::kDirectory) {
    int fd = -1;
    out = MakeDirectoryAt(*parent, leaf, where, fd);
    if (fd >= 0) ::close(fd);
  } else if (entry.kind == CaptureEntry::Kind::kLink) {
    if (::symlinkat(entry.data.c_str(), *parent, leaf.c_str()) != 0 && errno != EEXIST) {
      out = Status::FromErrno(where, errno);
    }
  } else {
    int fd = ::openat(*parent, leaf.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC,
                      0644);
    if (fd < 0) {
      out = Status::FromErrno(where, errno);
    } else {
      size_t done = 0;
      while (done < entry.data.size()) {
        ssize_t n = ::write(fd, entry.data.data() + done, entry.data.size() - done);
        if (n < 0 && errno == EINTR) continue;
        if (n < 0) {
          out = Status::FromErrno(where, errno);
          break;
        }
        done += static_cast<size_t>(n);
      }
      ::close(fd);
    }
  }
  ::close(*parent);
  return out;
}

// The tar inside a gzip stream, inflated here rather than by libarchive so
// that a stream cut short still gives the entries before the cut, and the
// error names the entry it cut. `ends_early` says why the tar may be short.
Result<std::string> Gunzip(std::string_view bytes, std::string_view source,
                           std::string& ends_early) {
  if (bytes.size() < 2 || static_cast<unsigned char>(bytes[0]) != 0x1f ||
      static_cast<unsigned char>(bytes[1]) != 0x8b) {
    return std::string(bytes);  // a plain tar
  }
  constexpr uint64_t kMaxTarBytes = kCaptureMaxTotalBytes + (64ull << 20);  // + headers
  z_stream z{};
  if (inflateInit2(&z, 15 + 16) != Z_OK) return Status::ParseError(source, 0, "zlib failed");
  z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(bytes.data()));
  z.avail_in = static_cast<uInt>(bytes.size());
  std::string out;
  char buffer[65536];
  int rc = Z_OK;
  while (rc == Z_OK) {
    z.next_out = reinterpret_cast<Bytef*>(buffer);
    z.avail_out = sizeof buffer;
    rc = inflate(&z, Z_NO_FLUSH);
    out.append(buffer, sizeof buffer - z.avail_out);
    if (out.size() > kMaxTarBytes) {
      inflateEnd(&z);
      return Status::ParseError(source, 0,
                                fmt::format("unpacks to more than {} bytes", kMaxTarBytes));
    }
    if (rc == Z_BUF_ERROR && z.avail_in == 0) break;
  }
  if (rc == Z_DATA_ERROR) {
    ends_early = fmt::format("the gzip stream is corrupt at byte {}", z.total_in);
  } else if (rc != Z_STREAM_END) {
    ends_early = "the gzip stream ends early";
  }
  inflateEnd(&z);
  return out;
}

}  // namespace

std::string ManifestToJson(const CaptureManifest& m) {
  Json j = Json::object();
  j["format"] = m.format;
  j["stallscope_version"] = m.stallscope_version;
  j["host"] = m.host;
  j["kernel"] = m.kernel;
  j["time_utc"] = m.time_utc;
  j["interval_seconds"] = m.interval_seconds;
  j["before_monotonic_seconds"] = m.before_monotonic_seconds;
  j["after_monotonic_seconds"] = m.after_monotonic_seconds;
  j["captured"] = m.captured;
  j["not_captured"] = m.not_captured;
  j["redacted"] = m.redacted;
  j["node_notes"] = m.node_notes;
  return JsonText(j) + "\n";
}

Result<std::string> BuildCaptureArchive(const CaptureManifest& manifest,
                                        const std::vector<CaptureEntry>& entries) {
  std::string out;
  ArchivePtr a(archive_write_new(), archive_write_free);
  if (archive_write_add_filter_gzip(a.get()) != ARCHIVE_OK ||
      archive_write_set_format_pax_restricted(a.get()) != ARCHIVE_OK ||
      archive_write_set_bytes_in_last_block(a.get(), 1) != ARCHIVE_OK ||
      archive_write_open(a.get(), &out, nullptr, AppendToString, nullptr) != ARCHIVE_OK) {
    return Status::FromErrno(std::string("capture archive: ") + archive_error_string(a.get()), EIO);
  }
  if (Status s = AddEntry(a.get(), std::string(kManifestName), CaptureEntry::Kind::kFile,
                          ManifestToJson(manifest));
      !s.ok()) {
    return s;
  }
  for (const CaptureEntry& e : entries) {
    if (Status s = AddEntry(a.get(), e.path, e.kind, e.data); !s.ok()) return s;
  }
  if (archive_write_close(a.get()) != ARCHIVE_OK) {
    return Status::FromErrno(std::string("capture archive: ") + archive_error_string(a.get()), EIO);
  }
  return out;
}

Result<CaptureContents> ParseCaptureArchive(std::string_view bytes, std::string_view source) {
  std::string ends_early;
  Result<std::string> tar = Gunzip(bytes, source, ends_early);
  if (!tar.ok()) return tar.status();
  Result<CaptureContents> out = ParseCaptureTar(*tar, source);
  if (!out.ok() && !ends_early.empty()) {
    return Status::ParseError(out.status().message(), 0, ends_early);
  }
  if (out.ok() && !ends_early.empty()) {
    return Status::ParseError(source, 0, ends_early + " after its last whole entry");
  }
  return out;
}

Result<CaptureContents> ParseCaptureTar(std::string_view bytes, std::string_view source) {
  ArchivePtr a(archive_read_new(), archive_read_free);
  archive_read_support_format_tar(a.get());
  if (archive_read_open_memory(a.get(), bytes.data(), bytes.size()) != ARCHIVE_OK) {
    return Status::ParseError(source, 0,
                              fmt::format("not a capture (a gzip-compressed tar archive): {}",
                                          archive_error_string(a.get())));
  }
  CaptureContents out;
  bool have_manifest = false;
  uint64_t total = 0;
  std::string last = "(none yet)";
  size_t unknown = 0;
  for (;;) {
    archive_entry* e = nullptr;
    int rc = archive_read_next_header(a.get(), &e);
    if (rc == ARCHIVE_EOF) break;
    if (rc != ARCHIVE_OK && rc != ARCHIVE_WARN) {
      return Status::ParseError(source, 0,
                                fmt::format("corrupt or truncated after entry {}: {}", last,
                                            archive_error_string(a.get())));
    }
    if (out.entries.size() + 1 > kCaptureMaxEntries) {
      return Status::ParseError(source, 0, fmt::format("more than {} entries", kCaptureMaxEntries));
    }
    // The archive's own top folder, "./" or ".", which GNU tar writes first
    // for `tar -C DIR -czf node.tar.gz .`: nothing to read.
    if (archive_entry_filetype(e) == AE_IFDIR && IsTreeRoot(archive_entry_pathname(e))) continue;
    CaptureEntry entry;
    if (Status s = ReadEntry(a.get(), e, source, entry, total); !s.ok()) return s;
    last = entry.path;
    if (entry.path == kManifestName && entry.kind == CaptureEntry::Kind::kFile) {
      Result<CaptureManifest> m = ParseManifest(entry.data, source, out.notes);
      if (!m.ok()) return m.status();
      out.manifest = std::move(*m);
      have_manifest = true;
    } else if (InATree(entry.path)) {
      out.entries.push_back(std::move(entry));
    } else {
      ++unknown;
    }
  }
  if (!have_manifest) {
    return Status::ParseError(source, 0,
                              fmt::format("no entry {}: not a stallscope capture", kManifestName));
  }
  if (unknown > 0) {
    out.notes.push_back(fmt::format(
        "capture: {} entries of {} outside before/ and node/ are not read", unknown, source));
  }
  return out;
}

Result<CaptureContents> ReadCaptureFile(const std::string& path) {
  Result<std::string> bytes = ReadFile(path, kCaptureMaxFileBytes);
  if (!bytes.ok()) return bytes.status();
  return ParseCaptureArchive(*bytes, path);
}

Status ExtractCapture(const CaptureContents& contents, const std::string& dir,
                      std::string_view source) {
  int root = ::open(dir.c_str(), O_DIRECTORY | O_RDONLY | O_CLOEXEC);
  if (root < 0) return Status::FromErrno(dir, errno);
  Status out = Status::Ok();
  for (const CaptureEntry& entry : contents.entries) {
    out = ExtractEntry(root, entry, fmt::format("{}: entry {}", source, entry.path));
    if (!out.ok()) break;
  }
  ::close(root);
  return out;
}

}  // namespace stallscope
