"""Tests of stallscope.data (the pack shard readers) and stallscope.crc32c,
against shards written by shard_writer.py (an independent test-only writer)
in temporary folders, and through a real torch DataLoader when torch is
installed. Standard library only otherwise.

    PYTHONPATH=python python3 -m unittest discover -s python/tests -v
"""
import ctypes
import importlib.util
import io
import json
import os
import random
import shutil
import subprocess
import sys
import tarfile
import tempfile
import unittest

import shard_writer as w
import stallscope.crc32c
from stallscope import data
from stallscope.crc32c import crc32c, crc32c_table, masked_crc32c
from stallscope.example import ExampleError, parse_example

PYTHON_DIR = os.path.dirname(os.path.dirname(os.path.abspath(data.__file__)))

# torch is found, never imported here: test_hook checks that the hook does
# not import it, in this same process. The DataLoader test runs in a child.
HAVE_TORCH = importlib.util.find_spec("torch") is not None
# The dataset's behaviour without the torch base class (the public
# ShardDataset is checked in child processes, with and without torch).
Dataset = data._ShardIterable


class Crc32cTest(unittest.TestCase):
    def test_known_answers(self):
        # The check value of the CRC catalogue and RFC 3720 B.4's vectors.
        self.assertEqual(crc32c(b"123456789"), 0xE3069283)
        self.assertEqual(crc32c(bytes(32)), 0x8A9136AA)
        self.assertEqual(crc32c(b"\xff" * 32), 0x62A8AB43)
        self.assertEqual(crc32c(bytes(range(32))), 0x46DD794E)
        self.assertEqual(crc32c(bytes(range(31, -1, -1))), 0x113FDB5C)
        self.assertEqual(crc32c(b""), 0)
        self.assertEqual(w.crc32c_bitwise(b"123456789"), 0xE3069283)

    def test_fast_path_matches_the_definition(self):
        rng = random.Random(7)
        for n in [1, 3, 255, 256, 257, 1000, 1023, 1024, 1025, 4097, 9000]:
            buf = bytes(rng.getrandbits(8) for _ in range(n))
            self.assertEqual(crc32c(buf), w.crc32c_bitwise(buf), n)
            self.assertEqual(crc32c(memoryview(buf)), w.crc32c_bitwise(buf), n)
        # Long inputs (every fold level up to 4 MiB) against the byte table.
        for n in [100_000, 131_073, 1 << 20, (4 << 20) + 5]:
            buf = os.urandom(n)
            self.assertEqual(crc32c(buf), crc32c_table(buf), n)

    def test_mask(self):
        self.assertEqual(masked_crc32c(b"123456789"), w.masked(0xE3069283))


