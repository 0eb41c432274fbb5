// A trace's text read whole or streamed (see text.h).
#include "formats/trace/text.h"

#include <fcntl.h>
#include <libdeflate.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <condition_variable>
#include <cstring>
#include <mutex>
#include <new>
#include <thread>
#include <utility>

#include "probe/meminfo.h"

namespace stallscope {

Result<size_t> FdSource::Read(char* out, size_t n) {
  while (true) {
    ssize_t got = ::read(fd_, out, n);
    if (got >= 0) return static_cast<size_t>(got);
    if (errno != EINTR) return Status::FromErrno("cannot read " + name_, errno);
  }
}

Result<size_t> MemorySource::Read(char* out, size_t n) {
  size_t k = std::min(n, bytes_.size());
  std::memcpy(out, bytes_.data(), k);
  bytes_.remove_prefix(k);
  return k;
}

namespace {

constexpr size_t kBufferBytes = 1 << 20;

// A buffer left unwritten: only the pages a read fills are ever touched, so
// a small trace costs no megabytes of zeroed memory.
std::unique_ptr<char[]> NewBuffer() { return std::make_unique_for_overwrite<char[]>(kBufferBytes); }

// Gzip members one after another, as `cat a.gz b.gz` makes them.
class GzipSource : public ByteSource {
 public:
  GzipSource(ByteSource& raw, std::string_view name) : raw_(raw), in_(NewBuffer()), name_(name) {
    std::memset(&z_, 0, sizeof(z_));
    ok_ = inflateInit2(&z_, 15 + 16) == Z_OK;
  }
  ~GzipSource() override {
    if (ok_) inflateEnd(&z_);
  }
  GzipSource(const GzipSource&) = delete;
  GzipSource& operator=(const GzipSource&) = delete;

  Result<size_t> Read(char* out, size_t n) override {
    if (!ok_) return Status::Unavailable(name_ + ": zlib could not start");
    z_.next_out = reinterpret_cast<Bytef*>(out);
    z_.avail_out = static_cast<uInt>(n);
    while (z_.avail_out == n && !done_) {
      if (z_.avail_in == 0 && !raw_eof_) {
        Result<size_t> got = raw_.Read(in_.get(), kBufferBytes);
        if (!got.ok()) return got.status();
        raw_eof_ = *got == 0;
        z_.next_in = reinterpret_cast<Bytef*>(in_.get());
        z_.avail_in = static_cast<uInt>(*got);
      }
      if (z_.avail_in == 0 && raw_eof_) {
        if (!member_started_) {
          done_ = true;  // the end, between members
          break;
        }
        return Status::ParseError(name_, 0,
                                  "the gzip stream ends early, at byte " +
                                      std::to_string(z_.total_in + consumed_) +
                                      " of the file: a truncated .gz (cut while copied, or "
                                      "the job killed while writing it)");
      }
      member_started_ = true;
      int rc = inflate(&z_, Z_NO_FLUSH);
      if (rc == Z_STREAM_END) {
        consumed_ += z_.total_in;
        member_started_ = false;
        inflateReset(&z_);
        continue;
      }
      if (rc != Z_OK && rc != Z_BUF_ERROR) {
        return Status::ParseError(name_, 0,
                                  "corrupt gzip data at byte " +
                                      std::to_string(z_.total_in + consumed_) + " of the file (" +
                                      (z_.msg != nullptr ? z_.msg : "zlib error") + ")");
      }
    }
    return n - z_.avail_out;
  }

 private:
  ByteSource& raw_;
  std::unique_ptr<char[]> in_;
  std::string name_;
  z_stream z_;
  bool ok_ = false;
  bool raw_eof_ = false;
  bool done_ = false;
  bool member_started_ = false;
  uint64_t consumed_ = 0;  // compressed bytes of the members already ended
};

// Blocks read from a ByteSource into one buffer, on the caller's thread.
class ReadBlocks : public TextBlocks {
 public:
  explicit ReadBlocks(ByteSource& source) : source_(source), buffer_(NewBuffer()) {}
  Result<std::string_view> Next() override {
    Result<size_t> got = source_.Read(buffer_.get(), kBufferBytes);
    if (!got.ok()) return got.status();
    return std::string_view(buffer_.get(), *got);
  }

