"""End-to-end: `stallscope pack` against real peers.

WebDataset shards are listed and extracted by GNU tar and read by Python's
tarfile, byte-exact against the source files; TFRecord shards are decoded
here by hand (framing and masked CRC32C, computed bit by bit) and each record
by the real protobuf runtime (python3-protobuf) with tf.train.Example's
schema built at run time; the index is checked against the offsets those
readers see. Also: labels, shuffle determinism, refusing to overwrite, a real
full disk (a small tmpfs, as root), a FIFO and a dangling link, and a file
written to while it is packed.

Run: /usr/bin/python3 tests/e2e/pack_cli.py PATH_TO_STALLSCOPE
"""

import json
import os
import random
import shutil
import struct
import subprocess
import sys
import tarfile
import tempfile
import threading
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import e2e_common as e2e  # noqa: E402


def crc32c(data):
    crc = 0xFFFFFFFF
    table = _TABLE
    for b in data:
        crc = table[(crc ^ b) & 0xFF] ^ (crc >> 8)
    return crc ^ 0xFFFFFFFF


def _make_table():
    table = []
    for i in range(256):
        c = i
        for _ in range(8):
            c = (c >> 1) ^ 0x82F63B78 if c & 1 else c >> 1
        table.append(c)
    return table


_TABLE = _make_table()


def masked(crc):
    return ((((crc >> 15) | (crc << 17)) & 0xFFFFFFFF) + 0xA282EAD8) & 0xFFFFFFFF


def read_tfrecords(path):
    """[(offset, framed_length, data)] decoded by hand, CRCs checked."""
    out = []
    with open(path, "rb") as f:
        blob = f.read()
    pos = 0
    while pos < len(blob):
        header = blob[pos:pos + 12]
        length, = struct.unpack("<Q", header[:8])
        (lcrc,) = struct.unpack("<I", header[8:12])
        assert lcrc == masked(crc32c(header[:8])), "length CRC at %d" % pos
        data = blob[pos + 12:pos + 12 + length]
        (dcrc,) = struct.unpack("<I", blob[pos + 12 + length:pos + 16 + length])
        assert dcrc == masked(crc32c(data)), "data CRC at %d" % pos
        out.append((pos, 16 + length, data))
        pos += 16 + length
    return out


def example_class():
    """tf.train.Example built from its .proto schema with the real protobuf
    runtime, or None when python3-protobuf is missing."""
    try:
        from google.protobuf import descriptor_pb2, descriptor_pool, message_factory
    except ImportError:
        return None
    F = descriptor_pb2.FieldDescriptorProto
    fd = descriptor_pb2.FileDescriptorProto(name="example.proto", package="tf", syntax="proto3")

    def msg(name, fields, nested=None, oneof=None):
        m = fd.message_type.add(name=name)
        if oneof:
            m.oneof_decl.add(name=oneof)
        for number, fname, ftype, label, type_name in fields:
            f = m.field.add(name=fname, number=number, type=ftype, label=label)
            if type_name:
                f.type_name = type_name
            if oneof:
                f.oneof_index = 0
        return m

    rep, opt = F.LABEL_REPEATED, F.LABEL_OPTIONAL
    msg("BytesList", [(1, "value", F.TYPE_BYTES, rep, None)])
    fl = msg("FloatList", [(1, "value", F.TYPE_FLOAT, rep, None)])
    fl.field[0].options.packed = True
    il = msg("Int64List", [(1, "value", F.TYPE_INT64, rep, None)])
    il.field[0].options.packed = True
    msg("Feature", [(1, "bytes_list", F.TYPE_MESSAGE, opt, ".tf.BytesList"),
                    (2, "float_list", F.TYPE_MESSAGE, opt, ".tf.FloatList"),
                    (3, "int64_list", F.TYPE_MESSAGE, opt, ".tf.Int64List")], oneof="kind")
    feats = msg("Features", [(1, "feature", F.TYPE_MESSAGE, rep, ".tf.Features.FeatureEntry")])
    entry = feats.nested_type.add(name="FeatureEntry")
    entry.options.map_entry = True
    entry.field.add(name="key", number=1, type=F.TYPE_STRING, label=opt)
    entry.field.add(name="value", number=2, type=F.TYPE_MESSAGE, label=opt, type_name=".tf.Feature")
    msg("Example", [(1, "features", F.TYPE_MESSAGE, opt, ".tf.Features")])
    pool = descriptor_pool.DescriptorPool()
    pool.Add(fd)
    desc = pool.FindMessageTypeByName("tf.Example")
    if hasattr(message_factory, "GetMessageClass"):
        return message_factory.GetMessageClass(desc)
    return message_factory.MessageFactory(pool).GetPrototype(desc)


def slurp(path):
    with open(path, "rb") as f:
        return f.read()


def read_index(path):
    with open(path) as f:
        return [tuple(int(x) for x in line.split()) for line in f]


