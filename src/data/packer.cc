// The pack pipeline: census, order, reading threads, one in-order writer.
#include "data/packer.h"

#include <dirent.h>
#include <fcntl.h>
#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <cstring>
#include <mutex>
#include <optional>
#include <thread>

#include "core/file.h"
#include "data/crc32c.h"
#include "data/pack_census.h"
#include "data/pack_verify.h"
#include "data/sample_writer.h"
#include "data/tar_reader.h"

namespace stallscope {
namespace {

// How far the reading threads may run ahead of the writer, in bytes of
// source files: enough to keep many reads in flight on slow storage, and
// little enough that what was read is still in the CPU's caches when the
// writer copies it on. At 256 MiB the kernel's copy into the shard's pages
// cost three times tar's (cold source lines) and RSS was 340 MiB; at 8 MiB
// pack's system time is tar's (bench/pack_vs_tar.sh). One sample is always
// allowed, whatever its size.
constexpr uint64_t kReadAheadBytes = uint64_t{8} << 20;
constexpr int kMaxJobs = 256;

int64_t MtimeNs(const struct stat& st) {
  return static_cast<int64_t>(st.st_mtim.tv_sec) * 1000000000 + st.st_mtim.tv_nsec;
}

}  // namespace

int DefaultPackJobs() {
  long cpus = ::sysconf(_SC_NPROCESSORS_ONLN);
  return static_cast<int>(std::clamp(cpus * 2, 2L, 8L));
}

Result<SampleFile> ReadPackSource(const std::string& src, const SourceFile& c) {
  std::string path = src + "/" + c.path;
  if (!c.problem.empty()) return Status::Unavailable(fmt::format("{}: {}", path, c.problem));
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
  if (fd < 0) return Status::FromErrno(fmt::format("opening {}", path), errno);
  struct Closer {
    int fd;
    ~Closer() { ::close(fd); }
  } closer{fd};
  auto changed = [&](std::string_view how) {
    return Status::Unavailable(fmt::format("{}: changed during packing ({})", path, how));
  };
  struct stat st;
  if (fstat(fd, &st) != 0) return Status::FromErrno(path, errno);
  if (!S_ISREG(st.st_mode))
    return Status::Unavailable(fmt::format("{}: no longer a regular file", path));
  if (static_cast<uint64_t>(st.st_size) != c.size || MtimeNs(st) != c.mtime_ns)
    return changed(
        fmt::format("size {} -> {} bytes or mtime changed since the census", c.size, st.st_size));
  posix_fadvise(fd, 0, 0, POSIX_FADV_SEQUENTIAL);
  SampleFile f;
  f.path = c.path;
  f.size = c.size;
  f.mtime_sec = c.mtime_ns / 1000000000;
  f.data = std::make_unique_for_overwrite<char[]>(c.size);
  uint64_t done = 0;
  while (done < c.size) {
    ssize_t n = ::read(fd, f.data.get() + done, c.size - done);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return Status::FromErrno(fmt::format("reading {}", path), errno);
    if (n == 0) return changed(fmt::format("shrank to {} of {} bytes", done, c.size));
    done += static_cast<uint64_t>(n);
  }
  char extra;
  ssize_t more = ::read(fd, &extra, 1);
  if (more > 0) return changed(fmt::format("grew past {} bytes", c.size));
  if (fstat(fd, &st) != 0) return Status::FromErrno(path, errno);
  if (static_cast<uint64_t>(st.st_size) != c.size || MtimeNs(st) != c.mtime_ns)
    return changed("written to while being read");
  f.crc = Crc32c(f.data.get(), f.size);
  return f;
}

namespace {

// A sample read, or the first file of it that could not be.
struct ReadOutcome {
  Sample sample;
  std::optional<SkippedFile> failed;
  Status status;
};

ReadOutcome ReadSample(const PackOptions& o, const SourceSample& c) {
  ReadOutcome r;
  r.sample.key = c.key;
  r.sample.label = c.label;
  for (const SourceFile& cf : c.files) {
    Result<SampleFile> f = ReadPackSource(o.src, cf);
    if (!f.ok()) {
      r.failed = SkippedFile{cf.path, f.status().message()};
      r.status = f.status();
      r.sample.files.clear();
      return r;
    }
    if (o.format == PackFormat::kTfRecord) PrepareTfRecordFile(*f, c.label);
    r.sample.files.push_back(std::move(f).value());
  }
  return r;
}

// Reading threads ahead of the writer, delivering samples in order.
class ReadPipeline {
 public:
  ReadPipeline(const PackOptions& o, const std::vector<SourceSample>& samples)
      : options_(o), samples_(samples), slots_(samples.size()) {
    int jobs = std::clamp(o.jobs, 1, kMaxJobs);
    for (int i = 0; i < jobs; ++i) threads_.emplace_back([this] { Work(); });
  }
  ~ReadPipeline() {
    {
      std::lock_guard lock(mu_);
      stop_ = true;
    }
    work_cv_.notify_all();
    for (std::thread& t : threads_) t.join();
  }

