"""CRC32C (Castagnoli) in pure Python, as TFRecord framing uses it.

    crc32c(b"123456789") == 0xE3069283
    masked_crc32c(data)  # TensorFlow's ((crc >> 15) | (crc << 17)) + 0xa282ead8

The standard library has CRC32 (zlib) but not CRC32C, and a byte-at-a-time
table loop runs at ~10 MB/s in CPython: too slow to check 100 KB records
while feeding a GPU. So long inputs are reduced with Python's big integers,
whose shifts, XORs and popcounts run in C over the whole message:

  Read the message as one little-endian integer m (bit i = the i-th bit the
  reflected CRC consumes) and as a polynomial in y = 1/x modulo
  Q(y) = y^32 P(1/y) (P is the CRC32C polynomial; Q is its bit reversal,
  0x105EC76F1). Then the reflected CRC register after the message is
  (m mod Q) * y^(-N) mod Q, N the message's length in bits, and the usual
  initial value ~0 is the same as XORing ~0 into the first 32 bits.
  m mod Q is found by folding: m = hi * y^k + lo = hi * (y^k mod Q) + lo,
  where k is picked near half of m's length so that y^k mod Q has few set
  bits (5-9), making the product a handful of shifted XORs. When m is down
  to ~1 KB, 32 masked popcounts give the remainder.

That runs at ~60-90 MB/s on one core (~5x the table). Inputs under 256
bytes go through the table. Thread-safe after the first call (the lazily
built tables are only read afterwards).

The native library (python/native/crc32c.c, libstallscope_crc32c.so,
several GB/s a core) is used instead when it can be loaded: from the path
in STALLSCOPE_CRC32C (which `stallscope run`, `ab` and `scale` set for the
job; set it empty to force the Python code), else from beside this module
(where an install puts it). IMPLEMENTATION says which one this process
uses: "native sse4.2 <path>", "native tables <path>" or "python".
"""
import ctypes
import os

__all__ = ["crc32c", "masked_crc32c", "crc32c_table", "IMPLEMENTATION"]

_POLY_REFLECTED = 0x82F63B78     # CRC32C, bit-reflected
_Q = 0x105EC76F1                 # y^32 + reflected poly bits: the modulus in y
_Y_INVERSE = (_Q ^ 1) >> 1       # y * this == 1 (mod Q)
_SHORT = 256                     # bytes; below this the table is faster


def _byte_table():
    table = []
    for i in range(256):
        c = i
        for _ in range(8):
            c = (c >> 1) ^ _POLY_REFLECTED if c & 1 else c >> 1
        table.append(c)
    return table


_TABLE = _byte_table()


def crc32c_table(data, crc=0):
    """CRC32C by the classic byte table (the reference; slow). `crc` continues
    a previous result."""
    crc ^= 0xFFFFFFFF
    table = _TABLE
    for b in data:
        crc = table[(crc ^ b) & 0xFF] ^ (crc >> 8)
    return crc ^ 0xFFFFFFFF


# ---------------------------------------------------------------------------
# Arithmetic in GF(2)[y] / Q on small (< 64-bit) operands.

def _reduce_tables():
    """_RT[t][b] = (b << (32 + 8t)) mod Q, to reduce a 64-bit product."""
    tables = []
    for t in range(4):
        row = []
        for b in range(256):
            v = b << (32 + 8 * t)
            for i in range(v.bit_length() - 1, 31, -1):
                if v >> i & 1:
                    v ^= _Q << (i - 32)
            row.append(v)
        tables.append(row)
    return tables


_RT = _reduce_tables()


def _mulmod(a, b):
    """a * b mod Q for a, b < 2^32 (carry-less)."""
    p = 0
    while b:
        low = b & -b
        p ^= a << (low.bit_length() - 1)
        b ^= low
    hi = p >> 32
    r0, r1, r2, r3 = _RT
    return ((p & 0xFFFFFFFF) ^ r0[hi & 0xFF] ^ r1[(hi >> 8) & 0xFF]
            ^ r2[(hi >> 16) & 0xFF] ^ r3[hi >> 24])


def _powmod(base, e):
    r = 1
    while e:
        if e & 1:
            r = _mulmod(r, base)
        base = _mulmod(base, base)
        e >>= 1
    return r


