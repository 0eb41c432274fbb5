"""Placing a leak from inside the job: the hook's half of memory.rss_growth.

stallscope sees a job's RSS grow from outside; the line that allocates and
the object that holds on are only visible from inside. The hook decides by
itself (no channel from stallscope to the job): at most once a second, when
it sends a datagram anyway, it reads its process's RSS from /proc/self/statm.
When RSS rose at every one of the last WINDOW readings, by MIN_RISE in all
(or when the readings kept every 30 s rose at each of the last 5, by
MIN_RISE in all: a slow leak; or at once with STALLSCOPE_TRACE_ALLOC=on,
which `stallscope run --trace-alloc` sets; `off` disables it), it starts
tracemalloc with FRAMES frames, takes a baseline snapshot and SNAPSHOTS more,
SPACING readings apart, and reports:

- `alloc_site` records: the lines whose live Python allocations grew most
  between the baseline and the last snapshot (`compare_to(..., 'traceback')`,
  each allocation counted for the innermost frame of the job's own code);
- `alloc_holder` records: the Python containers whose tensor storage grew
  most while traced (then the largest), with how much they hold. Tensor storage is allocated
  by torch, not by Python, so tracemalloc does not see it; the census walks
  the lists, tuples, dicts, sets and deques bound in the job's own modules
  (not the standard library's or site-packages') and in the main thread's
  frames of the job's own code, and sums the distinct storages of the CPU
  tensors in them (RSS is what grew); with each, the line of the job where
  it grows (see _Census.made_at). Before Python 3.13 reading a running
  frame's f_locals leaves a snapshot dict on the frame that holds its locals;
  the census empties it again so that no batch is kept alive.

Then it stops tracemalloc: tracing costs while it runs (bench/trace_alloc_cost.py
measures it) and never after; a DataLoader worker forked while it runs stops
its inherited copy at once. It traces once per process. Every failure inside is caught and sent as an
`alloc_note` record; nothing here raises into the job. Never imports torch.
"""
import functools
import itertools
import os
import sys
import threading

_PERIOD_NS = 1_000_000_000   # RSS read at most this often
_WINDOW = 6                  # readings; RSS rising at each of the last 5 steps...
_MIN_RISE = 32 << 20         # ...by this much in all starts tracing
_SLOW_PERIOD_NS = 30 * _PERIOD_NS   # the same over readings this far apart: a slow leak
_WARMUP_READINGS = 3         # the first readings (model and loader start-up) are not judged
_SNAPSHOTS = 3               # snapshots compared with the baseline one
_SPACING = 1                 # readings between snapshots
_FRAMES = 8                  # frames kept per allocation: enough to reach the job's line
_TOP_SITES = 5
_TOP_HOLDERS = 3
_MIN_HOLDER_BYTES = 1 << 20
_MAX_ITEMS = 200_000         # items looked at per container
_NEWEST = 8                  # newest items of a holder whose making is looked up
_PAGE = os.sysconf("SC_PAGE_SIZE") if hasattr(os, "sysconf") else 4096


def _rss_bytes():
    with open("/proc/self/statm", "rb") as f:
        return int(f.read().split()[1]) * _PAGE


def _mode():
    v = os.environ.get("STALLSCOPE_TRACE_ALLOC", "").strip().lower()
    if v in ("on", "1", "yes", "true"):
        return "on"
    if v in ("off", "0", "no", "false"):
        return "off"
    return "auto"


@functools.lru_cache(maxsize=1)
def _library_dirs():
    """The interpreter's library, site-packages and the hook's own folder
    (computed once: the tracing asks for every frame)."""
    dirs = set()
    for p in (sys.prefix, sys.base_prefix, sys.exec_prefix):
        if p:
            dirs.add(os.path.join(os.path.realpath(p), "lib"))
    for p in sys.path:
        if p and ("site-packages" in p or "dist-packages" in p):
            dirs.add(os.path.realpath(p))
    dirs.add(os.path.dirname(os.path.realpath(__file__)))   # the hook itself
    return tuple(d + os.sep for d in dirs)


