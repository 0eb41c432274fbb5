"""stallscope's hook for Python training jobs (no third-party dependencies).

    import stallscope
    for epoch in range(epochs):
        stallscope.epoch(epoch)
        for batch in stallscope.loader(train_loader):
            ...

Under `stallscope run` (STALLSCOPE_SOCKET names a Unix datagram socket) it
times, per step, the wait for the next batch and the whole step, marks epochs
and reports the rank and the DataLoader's settings, as docs/hook-protocol.md
says. In a DistributedDataParallel job `stallscope.ddp(model)` also times each
gradient bucket's all-reduce, so every step reports how long the rank waited
in synchronization and how much CPU it used: the rank the others wait for is
the one that waits least. STALLSCOPE_MAX_STEPS=N ends the process (SystemExit
0; os._exit(0) when a torch.distributed group is live) once N steps are done (`stallscope scale` runs jobs for a bounded number of
steps this way). `stallscope.loader(dl, phase="eval")` (or a loop begun
under torch.no_grad() or inference_mode after a training loop) times an evaluation loop as
one span, not as training steps; `with stallscope.checkpoint():` times a
checkpoint: `report`'s time breakdown counts both. Outside stallscope
`loader(x)` returns `x` itself, `ddp(m)` returns `m` untouched, and `epoch(n)`
and `checkpoint()` do nothing. The hook never raises into
the job and never blocks: a datagram that cannot be sent is dropped and
counted. When the process's RSS keeps rising it traces allocations for a few
seconds and reports the lines and containers that hold on (_leak.py). (One
bounded wait: at exit, a DDP process waits at most 2 s for PyTorch to free
the hook's all-reduce callbacks; see _live_callbacks.)
"""
import atexit
import os
import socket
import sys
import threading
import weakref
import time

from . import _host_sync
from . import _leak
from . import _profile
from . import _stops

__all__ = ["loader", "epoch", "enabled", "ddp", "checkpoint"]

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
# stallscope.ddp(): (launch_ns, done_ns, bucket index) of each bucket's
# all-reduce, appended from the communication thread's future callbacks and
# taken at each step end.
_sync = []
_ddp_on = [False]
# Bucket records are sent with gloo only: on NCCL a bucket's future completes
# when the all-reduce is enqueued, so its times say nothing of the others.
_buckets_on = [False]
# Tokens of the bucket callbacks (_BucketDone) not yet freed. PyTorch runs a
# callback on a ProcessGroupGloo worker thread and frees it there afterwards,
# taking the GIL again: if the interpreter is finalizing by then (the job ended
# just after its last backward) that thread exits mid-C++ and the process
# aborts ("terminate called without an active exception", exit 134). At exit
# the hook waits, bounded, until every callback is freed.
_live_callbacks = set()
_CALLBACK_DRAIN_S = 2.0
# The gradient bucket buffers the hook handed to dist.all_reduce, held from
# Python, per DDP model: [(weakref to the model, {bucket index: tensor})].
# Without this, the buffer's Python object died with the hook's call while
# the all-reduce's work still held the tensor, and PyTorch then kept the
# object alive from C++: whichever thread dropped the tensor last had to
# take the GIL to free it. A ProcessGroupGloo worker did, after the last
# step, while the main thread held the GIL and joined that worker (the
# Reducer's destructor, when the model went at the job's end): a deadlock
# seen as a rank that never exits, one thread spinning. Held here, the
# tensor is freed by Python, on a thread that has the GIL. A model's
# buffers go when the next ddp() finds the model gone.
_bucket_buffers = []
# Whether this process has begun a training loop: only after one is a loop
# begun under torch.no_grad() taken for an evaluation (a job that only runs
# inference keeps its steps, STALLSCOPE_MAX_STEPS and its step ring).
_trained = [False]


def _let_go_of_gone_models():
    """Drops the bucket buffers of DDP models that are gone (their Reducers
    too, so the buffers are ours alone): on a thread that has the GIL."""
    if _bucket_buffers:
        _bucket_buffers[:] = [(m, b) for m, b in _bucket_buffers if m() is not None]
