"""stallscope's hook for Python training jobs (no third-party dependencies).

    import stallscope
    for epoch in range(epochs):
        stallscope.epoch(epoch)
        for batch in stallscope.loader(train_loader):
            ...

Under `stallscope run` (STALLSCOPE_SOCKET names a Unix datagram socket) it
times, per step, the wait for the next batch and the whole step, marks epochs
and reports the rank and the DataLoader's settings, as docs/hook-protocol.md
says. Outside stallscope `loader(x)` returns `x` itself and `epoch(n)` does
nothing. The hook never raises into the job and never blocks: a datagram that
cannot be sent is dropped and counted.
"""
import atexit
import os
import socket
import sys
import time

__all__ = ["loader", "epoch", "enabled"]

_ENV = "STALLSCOPE_SOCKET"
_BATCH = 64                  # records per datagram
_PERIOD_NS = 500_000_000     # or this long after the last send
_MAX_DATAGRAM = 16 * 1024

_mono = time.monotonic_ns

# Records waiting to be sent: preformatted lines (str) or, for steps, the raw
# (t_start, t_got_batch, t_end) tuple the hot path appends. Never rebound, so
# the loader generators may keep a reference to it.
_buf = []
_last_send = [0]             # monotonic ns of the last flush; a cell, not rebound


class _State:
    """Per-process connection: which socket, who we are, what we counted."""

    def __init__(self, path):
        self.path = path
        self.pid = os.getpid()
        self.rank = _env_int("RANK", _env_int("LOCAL_RANK", 0))
        self.local_rank = _env_int("LOCAL_RANK", 0)
        self.world_size = _env_int("WORLD_SIZE", 1)
        self.step = 0            # number of the next step record
        self.dropped = 0         # datagrams not sent, all told
        self.reported = 0        # of those, how many `dropped` records told
        self.loaders = set()     # (id, record) of the loaders reported
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        self.sock.setblocking(False)


_state = None                # _State, or None while unused / disabled
_failed_path = None          # a path whose socket could not be made


def _env_int(name, default):
    try:
        return int(os.environ.get(name, default))
    except (TypeError, ValueError):
        return default


def _current():
    """The state for this process and STALLSCOPE_SOCKET, made on first use;
    None when the hook is off. A new path or a new pid (a fork) starts over."""
    global _state, _failed_path
    path = os.environ.get(_ENV)
    if not path:
        return None
    st = _state
    if st is not None and st.path == path and st.pid == os.getpid():
        return st
    if st is not None and st.pid == os.getpid():
        _flush()                 # what is waiting belongs to the old receiver
    else:
        del _buf[:]              # inherited from the parent: not ours to send
    if st is not None:
        _close(st)               # in a forked child, only its copy of the fd
    _state = None
    if path == _failed_path:
        return None
    try:
        st = _State(path)
    except Exception:
        _failed_path = path
        return None
    _state = st
    _buf.append("hello %d %d %d %d" % (st.pid, st.rank, st.local_rank, st.world_size))
    return st


def _close(st):
    try:
        st.sock.close()
    except Exception:
        pass


def _lines(st, records):
    out = []
    head = "step %d %d " % (st.pid, st.rank)
    for r in records:
        if r.__class__ is str:
            out.append(r)
        else:
            t0, t1, t2 = r
            out.append("%s%d %d %d %d" % (head, st.step, t2, t1 - t0, t2 - t0))
            st.step += 1
    return out


def _send(st, lines):
    """Sends lines in datagrams of at most 16 KiB. Drops not yet reported go
    first, in a `dropped` record; they count as reported once it is sent."""
    unreported = st.dropped - st.reported
    if unreported:
        lines.insert(0, "dropped %d %d %d" % (st.pid, st.rank, unreported))
    chunks, chunk, size = [], [], 0
    for line in lines:
        if chunk and size + len(line) + 1 > _MAX_DATAGRAM:
            chunks.append(chunk)
            chunk, size = [], 0
        chunk.append(line)
        size += len(line) + 1
    chunks.append(chunk)
    for i, c in enumerate(chunks):
        if _send_one(st, c) and i == 0:
            st.reported += unreported