 private:
  ByteSource& source_;
  std::unique_ptr<char[]> buffer_;
};

// Blocks inflated on a thread of their own, a few ahead of the parser: the
// inflate and the parse then take about the time of the slower one, not of
// both. The source is only touched by that thread once it starts.
class InflateAhead : public TextBlocks {
 public:
  explicit InflateAhead(ByteSource& source) : source_(source) {
    for (Block& b : blocks_) b.bytes = NewBuffer();
    worker_ = std::thread([this] { Fill(); });
  }
  ~InflateAhead() override {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      stop_ = true;
    }
    changed_.notify_all();
    worker_.join();
  }
  InflateAhead(const InflateAhead&) = delete;
  InflateAhead& operator=(const InflateAhead&) = delete;

  Result<std::string_view> Next() override {
    std::unique_lock<std::mutex> lock(mutex_);
    if (holding_) {  // the parser is done with the block it had
      holding_ = false;
      ++taken_;
      changed_.notify_all();
    }
    changed_.wait(lock, [this] { return filled_ > taken_; });
    Block& b = blocks_[taken_ % kBlocks];
    if (!b.error.ok()) return b.error;
    if (b.length == 0) return std::string_view();  // the end: stays the end
    holding_ = true;
    return std::string_view(b.bytes.get(), b.length);
  }

 private:
  static constexpr size_t kBlocks = 4;
  struct Block {
    std::unique_ptr<char[]> bytes;
    size_t length = 0;
    Status error;
  };

  void Fill() {
    while (true) {
      size_t slot = 0;
      {
        std::unique_lock<std::mutex> lock(mutex_);
        changed_.wait(lock, [this] { return stop_ || filled_ - taken_ < kBlocks; });
        if (stop_) return;
        slot = filled_ % kBlocks;
      }
      Block& b = blocks_[slot];
      Result<size_t> got = source_.Read(b.bytes.get(), kBufferBytes);
      b.error = got.ok() ? Status() : got.status();
      b.length = got.ok() ? *got : 0;
      bool last = !got.ok() || *got == 0;
      {
        std::lock_guard<std::mutex> lock(mutex_);
        ++filled_;
      }
      changed_.notify_all();
      if (last) return;
    }
  }

  ByteSource& source_;
  Block blocks_[kBlocks];
  std::mutex mutex_;
  std::condition_variable changed_;
  uint64_t filled_ = 0;  // blocks written by the worker
  uint64_t taken_ = 0;   // blocks the parser has finished with
  bool holding_ = false;
  bool stop_ = false;
  std::thread worker_;
};

// The head read to sniff gzip's magic, put back in front of the rest.
class Prefixed : public ByteSource {
 public:
  Prefixed(std::string head, ByteSource& rest) : head_(std::move(head)), rest_(rest) {}
  Result<size_t> Read(char* out, size_t n) override {
    if (!head_.empty()) {
      size_t k = std::min(n, head_.size());
      std::memcpy(out, head_.data(), k);
      head_.erase(0, k);
      return k;
    }
    return rest_.Read(out, n);
  }

 private:
  std::string head_;
  ByteSource& rest_;
};

// What StreamText hands out: the sources it reads through, owned with the
// blocks that read them.
class OwnedBlocks : public TextBlocks {
 public:
  OwnedBlocks(std::string head, ByteSource& raw, std::string_view name, bool gzip)
      : prefixed_(std::move(head), raw) {
    if (gzip) {
      gzip_ = std::make_unique<GzipSource>(prefixed_, name);
      blocks_ = std::make_unique<InflateAhead>(*gzip_);
    } else {
      blocks_ = std::make_unique<ReadBlocks>(prefixed_);
    }
  }
  Result<std::string_view> Next() override { return blocks_->Next(); }
  bool gzip() const override { return gzip_ != nullptr; }