# `run --profile A:B`: this process's profiling window (_profile.Window), or
# None; a cell, read once per step by the loader generators.
_window = [None]
# This process's step ring (_stops.Ring), or None: every step is also written
# there, in shared memory that outlives the process (a rank SIGKILLed loses
# at most the step in progress). A cell, read once per loop by _timed.
_ring = [None]


class _State:
    """Per-process connection: which socket, who we are, what we counted."""

    def __init__(self, path):
        self.path = path
        self.pid = os.getpid()
        # torchrun's variables, else srun's (a task started by srun alone:
        # SLURM_STEP_NUM_TASKS is its step's; the batch script, a step of
        # one, has SLURM_NTASKS of the whole job and no step count).
        self.rank = _env_int("RANK", _env_int("SLURM_PROCID", _env_int("LOCAL_RANK", 0)))
        self.local_rank = _env_int("LOCAL_RANK", _env_int("SLURM_LOCALID", 0))
        self.world_size = _env_int("WORLD_SIZE", _env_int("SLURM_STEP_NUM_TASKS", 1))
        self.host = (socket.gethostname().split()[:1] or ["-"])[0]
        self.max_steps = _env_int("STALLSCOPE_MAX_STEPS", 0)
        self.timed = 0           # steps timed by this process (for max_steps)
        self.step = 0            # number of the next step record
        self.dropped = 0         # datagrams not sent, all told
        self.reported = 0        # of those, how many `dropped` records told
        self.loaders = set()     # (id, record) of the loaders reported
        self.leak = _leak.LeakWatch(self.pid, self.rank)   # placing a leak (_leak.py)
        self.stacks = None       # (file, signal) faulthandler writes stacks on (_stops.py)
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
    try:
        _window[0] = _profile.from_env(st.rank)
        if _window[0] is not None:
            _window[0].on_written = lambda t0, t1: _span("profile", t0, t1)
    except Exception:
        _window[0] = None
    _buf.append("hello %d %d %d %d" % (st.pid, st.rank, st.local_rank, st.world_size))
    _buf.append("host %d %d %s" % (st.pid, st.rank, st.host))
    try:
        _buf.append("script %d %d %s" % (st.pid, st.rank, _stops.script_of()))
    except Exception:
        pass
    try:
        _ring[0] = _stops.Ring.open(path, st.pid, st.rank)
        if _ring[0] is not None:
            st.stacks = _stops.arm_stacks(_ring[0], st.pid, st.rank)
    except Exception:
        _ring[0] = None
    _stops.install_excepthooks(_exception)
    return st


def _job_name():
    """The job's name for `stallscope exporter` (label job_name): STALLSCOPE_JOB,
    else torchrun's TORCHELASTIC_RUN_ID, else script-PPID (the ranks of one
    torchrun share their parent). Printable ASCII without spaces, <= 128."""
    name = os.environ.get("STALLSCOPE_JOB") or os.environ.get("TORCHELASTIC_RUN_ID")
    if not name:
        script = os.path.basename(sys.argv[0] if sys.argv and sys.argv[0] else "python")
        name = "%s-%d" % (script or "python", os.getppid())
    name = "".join(c if 32 < ord(c) < 127 else "_" for c in name)[:128]
    return name or "job"


def _close(st):
    try:
        st.sock.close()
    except Exception:
        pass
    if st.pid == os.getpid():    # a forked child leaves the parent's handler be
        _stops.disarm_stacks(st.stacks, _ring[0])
        st.stacks = None