@functools.lru_cache(maxsize=4096)
def _is_library(filename):
    """Whether a file belongs to the interpreter, site-packages or the hook."""
    return os.path.realpath(filename).startswith(_library_dirs())


def _own_modules():
    """(name, module) of the job's own modules: __main__ and those whose file
    is outside the interpreter's library and site-packages."""
    out = []
    for name, m in list(sys.modules.items()):
        f = getattr(m, "__file__", None)
        if name == "__main__" or (f and not _is_library(f)):
            out.append((name, m))
    return out


def _short(path):
    try:
        rel = os.path.relpath(path)
        return rel if not rel.startswith("..") else path
    except ValueError:
        return path


class _Census:
    """Tensors held by containers, by where the container is bound."""

    def __init__(self, tensor_type):
        self.tensor = tensor_type

    def _storage(self, t):
        try:
            s = t.untyped_storage()
        except Exception:
            s = t.storage()
        return s.data_ptr(), s.nbytes()

    def made_at(self, obj, name, path, sites):
        """Where obj grows, "file:line" of the job's code, or None. First
        where its newest tensors were made (tracemalloc.get_object_traceback;
        it answers None on Python 3.11 for every object); else the line of
        `path` that adds to `name` (NAME.append(, .extend(, .insert(, .add(,
        NAME[...] =, NAME +=), one of the growth `sites` where several do."""
        tm = sys.modules.get("tracemalloc")
        if tm is not None and tm.is_tracing():
            votes = {}
            for x in _newest(obj):
                tb = tm.get_object_traceback(x) if isinstance(x, self.tensor) else None
                for frame in reversed(list(tb or ())):     # innermost first
                    if not _is_library(frame.filename):
                        key = "%s:%d" % (_short(frame.filename), frame.lineno)
                        votes[key] = votes.get(key, 0) + 1
                        break
            if votes:
                return max(votes, key=votes.get)
        if not path or not name:
            return None
        import linecache
        import re
        adds = re.compile(r"(?<![\w.])%s\s*(\.\s*(append|extend|insert|add|update|appendleft|"
                          r"extendleft|setdefault)\s*\(|\[[^\]]*\]\s*=(?!=)|\+=)" % re.escape(name))
        found = [i for i, text in enumerate(linecache.getlines(path), 1) if adds.search(text)]
        if not found:
            return None
        where = _short(path)
        grown = {s for s in sites}
        for i in found:
            if "%s:%d" % (where, i) in grown:
                return "%s:%d" % (where, i)
        return "%s:%d" % (where, found[0])

    def measure(self, obj):
        """(tensors, bytes of distinct storages) in obj, one level of nested
        containers deep (a list of (input, target) tuples)."""
        storages = {}
        count = 0
        looked = 0
        stack = [(obj, 0)]
        while stack and looked < _MAX_ITEMS:
            o, depth = stack.pop()
            if isinstance(o, dict):
                items = o.values()
            elif isinstance(o, (list, tuple, set, frozenset)) or _is_deque(o):
                items = o
            else:
                continue
            for x in itertools.islice(items, _MAX_ITEMS - looked):
                looked += 1
                if isinstance(x, self.tensor):
                    try:
                        if x.device.type != "cpu":   # GPU memory is not the RSS that grew
                            continue
                    except Exception:
                        pass
                    count += 1
                    try:
                        ptr, n = self._storage(x)
                        storages[ptr] = n
                    except Exception:
                        pass
                elif depth < 1 and isinstance(x, (list, tuple, dict, set)):
                    stack.append((x, depth + 1))
        return count, sum(storages.values())

    def take(self):
        """{description: (tensors, bytes, container, name, file)} of the
        containers holding tensors."""
        out = {}
        seen = set()                # a container bound twice is counted once

        def add(where, v, var, path):
            if id(v) in seen:
                return
            seen.add(id(v))
            n, b = self.measure(v)
            if n:
                out[where] = (n, b, v, var, path)

        for name, m in _own_modules():
            try:
                where = os.path.basename(getattr(m, "__file__", "") or name)
                for var, v in list(vars(m).items()):
                    if _is_container(v):
                        add("the module-level %s '%s' in %s" % (type(v).__name__, var, where), v,
                            var, getattr(m, "__file__", None))
            except Exception:
                continue
        frame = sys._current_frames().get(threading.main_thread().ident)
        while frame is not None:
            code = frame.f_code
            own = not _is_library(code.co_filename)
            # A module's locals are its globals; the hook's and libraries'
            # frames hold the job's batch in passing, not a leak.
            if own and code.co_name != "<module>":
                snapshot = None
                try:
                    snapshot = frame.f_locals
                    for var, v in list(snapshot.items()):
                        if _is_container(v):
                            add("the local %s '%s' of %s() in %s" % (
                                type(v).__name__, var, code.co_name,
                                os.path.basename(code.co_filename)), v, var, code.co_filename)
                except Exception:
                    pass
                finally:
                    if snapshot is not None and sys.version_info < (3, 13):
                        try:
                            snapshot.clear()   # release what the snapshot holds
                        except Exception:
                            pass
            frame = frame.f_back
        return out


