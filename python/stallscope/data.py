"""Reading `stallscope pack` shards from Python, standard library only.

    from stallscope.data import ShardDataset
    ds = ShardDataset("/data/train-packed", shuffle=True, seed=0,
                      shuffle_buffer=1000, decode=my_decode)
    loader = torch.utils.data.DataLoader(ds, batch_size=64, num_workers=8)
    for epoch in range(epochs):
        ds.set_epoch(epoch)
        for batch in loader: ...

The format is docs/pack-format.md (schema stallscope.pack/1): TFRecord shards
of tf.train.Example records, or WebDataset tar shards, each with a `.idx`
index, and a manifest.json. This module holds the TFRecord framing reader
(CRC32C checked, see crc32c.py), a minimal tf.train.Example decoder, a
WebDataset reader (tarfile in stream mode, consecutive members grouped by
key), the index and manifest readers, and ShardDataset, a torch
IterableDataset that gives each (rank, DataLoader worker) its own part of
the data so every record is read exactly once per epoch.

torch is imported only when ShardDataset is first touched, and only if it is
installed; without torch ShardDataset is a plain iterable with the same
behaviour (its worker/rank split can be driven by hand with `iter_part`).

Bad input raises ShardError (a ValueError) naming the file and byte offset.
"""

import json
import os
import random
import sys
import tarfile

from .crc32c import crc32c
from .example import ExampleError, parse_example

__all__ = ["ShardError", "read_manifest", "read_index", "iter_tfrecord",
           "iter_wds", "parse_example", "example_to_sample", "split_key",
           "ShardDataset", "SCHEMA"]

SCHEMA = "stallscope.pack/1"
_FORMATS = {"tfrecord": ".tfrecord", "wds": ".tar"}
_MASK_DELTA = 0xA282EAD8


class ShardError(ValueError):
    """Malformed shard, index or manifest; the message names file and offset."""


def _unmask(masked):
    rot = (masked - _MASK_DELTA) & 0xFFFFFFFF
    return ((rot >> 17) | (rot << 15)) & 0xFFFFFFFF


# ---------------------------------------------------------------------------
# Manifest and index.

def read_manifest(path):
    """The manifest as a dict, checked; `path` is the file or its folder.
    Adds "dir" (the folder holding the shards)."""
    if os.path.isdir(path):
        path = os.path.join(path, "manifest.json")
    try:
        with open(path, "rb") as f:
            manifest = json.loads(f.read().decode("utf-8"))
    except OSError as e:
        raise ShardError("%s: cannot read the manifest: %s" % (path, e.strerror or e)) from None
    except ValueError as e:
        raise ShardError("%s: not JSON: %s" % (path, e)) from None

    def bad(what):
        return ShardError("%s: %s" % (path, what))

    if not isinstance(manifest, dict):
        raise bad("not a JSON object")
    if manifest.get("schema") != SCHEMA:
        raise bad("schema is %r, expected %r" % (manifest.get("schema"), SCHEMA))
    if manifest.get("format") not in _FORMATS:
        raise bad("format is %r, expected one of %s" % (manifest.get("format"),
                                                         ", ".join(sorted(_FORMATS))))
    shards = manifest.get("shards")
    if not isinstance(shards, list):
        raise bad("no \"shards\" list")
    for i, shard in enumerate(shards):
        if not isinstance(shard, dict):
            raise bad("shards[%d] is not an object" % i)
        for field in ("name", "index"):
            name = shard.get(field)
            # A manifest names files beside it, never elsewhere.
            if not isinstance(name, str) or not name or "/" in name or name in (".", ".."):
                raise bad("shards[%d].%s is %r, expected a file name" % (i, field, name))
        if not isinstance(shard.get("samples", 0), int):
            raise bad("shards[%d].samples is not an integer" % i)
    classes = manifest.get("classes", [])
    if not isinstance(classes, list) or not all(isinstance(c, str) for c in classes):
        raise bad("\"classes\" is not a list of strings")
    manifest["dir"] = os.path.dirname(os.path.abspath(path))
    return manifest


