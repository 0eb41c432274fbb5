"""A real network file system for the end-to-end tests: an sshfs mount of a
folder served by Debian's openssh-server, which runs in a network namespace
this module makes, bound to one end of a veth pair. ssh reaches it through
a small relay (ssh's ProxyCommand, this file run as a script) that delivers
each chunk, in each direction, a fixed delay after it read it: the link's
round trip. sshfs runs with its caches off, so every open and stat crosses
the link.

    with RemoteFs(test, delay_ms=1) as fs:
        fs.export   # the served folder (local), write the files here
        fs.mount    # the sshfs mount of it
        fs.cut_link()  # the link dies: calls on the mount hang (D state)

Everything (mount, sshfs, relay, sshd, namespace, veth, temp dir) is undone
on exit, also when the test fails; a FUSE connection that still has waiters
is aborted through /sys/fs/fuse/connections/N/abort (fusectl mounted first
when absent). The key pairs are throwaway ones in the temp dir and sshd
reads only its own config there: nothing of the system's ssh is touched.

Needs root, /dev/fuse, sshfs and sshd (scripts/setup.sh installs them):
without them RemoteFs skips the test (fails it under CI=true).

As a script: `remote_fs_common.py relay HOST PORT DELAY_MS`, the relay.
"""

import os
import queue
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time
import uuid

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import e2e_common  # noqa: E402

SSHD = "/usr/sbin/sshd"
FUSECTL = "/sys/fs/fuse/connections"
# Long enough for sshd to start and sshfs to log in on a loaded machine.
START_SECONDS = 20


def _ip(*args, check=True):
    proc = subprocess.run(["ip"] + list(args), capture_output=True, timeout=30)
    if check and proc.returncode != 0:
        raise RuntimeError("ip %s: %s" % (" ".join(args), proc.stderr.decode().strip()))
    return proc


def skip_reason():
    if os.geteuid() != 0:
        return "an sshfs mount in a network namespace needs root"
    if not os.path.exists("/dev/fuse"):
        return "no /dev/fuse: this kernel or container has no FUSE"
    for path in (shutil.which("sshfs"), SSHD, shutil.which("ssh-keygen"), shutil.which("ip")):
        if not path or not os.path.exists(path):
            return "sshfs, openssh-server or iproute2 is missing (scripts/setup.sh test)"
    return None


def mount_of(path):
    """The mountinfo line whose mount point is path, or None."""
    with open("/proc/self/mountinfo") as f:
        for line in f:
            fields = line.split()
            if len(fields) > 4 and fields[4] == path:
                return line
    return None


def fuse_connection(path):
    """The fusectl connection number of the FUSE mount at path (its st_dev
    minor, read from mountinfo so that the dead mount is not touched)."""
    line = mount_of(path)
    if line is None:
        return None
    return int(line.split()[2].split(":")[1])


def abort_fuse(path):
    """Aborts the FUSE connection of the mount at path: every call waiting on
    it fails with ENOTCONN and the daemon may go."""
    conn = fuse_connection(path)
    if conn is None:
        return
    if not os.path.isdir(os.path.join(FUSECTL, str(conn))):
        subprocess.run(["mount", "-t", "fusectl", "fusectl", FUSECTL], capture_output=True)
    abort = os.path.join(FUSECTL, str(conn), "abort")
    if os.path.exists(abort):
        with open(abort, "w") as f:
            f.write("1")