def _lines(st, records):
    out = []
    head = "step %d %d " % (st.pid, st.rank)
    # Where CUDA is (_host_sync.py): each step's time blocked on the GPU.
    held = None
    if _host_sync.spans:
        # From the batch's arrival: a sync inside next() is data wait already.
        held = _host_sync.per_step([(r[1], r[2]) for r in records if r.__class__ is not str])
    k = 0
    for r in records:
        if r.__class__ is str:
            out.append(r)
        else:
            t0, t1, t2 = r[0], r[1], r[2]
            out.append("%s%d %d %d %d" % (head, st.step, t2, t1 - t0, t2 - t0))
            if len(r) == 6:      # stallscope.ddp(): sync wait and CPU of the step
                out.append("sync %d %d %d %d %d" % (st.pid, st.rank, st.step, r[3], r[4]))
                for a, b, i in (r[5] if _buckets_on[0] else ()):
                    out.append("bucket %d %d %d %d %d %d" % (st.pid, st.rank, st.step, i, a, b))
            if held is not None and held[k][1]:
                out.append("hostsync %d %d %d %d %d" % (st.pid, st.rank, st.step, held[k][0], held[k][1]))
            k += 1
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
        lines = _lines(st, records) if records else []
        if st.leak is not None:
            lines.extend(st.leak.tick(_last_send[0]))   # never raises
        if lines or st.dropped != st.reported:
            _send(st, lines)
    except Exception:
        pass


def _drain_callbacks(limit_s=_CALLBACK_DRAIN_S):
    """Sleeps (GIL released) until the communication threads have freed every
    bucket callback, or limit_s passes (a collective that never completes, as
    when a peer died, must not hold the exit)."""
    deadline = time.monotonic() + limit_s
    while _live_callbacks and time.monotonic() < deadline:
        time.sleep(0.001)


def _step_begins():
    """`run --profile`: a step begins; the window opens, marks or closes."""
    w = _window[0]
    if w is None:
        return
    if w.done:
        _window[0] = None
    else:
        w.begin()


def _finish_window():
    """Writes the profile of a window still open (the job ends inside it)."""
    w = _window[0]
    if w is not None and _state is not None and _state.pid == os.getpid():
        _window[0] = None
        w.finish()


def _exception(where, thread, exc_type, exc, tb):
    """An exception that ends the rank (sys.excepthook), a thread
    (threading.excepthook) or that stallscope.loader's iterator raised: one
    `exception` record, sent at once. Never raises."""
    try:
        st = _state
        if st is None or st.pid != os.getpid():
            return
        _buf.append(_stops.exception_record(st.pid, st.rank, _mono(), where, thread,
                                            exc_type, exc, tb))
        _flush()
    except Exception:
        pass


def _say_bye(st):
    """Python's exit: the stack signal disarmed in the ring first (the
    interpreter restores its default as it finalizes), then `bye`, sent."""
    ring = _ring[0]
    if ring is not None:
        ring.words[_stops.W_STACK_SIGNAL] = 0
    _buf.append("bye %d %d %d" % (st.pid, st.rank, _mono()))
    _flush()


def _at_exit():
    try:
        _finish_window()
        if _state is not None and _state.pid == os.getpid():
            _say_bye(_state)
        if _ddp_on[0]:
            _drain_callbacks()
    except Exception:
        pass


def _after_fork():
    # A forked child (DataLoader worker) starts with nothing to send; its own
    # state is made on its own first use (a new pid, a new hello). It has no
    # communication threads, so no callback it inherited is ever freed there:
    # it must not wait for them at exit.
    del _buf[:]
    _live_callbacks.clear()
    _window[0] = None            # a worker profiles nothing of its own
    _ring[0] = None              # the parent's ring is the parent's
    # A worker forked while the parent traced allocations inherits the
    # tracing; it stops it at once (it never flushes, so nothing else would).
    st = _state
    if st is not None and st.leak is not None:
        st.leak.forget_in_child()


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


def _sync_ns(t_end):
    """Time in [.., t_end] during which at least one of the step's all-reduces
    was outstanding (overlapping buckets counted once), and the step's
    (launch, done, index) spans; takes them off _sync."""
    n = len(_sync)
    spans = sorted(_sync[:n])
    del _sync[:n]
    total, cur_a, cur_b = 0, None, None
    for a, b, _ in spans:
        b = min(b, t_end)
        if cur_b is None or a > cur_b:
            if cur_b is not None:
                total += cur_b - cur_a
            cur_a, cur_b = a, b
        elif b > cur_b:
            cur_b = b
    if cur_b is not None and cur_b > cur_a:
        total += cur_b - cur_a
    return max(total, 0), spans