def _newest(obj):
    """The last _NEWEST items (values of a dict), without copying the rest."""
    if isinstance(obj, dict):
        return list(itertools.islice(reversed(obj.values()), _NEWEST))
    if isinstance(obj, (set, frozenset)):
        return list(itertools.islice(obj, _NEWEST))
    try:
        return list(obj[-_NEWEST:]) if not _is_deque(obj) else \
            list(itertools.islice(reversed(obj), _NEWEST))
    except Exception:
        return []


def _is_deque(o):
    return type(o).__name__ == "deque" and type(o).__module__ == "collections"


def _is_container(o):
    return isinstance(o, (list, tuple, dict, set)) or _is_deque(o)


class LeakWatch:
    """Called at each datagram flush with the time; returns records to send."""

    def __init__(self, pid, rank):
        self.pid, self.rank = pid, rank
        self.mode = _mode()
        self.state = "off" if self.mode == "off" else "watch"
        self.last_ns = 0
        self.readings = []
        self.slow = []             # readings _SLOW_PERIOD_NS apart
        self.last_slow_ns = 0
        self.seen = 0
        self.since_snapshot = 0
        self.first = None          # the baseline snapshot
        self.snapshots = 0
        self.census0 = {}
        self.tracemalloc = None
        self.started = False       # tracemalloc started here (a job's own tracing is left on)

    def tick(self, now_ns):
        if self.state in ("off", "done") or now_ns - self.last_ns < _PERIOD_NS:
            return []
        self.last_ns = now_ns
        try:
            if self.state == "watch":
                return self._watch(now_ns)
            return self._trace(now_ns)
        except Exception as e:        # never into the job: said, and tracing ends
            return self._fail(now_ns, e)

    def _watch(self, now_ns):
        if self.mode == "auto":
            rss = _rss_bytes()
            self.seen += 1
            if self.seen <= _WARMUP_READINGS:
                return []
            self.readings.append(rss)
            del self.readings[:-_WINDOW]
            if now_ns - self.last_slow_ns >= _SLOW_PERIOD_NS:
                self.last_slow_ns = now_ns
                self.slow.append(rss)
                del self.slow[:-_WINDOW]
            why = None
            for r, apart in ((self.readings, "1 s"), (self.slow, "30 s")):
                rising = len(r) == _WINDOW and all(b > a for a, b in zip(r, r[1:]))
                if rising and r[-1] - r[0] >= _MIN_RISE:
                    why = "RSS rose at each of %d readings %s or more apart, %d MiB in all" % (
                        _WINDOW - 1, apart, (r[-1] - r[0]) >> 20)
                    break
            if why is None:
                return []
        else:
            why = "STALLSCOPE_TRACE_ALLOC=on"
        import tracemalloc
        self.tracemalloc = tracemalloc
        if not tracemalloc.is_tracing():
            tracemalloc.start(_FRAMES)
            self.started = True
        # The baseline snapshot comes SPACING readings on, not now: taken at
        # the start it would hold nothing yet, and everything the job keeps in
        # flight (batches in the loader's queue) would read as growth.
        self.first = None
        self.census0 = {k: v[:2] for k, v in self._census().items()}   # no references kept
        self.state = "trace"
        self.since_snapshot = 0
        return ["alloc_note %d %d %d tracing started: %s" % (self.pid, self.rank, now_ns, why)]

    def _snapshot(self):
        tm = self.tracemalloc
        return tm.take_snapshot().filter_traces((
            tm.Filter(False, tm.__file__),
            tm.Filter(False, __file__),
            tm.Filter(False, "<frozen importlib._bootstrap>"),
            tm.Filter(False, "<unknown>")))

    def _sites(self, last):
        """The top growth sites (size, count, "file:line"): each allocation's
        growth goes to the innermost frame of the job's own code (a tensor
        made inside torch is the line of the job that asked for it), else its
        innermost frame; the job's lines first, then by growth."""
        by_line = {}
        for diff in last.compare_to(self.first, "traceback"):
            if diff.size_diff <= 0:
                continue
            frames = list(diff.traceback)       # oldest first
            chosen = frames[-1]
            own = False
            for frame in reversed(frames):
                if not _is_library(frame.filename):
                    chosen, own = frame, True
                    break
            key = (own, _short(chosen.filename), chosen.lineno)
            size, count = by_line.get(key, (0, 0))
            by_line[key] = (size + diff.size_diff, count + diff.count_diff)
        ranked = sorted(by_line.items(), key=lambda kv: (kv[0][0], kv[1][0]), reverse=True)
        return [(size, count, "%s:%d" % (f, line))
                for (own, f, line), (size, count) in ranked[:_TOP_SITES]]

    def _census(self):
        torch = sys.modules.get("torch")
        if torch is None:
            return {}
        return _Census(torch.Tensor).take()

    def _trace(self, now_ns):
        self.since_snapshot += 1
        if self.since_snapshot < _SPACING:
            return []
        self.since_snapshot = 0
        last = self._snapshot()
        self.snapshots += 1
        if self.first is None:
            self.first = last
            return []
        if self.snapshots <= _SNAPSHOTS:
            return []
        out = []
        sites = self._sites(last)
        for size, count, where in sites:
            out.append("alloc_site %d %d %d %d %d %s" % (
                self.pid, self.rank, now_ns, size, count, where))
        torch = sys.modules.get("torch")
        census = _Census(torch.Tensor) if torch is not None else None
        found = census.take() if census is not None else {}
        grown = {w: v[1] - self.census0.get(w, (0, 0))[1] for w, v in found.items()}
        # What grew while traced first (a preloaded dataset is large, not growing).
        holders = sorted(found.items(), key=lambda kv: (grown[kv[0]] > 0, grown[kv[0]], kv[1][1]),
                         reverse=True)
        for where, (n, b, obj, name, path) in holders[:_TOP_HOLDERS]:
            if b < _MIN_HOLDER_BYTES:
                continue
            grew = grown[where]
            made = census.made_at(obj, name, path, [w for _, _, w in sites]) or "-"
            out.append("alloc_holder %d %d %d %d %d %d %s %s" % (
                self.pid, self.rank, now_ns, n, b, grew, made.replace(" ", "%20"), where))
        del found, holders
        self._stop()
        out.append("alloc_note %d %d %d tracing stopped after %d snapshots" % (
            self.pid, self.rank, now_ns, self.snapshots))
        return out

    def forget_in_child(self):
        """In a process forked while tracing: stop the inherited tracing."""
        try:
            if self.state == "trace":
                self._stop()
            self.state = "done"
        except Exception:
            self.state = "done"

    def _stop(self):
        self.state = "done"
        self.first = None
        self.census0 = {}
        tm = self.tracemalloc
        if tm is not None and self.started and tm.is_tracing():
            tm.stop()

    def _fail(self, now_ns, e):
        try:
            self._stop()
        except Exception:
            self.state = "done"
        text = ("%s: %s" % (type(e).__name__, e)).replace("\n", " ")[:300]
        return ["alloc_note %d %d %d tracing failed: %s" % (self.pid, self.rank, now_ns, text)]