def read_index(path):
    """[(offset, length), ...] from a `.idx` file, checked for order."""
    try:
        with open(path, "rb") as f:
            text = f.read()
    except OSError as e:
        raise ShardError("%s: cannot read the index: %s" % (path, e.strerror or e)) from None
    entries = []
    end = 0
    for number, line in enumerate(text.split(b"\n"), 1):
        if not line:
            if number == text.count(b"\n") + 1:
                break            # after the final newline
            raise ShardError("%s: line %d: empty line" % (path, number))
        parts = line.split(b" ")
        if len(parts) != 2 or not all(p.isdigit() for p in parts):
            raise ShardError("%s: line %d: expected \"OFFSET LENGTH\", got %r"
                             % (path, number, line[:80].decode("utf-8", "replace")))
        offset, length = int(parts[0]), int(parts[1])
        if offset < end:
            raise ShardError("%s: line %d: offset %d overlaps the previous entry (ends at %d)"
                             % (path, number, offset, end))
        if length == 0:
            raise ShardError("%s: line %d: zero length" % (path, number))
        end = offset + length
        entries.append((offset, length))
    return entries


# ---------------------------------------------------------------------------
# TFRecord.

def iter_tfrecord(path, start=0, stop=None, check_crc=True):
    """Yields (offset, payload bytes) for each record of a TFRecord file whose
    length field lies in [start, stop) (stop None: to the end). The length's
    CRC is always checked; the payload's unless check_crc is False."""
    with open(path, "rb", buffering=1 << 20) as f:
        size = os.fstat(f.fileno()).st_size
        if stop is None or stop > size:
            stop = size
        try:
            # Doubles the kernel's readahead: shards are read front to back.
            os.posix_fadvise(f.fileno(), start, stop - start, os.POSIX_FADV_SEQUENTIAL)
        except (AttributeError, OSError):
            pass
        f.seek(start)
        offset = start
        while offset < stop:
            header = f.read(12)
            if len(header) < 12:
                raise ShardError("%s: offset %d: truncated record header (%d of 12 bytes)"
                                 % (path, offset, len(header)))
            length = int.from_bytes(header[:8], "little")
            stored = int.from_bytes(header[8:], "little")
            if crc32c(header[:8]) != _unmask(stored):
                raise ShardError("%s: offset %d: length CRC mismatch (stored 0x%08x, computed "
                                 "0x%08x): not a TFRecord, or corrupted"
                                 % (path, offset, _unmask(stored), crc32c(header[:8])))
            if offset + 16 + length > size:
                raise ShardError("%s: offset %d: truncated record: needs %d bytes, the file "
                                 "ends after %d" % (path, offset, 16 + length, size - offset))
            body = f.read(length + 4)
            if len(body) < length + 4:
                raise ShardError("%s: offset %d: truncated record (file shrank while reading)"
                                 % (path, offset))
            view = memoryview(body)
            payload = view[:length]
            if check_crc:
                stored = _unmask(int.from_bytes(view[length:], "little"))
                computed = crc32c(body, length)
                if stored != computed:
                    raise ShardError("%s: offset %d: data CRC mismatch (stored 0x%08x, "
                                     "computed 0x%08x) in a record of %d bytes"
                                     % (path, offset, stored, computed, length))
            yield offset, payload
            offset += 16 + length


def example_to_sample(features):
    """A parsed Example of a pack shard -> {"key": str, "data": bytes,
    "label": int}; other features are passed through as lists."""
    sample = {}
    for name, values in features.items():
        if name == "key" and len(values) == 1 and isinstance(values[0], bytes):
            sample["key"] = values[0].decode("utf-8", "surrogateescape")
        elif name == "data" and len(values) == 1 and isinstance(values[0], bytes):
            sample["data"] = values[0]
        elif name == "label" and len(values) == 1 and isinstance(values[0], int):
            sample["label"] = values[0]
        else:
            sample[name] = values
    return sample


def _tfrecord_samples(path, start, stop, check_crc):
    for offset, payload in iter_tfrecord(path, start, stop, check_crc):
        try:
            features = parse_example(payload)
        except ExampleError as e:
            raise ShardError("%s: offset %d: record is not a tf.train.Example: %s"
                             % (path, offset, e)) from None
        yield example_to_sample(features)


# ---------------------------------------------------------------------------
# WebDataset.

def split_key(name):
    """WebDataset's rule: 'cat/img001.seg.png' -> ('cat/img001', 'seg.png');
    the extension is everything after the first '.' of the file name."""
    slash = name.rfind("/") + 1
    dot = name.find(".", slash)
    if dot < 0:
        return name, ""
    return name[:dot], name[dot + 1:]


class _Window:
    """A file object that reads at most `length` bytes from where f stands."""

    def __init__(self, f, length):
        self.f = f
        self.left = length

    def read(self, n=-1):
        if n is None or n < 0 or n > self.left:
            n = self.left
        data = self.f.read(n)
        self.left -= len(data)
        return data