class PackCli(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.mkdtemp(prefix="stallscope-pack-e2e-")
        self.src = os.path.join(self.dir, "src")
        self.out = os.path.join(self.dir, "out")
        self.files = {}
        rng = random.Random(5)
        for cls in ("cat", "dog", "zebra"):
            for i in range(40):
                rel = "%s/img%03d.jpg" % (cls, i)
                self.write(rel, rng.randbytes(rng.randint(0, 60000)))
        # A second file of one sample, a long name (pax header), a non-ASCII name.
        self.write("cat/img007.json", b'{"box": [1, 2, 3]}')
        self.write("dog/" + "n" * 120 + ".jpg", rng.randbytes(777))
        self.write("zebra/\u00e9l\u00e9phant.jpg", rng.randbytes(1234))

    def tearDown(self):
        shutil.rmtree(self.dir, ignore_errors=True)

    def write(self, rel, data):
        path = os.path.join(self.src, rel)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "wb") as f:
            f.write(data)
        self.files[rel] = data
        return path

    def pack(self, *args, out=None):
        return e2e.run(["pack", self.src, out or self.out] + list(args), timeout=120)

    def shard_names(self, out=None):
        return sorted(n for n in os.listdir(out or self.out) if n.startswith("shard-"))

    def test_wds_gnu_tar_and_tarfile_read_the_original_bytes(self):
        rc, stdout, err, _ = self.pack("--format", "wds", "--shard-size", "512KiB", "--verify",
                                       "--json")
        self.assertEqual(rc, 0, err)
        self.assertEqual(err, "", "a non-terminal stderr gets no progress bar")
        result = json.loads(stdout)
        self.assertTrue(result["verified"])
        self.assertEqual(result["files"], len(self.files))
        manifest = json.loads(slurp(os.path.join(self.out, "manifest.json")))
        self.assertEqual(manifest["classes"], ["cat", "dog", "zebra"])
        self.assertGreater(len(manifest["shards"]), 3)
        extracted = os.path.join(self.dir, "extracted")
        os.makedirs(extracted)
        listed = []
        for shard in manifest["shards"]:
            path = os.path.join(self.out, shard["name"])
            self.assertLessEqual(os.path.getsize(path), 512 * 1024)
            names = e2e.tool(["tar", "-tf", path]).splitlines()
            listed += names
            subprocess.run(["tar", "-xf", path, "-C", extracted], check=True)
            # Python's tarfile: same members; the index points at each sample's first header.
            with tarfile.open(path) as tf:
                members = tf.getmembers()
                self.assertEqual([m.name for m in members], names)
                index = read_index(os.path.join(self.out, shard["index"]))
                self.assertEqual(len(index), shard["samples"])
                starts = {}
                for m in members:
                    key = m.name.rsplit("/", 1)[0] + "/" + m.name.rsplit("/", 1)[1].split(".", 1)[0]
                    starts.setdefault(key, m.offset)
                self.assertEqual([o for o, _ in index], sorted(starts.values()))
                for m in members:
                    if not m.name.endswith(".cls"):
                        self.assertEqual(tf.extractfile(m).read(), self.files[m.name], m.name)
        # GNU tar extracted every source file byte for byte, plus one .cls per sample.
        for rel, data in self.files.items():
            with open(os.path.join(extracted, rel), "rb") as f:
                self.assertEqual(f.read(), data, rel)
        cls = [n for n in listed if n.endswith(".cls")]
        self.assertEqual(len(cls), result["samples"])
        for n in cls:
            with open(os.path.join(extracted, n)) as f:
                self.assertEqual(f.read(), str(["cat", "dog", "zebra"].index(n.split("/")[0])))
        self.assertEqual(len(listed), len(self.files) + len(cls))
        # Members of a sample are consecutive.
        keys = [n.rsplit(".", 1)[0] if n.endswith(".cls") else n for n in listed]
        self.assertIn("cat/img007.cls", listed)
        i = listed.index("cat/img007.cls")
        self.assertEqual(listed[i:i + 3], ["cat/img007.cls", "cat/img007.jpg", "cat/img007.json"])
        self.assertTrue(keys)

    def test_tfrecord_decoded_by_hand_and_by_protobuf(self):
        rc, stdout, err, _ = self.pack("--format", "tfrecord", "--shard-size", "1MiB")
        self.assertEqual(rc, 0, err)
        self.assertIn("packed %d files" % len(self.files), stdout)
        manifest = json.loads(slurp(os.path.join(self.out, "manifest.json")))
        Example = example_class()
        seen = {}
        for shard in manifest["shards"]:
            records = read_tfrecords(os.path.join(self.out, shard["name"]))
            self.assertEqual([(o, n) for o, n, _ in records],
                             read_index(os.path.join(self.out, shard["index"])))
            self.assertEqual(len(records), shard["records"])
            for _, _, data in records:
                if Example is None:
                    self.skipTest("python3-protobuf is not installed (scripts/setup.sh)")
                ex = Example()
                ex.ParseFromString(data)
                feature = ex.features.feature
                key = feature["key"].bytes_list.value[0].decode("utf-8")
                seen[key] = feature["data"].bytes_list.value[0]
                self.assertEqual(list(feature["label"].int64_list.value),
                                 [["cat", "dog", "zebra"].index(key.split("/")[0])])
                # Our bytes are protobuf's own deterministic serialization.
                self.assertEqual(ex.SerializeToString(deterministic=True), data)
        self.assertEqual(seen, self.files)

    def test_shuffle_is_deterministic_and_overwrite_needs_force(self):
        rc, _, err, _ = self.pack("--format", "tfrecord", "--shuffle", "--seed", "7")
        self.assertEqual(rc, 0, err)
        first = {n: slurp(os.path.join(self.out, n)) for n in self.shard_names()}
        rc, _, err, _ = self.pack("--format", "tfrecord", "--shuffle", "--seed", "7")
        self.assertEqual(rc, 2)
        self.assertIn("already holds a pack", err)
        self.assertIn("--force", err)
        rc, _, err, _ = self.pack("--format", "tfrecord", "--shuffle", "--seed", "7", "--force",
                                  "--jobs", "1")
        self.assertEqual(rc, 0, err)
        again = {n: slurp(os.path.join(self.out, n)) for n in self.shard_names()}
        self.assertEqual(first, again)
        rc, _, err, _ = self.pack("--format", "tfrecord", "--shuffle", "--seed", "8", "--force")
        self.assertEqual(rc, 0, err)
        other = {n: slurp(os.path.join(self.out, n)) for n in self.shard_names()}
        self.assertNotEqual(first, other)
        rc, _, err, _ = self.pack("--format", "tfrecord", "--seed", "8", "--force")
        self.assertEqual(rc, 2, "--seed without --shuffle is bad usage")
        rc, _, err, _ = self.pack("--format", "zip")
        self.assertEqual(rc, 2)
        self.assertIn("--format", err)

    def test_full_disk_leaves_no_shard_and_names_the_file(self):
        if os.geteuid() != 0:
            self.skipTest("needs root to mount a small tmpfs as OUT")
        os.makedirs(self.out)
        subprocess.run(["mount", "-t", "tmpfs", "-o", "size=600k", "tmpfs", self.out], check=True)
        try:
            rc, _, err, _ = self.pack("--format", "tfrecord", "--shard-size", "256KiB")
            self.assertEqual(rc, 1, err)
            self.assertIn("No space left on device", err)
            self.assertRegex(err, r"\.shard-\d{5}\.tfrecord(\.idx)?\.tmp")
            # Named: the shard being written (and the source file when the
            # write of a sample, not the flush at the shard's end, hit the limit).
            self.assertIn(self.out + "/.shard-", err)
            left = os.listdir(self.out)
            self.assertEqual(left, [], "a full disk left %s" % left)
        finally:
            subprocess.run(["umount", self.out], check=True)

    def test_fifo_and_dangling_link_are_named(self):
        os.mkfifo(os.path.join(self.src, "cat", "camera.pipe"))
        os.symlink("/nonexistent/target.jpg", os.path.join(self.src, "dog", "gone.jpg"))
        rc, _, err, _ = self.pack("--format", "wds")
        self.assertEqual(rc, 1)
        self.assertIn(os.path.join(self.src, "cat", "camera.pipe") + ": a FIFO", err)
        self.assertEqual(os.listdir(self.out), [])
        rc, stdout, err, _ = self.pack("--format", "wds", "--skip-unreadable", "--json")
        self.assertEqual(rc, 0, err)
        result = json.loads(stdout)
        self.assertEqual(sorted(s["path"] for s in result["skipped"]),
                         ["cat/camera.pipe", "dog/gone.jpg"])
        self.assertIn("symbolic link to nothing", json.dumps(result["skipped"]))
        self.assertEqual(result["files"], len(self.files))

    def test_file_written_during_packing_is_refused(self):
        # Enough bytes that packing takes a while, and a writer appending to
        # one source file the whole time.
        for i in range(150):
            self.write("zz/bulk%03d.bin" % i, os.urandom(200000))
        growing = self.write("zz/growing.log", b"start\n")
        stop = threading.Event()

        def append():
            with open(growing, "ab", buffering=0) as f:
                while not stop.is_set():
                    f.write(b"line\n")

        writer = threading.Thread(target=append)
        writer.start()
        try:
            rc, _, err, _ = self.pack("--format", "tfrecord", "--jobs", "2")
            self.assertEqual(rc, 1, err)
            self.assertIn(growing + ": changed during packing", err)
            self.assertFalse(any(n.startswith("shard-") for n in os.listdir(self.out)))
            rc, stdout, err, _ = self.pack("--format", "tfrecord", "--skip-unreadable")
            self.assertEqual(rc, 0, err)
            self.assertIn("skipped 1 unreadable file", stdout)
            self.assertIn("growing.log: changed during packing", stdout)
        finally:
            stop.set()
            writer.join()


if __name__ == "__main__":
    e2e.main()