class _Tables:
    """Everything the fast path needs, built once (~30 ms) on first use."""

    def __init__(self):
        # Folds: (k, bit positions of y^k mod Q), k near 2^10 .. 2^30 bits,
        # each the sparsest remainder within a window above the power of two.
        self.folds = []
        for level in range(10, 31):
            k0 = 1 << level
            c = _powmod(2, k0)
            best = None
            for k in range(k0, k0 + 4096):
                weight = c.bit_count()
                if best is None or weight < best[1]:
                    best = (k, weight, c)
                c <<= 1
                if c >> 32:
                    c ^= _Q
            k, _, c = best
            self.folds.append((k, [t for t in range(32) if c >> t & 1]))
        self.folds.reverse()
        # The last step: bit j of (m mod Q) is the parity of m & masks[j],
        # for m below limit bits.
        self.limit = self.folds[-1][0] + 32
        masks = [0] * 32
        v = 1
        for i in range(self.limit):
            w = v
            while w:
                low = w & -w
                masks[low.bit_length() - 1] |= 1 << i
                w ^= low
            v <<= 1
            if v >> 32:
                v ^= _Q
        self.masks = masks
        # y^(-8n) for a byte count n = sum(d_i 256^i): one table per digit.
        self.inverse = []
        step = _powmod(_Y_INVERSE, 8)
        for _ in range(4):
            row = [1]
            for _ in range(255):
                row.append(_mulmod(row[-1], step))
            self.inverse.append(row)
            step = _mulmod(row[-1], step)

    def y_to_minus_8n(self, n):
        if n >> 32:
            return _powmod(_Y_INVERSE, 8 * n)
        g = 1
        for row in self.inverse:
            d = n & 0xFF
            if d:
                g = _mulmod(g, row[d])
            n >>= 8
        return g


_tables = None


def _python_crc32c(data):
    """CRC32C of a bytes-like object by the Python code above."""
    n = len(data)
    if n < _SHORT:
        return crc32c_table(data)
    global _tables
    t = _tables
    if t is None:
        t = _tables = _Tables()
    m = int.from_bytes(data, "little") ^ 0xFFFFFFFF
    for k, shifts in t.folds:
        while m.bit_length() > k + 32:
            hi = m >> k
            acc = hi << shifts[0]
            for s in shifts[1:]:
                acc ^= hi << s
            m = (m & ((1 << k) - 1)) ^ acc
    r = 0
    bit = 1
    for mask in t.masks:
        if (m & mask).bit_count() & 1:
            r |= bit
        bit <<= 1
    return _mulmod(r, t.y_to_minus_8n(n)) ^ 0xFFFFFFFF


def _load_native():
    """(function, description) of the native library, or (None, "python")."""
    path = os.environ.get("STALLSCOPE_CRC32C")
    if path is None:
        here = os.path.dirname(os.path.abspath(__file__))
        path = os.path.join(here, "libstallscope_crc32c.so")
        if not os.path.exists(path):
            return None, "python"
    if not path:
        return None, "python"
    try:
        lib = ctypes.CDLL(path)
        fn = lib.stallscope_crc32c
        kind = lib.stallscope_crc32c_kind
    except (OSError, AttributeError):
        # Named but unusable (moved, another architecture): the Python code,
        # and IMPLEMENTATION says so.
        return None, "python (%s did not load)" % path
    fn.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_uint32]
    fn.restype = ctypes.c_uint32
    kind.restype = ctypes.c_char_p
    return fn, "native %s %s" % (kind().decode(), path)


_native, IMPLEMENTATION = _load_native()
_c_char_p = ctypes.c_char_p


def crc32c(data, length=None):
    """CRC32C of a bytes-like object (bytes, bytearray, memoryview), or of
    its first `length` bytes (no copy of a bytes object is made for it)."""
    fn = _native
    if fn is None:
        return _python_crc32c(data if length is None else memoryview(data)[:length])
    n = len(data) if length is None else length
    if n < 0 or n > len(data):
        raise ValueError("length %d of a buffer of %d bytes" % (n, len(data)))
    if isinstance(data, bytes):
        return fn(_c_char_p(data), n, 0)
    view = memoryview(data)
    if not view.contiguous:
        view = memoryview(view.tobytes())
    if view.readonly:
        # ctypes points only at writable buffers or at bytes: a read-only
        # view (of bytes, an mmap opened for reading) is copied once.
        return fn(_c_char_p(view[:n].tobytes()), n, 0)
    if n == 0:
        return 0
    return fn(ctypes.addressof(ctypes.c_char.from_buffer(view.cast("B"))), n, 0)


def masked_crc32c(data):
    """The CRC as TFRecord stores it (TensorFlow's crc32c::Mask)."""
    crc = crc32c(data)
    return (((crc >> 15) | (crc << 17)) + 0xA282EAD8) & 0xFFFFFFFF