def iter_wds(path, offset=0, length=None):
    """Yields one dict per sample ({"__key__", "__url__", ext: bytes, ...})
    from a tar shard, from `offset` for `length` bytes (None: to the end),
    grouping consecutive members with the same key."""
    with open(path, "rb", buffering=1 << 20) as f:
        try:
            os.posix_fadvise(f.fileno(), offset, length or 0, os.POSIX_FADV_SEQUENTIAL)
        except (AttributeError, OSError):
            pass
        f.seek(offset)
        source = f if length is None else _Window(f, length)
        sample = None
        member = None
        try:
            with tarfile.open(fileobj=source, mode="r|") as archive:
                for member in archive:
                    if not member.isfile():
                        continue
                    key, ext = split_key(member.name)
                    data = archive.extractfile(member).read()
                    if len(data) != member.size:
                        raise ShardError("%s: offset %d: member %s truncated (%d of %d bytes)"
                                         % (path, offset + member.offset, member.name,
                                            len(data), member.size))
                    if sample is not None and sample["__key__"] != key:
                        yield sample
                        sample = None
                    if sample is None:
                        sample = {"__key__": key, "__url__": path}
                    elif ext in sample:
                        raise ShardError("%s: offset %d: member %s repeats extension %r of "
                                         "sample %s" % (path, offset + member.offset,
                                                        member.name, ext, key))
                    sample[ext] = data
        except tarfile.TarError as e:
            where = offset + (member.offset if member is not None else 0)
            raise ShardError("%s: near offset %d: not a readable tar: %s"
                             % (path, where, e)) from None
        if sample is not None:
            yield sample


# ---------------------------------------------------------------------------
# The dataset.

class _Shard:
    __slots__ = ("path", "index_path", "_index")

    def __init__(self, path, index_path):
        self.path = path
        self.index_path = index_path
        self._index = None

    def index(self):
        if self._index is None:
            if self.index_path is None or not os.path.exists(self.index_path):
                raise ShardError("%s: no index (%s) to split this shard between workers"
                                 % (self.path, self.index_path or self.path + ".idx"))
            self._index = read_index(self.index_path)
        return self._index


def _resolve_source(source):
    """(format, [_Shard], manifest or None) from a folder, a manifest file or
    a list of shard paths."""
    if isinstance(source, (str, os.PathLike)):
        manifest = read_manifest(os.fspath(source))
        base = manifest["dir"]
        shards = [_Shard(os.path.join(base, s["name"]), os.path.join(base, s["index"]))
                  for s in manifest["shards"]]
        return manifest["format"], shards, manifest
    paths = [os.fspath(p) for p in source]
    if not paths:
        raise ShardError("no shards given")
    formats = set()
    for p in paths:
        formats.add("tfrecord" if p.endswith(".tfrecord") else "wds" if p.endswith(".tar")
                    else None)
    if None in formats or len(formats) != 1:
        raise ShardError("shards must all end in .tfrecord or all in .tar: %s" % paths[0])
    return formats.pop(), [_Shard(p, p + ".idx") for p in paths], None