class NativeCrc32cTest(unittest.TestCase):
    """The native library (python/native/crc32c.c) that STALLSCOPE_CRC32C
    names: ctest and `stallscope run` set it; skipped (failed in CI) when it
    is not set."""

    def setUp(self):
        path = os.environ.get("STALLSCOPE_CRC32C")
        if not path:
            if os.environ.get("CI") == "true":
                self.fail("STALLSCOPE_CRC32C is not set: the native CRC32C is not tested")
            self.skipTest("STALLSCOPE_CRC32C is not set (ctest sets it to the built library)")
        self.path = path
        self.lib = ctypes.CDLL(path)
        self.tables = self.lib.stallscope_crc32c_by_tables
        self.tables.argtypes = [ctypes.c_char_p, ctypes.c_size_t, ctypes.c_uint32]
        self.tables.restype = ctypes.c_uint32

    def test_this_process_uses_it(self):
        self.assertTrue(stallscope.crc32c.IMPLEMENTATION.startswith("native "),
                        stallscope.crc32c.IMPLEMENTATION)
        self.assertIn(self.path, stallscope.crc32c.IMPLEMENTATION)

    def test_both_paths_match_the_definition(self):
        # Lengths around the 8-byte words, the 3 x 4096-byte rounds of the
        # instruction path, at every alignment, and every kind of buffer.
        rng = random.Random(11)
        lengths = list(range(0, 80)) + [4095, 4096, 4097, 12287, 12288, 12289, 24583,
                                         36871, 100_003, (1 << 20) + 7]
        for n in lengths:
            buf = bytes(rng.getrandbits(8) for _ in range(n + 7)) if n < 5000 \
                else os.urandom(n + 7)
            for skew in (0, 1, 5):
                part = buf[skew:skew + n]
                want = crc32c_table(part) if n < 5000 else stallscope.crc32c._python_crc32c(part)
                self.assertEqual(crc32c(part), want, (n, skew))
                self.assertEqual(self.tables(part, n, 0), want, (n, skew))
                self.assertEqual(crc32c(bytearray(part)), want, (n, skew))
                self.assertEqual(crc32c(memoryview(buf)[skew:skew + n]), want, (n, skew))
                self.assertEqual(crc32c(buf[skew:], n), want, (n, skew))
        self.assertEqual(crc32c(b"123456789"), 0xE3069283)
        self.assertEqual(self.tables(b"123456789", 9, 0), 0xE3069283)
        with self.assertRaises(ValueError):
            crc32c(b"abc", 4)

    def test_a_record_is_checked_and_a_flipped_byte_caught(self):
        with tempfile.TemporaryDirectory() as tmp:
            path = os.path.join(tmp, "s.tfrecord")
            payloads = [os.urandom(n) for n in (0, 1, 100, 100_000)]
            with open(path, "wb") as f:
                for p in payloads:
                    f.write(w.frame(p))
            self.assertEqual([bytes(p) for _, p in data.iter_tfrecord(path)], payloads)
            with open(path, "r+b") as f:
                f.seek(os.path.getsize(path) - 50)
                byte = f.read(1)
                f.seek(-1, os.SEEK_CUR)
                f.write(bytes([byte[0] ^ 0x10]))
            with self.assertRaisesRegex(data.ShardError, "data CRC mismatch"):
                list(data.iter_tfrecord(path))

    def test_without_it_the_python_code_is_used(self):
        code = ("import stallscope.crc32c as c; print(c.IMPLEMENTATION); "
                "print(c.crc32c(b'123456789', 9))")
        for value, want in (("", "python"), ("/nonexistent/lib.so", "python (/nonexistent")):
            env = dict(os.environ, STALLSCOPE_CRC32C=value, PYTHONPATH=PYTHON_DIR)
            out = subprocess.run([sys.executable, "-c", code], env=env, check=True,
                                 capture_output=True, text=True).stdout.split("\n")
            self.assertTrue(out[0].startswith(want), out)
            self.assertEqual(int(out[1]), 0xE3069283)