class RemoteFs:
    def __init__(self, test, delay_ms=1):
        why = skip_reason()
        if why:
            e2e_common.skip_or_fail(why)
        self.test = test
        self.delay_ms = delay_ms
        tag = uuid.uuid4().hex[:6]
        self.ns = "ssfs-%s" % tag
        self.if_host, self.if_ns = "ssh%s" % tag, "ssn%s" % tag  # <= 15 characters
        octet = int(tag[:2], 16) % 200 + 20
        self.addr_host = "10.%d.%d.1" % (octet, int(tag[2:4], 16))
        self.addr_ns = "10.%d.%d.2" % (octet, int(tag[2:4], 16))
        self.tmp = None
        self.procs = []
        self.mounted = False

    # -- setting up ------------------------------------------------------

    def __enter__(self):
        try:
            self.tmp = tempfile.mkdtemp(prefix="stallscope-sshfs-")
            self.export = os.path.join(self.tmp, "export")
            self.mount = os.path.join(self.tmp, "mnt")
            os.mkdir(self.export)
            os.mkdir(self.mount)
            self._make_link()
            self._start_sshd()
            self._mount()
        except BaseException:
            self.__exit__(None, None, None)
            raise
        return self

    def _make_link(self):
        _ip("netns", "add", self.ns)
        _ip("link", "add", self.if_host, "type", "veth", "peer", "name", self.if_ns)
        _ip("link", "set", self.if_ns, "netns", self.ns)
        _ip("addr", "add", self.addr_host + "/24", "dev", self.if_host)
        _ip("link", "set", self.if_host, "up")
        _ip("-n", self.ns, "addr", "add", self.addr_ns + "/24", "dev", self.if_ns)
        _ip("-n", self.ns, "link", "set", self.if_ns, "up")
        _ip("-n", self.ns, "link", "set", "lo", "up")

    def _start_sshd(self):
        keys = os.path.join(self.tmp, "keys")
        os.mkdir(keys, 0o700)
        self.host_key = os.path.join(keys, "host_ed25519")
        self.client_key = os.path.join(keys, "client_ed25519")
        for key in (self.host_key, self.client_key):
            subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", key],
                           check=True, capture_output=True, timeout=30)
        authorized = os.path.join(keys, "authorized_keys")
        shutil.copy(self.client_key + ".pub", authorized)
        config = os.path.join(self.tmp, "sshd_config")
        with open(config, "w") as f:
            f.write("\n".join([
                "ListenAddress %s:22" % self.addr_ns,
                "HostKey %s" % self.host_key,
                "AuthorizedKeysFile %s" % authorized,
                "PidFile none",
                "PermitRootLogin prohibit-password",
                "PasswordAuthentication no",
                "KbdInteractiveAuthentication no",
                "UsePAM no",
                "StrictModes no",
                "Subsystem sftp internal-sftp",
                ""]))
        os.makedirs("/run/sshd", mode=0o755, exist_ok=True)  # its privilege separation dir
        proc = subprocess.Popen(["ip", "netns", "exec", self.ns, SSHD, "-D", "-e", "-f", config],
                                stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        self.procs.append(proc)
        deadline = time.monotonic() + START_SECONDS
        while time.monotonic() < deadline:
            if proc.poll() is not None:
                raise AssertionError("sshd exited: %s" % proc.stderr.read().decode())
            try:
                with socket.create_connection((self.addr_ns, 22), timeout=1):
                    return
            except OSError:
                time.sleep(0.05)
        raise AssertionError("sshd did not listen on %s:22" % self.addr_ns)

    def _mount(self):
        relay = "/usr/bin/python3 %s relay %%h %%p %s" % (os.path.abspath(__file__), self.delay_ms)
        proc = subprocess.Popen(
            ["sshfs", "-f", "root@%s:%s" % (self.addr_ns, self.export), self.mount,
             "-F", "/dev/null",
             "-o", "cache=no,attr_timeout=0,entry_timeout=0,negative_timeout=0",
             "-o", "IdentityFile=%s" % self.client_key,
             "-o", "StrictHostKeyChecking=no", "-o", "UserKnownHostsFile=/dev/null",
             "-o", "BatchMode=yes", "-o", "LogLevel=ERROR",
             "-o", "ProxyCommand=%s" % relay],
            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        self.procs.append(proc)
        deadline = time.monotonic() + START_SECONDS
        while time.monotonic() < deadline:
            line = mount_of(self.mount)
            if line is not None:
                self.mounted = True
                self.mountinfo_line = line
                return
            if proc.poll() is not None:
                raise AssertionError("sshfs exited: %s" % proc.stderr.read().decode())
            time.sleep(0.05)
        raise AssertionError("sshfs did not mount %s" % self.mount)

    # -- the test's levers -----------------------------------------------

    def cut_link(self):
        """The link goes down: nothing arrives, nothing is refused; calls on
        the mount wait for an answer that never comes."""
        _ip("link", "set", self.if_host, "down")

    # -- tearing down ----------------------------------------------------

    def __exit__(self, *exc):
        if self.mounted:
            abort_fuse(self.mount)
            subprocess.run(["umount", "-l", self.mount], capture_output=True, timeout=30)
        for proc in reversed(self.procs):
            if proc.poll() is None:
                proc.kill()
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                pass
            proc.stderr.close()
        _ip("netns", "del", self.ns, check=False)  # takes its veth end, and so the pair
        _ip("link", "del", self.if_host, check=False)
        if self.tmp and mount_of(self.mount) is None:
            shutil.rmtree(self.tmp, ignore_errors=True)
        return False


# -- the relay (ssh's ProxyCommand) --------------------------------------


def _pump(read, write, delay):
    """Reads chunks with `read`, writes each `delay` seconds after it came."""
    pending = queue.Queue()

    def deliver():
        while True:
            due, chunk = pending.get()
            wait = due - time.monotonic()
            if wait > 0:
                time.sleep(wait)
            if not chunk:
                os._exit(0)
            write(chunk)

    threading.Thread(target=deliver, daemon=True).start()
    while True:
        try:
            chunk = read()
        except OSError:
            chunk = b""
        pending.put((time.monotonic() + delay, chunk))
        if not chunk:
            return


def relay(host, port, delay_ms):
    delay = float(delay_ms) / 1000
    sock = socket.create_connection((host, int(port)))
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

    def to_stdout(chunk):
        view = memoryview(chunk)
        while view:
            view = view[os.write(1, view):]

    threading.Thread(target=_pump, args=(lambda: sock.recv(1 << 16), to_stdout, delay),
                     daemon=True).start()
    _pump(lambda: os.read(0, 1 << 16), sock.sendall, delay)
    time.sleep(3600)  # the other direction ends the process at its EOF


if __name__ == "__main__" and len(sys.argv) == 5 and sys.argv[1] == "relay":
    relay(sys.argv[2], sys.argv[3], sys.argv[4])
