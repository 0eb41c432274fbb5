/* CRC32C (Castagnoli) for the Python hook's TFRecord reader
 * (python/stallscope/crc32c.py loads this library with ctypes and falls back
 * to its pure-Python code when it is absent).
 *
 * stallscope_crc32c(data, n, crc): the CRC of n bytes, going
 * on from `crc` (0 to start), with the usual ~0 pre- and post-conditioning,
 * so stallscope_crc32c("123456789", 9, 0) == 0xE3069283. On x86-64 CPUs
 * with SSE 4.2 it uses the crc32 instruction on three interleaved streams
 * (the instruction's latency is three cycles, its throughput one a cycle),
 * combined by carry-less shifts of the two earlier streams' registers; on
 * others, and for the tail, eight tables of 256 entries (slicing by 8).
 * No state after the tables are built on the first call (guarded by a
 * once-flag); thread-safe. Built by CMake as libstallscope_crc32c.so.
 * stallscope_crc32c_by_tables is the table path alone and
 * stallscope_crc32c_kind names the path this CPU takes (for the tests). */
#include <pthread.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#define POLY 0x82F63B78u /* CRC32C, bit-reflected */

static uint32_t table[8][256];
static pthread_once_t tables_once = PTHREAD_ONCE_INIT;

static void build_tables(void) {
  for (uint32_t i = 0; i < 256; ++i) {
    uint32_t c = i;
    for (int k = 0; k < 8; ++k) c = (c & 1) ? (c >> 1) ^ POLY : c >> 1;
    table[0][i] = c;
  }
  for (uint32_t i = 0; i < 256; ++i) {
    for (int t = 1; t < 8; ++t)
      table[t][i] = (table[t - 1][i] >> 8) ^ table[0][table[t - 1][i] & 0xff];
  }
}

/* The raw register (no conditioning) after n bytes, by the tables. */
static uint32_t by_tables(uint32_t crc, const unsigned char* p, size_t n) {
  while (n && ((uintptr_t)p & 7)) {
    crc = table[0][(crc ^ *p++) & 0xff] ^ (crc >> 8);
    --n;
  }
  while (n >= 8) {
    uint64_t w;
    memcpy(&w, p, 8);
    w ^= crc;
    crc = table[7][w & 0xff] ^ table[6][(w >> 8) & 0xff] ^ table[5][(w >> 16) & 0xff] ^
          table[4][(w >> 24) & 0xff] ^ table[3][(w >> 32) & 0xff] ^ table[2][(w >> 40) & 0xff] ^
          table[1][(w >> 48) & 0xff] ^ table[0][w >> 56];
    p += 8;
    n -= 8;
  }
  while (n--) crc = table[0][(crc ^ *p++) & 0xff] ^ (crc >> 8);
  return crc;
}

#if defined(__x86_64__)
#include <nmmintrin.h>

/* x * y mod the CRC polynomial, both in the reflected bit order. */
static uint32_t multiply(uint32_t a, uint32_t b) {
  uint32_t product = 0;
  for (int i = 0; i < 32; ++i) {
    if (a & 0x80000000u) product ^= b;
    a <<= 1;
    b = (b & 1) ? (b >> 1) ^ POLY : b >> 1;
  }
  return product;
}

/* x^(8n) mod P in the reflected order: what shifting a register over n zero
 * bytes multiplies it by. */
static uint32_t shift_of(size_t n) {
  uint32_t result = 0x80000000u; /* x^0 */
  uint32_t square = 0x00800000u; /* x^8 */
  while (n) {
    if (n & 1) result = multiply(result, square);
    square = multiply(square, square);
    n >>= 1;
  }
  return result;
}

#define BLOCK 4096                         /* bytes per stream in one round of three */
static uint32_t block_shift, double_shift; /* x^(8 BLOCK), x^(16 BLOCK) */
static int have_sse42;
static pthread_once_t hardware_once = PTHREAD_ONCE_INIT;

static void check_hardware(void) {
  __builtin_cpu_init();
  have_sse42 = __builtin_cpu_supports("sse4.2");
  block_shift = shift_of(BLOCK);
  double_shift = shift_of(2 * BLOCK);
}

__attribute__((target("sse4.2"))) static uint32_t by_instruction(uint32_t crc,
                                                                 const unsigned char* p, size_t n) {
  while (n && ((uintptr_t)p & 7)) {
    crc = _mm_crc32_u8(crc, *p++);
    --n;
  }
  while (n >= 3 * BLOCK) {
    uint64_t a = crc, b = 0, c = 0;
    const unsigned char* end = p + BLOCK;
    while (p < end) {
      uint64_t x, y, z;
      memcpy(&x, p, 8);
      memcpy(&y, p + BLOCK, 8);
      memcpy(&z, p + 2 * BLOCK, 8);
      a = _mm_crc32_u64(a, x);
      b = _mm_crc32_u64(b, y);
      c = _mm_crc32_u64(c, z);
      p += 8;
    }
    /* a covered the first block, b the second, c the third: shift a past
     * two blocks and b past one, then fold them into c. */
    crc = multiply((uint32_t)a, double_shift) ^ multiply((uint32_t)b, block_shift) ^ (uint32_t)c;
    p += 2 * BLOCK;
    n -= 3 * BLOCK;
  }
  uint64_t r = crc;
  while (n >= 8) {
    uint64_t x;
    memcpy(&x, p, 8);
    r = _mm_crc32_u64(r, x);
    p += 8;
    n -= 8;
  }
  crc = (uint32_t)r;
  while (n--) crc = _mm_crc32_u8(crc, *p++);
  return crc;
}
#endif

#define EXPORT __attribute__((visibility("default")))

EXPORT uint32_t stallscope_crc32c(const void* data, size_t n, uint32_t crc) {
  const unsigned char* p = (const unsigned char*)data;
  crc = ~crc;
#if defined(__x86_64__)
  pthread_once(&hardware_once, check_hardware);
  if (have_sse42) return ~by_instruction(crc, p, n);
#endif
  pthread_once(&tables_once, build_tables);
  return ~by_tables(crc, p, n);
}

/* The same by the tables alone, whatever the CPU (for the tests). */
EXPORT uint32_t stallscope_crc32c_by_tables(const void* data, size_t n, uint32_t crc) {
  pthread_once(&tables_once, build_tables);
  return ~by_tables(~crc, (const unsigned char*)data, n);
}

/* Which path stallscope_crc32c takes on this CPU: "sse4.2" or "tables". */
EXPORT const char* stallscope_crc32c_kind(void) {
#if defined(__x86_64__)
  pthread_once(&hardware_once, check_hardware);
  if (have_sse42) return "sse4.2";
#endif
  return "tables";
}