  ReadOutcome Take(size_t i) {
    std::unique_lock lock(mu_);
    ready_cv_.wait(lock, [&] { return slots_[i].has_value(); });
    ReadOutcome r = std::move(*slots_[i]);
    slots_[i].reset();
    ahead_bytes_ -= samples_[i].bytes;
    next_write_ = i + 1;
    lock.unlock();
    work_cv_.notify_all();
    return r;
  }

 private:
  void Work() {
    for (;;) {
      size_t i;
      {
        std::unique_lock lock(mu_);
        work_cv_.wait(lock, [&] {
          return stop_ || next_claim_ >= samples_.size() || next_claim_ == next_write_ ||
                 ahead_bytes_ + samples_[next_claim_].bytes <= kReadAheadBytes;
        });
        if (stop_ || next_claim_ >= samples_.size()) return;
        i = next_claim_++;
        ahead_bytes_ += samples_[i].bytes;
      }
      ReadOutcome r = ReadSample(options_, samples_[i]);
      {
        std::lock_guard lock(mu_);
        slots_[i] = std::move(r);
      }
      ready_cv_.notify_all();
    }
  }

  const PackOptions& options_;
  const std::vector<SourceSample>& samples_;
  std::mutex mu_;
  std::condition_variable work_cv_, ready_cv_;
  std::vector<std::optional<ReadOutcome>> slots_;
  size_t next_claim_ = 0, next_write_ = 0;
  uint64_t ahead_bytes_ = 0;
  bool stop_ = false;
  std::vector<std::thread> threads_;
};

bool IsPackName(const std::string& name) {
  return name.starts_with("shard-") || name == kManifestName;
}
bool IsOurTemp(const std::string& name) {
  return (name.starts_with(".shard-") || name == ".manifest.json.tmp") && name.ends_with(".tmp");
}

// Creates OUT or checks it holds no earlier pack (removed with --force).
Status PrepareOut(const PackOptions& o) {
  struct stat st;
  if (stat(o.out.c_str(), &st) != 0) {
    if (errno != ENOENT) return Status::FromErrno(o.out, errno);
    if (mkdir(o.out.c_str(), 0755) != 0)
      return Status::FromErrno(fmt::format("creating {}", o.out), errno);
    return Status::Ok();
  }
  if (!S_ISDIR(st.st_mode))
    return Status::InvalidArgument(fmt::format("OUT {} is not a folder", o.out));
  Result<std::vector<std::string>> names = ListDirectory(o.out);
  if (!names.ok()) return names.status();
  std::vector<std::string> pack;
  for (const std::string& n : *names) {
    if (IsOurTemp(n)) ::unlink((o.out + "/" + n).c_str());  // left by a killed run
    if (IsPackName(n)) pack.push_back(n);
  }
  if (pack.empty()) return Status::Ok();
  if (!o.force)
    return Status::InvalidArgument(fmt::format(
        "{} already holds a pack ({}{}); pass --force to replace it", o.out, pack.front(),
        pack.size() > 1 ? fmt::format(" and {} more", pack.size() - 1) : ""));
  // The manifest goes first, so the folder never looks complete half-removed.
  std::sort(pack.begin(), pack.end(), [](const std::string& a, const std::string& b) {
    return (a == kManifestName) > (b == kManifestName);
  });
  for (const std::string& n : pack)
    if (::unlink((o.out + "/" + n).c_str()) != 0)
      return Status::FromErrno(fmt::format("removing {}/{}", o.out, n), errno);
  return Status::Ok();
}

// Everything a run committed, removed again when the run fails.
struct Committed {
  std::vector<std::string> paths;
  bool keep = false;
  ~Committed() {
    if (keep) return;
    for (auto it = paths.rbegin(); it != paths.rend(); ++it) ::unlink(it->c_str());
  }
};

class ShardSequence {
 public:
  ShardSequence(const PackOptions& o, Committed& committed)
      : options_(o), committed_(committed), writer_(MakeSampleWriter(o.format)) {}

