"""Shared pieces of the end-to-end tests: running the real binary, reading
its JSON, memory cgroups made for one test and always removed, and a loop
device whose reads a blkio/io cgroup throttles.

The scripts run as `/usr/bin/python3 SCRIPT PATH_TO_STALLSCOPE`; only the
standard library is used.
"""

import json
import os
import re
import select
import shutil
import signal
import subprocess
import sys
import time
import unittest

MIB = 1 << 20
GIB = 1 << 30

# The triage order of docs/findings.md.
LAYERS = ["memory", "io", "network", "distributed", "code"]
SEVERITIES = ["info", "warning", "critical"]

BINARY = None


def take_binary_argument():
    """Pops the binary path from argv (unittest must not see it)."""
    global BINARY
    if len(sys.argv) < 2:
        sys.exit("usage: %s PATH_TO_STALLSCOPE [unittest args]" % sys.argv[0])
    BINARY = os.path.abspath(sys.argv.pop(1))
    if not os.access(BINARY, os.X_OK):
        sys.exit("%s: not an executable" % BINARY)
    return BINARY


def main():
    take_binary_argument()
    unittest.main(argv=[sys.argv[0]] + sys.argv[1:], verbosity=2)


def have_torch(python="/usr/bin/python3", module="torch"):
    """Whether PYTHON imports MODULE (Debian's python3-torch)."""
    return os.path.exists(python) and subprocess.run(
        [python, "-c", "import " + module], capture_output=True).returncode == 0


def run(args, env=None, timeout=60, preexec=None, input_bytes=None):
    """Runs stallscope ARGS; returns (rc, stdout str, stderr str, seconds)."""
    start = time.monotonic()
    try:
        proc = subprocess.run([BINARY] + list(args), capture_output=True, env=env,
                              timeout=timeout, preexec_fn=preexec, input=input_bytes)
    except subprocess.TimeoutExpired as e:
        # Killed (SIGKILL) by subprocess.run: what it said until then is the
        # only clue to why it did not end.
        tail = (e.stderr or b"").decode("utf-8", "replace")[-4000:]
        raise AssertionError("stallscope %s did not end in %d s; its stderr until then:\n%s"
                             % (" ".join(args), timeout, tail)) from None
    seconds = time.monotonic() - start
    return (proc.returncode, proc.stdout.decode("utf-8", "replace"),
            proc.stderr.decode("utf-8", "replace"), seconds)


def run_json(test, args, env=None, timeout=60):
    """Runs stallscope ARGS, asserts exit 0 and JSON on stdout, returns it."""
    rc, out, err, _ = run(args, env=env, timeout=timeout)
    test.assertEqual(rc, 0, "stallscope %s exited %d; stderr: %s" % (" ".join(args), rc, err))
    try:
        return json.loads(out)
    except ValueError as e:
        test.fail("stallscope %s printed no JSON (%s): %r" % (" ".join(args), e, out[:500]))


def tool(args, timeout=60):
    """Runs a classic tool; returns stdout, or None when it is not installed."""
    try:
        proc = subprocess.run(args, capture_output=True, timeout=timeout)
    except FileNotFoundError:
        return None
    if proc.returncode != 0:
        raise AssertionError("%s exited %d: %s" % (" ".join(args), proc.returncode,
                                                   proc.stderr.decode(errors="replace")))
    return proc.stdout.decode("utf-8", "replace")


def cpu_list(text):
    """'0-3,8,10-11' -> {0,1,2,3,8,10,11}."""
    cpus = set()
    for part in text.replace(" ", "").split(","):
        if not part:
            continue
        if "-" in part:
            low, high = part.split("-")
            cpus.update(range(int(low), int(high) + 1))
        else:
            cpus.add(int(part))
    return cpus


def vmstat_counter(name):
    with open("/proc/vmstat") as f:
        for line in f:
            key, value = line.split()
            if key == name:
                return int(value)
    return 0


def meminfo():
    out = {}
    with open("/proc/meminfo") as f:
        for line in f:
            key, rest = line.split(":", 1)
            out[key] = int(rest.split()[0]) * 1024
    return out


def need_shared_dir(test, path, what):
    """Skips the test with a message when `path` (under ../shared) is
    missing, and fails it when CI=true: there it is part of the test."""
    if os.path.isdir(path):
        return
    if os.environ.get("CI") == "true":
        test.fail("%s is missing (CI=true): %s are part of the test" % (path, what))
    test.skipTest("%s is missing: checks on %s skipped (they run in CI)" % (path, what))


