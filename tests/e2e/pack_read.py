"""End to end: the real `stallscope pack` writes a real folder of class-folder
files in both formats, and stallscope.data reads the shards back through the
real PyTorch DataLoader (2 worker processes): every sample exactly once,
byte-exact, with the label of its class folder (docs/pack-format.md).

    /usr/bin/python3 tests/e2e/pack_read.py build/stallscope

Skips with a message when the binary has no `pack` command or torch is not
installed. The DataLoader runs in a child process per format so that one
torch import serves several loaders.
"""
import json
import os
import random
import subprocess
import sys
import tempfile
import unittest

import e2e_common as e2e

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(
    os.path.dirname(os.path.abspath(__file__)))), "python"))
from stallscope import data  # noqa: E402  (no torch import)

HERE = os.path.dirname(os.path.abspath(__file__))
PYTHON_DIR = os.path.join(os.path.dirname(os.path.dirname(HERE)), "python")

CLASSES = ["bird", "cat", "dog"]      # byte order = label order

READER = r"""
import json, sys
import torch.utils.data as tud
from stallscope.data import ShardDataset

def collate(batch):
    return batch

def read(out, fmt, world):
    seen = []
    for rank in range(world):
        ds = ShardDataset(out, rank=rank, world_size=world, shuffle=True, seed=5,
                          shuffle_buffer=16)
        loader = tud.DataLoader(ds, batch_size=8, num_workers=2, collate_fn=collate)
        for batch in loader:
            for s in batch:
                if fmt == "tfrecord":
                    seen.append({"key": s["key"], "label": s.get("label"),
                                 "data": s["data"].hex()})
                else:
                    seen.append({"key": s["__key__"],
                                 "files": {k: v.hex() for k, v in s.items()
                                           if not k.startswith("__")}})
    return seen, ds.classes

fmt = sys.argv[1]
results = []
for out in sys.argv[2:]:
    runs = [read(out, fmt, world) for world in (1, 2)]
    results.append({"classes": runs[0][1], "runs": [seen for seen, _ in runs]})
print(json.dumps(results))
"""


def make_source(root, rng):
    """Class folders of files of assorted sizes; some samples have two files
    (key.jpg + key.json). Returns {relative path: bytes}."""
    files = {}
    sizes = [0, 1, 511, 512, 513, 4096, 70_000, 250_000]
    for c, cls in enumerate(CLASSES):
        os.makedirs(os.path.join(root, cls))
        for i in range(40 + 7 * c):
            size = sizes[i % len(sizes)] if i < len(sizes) else rng.randrange(1, 40_000)
            rel = "%s/img_%03d.jpg" % (cls, i)
            files[rel] = rng.randbytes(size)
            if i % 9 == 4:
                files["%s/img_%03d.json" % (cls, i)] = b'{"i": %d}' % i
    # Names a plain ustar header cannot hold: the tar gets pax headers, and
    # an index entry must start at the first of them.
    files["cat/" + "long_name_" * 14 + ".jpg"] = rng.randbytes(3000)
    files["dog/caf\u00e9_\u00fc\u00df.jpg"] = rng.randbytes(2000)
    for rel, data in files.items():
        with open(os.path.join(root, rel), "wb") as f:
            f.write(data)
    return files


def label_of(rel):
    return CLASSES.index(rel.split("/", 1)[0])


class PackReadTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        rc, out, err, _ = e2e.run(["pack", "--help"])
        if rc != 0 or "--format" not in out:
            raise unittest.SkipTest("this stallscope has no `pack` command yet "
                                    "(`stallscope pack --help` exited %d: %s)"
                                    % (rc, (err or out).strip()[:200]))
        try:
            import importlib.util
            if importlib.util.find_spec("torch") is None:
                raise ImportError
        except ImportError:
            raise unittest.SkipTest("torch is not installed (Debian: python3-torch)")

    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory(dir="/tmp")
        self.addCleanup(self.tmp.cleanup)
        self.src = os.path.join(self.tmp.name, "src")
        self.files = make_source(self.src, random.Random(11))

    def pack(self, fmt, shard_size):
        out = os.path.join(self.tmp.name, "%s-%s" % (fmt, shard_size))
        report = e2e.run_json(self, ["pack", self.src, out, "--format", fmt,
                                     "--shard-size", shard_size, "--json"])
        self.assertEqual(report["files"], len(self.files))
        with open(os.path.join(out, "manifest.json")) as f:
            manifest = json.load(f)
        self.assertEqual(manifest["classes"], CLASSES)
        return out, manifest

    def check_index(self, out, manifest, fmt):
        """Each index entry alone reads back exactly one record / sample."""
        seen = []
        for shard in manifest["shards"]:
            path = os.path.join(out, shard["name"])
            entries = data.read_index(os.path.join(out, shard["index"]))
            self.assertLessEqual(entries[-1][0] + entries[-1][1], os.path.getsize(path), path)
            for offset, length in entries:
                if fmt == "tfrecord":
                    got = list(data.iter_tfrecord(path, offset, offset + length))
                    self.assertEqual([o for o, _ in got], [offset], path)
                    self.assertEqual(16 + len(got[0][1]), length, path)
                    seen.append(data.example_to_sample(data.parse_example(got[0][1]))["key"])
                else:
                    got = list(data.iter_wds(path, offset, length))
                    self.assertEqual(len(got), 1, "%s: entry %d %d" % (path, offset, length))
                    seen.append(got[0]["__key__"])
            if fmt == "wds":
                self.assertEqual(len(entries), shard["samples"], path)
        return seen

    def read(self, fmt, outs):
        """Per pack folder: per world size (1, 2), the samples all ranks read."""
        proc = subprocess.run([sys.executable, "-c", READER, fmt] + outs, capture_output=True,
                              text=True, timeout=240,
                              env=dict(os.environ, PYTHONPATH=PYTHON_DIR))
        self.assertEqual(proc.returncode, 0, "reader failed: " + proc.stderr[-3000:])
        results = json.loads(proc.stdout)
        self.assertEqual(len(results), len(outs))
        for result in results:
            self.assertEqual(result["classes"], CLASSES)
        return [r["runs"] for r in results]

    def test_tfrecord(self):
        sizes = ("256KiB", "256MiB")    # many shards; one shard split by its index
        outs = []
        for shard_size in sizes:
            out, manifest = self.pack("tfrecord", shard_size)
            if shard_size == "256MiB":
                self.assertEqual(len(manifest["shards"]), 1)
            else:
                self.assertGreater(len(manifest["shards"]), 4)
            self.assertEqual(sorted(self.check_index(out, manifest, "tfrecord")),
                             sorted(self.files))
            outs.append(out)
        for shard_size, runs in zip(sizes, self.read("tfrecord", outs)):
            for world, seen in enumerate(runs, 1):
                where = "tfrecord, %s shards, %d ranks x 2 workers" % (shard_size, world)
                keys = [s["key"] for s in seen]
                self.assertEqual(len(keys), len(set(keys)), where + ": a record read twice")
                self.assertEqual(set(keys), set(self.files), where)
                for s in seen:
                    self.assertEqual(bytes.fromhex(s["data"]), self.files[s["key"]],
                                     where + ": bytes of " + s["key"])
                    self.assertEqual(s["label"], label_of(s["key"]),
                                     where + ": " + s["key"])

    def test_wds(self):
        samples = {}
        for rel, data in self.files.items():
            key, ext = rel.split(".", 1)
            samples.setdefault(key, {})[ext] = data
        for key in samples:
            samples[key]["cls"] = str(label_of(key)).encode()
        sizes = ("256KiB", "256MiB")
        outs = []
        for shard_size in sizes:
            out, manifest = self.pack("wds", shard_size)
            self.assertEqual(manifest["samples"], len(samples))
            self.assertEqual(sorted(self.check_index(out, manifest, "wds")), sorted(samples))
            outs.append(out)
        for shard_size, runs in zip(sizes, self.read("wds", outs)):
            for world, seen in enumerate(runs, 1):
                where = "wds, %s shards, %d ranks x 2 workers" % (shard_size, world)
                keys = [s["key"] for s in seen]
                self.assertEqual(len(keys), len(set(keys)), where + ": a sample read twice")
                self.assertEqual(set(keys), set(samples), where)
                for s in seen:
                    got = {ext: bytes.fromhex(v) for ext, v in s["files"].items()}
                    self.assertEqual(got, samples[s["key"]], where + ": sample " + s["key"])


if __name__ == "__main__":
    e2e.main()