def _end_after_max_steps():
    """Ends the process once STALLSCOPE_MAX_STEPS steps are done: SystemExit(0),
    except in a process with a torch.distributed process group, which leaves
    with os._exit(0) once its streams are flushed and its bucket callbacks
    freed. Interpreter finalization with a live gloo group can abort in a C++
    destructor under PyTorch 1.13 ("terminate called without an active
    exception", status 134: seen in `stallscope scale`'s one-rank DDP run on a
    fresh Debian 12)."""
    dist = sys.modules.get("torch.distributed")
    live_group = False
    try:
        live_group = bool(dist is not None and dist.is_available() and dist.is_initialized())
    except Exception:
        pass
    if not live_group:
        raise SystemExit(0)
    try:
        _finish_window()         # os._exit skips atexit
        st = _state
        if st is not None and st.pid == os.getpid():
            _say_bye(st)
        if _ddp_on[0]:
            _drain_callbacks()
        for stream in (sys.stdout, sys.stderr):
            stream.flush()
    except Exception:
        pass
    os._exit(0)


def _stop_after(st):
    """STALLSCOPE_MAX_STEPS: counts a step; True once the limit is reached."""
    st.timed += 1
    return 0 < st.max_steps <= st.timed


def _timed(inner, batch=_BATCH, period=_PERIOD_NS):
    """Yields inner's items; per step two clock reads and one append."""
    mono, buf, last = _mono, _buf, _last_send
    st = _state
    cpu = time.process_time_ns
    win = _window
    ring = _ring[0]
    words = ring.words if ring is not None else None
    mask = ring.mask if ring is not None else 0
    count = ring.count if ring is not None else None
    if win[0] is not None:
        _step_begins()
    t0 = mono()
    c0 = cpu()
    try:
        for item in inner:
            t1 = mono()
            yield item
            t2 = mono()          # the step ends as the next batch is asked for
            if _ddp_on[0]:
                c2 = cpu()
                sync, spans = _sync_ns(t2)
                buf.append((t0, t1, t2, sync, c2 - c0, spans))
                c0 = c2
            else:
                buf.append((t0, t1, t2))
            if words is not None:    # the ring (_stops.py): the end last
                n = count[0]
                count[0] = n + 1
                i = 16 + (n & mask) * 3
                words[i] = t0
                words[i + 1] = t1
                words[i + 2] = t2
            if len(buf) >= batch or t2 - last[0] >= period:
                _flush()
            if st is not None and st.max_steps and _stop_after(st):
                _flush()
                _end_after_max_steps()
            t0 = t2
            if win[0] is not None:
                _step_begins()
                t0 = mono()      # starting or writing the profile is no step's time
    except GeneratorExit:
        # Thrown at the yield when the loop is left early (break) and the
        # iterator is dropped: the step in progress ends now.
        try:
            t2 = mono()
            if _ddp_on[0]:
                sync, spans = _sync_ns(t2)
                buf.append((t0, t1, t2, sync, cpu() - c0, spans))
            else:
                buf.append((t0, t1, t2))
            if ring is not None:
                ring.append(t0, t1, t2)
            _flush()
            if st is not None and st.max_steps:
                st.timed += 1    # counted; the limit ends the process at its next step
        except Exception:
            pass
        raise
    except Exception as e:
        # Raised by the wrapped iterator (a DataLoader whose worker died:
        # "DataLoader worker (pid N) is killed by signal: ..."): told, then
        # passed on untouched.
        _exception("loader", threading.current_thread().name, type(e), e, e.__traceback__)
        raise
    if win[0] is not None:
        win[0].pause()           # the step begun at the last next() was none
    _flush()                     # the loader is exhausted: the epoch's tail goes out