class TfrecordTest(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.addCleanup(self.tmp.cleanup)
        self.path = os.path.join(self.tmp.name, "shard-00000.tfrecord")
        self.payloads = [b"", b"x", os.urandom(300), os.urandom(100_000), b"tail"]
        self.entries = w.write_tfrecord(self.path, self.payloads)

    def test_round_trip_and_offsets(self):
        for check in (True, False):
            got = [(off, bytes(p)) for off, p in data.iter_tfrecord(self.path, check_crc=check)]
            self.assertEqual([p for _, p in got], self.payloads)
            self.assertEqual([off for off, _ in got], [off for off, _ in self.entries])
        self.assertEqual(data.read_index(self.path + ".idx"), self.entries)
        # A range by the index: records 2 and 3 only.
        start = self.entries[2][0]
        stop = self.entries[3][0] + self.entries[3][1]
        got = [bytes(p) for _, p in data.iter_tfrecord(self.path, start, stop)]
        self.assertEqual(got, self.payloads[2:4])

    def corrupt(self, offset, xor=0x01):
        with open(self.path, "r+b") as f:
            f.seek(offset)
            b = f.read(1)[0]
            f.seek(offset)
            f.write(bytes([b ^ xor]))

    def test_corrupted_data_names_file_and_offset(self):
        offset = self.entries[3][0]
        self.corrupt(offset + 12 + 5000)
        with self.assertRaises(data.ShardError) as cm:
            list(data.iter_tfrecord(self.path))
        message = str(cm.exception)
        self.assertIn(self.path, message)
        self.assertIn("offset %d" % offset, message)
        self.assertIn("data CRC mismatch", message)
        # Without the data check the bad byte goes through; the others are intact.
        got = [bytes(p) for _, p in data.iter_tfrecord(self.path, check_crc=False)]
        self.assertNotEqual(got[3], self.payloads[3])
        self.assertEqual(got[4], self.payloads[4])

    def test_corrupted_length_is_caught_even_without_data_check(self):
        offset = self.entries[2][0]
        self.corrupt(offset + 1, 0x40)
        with self.assertRaises(data.ShardError) as cm:
            list(data.iter_tfrecord(self.path, check_crc=False))
        self.assertIn("offset %d: length CRC mismatch" % offset, str(cm.exception))

    def test_truncated(self):
        size = os.path.getsize(self.path)
        for cut in (size - 3, self.entries[4][0] + 5):
            with open(self.path, "r+b") as f:
                f.truncate(cut)
            with self.assertRaises(data.ShardError) as cm:
                list(data.iter_tfrecord(self.path))
            self.assertIn("offset %d: truncated" % self.entries[4][0], str(cm.exception))

    def test_not_an_example_names_the_record(self):
        path = os.path.join(self.tmp.name, "bad.tfrecord")
        w.write_tfrecord(path, [w.pack_example("a.jpg", b"1"), b"\x0a\xff\x01"])
        with self.assertRaises(data.ShardError) as cm:
            list(data._tfrecord_samples(path, 0, None, True))
        self.assertIn("%s: offset %d: record is not a tf.train.Example"
                      % (path, len(w.frame(w.pack_example("a.jpg", b"1")))), str(cm.exception))


class ExampleTest(unittest.TestCase):
    def test_kinds(self):
        record = w.example({
            "key": w.feature_bytes([b"cat/1.jpg"]),
            "many": w.feature_bytes([b"a", b"", b"\x00\xff"]),
            "packed": w.feature_int64([0, 1, -1, 300, -(1 << 63), (1 << 63) - 1]),
            "unpacked": w.feature_int64([5, -7], packed=False),
            "f": w.feature_float([0.5, -2.0]),
            "g": w.feature_float([1.5], packed=False),
            "empty": b"",
        })
        got = parse_example(record)
        self.assertEqual(got["key"], [b"cat/1.jpg"])
        self.assertEqual(got["many"], [b"a", b"", b"\x00\xff"])
        self.assertEqual(got["packed"], [0, 1, -1, 300, -(1 << 63), (1 << 63) - 1])
        self.assertEqual(got["unpacked"], [5, -7])
        self.assertEqual(got["f"], [0.5, -2.0])
        self.assertEqual(got["g"], [1.5])
        self.assertEqual(got["empty"], [])
        self.assertEqual(parse_example(memoryview(record)), got)

    def test_unknown_fields_skipped_and_features_merged(self):
        first = w.example({"a": w.feature_int64([1])})
        second = w.example({"b": w.feature_bytes([b"x"])})
        unknown = w.field(9, 0, 12345) + w.field(7, 2, b"junk") + w.field(6, 5, b"\0\0\0\0")
        got = parse_example(unknown + first + second)
        self.assertEqual(got, {"a": [1], "b": [b"x"]})

    def test_pack_sample(self):
        got = data.example_to_sample(parse_example(w.pack_example("dog/7.png", b"\x89PNG", 2)))
        self.assertEqual(got, {"key": "dog/7.png", "data": b"\x89PNG", "label": 2})

    def test_malformed(self):
        good = w.pack_example("a.jpg", b"0123456789")
        for bad, where in [(good[:-3], "claims"), (b"\x0a", "varint"),
                           (b"\x0b", "wire type 3"), (b"\x00", "field number 0"),
                           (b"\x08" + b"\xff" * 11, "longer than 10")]:
            with self.assertRaises(ExampleError) as cm:
                parse_example(bad)
            self.assertIn(where, str(cm.exception))
            self.assertIn("byte", str(cm.exception))


class WdsTest(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.addCleanup(self.tmp.cleanup)
        self.path = os.path.join(self.tmp.name, "shard-00000.tar")

    def test_split_key(self):
        self.assertEqual(data.split_key("cat/img001.jpg"), ("cat/img001", "jpg"))
        self.assertEqual(data.split_key("a.b/c.seg.png"), ("a.b/c", "seg.png"))
        self.assertEqual(data.split_key("noext"), ("noext", ""))

    def test_grouping(self):
        samples = [("cat/1", {"jpg": b"J1", "json": b"{}", "cls": b"0"}),
                   ("cat/2", {"jpg": b"J2" * 1000}),
                   ("a.b/3", {"seg.png": b"P3", "jpg": b""})]
        entries = w.write_wds(self.path, samples)
        got = list(data.iter_wds(self.path))
        self.assertEqual(len(got), 3)
        for (key, files), sample in zip(samples, got):
            expected = dict(files, __key__=key, __url__=self.path)
            self.assertEqual(sample, expected)
        # GNU tar's view of the same file agrees (the writer is independent).
        if shutil.which("tar"):
            names = subprocess.run(["tar", "-tf", self.path], capture_output=True, text=True,
                                   check=True).stdout.split()
            self.assertEqual(names, ["%s.%s" % (k, e) for k, files in samples for e in files])
        # Each index entry alone reads back exactly its sample.
        for (key, files), (offset, length) in zip(samples, entries):
            only = list(data.iter_wds(self.path, offset, length))
            self.assertEqual([s["__key__"] for s in only], [key])
            self.assertEqual({k: v for k, v in only[0].items() if not k.startswith("__")}, files)

    def test_same_key_again_later_is_a_new_sample_and_dirs_skipped(self):
        buf = io.BytesIO()
        with tarfile.open(fileobj=buf, mode="w") as tar:
            d = tarfile.TarInfo("cat")
            d.type = tarfile.DIRTYPE
            tar.addfile(d)
            for name in ("cat/1.jpg", "cat/2.jpg", "cat/1.cls"):
                info = tarfile.TarInfo(name)
                info.size = 1
                tar.addfile(info, io.BytesIO(b"z"))
        with open(self.path, "wb") as f:
            f.write(buf.getvalue())
        got = [s["__key__"] for s in data.iter_wds(self.path)]
        self.assertEqual(got, ["cat/1", "cat/2", "cat/1"])

    def test_repeated_extension_and_garbage(self):
        buf = io.BytesIO()
        with tarfile.open(fileobj=buf, mode="w") as tar:
            for name in ("k.jpg", "k.jpg"):
                info = tarfile.TarInfo(name)
                info.size = 2
                tar.addfile(info, io.BytesIO(b"ab"))
        with open(self.path, "wb") as f:
            f.write(buf.getvalue())
        with self.assertRaises(data.ShardError) as cm:
            list(data.iter_wds(self.path))
        self.assertIn("%s: offset 1024: member k.jpg repeats extension 'jpg'" % self.path,
                      str(cm.exception))
        with open(self.path, "wb") as f:
            f.write(b"this is not a tar file" * 100)
        with self.assertRaises(data.ShardError) as cm:
            list(data.iter_wds(self.path))
        self.assertIn(self.path, str(cm.exception))
        self.assertIn("not a readable tar", str(cm.exception))

    def test_truncated_member(self):
        w.write_wds(self.path, [("a", {"bin": os.urandom(5000)}), ("b", {"bin": os.urandom(5000)})])
        with open(self.path, "r+b") as f:
            f.truncate(512 * 3 + 100)
        with self.assertRaises(data.ShardError) as cm:
            list(data.iter_wds(self.path))
        self.assertIn(self.path, str(cm.exception))


class IndexAndManifestTest(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.addCleanup(self.tmp.cleanup)

    def write(self, name, text):
        path = os.path.join(self.tmp.name, name)
        with open(path, "w") as f:
            f.write(text)
        return path

    def test_index_errors_name_file_and_line(self):
        path = self.write("a.idx", "0 10\n10 x\n")
        with self.assertRaisesRegex(data.ShardError, "a.idx: line 2: expected"):
            data.read_index(path)
        path = self.write("b.idx", "0 10\n5 10\n")
        with self.assertRaisesRegex(data.ShardError, "b.idx: line 2: offset 5 overlaps"):
            data.read_index(path)
        self.assertEqual(data.read_index(self.write("c.idx", "")), [])

    def test_manifest_errors(self):
        base = {"schema": "stallscope.pack/1", "format": "wds", "classes": [],
                "shards": [{"name": "shard-00000.tar", "index": "shard-00000.tar.idx",
                            "samples": 1}]}
        for change, message in [({"schema": "x/2"}, "schema is 'x/2'"),
                                ({"format": "zip"}, "format is 'zip'"),
                                ({"shards": [{"name": "../etc/passwd", "index": "i"}]},
                                 "shards\\[0\\].name is '../etc/passwd'"),
                                ({"shards": None}, "no \"shards\" list")]:
            path = self.write("manifest.json", json.dumps(dict(base, **change)))
            with self.assertRaisesRegex(data.ShardError, "manifest.json: " + message):
                data.read_manifest(self.tmp.name)
        self.write("manifest.json", "{not json")
        with self.assertRaisesRegex(data.ShardError, "manifest.json: not JSON"):
            data.read_manifest(self.tmp.name)
        with self.assertRaisesRegex(data.ShardError, "nothere/manifest.json: cannot read"):
            data.read_manifest(os.path.join(self.tmp.name, "nothere/manifest.json"))


def drain(dataset, world, workers, key):
    """All samples of all (rank, worker) parts, as a list of keys."""
    out = []
    for rank in range(world):
        for worker in range(workers):
            out.extend(key(s) for s in dataset.iter_part(rank, world, worker, workers))
    return out


class SplitTest(unittest.TestCase):
    """Every sample exactly once over all ranks x workers, without torch."""

    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.addCleanup(self.tmp.cleanup)

    def check(self, fmt, shard_sizes):
        folder = os.path.join(self.tmp.name, "%s-%d" % (fmt, len(shard_sizes)))
        expected = w.make_pack(folder, fmt, shard_sizes)
        key = (lambda s: s["key"][:-4]) if fmt == "tfrecord" else (lambda s: s["__key__"])
        for world, workers in [(1, 1), (1, 2), (2, 2), (3, 4), (2, 3), (1, 16)]:
            for shuffle, buffer in [(False, 0), (True, 10)]:
                ds = Dataset(folder, shuffle=shuffle, seed=3, shuffle_buffer=buffer)
                got = drain(ds, world, workers, key)
                where = "%s shards %s, %d ranks x %d workers, shuffle %s" % (
                    fmt, shard_sizes, world, workers, shuffle)
                self.assertEqual(len(got), len(expected), where)
                self.assertEqual(set(got), set(expected), where)
        # Each part's share differs by at most one entry when shards are split.
        ds = Dataset(folder)
        if len(shard_sizes) < 6:
            sizes = [len(list(ds.iter_part(0, 1, p, 6))) for p in range(6)]
            self.assertLessEqual(max(sizes) - min(sizes), 1, sizes)

    def test_tfrecord(self):
        for sizes in ([1], [9], [5, 7, 3], [4] * 10):
            self.check("tfrecord", sizes)

    def test_wds(self):
        for sizes in ([1], [9], [5, 7, 3], [4] * 10):
            self.check("wds", sizes)

    def test_contents_labels_decode_and_epochs(self):
        folder = os.path.join(self.tmp.name, "p")
        expected = w.make_pack(folder, "tfrecord", [6, 6])
        ds = Dataset(folder, decode=lambda s: (s["key"], s["data"], s["label"]))
        got = {k[:-4]: (d, l) for k, d, l in ds}
        self.assertEqual(got, expected)
        self.assertEqual(ds.classes, ["cat", "dog", "eel"])
        shuffled = Dataset(folder, shuffle=True, seed=1, shuffle_buffer=8)
        orders = []
        for epoch in range(3):
            shuffled.set_epoch(epoch)
            orders.append([s["key"] for s in shuffled])
        self.assertEqual(sorted(orders[0]), sorted(orders[1]))
        self.assertNotEqual(orders[0], orders[1])
        shuffled.set_epoch(0)
        self.assertEqual([s["key"] for s in shuffled], orders[0], "same seed+epoch, same order")

    def test_rank_from_environment(self):
        folder = os.path.join(self.tmp.name, "e")
        expected = w.make_pack(folder, "wds", [3, 3, 3])
        keys = []
        old = {k: os.environ.get(k) for k in ("RANK", "WORLD_SIZE")}
        self.addCleanup(lambda: [os.environ.pop(k, None) if v is None
                                 else os.environ.__setitem__(k, v) for k, v in old.items()])
        for rank in range(3):
            os.environ.update(RANK=str(rank), WORLD_SIZE="3")
            part = [s["__key__"] for s in Dataset(folder)]
            self.assertEqual(len(part), 3)
            keys.extend(part)
        self.assertEqual(sorted(keys), sorted(expected))
        os.environ.update(RANK="3", WORLD_SIZE="3")
        with self.assertRaisesRegex(ValueError, "rank 3 of 3"):
            list(Dataset(folder))

    def test_missing_index_is_named(self):
        folder = os.path.join(self.tmp.name, "n")
        w.make_pack(folder, "tfrecord", [4])
        os.remove(os.path.join(folder, "shard-00000.tfrecord.idx"))
        ds = Dataset(folder)
        self.assertEqual(len(list(ds)), 4)    # one reader: no index needed
        with self.assertRaisesRegex(data.ShardError, "shard-00000.tfrecord: no index"):
            list(ds.iter_part(0, 1, 0, 2))

    def test_works_without_torch(self):
        folder = os.path.join(self.tmp.name, "t")
        w.make_pack(folder, "wds", [2, 2])
        script = ("import sys; sys.modules['torch'] = None\n"
                  "from stallscope import data\n"
                  "ds = data.ShardDataset(sys.argv[1])\n"
                  "print(len(list(ds)), type(ds).__mro__[1].__name__, len(type(ds).__mro__))\n")
        out = subprocess.run([sys.executable, "-c", script, folder], capture_output=True,
                             text=True, env=dict(os.environ, PYTHONPATH=PYTHON_DIR))
        self.assertEqual(out.returncode, 0, out.stderr)
        self.assertEqual(out.stdout.split(), ["4", "_ShardIterable", "3"])
        # And importing the module does not import torch.
        out = subprocess.run([sys.executable, "-c", "import sys, stallscope.data; "
                              "print('torch' in sys.modules)"], capture_output=True, text=True,
                             env=dict(os.environ, PYTHONPATH=PYTHON_DIR))
        self.assertEqual(out.stdout.strip(), "False", out.stderr)


LOADER_SCRIPT = r"""
import json, sys
import torch.utils.data as tud
import stallscope.crc32c
from stallscope import data

def collate(batch):
    return batch

results = []
for folder, fmt, world in json.loads(sys.argv[1]):
    seen = []
    for rank in range(world):
        ds = data.ShardDataset(folder, rank=rank, world_size=world, shuffle=True,
                               shuffle_buffer=4)
        assert isinstance(ds, tud.IterableDataset), type(ds).__mro__
        loader = tud.DataLoader(ds, batch_size=3, num_workers=2, collate_fn=collate)
        for batch in loader:
            for s in batch:
                if fmt == "tfrecord":
                    seen.append([s["key"][:-4], s["data"].hex(), s["label"]])
                else:
                    seen.append([s["__key__"], s["jpg"].hex(), int(s["cls"])])
    results.append(seen)
print(json.dumps(results))
"""


@unittest.skipUnless(HAVE_TORCH, "torch is not installed (python3-torch)")
class DataLoaderTest(unittest.TestCase):
    """The real torch DataLoader with two worker processes, in a child."""

    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.addCleanup(self.tmp.cleanup)

    def test_each_sample_once_through_workers_and_ranks(self):
        cases = []
        for fmt in ("tfrecord", "wds"):
            for sizes in ([5, 7, 3], [11]):   # whole shards; one shard split by index
                folder = os.path.join(self.tmp.name, "%s-%d" % (fmt, len(sizes)))
                expected = w.make_pack(folder, fmt, sizes)
                for world in (1, 2):
                    cases.append(((folder, fmt, world), expected))
        out = subprocess.run([sys.executable, "-c", LOADER_SCRIPT,
                              json.dumps([c for c, _ in cases])], capture_output=True,
                             text=True, env=dict(os.environ, PYTHONPATH=PYTHON_DIR), timeout=300)
        self.assertEqual(out.returncode, 0, out.stderr)
        results = json.loads(out.stdout)
        self.assertEqual(len(results), len(cases))
        for ((folder, fmt, world), expected), seen in zip(cases, results):
            where = "%s %s, %d ranks x 2 workers" % (fmt, os.path.basename(folder), world)
            keys = [k for k, _, _ in seen]
            self.assertEqual(len(keys), len(set(keys)), where + ": a sample read twice")
            got = {k: (bytes.fromhex(d), label) for k, d, label in seen}
            self.assertEqual(got, expected, where)


if __name__ == "__main__":
    unittest.main()