class _ShardIterable:
    """ShardDataset's behaviour; see ShardDataset."""

    def __init__(self, source, shuffle=False, seed=0, shuffle_buffer=0, decode=None,
                 check_crc=True, rank=None, world_size=None):
        self.format, self.shards, self.manifest = _resolve_source(source)
        self.shuffle = bool(shuffle)
        self.seed = int(seed)
        self.shuffle_buffer = int(shuffle_buffer)
        self.decode = decode
        self.check_crc = check_crc
        self.rank = rank
        self.world_size = world_size
        self.epoch = 0
        if (rank is None) != (world_size is None):
            raise ValueError("give both rank and world_size, or neither")

    def set_epoch(self, epoch):
        """Reshuffles (with shuffle/shuffle_buffer) for this epoch; call it in
        the main process before iterating, as with DistributedSampler."""
        self.epoch = int(epoch)

    @property
    def classes(self):
        return list(self.manifest.get("classes", [])) if self.manifest else []

    # -- who am I --------------------------------------------------------
    def _rank_world(self):
        if self.rank is not None:
            return int(self.rank), int(self.world_size)
        torch = sys.modules.get("torch")
        if torch is not None:
            dist = getattr(torch, "distributed", None)
            if dist is not None and dist.is_available() and dist.is_initialized():
                return dist.get_rank(), dist.get_world_size()
        return int(os.environ.get("RANK", "0")), int(os.environ.get("WORLD_SIZE", "1"))

    @staticmethod
    def _worker():
        torch = sys.modules.get("torch")
        if torch is not None:
            info = torch.utils.data.get_worker_info()
            if info is not None:
                return info.id, info.num_workers
        return 0, 1

    def __iter__(self):
        rank, world = self._rank_world()
        worker, workers = self._worker()
        return self.iter_part(rank, world, worker, workers)

    # -- the split -------------------------------------------------------
    def plan(self, part, parts):
        """The reads of one part: [(shard, None, None)] for whole shards, or
        [(shard, first, stop)] for index entries [first, stop)."""
        shards = list(self.shards)
        if self.shuffle:
            random.Random("%d/%d" % (self.seed, self.epoch)).shuffle(shards)
        if len(shards) >= parts:
            return [(s, None, None) for s in shards[part::parts]]
        # Fewer shards than readers: cut the concatenated entries into equal
        # runs, one per part.
        counts = [len(s.index()) for s in shards]
        total = sum(counts)
        lo, hi = total * part // parts, total * (part + 1) // parts
        reads = []
        base = 0
        for shard, count in zip(shards, counts):
            first, stop = max(lo - base, 0), min(hi - base, count)
            if first < stop:
                reads.append((shard, first, stop))
            base += count
        return reads

    def _read(self, shard, first, stop):
        if self.format == "tfrecord":
            if first is None:
                return _tfrecord_samples(shard.path, 0, None, self.check_crc)
            index = shard.index()
            end = index[stop - 1][0] + index[stop - 1][1]
            return _tfrecord_samples(shard.path, index[first][0], end, self.check_crc)
        if first is None:
            return iter_wds(shard.path)
        index = shard.index()
        start = index[first][0]
        end = index[stop - 1][0] + index[stop - 1][1]
        return iter_wds(shard.path, start, end - start)

    def iter_part(self, rank, world_size, worker=0, workers=1):
        """The samples of one (rank, worker) of world_size ranks x workers."""
        if not (0 <= rank < world_size) or not (0 <= worker < workers):
            raise ValueError("rank %d of %d, worker %d of %d: out of range"
                             % (rank, world_size, worker, workers))
        parts = world_size * workers
        part = rank * workers + worker
        samples = self._samples(self.plan(part, parts))
        if self.shuffle_buffer > 1:
            rng = random.Random("%d/%d/%d" % (self.seed, self.epoch, part))
            samples = _shuffled(samples, self.shuffle_buffer, rng)
        if self.decode is not None:
            decode = self.decode
            return (decode(s) for s in samples)
        return samples

    def _samples(self, reads):
        for shard, first, stop in reads:
            yield from self._read(shard, first, stop)


def _shuffled(samples, size, rng):
    buffer = []
    for sample in samples:
        if len(buffer) < size:
            buffer.append(sample)
            continue
        i = rng.randrange(size)
        yield buffer[i]
        buffer[i] = sample
    rng.shuffle(buffer)
    yield from buffer


_dataset_class = None


def _make_dataset_class():
    try:
        import torch.utils.data as tud
        bases = (_ShardIterable, tud.IterableDataset)
    except ImportError:
        bases = (_ShardIterable,)
    cls = type("ShardDataset", bases, {
        "__module__": __name__,
        "__qualname__": "ShardDataset",
        "__doc__": """Packed shards as an iterable of samples (a torch IterableDataset when
    torch is installed).

    source: the pack output folder, its manifest.json, or a list of shard
    paths (all .tfrecord or all .tar; indexes at PATH.idx).
    Each (rank, DataLoader worker) reads its own part: whole shards dealt
    round-robin when there are at least as many shards as readers, else equal
    runs of index entries. Rank and world size come from rank/world_size,
    else torch.distributed when initialized, else RANK/WORLD_SIZE.
    shuffle: shard order permuted by (seed, epoch), the same in every reader.
    shuffle_buffer: N > 1 shuffles within each reader through N samples.
    decode: applied to each sample before it is yielded.
    check_crc: check each TFRecord payload's CRC32C (the length's always is).
    Yields {"key", "data", "label"} per TFRecord record and
    {"__key__", "__url__", ext: bytes, ...} per WebDataset sample.""",
    })
    return cls


def __getattr__(name):
    # PEP 562: the torch import happens here, on first use of ShardDataset.
    global _dataset_class
    if name == "ShardDataset":
        if _dataset_class is None:
            _dataset_class = _make_dataset_class()
        return _dataset_class
    raise AttributeError("module %r has no attribute %r" % (__name__, name))
