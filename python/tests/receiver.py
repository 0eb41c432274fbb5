"""The receiving end the hook tests share: a real AF_UNIX SOCK_DGRAM socket
bound in a temporary folder, read as `stallscope run` reads it
(docs/hook-protocol.md), and the environment each test sets put back.
Not a test module itself (no test_ prefix)."""
import os
import socket
import tempfile
import unittest


class ReceiverTest(unittest.TestCase):
    # The variables a test may set; each is put back as it was.
    ENV_KEYS = ("STALLSCOPE_SOCKET", "RANK", "LOCAL_RANK", "WORLD_SIZE")

    def setUp(self):
        self.saved = {k: os.environ.get(k) for k in self.ENV_KEYS}
        for k in self.ENV_KEYS:
            os.environ.pop(k, None)
        self.dir = tempfile.TemporaryDirectory()
        self.path = os.path.join(self.dir.name, "hook.sock")
        self.rx = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        self.rx.bind(self.path)
        self.rx.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 1 << 20)

    def tearDown(self):
        self.rx.close()
        self.dir.cleanup()
        for k, v in self.saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v

    def enable(self, **env):
        os.environ.update({k: str(v) for k, v in env.items()})
        os.environ["STALLSCOPE_SOCKET"] = self.path

    def datagrams(self, wait_s=0.2):
        out = []
        self.rx.settimeout(wait_s)
        while True:
            try:
                out.append(self.rx.recv(65536))
            except socket.timeout:
                return out
