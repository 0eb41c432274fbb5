// The line scanner's loop, built once per instruction set and chosen when
// the process first scans (see scan.h).
#include "formats/nccl_log/scan.h"

#include <cstring>

#if defined(__x86_64__)
#include <immintrin.h>
#endif

namespace stallscope {
namespace {

struct BlockMasks {
  uint64_t newlines, n, closer;
};

// The portable one: byte by byte.
[[maybe_unused]] BlockMasks BytewiseBlock(const char* p) {
  BlockMasks b{0, 0, 0};
  for (int i = 0; i < 64; ++i) {
    const char c = p[i];
    const uint64_t bit = uint64_t{1} << i;
    if (c == '\n') b.newlines |= bit;
    if (c == 'N') b.n |= bit;
    if (c == '\r' || c == '\x1b' || c == '|') b.closer |= bit;
  }
  return b;
}

#if defined(__x86_64__)
inline uint64_t Mask16(__m128i bytes) { return static_cast<uint16_t>(_mm_movemask_epi8(bytes)); }

inline BlockMasks Sse2Block(const char* p) {
  const __m128i newline = _mm_set1_epi8('\n'), n = _mm_set1_epi8('N');
  const __m128i cr = _mm_set1_epi8('\r'), esc = _mm_set1_epi8('\x1b'), bar = _mm_set1_epi8('|');
  uint64_t masks[3][4];
  for (int k = 0; k < 4; ++k) {
    const __m128i v = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p + 16 * k));
    masks[0][k] = Mask16(_mm_cmpeq_epi8(v, newline));
    masks[1][k] = Mask16(_mm_cmpeq_epi8(v, n));
    masks[2][k] = Mask16(_mm_or_si128(_mm_or_si128(_mm_cmpeq_epi8(v, cr), _mm_cmpeq_epi8(v, esc)),
                                      _mm_cmpeq_epi8(v, bar)));
  }
  BlockMasks b;
  b.newlines = masks[0][0] | masks[0][1] << 16 | masks[0][2] << 32 | masks[0][3] << 48;
  b.n = masks[1][0] | masks[1][1] << 16 | masks[1][2] << 32 | masks[1][3] << 48;
  b.closer = masks[2][0] | masks[2][1] << 16 | masks[2][2] << 32 | masks[2][3] << 48;
  return b;
}

__attribute__((target("avx2"))) inline uint64_t Mask32(__m256i bytes) {
  return static_cast<uint32_t>(_mm256_movemask_epi8(bytes));
}

__attribute__((target("avx2"))) inline uint64_t Closer32(__m256i v) {
  const __m256i cr = _mm256_set1_epi8('\r'), esc = _mm256_set1_epi8('\x1b');
  const __m256i bar = _mm256_set1_epi8('|');
  return Mask32(
      _mm256_or_si256(_mm256_or_si256(_mm256_cmpeq_epi8(v, cr), _mm256_cmpeq_epi8(v, esc)),
                      _mm256_cmpeq_epi8(v, bar)));
}

__attribute__((target("avx2"))) inline BlockMasks Avx2Block(const char* p) {
  const __m256i newline = _mm256_set1_epi8('\n'), n = _mm256_set1_epi8('N');
  const __m256i lo = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p));
  const __m256i hi = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p + 32));
  BlockMasks b;
  b.newlines = Mask32(_mm256_cmpeq_epi8(lo, newline)) | Mask32(_mm256_cmpeq_epi8(hi, newline))
                                                            << 32;
  b.n = Mask32(_mm256_cmpeq_epi8(lo, n)) | Mask32(_mm256_cmpeq_epi8(hi, n)) << 32;
  b.closer = Closer32(lo) | Closer32(hi) << 32;
  return b;
}
#endif

// The masks of the block at `base` (zero bytes past the text's end).
template <BlockMasks (*Block)(const char*)>
__attribute__((always_inline)) inline void Load(std::string_view text, size_t base,
                                                LineScanner::Position& at) {
  BlockMasks b;
  if (base + 64 <= text.size()) {
    // A page ahead: the hardware's prefetcher stops at a page's end, and the
    // first touch of each line's bytes is most of this loop's time.
    __builtin_prefetch(text.data() + base + 4096);
    b = Block(text.data() + base);
  } else {
    char last[64] = {};
    if (base < text.size()) memcpy(last, text.data() + base, text.size() - base);
    b = Block(last);
  }
  at.base = base;
  at.newlines = b.newlines;
  at.n = b.n;
  at.closer = b.closer;
}

template <BlockMasks (*Block)(const char*)>
__attribute__((always_inline)) inline size_t Lines(std::string_view text, LineScanner::Position& at,
                                                   ScannedLine* out, size_t max) {
  const size_t size = text.size();
  if (!at.loaded) {
    Load<Block>(text, 0, at);
    at.loaded = true;
  }
  size_t count = 0;
  while (count < max && at.pos < size) {
    const size_t start = at.pos;
    size_t nccl = std::string_view::npos;
    uint64_t closer = 0;
    size_t end;
    for (;;) {
      const uint64_t from = ~uint64_t{0} << (at.pos - at.base);
      const uint64_t newlines = at.newlines & from;
      // The bytes of this line in this block: from pos up to its newline.
      const uint64_t mine = newlines ? from & ((newlines & (0 - newlines)) - 1) : from;
      closer |= at.closer & mine;
      if (nccl == std::string_view::npos) {
        for (uint64_t c = at.n & mine; c != 0; c &= c - 1) {
          const size_t n = at.base + static_cast<size_t>(__builtin_ctzll(c));
          // Four bytes none of which is a newline lie inside the line.
          if (n + 4 <= size && memcmp(text.data() + n, "NCCL", 4) == 0) {
            nccl = n - start;
            break;
          }
        }
      }
      if (newlines != 0) {
        end = at.base + static_cast<size_t>(__builtin_ctzll(newlines));
        at.pos = end + 1;
        if (at.pos == at.base + 64) Load<Block>(text, at.base + 64, at);
        break;
      }
      if (at.base + 64 >= size) {
        end = size;
        at.pos = size;
        break;
      }
      Load<Block>(text, at.base + 64, at);
      at.pos = at.base;
    }
    ScannedLine& line = out[count++];
    line.text = text.substr(start, end - start);
    line.nccl = nccl;
    line.plain = closer == 0;
  }
  return count;
}

#if defined(__x86_64__)
__attribute__((target("avx2"))) size_t Avx2Lines(std::string_view text, LineScanner::Position& at,
                                                 ScannedLine* out, size_t max) {
  return Lines<Avx2Block>(text, at, out, max);
}

size_t Sse2Lines(std::string_view text, LineScanner::Position& at, ScannedLine* out, size_t max) {
  return Lines<Sse2Block>(text, at, out, max);
}

bool HasAvx2() {
  static const bool has = (__builtin_cpu_init(), __builtin_cpu_supports("avx2"));
  return has;
}
#else
size_t BytewiseLines(std::string_view text, LineScanner::Position& at, ScannedLine* out,
                     size_t max) {
  return Lines<BytewiseBlock>(text, at, out, max);
}
#endif

}  // namespace

size_t LineScanner::Next(ScannedLine* out, size_t max) {
#if defined(__x86_64__)
  return HasAvx2() ? Avx2Lines(text_, at_, out, max) : Sse2Lines(text_, at_, out, max);
#else
  return BytewiseLines(text_, at_, out, max);
#endif
}

}  // namespace stallscope