  Status Add(const Sample& sample, std::vector<VerifiedEntry>& written) {
    std::vector<std::pair<std::string, uint64_t>> sizes;
    for (const SampleFile& f : sample.files) sizes.emplace_back(f.path, f.size);
    uint64_t need = writer_->BytesFor(sizes) + writer_->TrailerBytes();
    if (file_ && info_.samples > 0 && file_->offset() + need > options_.shard_size)
      if (Status s = Close(); !s.ok()) return s;
    if (!file_) {
      std::string name = ShardName(options_.format, shards_.size());
      Result<std::unique_ptr<ShardFile>> f = ShardFile::Create(options_.out, name);
      if (!f.ok()) return f.status();
      file_ = std::move(f).value();
      info_ = ShardInfo{name, name + ".idx", 0, 0, 0};
      index_.clear();
      if (Status s = writer_->Begin(file_.get()); !s.ok()) return s;
    }
    size_t before = index_.size();
    if (Status s = writer_->Write(sample, index_); !s.ok()) {
      std::string_view first = sample.files.empty() ? sample.key : sample.files[0].path;
      return Status::Unavailable(
          fmt::format("{} (while packing {}/{})", s.message(), options_.src, first));
    }
    info_.samples += 1;
    info_.records += index_.size() - before;
    for (const SampleFile& f : sample.files) written.push_back({f.path, f.size, f.crc});
    if (options_.format == PackFormat::kWds && sample.label) {
      // Where the writer put <key>.cls: in byte order of extensions.
      std::string cls = fmt::format("{}", *sample.label);
      VerifiedEntry label{sample.key + ".cls", cls.size(), Crc32c(cls)};
      size_t first = written.size() - sample.files.size();
      bool own = false;
      size_t at = written.size();
      for (size_t i = first; i < written.size(); ++i) {
        std::string_view ext = SplitKey(written[i].name).second;
        own = own || ext == "cls";
        if (at == written.size() && ext > "cls") at = i;
      }
      if (!own) written.insert(written.begin() + static_cast<std::ptrdiff_t>(at), label);
    }
    return Status::Ok();
  }

  Status Close() {
    if (!file_) return Status::Ok();
    if (Status s = writer_->Finish(); !s.ok()) return s;
    info_.bytes = file_->offset();
    Result<std::unique_ptr<ShardFile>> idx = ShardFile::Create(options_.out, info_.index);
    if (!idx.ok()) return idx.status();
    std::string text;
    for (const IndexEntry& e : index_) text += FormatIndexLine(e);
    if (Status s = (*idx)->Append(text); !s.ok()) return s;
    // The index gets its name first: a shard under its name always has one.
    if (Status s = (*idx)->Commit(); !s.ok()) return s;
    committed_.paths.push_back((*idx)->final_path());
    if (Status s = file_->Commit(); !s.ok()) return s;
    committed_.paths.push_back(file_->final_path());
    file_.reset();
    shards_.push_back(info_);
    return Status::Ok();
  }

  std::vector<ShardInfo>& shards() { return shards_; }