def _span(kind, t0, t1):
    """A `span` record: a checkpoint or an evaluation loop, sent at once."""
    try:
        st = _current()
        if st is None:
            return
        _buf.append("span %d %d %s %d %d" % (st.pid, st.rank, kind, t0, t1))
        _flush()
    except Exception:
        pass


def _untimed(inner):
    """An evaluation loop: inner's items, and one span for the whole loop
    (also when left by a break or an exception); no step records."""
    t0 = _mono()
    try:
        for item in inner:
            yield item
    except Exception as e:
        _exception("loader", threading.current_thread().name, type(e), e, e.__traceback__)
        raise
    finally:
        _span("eval", t0, _mono())


def _grad_off():
    """True when torch is loaded and the loop starts under torch.no_grad()
    or inference_mode: an evaluation loop."""
    torch = sys.modules.get("torch")
    if torch is None:
        return False
    try:
        if not torch.is_grad_enabled():
            return True
        mode = getattr(torch, "is_inference_mode_enabled", None)
        return bool(mode is not None and mode())
    except Exception:
        return False


class _Loader:
    """What loader() returns under stallscope: iterates like the wrapped
    object, passes len() and attributes through. `phase`: "eval", "train",
    or None (eval when the loop starts with gradients off)."""

    def __init__(self, inner, phase=None):
        self._inner = inner
        self._phase = phase

    def __iter__(self):
        try:
            _let_go_of_gone_models()
            phase = self._phase
            if phase == "eval" or (phase is None and _trained[0] and _grad_off()):
                return _untimed(self._inner)
            _trained[0] = True
            torch = sys.modules.get("torch")
            if torch is not None and _host_sync.install(torch):
                _host_sync.loop_thread()
            return _timed(self._inner)
        except Exception:
            return iter(self._inner)

    def __len__(self):
        return len(self._inner)

    def __bool__(self):
        return bool(self._inner)

    def __getattr__(self, name):
        if name in ("_inner", "_phase"):
            raise AttributeError(name)
        return getattr(self._inner, name)


_rebuilt = {}                # id(original) -> (original, rebuilt): one rebuild per loader


def _with_workers(x):
    """STALLSCOPE_LOADER_WORKERS=N (`stallscope ab --loader-workers N`): a torch
    DataLoader rebuilt with num_workers=N (same dataset, sampling, batching,
    collate and pinning); anything else, or no variable, is returned as is."""
    n = _env_int("STALLSCOPE_LOADER_WORKERS", -1)
    if n < 0:
        return x
    torch = sys.modules.get("torch")
    data = getattr(getattr(torch, "utils", None), "data", None)
    if data is None or not isinstance(x, data.DataLoader) or x.num_workers == n:
        return x
    done = _rebuilt.get(id(x))
    if done is not None and done[0] is x:
        return done[1]
    kw = dict(num_workers=n, collate_fn=x.collate_fn, pin_memory=x.pin_memory,
              worker_init_fn=x.worker_init_fn, generator=x.generator)
    if n > 0:
        kw.update(timeout=x.timeout, persistent_workers=x.persistent_workers,
                  multiprocessing_context=x.multiprocessing_context)
        if x.prefetch_factor:
            kw["prefetch_factor"] = x.prefetch_factor
    if isinstance(x.dataset, data.IterableDataset):
        kw.update(batch_size=x.batch_size, drop_last=x.drop_last)
    elif x.batch_size is not None:            # default batching: its sampler keeps shuffling
        kw.update(sampler=x.sampler, batch_size=x.batch_size, drop_last=x.drop_last)
    elif x.batch_sampler is not None:         # a batch_sampler of the job's own
        kw["batch_sampler"] = x.batch_sampler
    else:
        kw.update(batch_size=None, sampler=x.sampler)
    new = data.DataLoader(x.dataset, **kw)
    _rebuilt[id(x)] = (x, new)
    return new