def finding(report, finding_id):
    for f in report.get("findings", []):
        if f.get("id") == finding_id:
            return f
    return None


# Findings that say the job did not finish (analyze/report.h IsJobStop).
JOB_STOPS = ("distributed.rank_died", "distributed.hang", "memory.oom_killed")


def check_report(test, report):
    """The report contract of docs/findings.md: fields, layer order, verdict rule."""
    test.assertEqual(report.get("schema"), "stallscope.report/1")
    test.assertIn("verdict", report)
    test.assertIn("layer", report["verdict"])
    test.assertIn(report["verdict"]["layer"], LAYERS + ["none"])
    test.assertEqual([l["layer"] for l in report["layers"]], LAYERS,
                     "layers must be listed in triage order")
    statuses = {l["layer"]: l["status"] for l in report["layers"]}
    test.assertNotEqual(statuses["memory"], "not_checked", "the memory layer must be checked")
    for layer, status in statuses.items():
        test.assertIn(status, ["not_checked", "ok"] + SEVERITIES, "layer %s" % layer)
    test.assertIsInstance(report["findings"], list)
    for f in report["findings"]:
        for key in ("id", "layer", "severity", "summary", "evidence", "next"):
            test.assertIn(key, f, "finding %r lacks %s" % (f.get("id"), key))
        test.assertIsInstance(f["evidence"], dict, f["id"])
        test.assertTrue(f["evidence"], "finding %s carries no evidence" % f["id"])
        test.assertIn(f["layer"], LAYERS, f["id"])
        test.assertTrue(f["id"].startswith(f["layer"] + "."), f["id"])
        test.assertIn(f["severity"], SEVERITIES, f["id"])
        test.assertTrue(f["summary"].strip(), f["id"])
        test.assertTrue(f["next"].strip(), f["id"])
        test.assertNotEqual(statuses[f["layer"]], "not_checked",
                            "finding %s in a layer marked not_checked" % f["id"])
    # Each layer's status is its worst finding, "ok" when it has none.
    for layer in LAYERS:
        if statuses[layer] == "not_checked":
            continue
        found = [SEVERITIES.index(f["severity"]) for f in report["findings"]
                 if f["layer"] == layer]
        expected = SEVERITIES[max(found)] if found else "ok"
        test.assertEqual(statuses[layer], expected, "status of layer %s" % layer)
    # Findings come in triage order.
    order = [LAYERS.index(f["layer"]) for f in report["findings"]]
    test.assertEqual(order, sorted(order), "findings must be in triage order")
    # The verdict is the first critical finding that says the job stopped
    # (a rank died, a hang, the OOM killer), else the first critical finding
    # in that order, else "none".
    critical = [f for f in report["findings"] if f["severity"] == "critical"]
    stops = [f for f in critical if f["id"] in JOB_STOPS]
    critical = stops + critical
    if critical:
        test.assertEqual(report["verdict"]["layer"], critical[0]["layer"])
        test.assertEqual(report["verdict"].get("finding"), critical[0]["id"])
    else:
        test.assertEqual(report["verdict"]["layer"], "none")


# ---------------------------------------------------------------------------
# Memory cgroups for one test.

class CgroupUnavailable(Exception):
    """Why a cgroup for the test could not be made (the test skips)."""


def _mountinfo():
    """(mount point, fs type, super options, root) per line of mountinfo."""
    out = []
    with open("/proc/self/mountinfo") as f:
        for line in f:
            left, right = line.split(" - ", 1)
            fields = left.split()
            rfields = right.split()
            out.append((fields[4], rfields[0], rfields[2] if len(rfields) > 2 else "",
                        fields[3]))
    return out


def _own_memory_cgroup():
    """(version, directory of this process's memory cgroup)."""
    with open("/proc/self/cgroup") as f:
        lines = [l.rstrip("\n").split(":", 2) for l in f if l.strip()]
    mounts = _mountinfo()
    for hid, controllers, path in lines:
        if "memory" in controllers.split(","):
            for point, fstype, options, root in mounts:
                if fstype == "cgroup" and "memory" in options.split(","):
                    rel = path
                    if root != "/" and (rel == root or rel.startswith(root + "/")):
                        rel = rel[len(root):]
                    directory = os.path.normpath(point + "/" + rel)
                    if os.path.isdir(directory):
                        return 1, directory
            raise CgroupUnavailable("no mounted cgroup v1 memory hierarchy for %s" % path)
    for hid, controllers, path in lines:
        if hid == "0" and controllers == "":
            for point, fstype, options, root in mounts:
                if fstype != "cgroup2":
                    continue
                rel = path
                if root != "/" and (rel == root or rel.startswith(root + "/")):
                    rel = rel[len(root):]
                directory = os.path.normpath(point + "/" + rel)
                try:
                    with open(point + "/cgroup.controllers") as c:
                        if "memory" not in c.read().split():
                            continue
                except OSError:
                    continue
                if os.path.isdir(directory):
                    return 2, directory
    raise CgroupUnavailable("no memory controller in /proc/self/cgroup")