def _send_one(st, chunk):
    try:
        st.sock.sendto(("\n".join(chunk) + "\n").encode(), st.path)
        return True
    except Exception:            # EAGAIN (full), ENOENT, ECONNREFUSED, ...
        st.dropped += 1
        return False


def _flush():
    """Sends what is waiting. Called from the hot path: never raises."""
    try:
        _last_send[0] = _mono()
        st = _state
        if st is None or st.pid != os.getpid():
            del _buf[:]
            return
        n = len(_buf)
        records = _buf[:n]
        del _buf[:n]
        if records or st.dropped != st.reported:
            _send(st, _lines(st, records))
    except Exception:
        pass


def _at_exit():
    try:
        if _state is not None and _state.pid == os.getpid():
            _flush()
    except Exception:
        pass


def _after_fork():
    # A forked child (DataLoader worker) starts with nothing to send; its own
    # state is made on its own first use (a new pid, a new hello).
    del _buf[:]


atexit.register(_at_exit)
if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork)


def enabled():
    """True when running under stallscope (STALLSCOPE_SOCKET set and usable)."""
    try:
        return _current() is not None
    except Exception:
        return False


def epoch(n):
    """Marks the start of epoch n (sent at once). A no-op outside stallscope."""
    try:
        st = _current()
        if st is None:
            return
        _buf.append("epoch %d %d %d %d" % (st.pid, st.rank, int(n), _mono()))
        _flush()
    except Exception:
        pass


def _attr_int(obj, name, default):
    try:
        v = getattr(obj, name, default)
        return default if v is None else int(v)
    except Exception:
        return default


def _loader_record(st, x):
    workers = _attr_int(x, "num_workers", 0)
    prefetch = _attr_int(x, "prefetch_factor", 0) if workers > 0 else 0
    try:
        length = len(x.dataset)
    except Exception:
        length = -1
    gpu = 0
    try:
        torch = sys.modules.get("torch")   # never import torch ourselves
        if torch is not None and torch.cuda.is_available():
            gpu = 1
    except Exception:
        pass
    return "loader %d %d %d %d %d %d %d %d %d" % (
        st.pid, st.rank, _attr_int(x, "batch_size", 0), workers,
        1 if _attr_int(x, "pin_memory", 0) else 0, prefetch,
        1 if _attr_int(x, "persistent_workers", 0) else 0, length, gpu)


def _timed(inner, batch=_BATCH, period=_PERIOD_NS):
    """Yields inner's items; per step two clock reads and one append."""
    mono, buf, last = _mono, _buf, _last_send
    t0 = mono()
    try:
        for item in inner:
            t1 = mono()
            yield item
            t2 = mono()          # the step ends as the next batch is asked for
            buf.append((t0, t1, t2))
            if len(buf) >= batch or t2 - last[0] >= period:
                _flush()
            t0 = t2
    except GeneratorExit:
        # Thrown at the yield when the loop is left early (break) and the
        # iterator is dropped: the step in progress ends now.
        try:
            buf.append((t0, t1, mono()))
            _flush()
        except Exception:
            pass
        raise
    _flush()                     # the loader is exhausted: the epoch's tail goes out


class _Loader:
    """What loader() returns under stallscope: iterates like the wrapped
    object, passes len() and attributes through."""

    def __init__(self, inner):
        self._inner = inner

    def __iter__(self):
        try:
            return _timed(self._inner)
        except Exception:
            return iter(self._inner)

    def __len__(self):
        return len(self._inner)

    def __bool__(self):
        return bool(self._inner)

    def __getattr__(self, name):
        if name == "_inner":
            raise AttributeError(name)
        return getattr(self._inner, name)


def loader(x):
    """Wraps a DataLoader (or any iterable) to time each step. Returns x itself
    when not under stallscope."""
    try:
        st = _current()
        if st is None:
            return x
        rec = _loader_record(st, x)
        if (id(x), rec) not in st.loaders:   # once per loader, not per epoch
            st.loaders.add((id(x), rec))
            _buf.append(rec)
            _flush()
        return _Loader(x)
    except Exception:
        return x