def loader(x, phase=None):
    """Wraps a DataLoader (or any iterable) to time each step. Returns x itself
    when not under stallscope. phase="eval": an evaluation loop, timed as one
    span (no steps); "train": training steps even under torch.no_grad();
    None: eval when the loop starts with gradients off after this process
    began a training loop (before one, a job that only infers keeps its
    steps). Any other value is taken as None (the hook never raises into
    the job)."""
    try:
        st = _current()
        if st is None:
            return x
        if phase == "eval":                  # no steps: its settings are no training loader's
            return _Loader(x, "eval")
        try:
            x = _with_workers(x)
        except Exception:        # an unusual loader: time it as it is
            pass
        rec = _loader_record(st, x)
        if not st.loaders:                   # first loader: name the job (exporter)
            _buf.append("job %d %d %s" % (st.pid, st.rank, _job_name()))
            slurm_job = os.environ.get("SLURM_JOB_ID", "")
            if slurm_job.isdigit() and len(slurm_job) <= 20:
                _buf.append("slurm %d %d %s" % (st.pid, st.rank, slurm_job))
        if (id(x), rec) not in st.loaders:   # once per loader, not per epoch
            st.loaders.add((id(x), rec))
            _buf.append(rec)
            _flush()
        return _Loader(x, phase if phase in ("train", "eval") else None)
    except Exception:
        return x


class checkpoint:
    """`with stallscope.checkpoint(): torch.save(...)`: the time inside is a
    checkpoint in `report`'s time breakdown (a `span` record). Nothing is
    sent outside stallscope; exceptions pass through."""

    __slots__ = ("_t0",)

    def __init__(self):
        self._t0 = 0

    def __enter__(self):
        self._t0 = _mono()
        return self

    def __exit__(self, *exc):
        _span("checkpoint", self._t0, _mono())
        return False


def ddp(model):
    """Registers a DDP communication hook on `model` (a DistributedDataParallel)
    that all-reduces each gradient bucket as DDP's default does (sum, then
    divide by the world size) and times it from launch to completion. Each
    step record is then followed by a `sync` record: the time the rank waited
    in gradient synchronization and its process CPU time in the step. Returns
    model. A no-op outside stallscope, without torch.distributed initialised,
    or for a model that takes no communication hook; never raises."""
    try:
        if _current() is None:
            return model
        dist = sys.modules.get("torch.distributed")
        if dist is None or not dist.is_available() or not dist.is_initialized():
            return model
        if not hasattr(model, "register_comm_hook"):
            return model
        world = dist.get_world_size()
        mono, spans, live = _mono, _sync, _live_callbacks
        _let_go_of_gone_models()
        held = {}
        try:
            _bucket_buffers.append((weakref.ref(model), held))
        except TypeError:        # a model without weak references: held for good
            _bucket_buffers.append((lambda: model, held))
        tokens = iter(range(1 << 62))

        class _BucketDone:
            """The all-reduce's completion callback: notes when it finished
            and averages the bucket. Counted live until freed (see
            _live_callbacks); set.add/discard are atomic under the GIL."""
            __slots__ = ("t_launch", "index", "token")

            def __init__(self, t_launch, index):
                self.t_launch = t_launch
                self.index = index
                self.token = next(tokens)
                live.add(self.token)

            def __call__(self, f):
                spans.append((self.t_launch, mono(), self.index))
                r = _ring[0]
                if r is not None:
                    r.collective_done()
                return f.value()[0].div_(world)

            def __del__(self):
                live.discard(self.token)

        def _allreduce_timed(state, bucket):
            done = _BucketDone(mono(), bucket.index())
            r = _ring[0]
            if r is not None:
                r.collective_entered(done.t_launch)
            buf = bucket.buffer()
            held[bucket.index()] = buf   # see _bucket_buffers
            fut = dist.all_reduce(buf, group=state, async_op=True).get_future()
            return fut.then(done)

        model.register_comm_hook(None, _allreduce_timed)
        _ddp_on[0] = True
        try:
            _buckets_on[0] = str(dist.get_backend()) == "gloo"
        except Exception:
            _buckets_on[0] = False
    except Exception:
        pass
    return model