def _write(path, text):
    with open(path, "w") as f:
        f.write(text)


def _read(path):
    with open(path) as f:
        return f.read()


class MemoryCgroup:
    """A child memory cgroup of this process's own, with a limit. Use as a
    context manager, or call remove() (idempotent) from a cleanup."""

    def __init__(self, name, limit_bytes):
        if os.geteuid() != 0:
            raise CgroupUnavailable("needs root (euid %d)" % os.geteuid())
        self.version, self.parent = _own_memory_cgroup()
        self.path = os.path.join(self.parent, name)
        try:
            if self.version == 2:
                # The controller must be enabled for the children of our cgroup.
                control = os.path.join(self.parent, "cgroup.subtree_control")
                if "memory" not in _read(control).split():
                    _write(control, "+memory")
            os.mkdir(self.path)
        except OSError as e:
            raise CgroupUnavailable("cannot create %s: %s" % (self.path, e))
        try:
            if self.version == 1:
                _write(self.file("memory.limit_in_bytes"), str(limit_bytes))
            else:
                _write(self.file("memory.max"), str(limit_bytes))
        except OSError as e:
            self.remove()
            raise CgroupUnavailable("cannot set the limit of %s: %s" % (self.path, e))

    def file(self, name):
        return os.path.join(self.path, name)

    @property
    def procs_file(self):
        return self.file("cgroup.procs")

    @property
    def usage_file(self):
        return self.file("memory.usage_in_bytes" if self.version == 1 else "memory.current")

    def relative_path(self):
        """The path as /proc/PID/cgroup shows it for a member."""
        # Ours minus the part of the parent's path, plus the parent's own line.
        with open("/proc/self/cgroup") as f:
            for line in f:
                hid, controllers, path = line.rstrip("\n").split(":", 2)
                if (self.version == 1 and "memory" in controllers.split(",")) or \
                        (self.version == 2 and hid == "0"):
                    return path.rstrip("/") + "/" + os.path.basename(self.path)
        return None

    def pids(self):
        try:
            return [int(p) for p in _read(self.procs_file).split()]
        except OSError:
            return []

    def remove(self):
        """Kills what is left inside, moves survivors out, removes the dir."""
        if not os.path.isdir(self.path):
            return
        deadline = time.monotonic() + 10
        while True:
            pids = [p for p in self.pids() if p != os.getpid()]
            if not pids:
                break
            for pid in pids:
                try:
                    os.kill(pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
                try:
                    _write(os.path.join(self.parent, "cgroup.procs"), str(pid))
                except OSError:
                    pass
            if time.monotonic() > deadline:
                break
            time.sleep(0.05)
        for _ in range(100):
            try:
                os.rmdir(self.path)
                return
            except FileNotFoundError:
                return
            except OSError:
                time.sleep(0.05)
        os.rmdir(self.path)  # the last try raises: a leak must be loud

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.remove()
        return False


def drop_file_from_cache(path):
    """Drops one file's pages from the page cache (that file's only, as fadvise does)."""
    fd = os.open(path, os.O_RDONLY)
    try:
        os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
    finally:
        os.close(fd)


def wait_for_line(proc, seconds):
    """The first line the child prints, or None after SECONDS or at its exit."""
    deadline = time.monotonic() + seconds
    buffer = b""
    fd = proc.stdout.fileno()
    while time.monotonic() < deadline:
        ready, _, _ = select.select([fd], [], [], 0.1)
        if ready:
            chunk = os.read(fd, 4096)
            if not chunk:
                return None
            buffer += chunk
            if b"\n" in buffer:
                return buffer.split(b"\n", 1)[0].decode()
        elif proc.poll() is not None:
            return None
    return None


def stop(proc):
    """Kills a child started by a test and reaps it."""
    if proc is None or proc.poll() is not None:
        return
    proc.kill()
    try:
        proc.wait(timeout=10)
    except subprocess.TimeoutExpired:
        pass


def parse_size(text):
    """'23.5 GiB' / '23Gi' / '512 B' / '0B' -> bytes (float)."""
    m = re.fullmatch(r"([0-9.]+)\s*([KMGTP]?)(i?B?|iB)", text.strip())
    if not m:
        raise ValueError("not a size: %r" % text)
    scale = {"": 1, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30, "T": 1 << 40, "P": 1 << 50}
    return float(m.group(1)) * scale[m.group(2)]


def needs(present, why):
    """A decorator for a test class or method that needs something this
    machine may lack (torch, mpirun, root): without it the test is skipped,
    or fails under CI=true, where everything the README installs is there
    and a skip would hide a broken set-up."""
    if present:
        return lambda obj: obj
    if os.environ.get("CI") != "true":
        return unittest.skip(why)

    def failing(obj):
        message = why + " (CI=true: this test must run)"
        if isinstance(obj, type):
            def set_up_class(cls):
                raise AssertionError(message)
            obj.setUpClass = classmethod(set_up_class)
            return obj

        def fail(*args, **kwargs):
            raise AssertionError(message)
        fail.__name__ = obj.__name__
        fail.__doc__ = obj.__doc__
        return fail
    return failing


def skip_or_fail(why):
    """Skips the test with `why`, or fails it under CI=true (it must run there)."""
    if os.environ.get("CI") == "true":
        raise AssertionError(why + " (CI=true: this test must run)")
    raise unittest.SkipTest(why)


def _sh(*args):
    proc = subprocess.run(list(args), capture_output=True, timeout=120)
    if proc.returncode != 0:
        raise AssertionError("%s: %s" % (" ".join(args), proc.stderr.decode()))
    return proc.stdout.decode().strip()


def _throttle_cgroup(test, major, minor, read_bps):
    """A blkio (v1) or io (v2) cgroup reading major:minor at read_bps; its
    cgroup.procs path. Removed when the test ends."""
    name = "stallscope-e2e-io-%d-%d" % (os.getpid(), minor)
    v1 = "/sys/fs/cgroup/blkio"
    if os.path.isdir(v1):
        path = os.path.join(v1, name)
        os.mkdir(path)
        test.addCleanup(os.rmdir, path)
        with open(os.path.join(path, "blkio.throttle.read_bps_device"), "w") as f:
            f.write("%d:%d %d" % (major, minor, read_bps))
        return os.path.join(path, "cgroup.procs")
    root = "/sys/fs/cgroup"
    if not os.path.exists(os.path.join(root, "cgroup.controllers")):
        skip_or_fail("neither a cgroup v1 blkio hierarchy nor cgroup v2 here")
    with open(os.path.join(root, "cgroup.controllers")) as f:
        if "io" not in f.read().split():
            skip_or_fail("the cgroup v2 io controller is not available")
    with open(os.path.join(root, "cgroup.subtree_control"), "w") as f:
        f.write("+io")
    path = os.path.join(root, name)
    os.mkdir(path)
    test.addCleanup(os.rmdir, path)
    with open(os.path.join(path, "io.max"), "w") as f:
        f.write("%d:%d rbps=%d" % (major, minor, read_bps))
    return os.path.join(path, "cgroup.procs")


def throttled_loop_mount(test, tmp, read_bps, size_bytes=192 << 20):
    """An ext4 loop device mounted under tmp, and a cgroup that reads it at
    read_bps: (mount point, loop device, a preexec_fn that puts the child in
    that cgroup). Skips (fails under CI=true) without root or the tools.
    Everything is undone when the test ends, pass or fail."""
    if os.geteuid() != 0:
        skip_or_fail("a loop device and a blkio cgroup need root")
    for tool_name in ("losetup", "mkfs.ext4", "mount"):
        if not shutil.which(tool_name):
            skip_or_fail("%s is missing" % tool_name)
    image = os.path.join(tmp, "disk-%d.img" % len(os.listdir(tmp)))
    with open(image, "wb") as f:
        f.truncate(size_bytes)
    _sh("mkfs.ext4", "-q", "-F", image)
    loop = _sh("losetup", "--find", "--show", image)
    test.addCleanup(subprocess.run, ["losetup", "-d", loop], capture_output=True)
    mnt = image + ".mnt"
    os.mkdir(mnt)
    _sh("mount", loop, mnt)
    test.addCleanup(subprocess.run, ["umount", "-l", mnt], capture_output=True)
    rdev = os.stat(loop).st_rdev
    procs = _throttle_cgroup(test, os.major(rdev), os.minor(rdev), read_bps)

    def into_cgroup():
        with open(procs, "w") as f:
            f.write(str(os.getpid()))

    return mnt, loop, into_cgroup