 private:
  Prefixed prefixed_;
  std::unique_ptr<GzipSource> gzip_;
  std::unique_ptr<TextBlocks> blocks_;  // last: stopped before the sources go
};

bool IsGzip(std::string_view head) {
  return head.size() >= 2 && static_cast<unsigned char>(head[0]) == 0x1f &&
         static_cast<unsigned char>(head[1]) == 0x8b;
}

}  // namespace

Result<std::unique_ptr<TextBlocks>> StreamText(ByteSource& raw, std::string_view name) {
  std::string head(2, '\0');
  size_t have = 0;
  while (have < head.size()) {
    Result<size_t> got = raw.Read(head.data() + have, head.size() - have);
    if (!got.ok()) return got.status();
    if (*got == 0) break;
    have += *got;
  }
  head.resize(have);
  bool gzip = IsGzip(head);
  return std::unique_ptr<TextBlocks>(
      std::make_unique<OwnedBlocks>(std::move(head), raw, name, gzip));
}

namespace {

// gzip's ISIZE is the inflated size modulo 2^32: a text of 4 GiB or more
// cannot be told from a small one, so the whole path stops below that.
constexpr uint64_t kMaxWholeBytes = (uint64_t{4} << 30) - 1;
// Past the text: its '\0', and room for the parser's 16-byte SIMD loads
// (aligned, so they never cross a page, but they may pass the '\0').
constexpr size_t kPadBytes = 64;
// gzip's header and trailer alone take 18 bytes.
constexpr size_t kGzipMinBytes = 18;
// Deflate makes at most 1,032 bytes of each compressed byte: a larger ISIZE
// is a lie, not worth memory (the streamed read says what is wrong).
constexpr uint64_t kMaxDeflateRatio = 1032;

// Texts this big or bigger are mapped on their own, on huge pages.
constexpr size_t kHugePageBytes = 2 << 20;
// Huge pages cut the page faults of a 50 MB text from 12,000 to 25 and its
// CPU time by a tenth; measured on a 2-CPU VM, they cost more than they save
// past a few hundred MB (0.5 GB of text: 1.1 s of the kernel's time against
// 0.5 s on small pages, the zeroing of fresh memory), so not past this.
constexpr size_t kHugeTextBytes = size_t{256} << 20;

// Bytes held whole now, by every file being read.
std::atomic<uint64_t> held_bytes{0};

bool Hold(uint64_t bytes, uint64_t limit) {
  uint64_t now = held_bytes.load();
  do {
    if (bytes > limit || now > limit - bytes) return false;
  } while (!held_bytes.compare_exchange_weak(now, now + bytes));
  return true;
}

void Release(uint64_t bytes) { held_bytes -= bytes; }

uint32_t LittleEndian32(const char* p) {
  const auto* u = reinterpret_cast<const unsigned char*>(p);
  return uint32_t{u[0]} | uint32_t{u[1]} << 8 | uint32_t{u[2]} << 16 | uint32_t{u[3]} << 24;
}

// The ISIZE a .gz of `gz_bytes` ends with, where it could be true.
std::optional<uint64_t> PlausibleIsize(const char* trailer, uint64_t gz_bytes) {
  const uint64_t isize = LittleEndian32(trailer);
  if (isize > gz_bytes * kMaxDeflateRatio) return std::nullopt;
  return isize;
}

// `size` bytes and the pad's zeros; null when the kernel gives no memory.
TextMemory NewText(size_t size) {
  const size_t bytes = size + kPadBytes;
  if (bytes < kHugePageBytes) {
    char* p = new (std::nothrow) char[bytes];
    if (p == nullptr) return TextMemory(nullptr, UnmapText{});
    std::memset(p + size, 0, kPadBytes);
    return TextMemory(p, UnmapText{0});
  }
  // Mapped one huge page larger, then trimmed to start on a huge page.
  const size_t mapped = (bytes + kHugePageBytes - 1) / kHugePageBytes * kHugePageBytes;
  void* raw = ::mmap(nullptr, mapped + kHugePageBytes, PROT_READ | PROT_WRITE,
                     MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (raw == MAP_FAILED) return TextMemory(nullptr, UnmapText{});
  const uintptr_t start = reinterpret_cast<uintptr_t>(raw);
  const uintptr_t aligned = (start + kHugePageBytes - 1) / kHugePageBytes * kHugePageBytes;
  if (aligned > start) ::munmap(raw, aligned - start);
  ::munmap(reinterpret_cast<void*>(aligned + mapped), start + kHugePageBytes - aligned);
  char* p = reinterpret_cast<char*>(aligned);
  // A hint (without it, small pages), taken up to kHugeTextBytes only.
  if (mapped <= kHugeTextBytes) ::madvise(p, mapped, MADV_HUGEPAGE);
  // Fresh pages read as zeros: the pad is zero already.
  return TextMemory(p, UnmapText{mapped});
}

// Whether zlib, which the streamed read uses, takes the member's header as
// libdeflate does: libdeflate skips the header's own CRC (FHCRC) where zlib
// checks it, so a header whose CRC is wrong goes the streamed way, which
// names the error. False also for a header cut short (libdeflate fails
// there too).
bool HeaderAsZlibTakesIt(std::string_view gz) {
  constexpr unsigned char kFhcrc = 0x02, kFextra = 0x04, kFname = 0x08, kFcomment = 0x10;
  if (gz.size() < 10) return false;
  const auto flags = static_cast<unsigned char>(gz[3]);
  if ((flags & kFhcrc) == 0) return true;
  size_t at = 10;
  if (flags & kFextra) {
    if (gz.size() < at + 2) return false;
    at += 2 + (static_cast<unsigned char>(gz[at]) | static_cast<unsigned char>(gz[at + 1]) << 8);
  }
  for (unsigned char field : {kFname, kFcomment}) {
    if ((flags & field) == 0) continue;
    const size_t end = at < gz.size() ? gz.find('\0', at) : std::string_view::npos;
    if (end == std::string_view::npos) return false;
    at = end + 1;
  }
  if (gz.size() < at + 2) return false;
  const uLong crc = crc32(0L, reinterpret_cast<const Bytef*>(gz.data()), static_cast<uInt>(at));
  const unsigned stored =
      static_cast<unsigned char>(gz[at]) | static_cast<unsigned char>(gz[at + 1]) << 8;
  return (crc & 0xffff) == stored;
}

// `gz` inflated whole into a buffer of its ISIZE, which the caller holds
// (`held` bytes); nullopt when libdeflate does not end exactly there: one
// member and its trailer, the whole input read.
std::optional<WholeText> Inflate(std::string_view gz, uint64_t held) {
  if (!HeaderAsZlibTakesIt(gz)) {
    Release(held);
    return std::nullopt;
  }
  const uint32_t isize = LittleEndian32(gz.data() + gz.size() - 4);
  TextMemory text = NewText(isize);
  libdeflate_decompressor* inflater = text ? libdeflate_alloc_decompressor() : nullptr;
  if (inflater == nullptr) {
    Release(held);
    return std::nullopt;
  }
  size_t read = 0, wrote = 0;
  libdeflate_result rc = libdeflate_gzip_decompress_ex(inflater, gz.data(), gz.size(), text.get(),
                                                       isize, &read, &wrote);
  libdeflate_free_decompressor(inflater);
  if (rc != LIBDEFLATE_SUCCESS || read != gz.size() || wrote != isize) {
    Release(held);
    return std::nullopt;
  }
  WholeText out(std::move(text), isize, held);
  out.gzip = true;
  return out;
}

// Reads exactly `n` bytes at `fd`'s position, then finds the end: false
// when the file is shorter or longer than it was (written while read).
Result<bool> ReadExactly(int fd, const std::string& name, char* out, size_t n) {
  FdSource source(fd, name);
  size_t have = 0;
  while (have < n) {
    Result<size_t> got = source.Read(out + have, n - have);
    if (!got.ok()) return got.status();
    if (*got == 0) return false;
    have += *got;
  }
  char more = 0;
  Result<size_t> got = source.Read(&more, 1);
  if (!got.ok()) return got.status();
  return *got == 0;
}

}  // namespace

void UnmapText::operator()(char* p) const {
  if (bytes == 0) {
    delete[] p;
  } else {
    ::munmap(p, bytes);
  }
}

WholeText::WholeText(TextMemory text, size_t size, uint64_t held)
    : text_(std::move(text)), size_(size), held_(held) {}

WholeText::~WholeText() {
  if (held_ > 0) Release(held_);
}

WholeText::WholeText(WholeText&& other) noexcept
    : gzip(other.gzip),
      text_(std::move(other.text_)),
      size_(other.size_),
      held_(std::exchange(other.held_, 0)) {}

uint64_t DefaultWholeTextLimitBytes() {
  Result<MemInfo> memory = ReadMemInfo(Root("/"));
  if (!memory.ok() || !memory->available_bytes) return 0;
  return std::min<uint64_t>(*memory->available_bytes / 4, kMaxWholeBytes);
}

std::optional<WholeText> WholeTextOf(std::string_view bytes, uint64_t limit_bytes) {
  limit_bytes = std::min(limit_bytes, kMaxWholeBytes);
  if (IsGzip(bytes)) {
    if (bytes.size() < kGzipMinBytes) return std::nullopt;
    const std::optional<uint64_t> isize =
        PlausibleIsize(bytes.data() + bytes.size() - 4, bytes.size());
    if (!isize) return std::nullopt;
    const uint64_t need = *isize + kPadBytes;
    if (!Hold(need, limit_bytes)) return std::nullopt;
    return Inflate(bytes, need);
  }
  const uint64_t need = bytes.size() + kPadBytes;
  if (!Hold(need, limit_bytes)) return std::nullopt;
  TextMemory text = NewText(bytes.size());
  if (!text) {
    Release(need);
    return std::nullopt;
  }
  std::memcpy(text.get(), bytes.data(), bytes.size());
  return WholeText(std::move(text), bytes.size(), need);
}

Result<std::optional<WholeText>> ReadWholeText(int fd, const std::string& name,
                                               uint64_t limit_bytes) {
  limit_bytes = std::min(limit_bytes, kMaxWholeBytes);
  struct stat st {};
  if (::fstat(fd, &st) != 0) return Status::FromErrno("cannot read " + name, errno);
  const uint64_t size = static_cast<uint64_t>(st.st_size);
  if (!S_ISREG(st.st_mode) || size > limit_bytes) return std::optional<WholeText>();
  char head[2] = {0, 0}, tail[4] = {0, 0, 0, 0};
  const bool gzip = size >= 2 && ::pread(fd, head, 2, 0) == 2 && IsGzip(std::string_view(head, 2));
  if (gzip && (size < kGzipMinBytes || ::pread(fd, tail, 4, static_cast<off_t>(size - 4)) != 4))
    return std::optional<WholeText>();  // zlib says what is wrong with it
  const std::optional<uint64_t> isize = gzip ? PlausibleIsize(tail, size) : size;
  if (!isize) return std::optional<WholeText>();
  // The .gz is held beside its text while it inflates, then let go.
  const uint64_t text_bytes = *isize + kPadBytes;
  const uint64_t file_bytes = gzip ? size : 0;
  if (!Hold(text_bytes + file_bytes, limit_bytes)) return std::optional<WholeText>();
  TextMemory bytes = NewText(size);
  Result<bool> same = bytes ? ReadExactly(fd, name, bytes.get(), size) : Result<bool>(false);
  if (!same.ok() || !*same) {
    Release(text_bytes + file_bytes);
    if (!same.ok()) return same.status();
    return std::optional<WholeText>();  // changed while read: streamed instead
  }
  if (!gzip) return std::optional<WholeText>(WholeText(std::move(bytes), size, text_bytes));
  std::optional<WholeText> text = Inflate(std::string_view(bytes.get(), size), text_bytes);
  Release(file_bytes);
  return text;
}

}  // namespace stallscope
