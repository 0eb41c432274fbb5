"""A test-only writer of docs/pack-format.md shards, independent of the
reader under test: a bit-at-a-time CRC32C, a hand protobuf encoder for
tf.train.Example, TFRecord framing, WebDataset tars through Python's
tarfile, `.idx` files and manifest.json. The tests read these back with
stallscope.data; the e2e test checks the real `stallscope pack` instead.
"""
import io
import json
import os
import struct
import tarfile


def crc32c_bitwise(data):
    """CRC32C one bit at a time, straight from the definition."""
    crc = 0xFFFFFFFF
    for byte in data:
        crc ^= byte
        for _ in range(8):
            crc = (crc >> 1) ^ (0x82F63B78 if crc & 1 else 0)
    return crc ^ 0xFFFFFFFF


def masked(crc):
    return (((crc >> 15) | (crc << 17)) + 0xA282EAD8) & 0xFFFFFFFF


def varint(v):
    if v < 0:
        v += 1 << 64
    out = bytearray()
    while True:
        b = v & 0x7F
        v >>= 7
        if v:
            out.append(b | 0x80)
        else:
            out.append(b)
            return bytes(out)


def field(number, wire, payload):
    """One protobuf field; payload is bytes for wire 2, int for 0, bytes for 1/5."""
    tag = varint(number << 3 | wire)
    if wire == 0:
        return tag + varint(payload)
    if wire == 2:
        return tag + varint(len(payload)) + payload
    return tag + payload


def feature_bytes(values):
    return field(1, 2, b"".join(field(1, 2, v) for v in values))


def feature_int64(values, packed=True):
    if packed:
        inner = field(1, 2, b"".join(varint(v) for v in values))
    else:
        inner = b"".join(field(1, 0, v) for v in values)
    return field(3, 2, inner)


def feature_float(values, packed=True):
    if packed:
        inner = field(1, 2, struct.pack("<%df" % len(values), *values))
    else:
        inner = b"".join(field(1, 5, struct.pack("<f", v)) for v in values)
    return field(2, 2, inner)


def example(features):
    """features: {name: encoded Feature bytes} -> serialized Example."""
    entries = b"".join(field(1, 2, field(1, 2, name.encode()) + field(2, 2, value))
                       for name, value in features.items())
    return field(1, 2, entries)


def pack_example(key, data, label=None):
    features = {"key": feature_bytes([key.encode()]), "data": feature_bytes([data])}
    if label is not None:
        features["label"] = feature_int64([label])
    return example(features)


def frame(payload):
    length = struct.pack("<Q", len(payload))
    return (length + struct.pack("<I", masked(crc32c_bitwise(length))) + payload
            + struct.pack("<I", masked(crc32c_bitwise(payload))))


def write_tfrecord(path, payloads):
    """Writes framed records and PATH.idx; returns the index entries."""
    entries = []
    with open(path, "wb") as f:
        for p in payloads:
            framed = frame(p)
            entries.append((f.tell(), len(framed)))
            f.write(framed)
    write_index(path + ".idx", entries)
    return entries


def write_index(path, entries):
    with open(path, "w") as f:
        for offset, length in entries:
            f.write("%d %d\n" % (offset, length))


def write_wds(path, samples):
    """samples: [(key, {ext: bytes})]; writes the tar and PATH.idx (offset of
    each sample's first header, length to the end of its last member)."""
    buf = io.BytesIO()
    entries = []
    with tarfile.open(fileobj=buf, mode="w", format=tarfile.USTAR_FORMAT) as tar:
        for key, files in samples:
            start = buf.tell()
            for ext, data in files.items():
                info = tarfile.TarInfo("%s.%s" % (key, ext))
                info.size = len(data)
                info.mtime = 1700000000
                tar.addfile(info, io.BytesIO(data))
            entries.append((start, buf.tell() - start))
    with open(path, "wb") as f:
        f.write(buf.getvalue())
    write_index(path + ".idx", entries)
    return entries


def write_manifest(folder, fmt, shards, classes=()):
    """shards: [(name, samples)]."""
    ext = ".tfrecord" if fmt == "tfrecord" else ".tar"
    manifest = {"schema": "stallscope.pack/1", "format": fmt,
                "samples": sum(n for _, n in shards), "classes": list(classes),
                "shuffle": False, "seed": 0,
                "shards": [{"name": name, "index": name + ".idx", "samples": n,
                            "bytes": os.path.getsize(os.path.join(folder, name))}
                           for name, n in shards]}
    assert all(name.endswith(ext) for name, _ in shards)
    with open(os.path.join(folder, "manifest.json"), "w") as f:
        json.dump(manifest, f)


def make_pack(folder, fmt, shard_sizes, classes=("cat", "dog", "eel")):
    """A pack folder of len(shard_sizes) shards holding that many samples
    each; sample i: key "<class>/img%05d", data bytes derived from i, label
    i % len(classes). Returns {key: (data, label)}."""
    os.makedirs(folder, exist_ok=True)
    expected = {}
    shards = []
    i = 0
    for number, size in enumerate(shard_sizes):
        name = "shard-%05d%s" % (number, ".tfrecord" if fmt == "tfrecord" else ".tar")
        rows = []
        for _ in range(size):
            label = i % len(classes)
            key = "%s/img%05d" % (classes[label], i)
            data = (b"%d:" % i) * (1 + i % 7) + bytes([i % 251]) * (i % 300)
            expected[key] = (data, label)
            rows.append((key, data, label))
            i += 1
        path = os.path.join(folder, name)
        if fmt == "tfrecord":
            write_tfrecord(path, [pack_example(k + ".jpg", d, l) for k, d, l in rows])
        else:
            write_wds(path, [(k, {"jpg": d, "cls": str(l).encode()}) for k, d, l in rows])
        shards.append((name, size))
    write_manifest(folder, fmt, shards, classes)
    return expected