 private:
  const PackOptions& options_;
  Committed& committed_;
  std::unique_ptr<SampleWriter> writer_;
  std::unique_ptr<ShardFile> file_;
  ShardInfo info_;
  std::vector<IndexEntry> index_;
  std::vector<ShardInfo> shards_;
};

Status CheckVerified(const VerifySummary& v, const std::vector<VerifiedEntry>& written) {
  if (v.entries.size() != written.size())
    return Status::Unavailable(
        fmt::format("verify: {} entries read back, {} written", v.entries.size(), written.size()));
  for (size_t i = 0; i < written.size(); ++i) {
    const VerifiedEntry &a = v.entries[i], &b = written[i];
    if (a.name != b.name || a.size != b.size || a.crc != b.crc)
      return Status::Unavailable(fmt::format(
          "verify: entry {} reads back as {} ({} bytes, crc {:#010x}), written as {} ({} bytes, "
          "crc {:#010x})",
          i, a.name, a.size, a.crc, b.name, b.size, b.crc));
  }
  return Status::Ok();
}

}  // namespace

Result<PackSummary> Pack(const PackOptions& o) {
  auto start = std::chrono::steady_clock::now();
  if (o.shard_size == 0) return Status::InvalidArgument("--shard-size must be at least 1 byte");
  if (o.jobs < 1 || o.jobs > kMaxJobs)
    return Status::InvalidArgument(fmt::format("--jobs must be 1..{}", kMaxJobs));
  struct stat src_st;
  if (stat(o.src.c_str(), &src_st) != 0) return Status::FromErrno(o.src, errno);
  if (!S_ISDIR(src_st.st_mode))
    return Status::InvalidArgument(fmt::format("SRC {} is not a folder", o.src));
  if (Status s = PrepareOut(o); !s.ok()) return s;
  struct stat out_st;
  if (stat(o.out.c_str(), &out_st) != 0) return Status::FromErrno(o.out, errno);

  SourceCensusOptions co{o.src, std::pair{out_st.st_dev, out_st.st_ino}};
  Result<SourceCensus> census = TakeSourceCensus(co);
  if (!census.ok()) return census.status();
  if (census->files == 0)
    return Status::InvalidArgument(fmt::format("SRC {} holds no files to pack", o.src));
  if (o.shuffle) ShuffleSamples(census->samples, o.seed);

  PackSummary summary;
  summary.hidden_skipped = census->hidden_skipped;
  Committed committed;
  ShardSequence shards(o, committed);
  std::vector<VerifiedEntry> written;
  PackProgress progress{0, census->samples.size(), 0, census->bytes};
  {
    ReadPipeline pipeline(o, census->samples);
    for (size_t i = 0; i < census->samples.size(); ++i) {
      ReadOutcome r = pipeline.Take(i);
      progress.samples_done = i + 1;
      progress.bytes_done += census->samples[i].bytes;
      if (r.failed) {
        if (!o.skip_unreadable)
          return Status::Unavailable(fmt::format(
              "{}; nothing was left in {} (rerun with --skip-unreadable to pack the rest)",
              r.status.message(), o.out));
        summary.skipped.push_back(*r.failed);
        ++summary.samples_skipped;
      } else {
        if (Status s = shards.Add(r.sample, written); !s.ok())
          return Status::Unavailable(fmt::format("{}; nothing was left in {}", s.message(), o.out));
        summary.files += r.sample.files.size();
        for (const SampleFile& f : r.sample.files) summary.bytes_in += f.size;
      }
      if (o.progress) o.progress(progress);
    }
  }
  if (Status s = shards.Close(); !s.ok())
    return Status::Unavailable(fmt::format("{}; nothing was left in {}", s.message(), o.out));
  if (shards.shards().empty())
    return Status::Unavailable(
        fmt::format("nothing packed: all {} files of {} were unreadable", census->files, o.src));

  Manifest& m = summary.manifest;
  m.format = o.format;
  m.classes = census->classes;
  m.shuffle = o.shuffle;
  m.seed = o.shuffle ? o.seed : 0;
  m.shards = shards.shards();
  for (const ShardInfo& s : m.shards) {
    m.samples += s.samples;
    m.records += s.records;
    summary.bytes_out += s.bytes;
  }
  Result<std::unique_ptr<ShardFile>> mf = ShardFile::Create(o.out, std::string(kManifestName));
  if (!mf.ok()) return mf.status();
  Status written_manifest = (*mf)->Append(ManifestToJson(m));
  if (written_manifest.ok()) written_manifest = (*mf)->Commit();
  if (!written_manifest.ok())
    return Status::Unavailable(
        fmt::format("{}; nothing was left in {}", written_manifest.message(), o.out));
  committed.paths.push_back((*mf)->final_path());
  if (o.verify) {
    // A pack that does not read back as written is removed like any failed one.
    Result<VerifySummary> v = VerifyPack(o.out, /*keep_entries=*/true);
    Status s = v.ok() ? CheckVerified(*v, written) : v.status();
    if (!s.ok())
      return Status::Unavailable(fmt::format("{}; nothing was left in {}", s.message(), o.out));
    summary.verified = true;
  }
  committed.keep = true;
  summary.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return summary;
}

}  // namespace stallscope
