"""What the hook keeps so that `stallscope run` can say how a rank stopped.

- Ring: this process's steps in a file beside the hook's socket
  (`ring-PID`), mapped shared, so what a rank reported outlives it: a rank
  SIGKILLed loses at most the step in progress, not the up to 64 records or
  500 ms waiting for the next datagram. A step is a slot of three times, its
  end written last (a slot cut short keeps its old end, and reads as old);
  the slot's place comes from a counter kept in Python, not in the file:
  the reader orders slots by their end. The recorder reads it when the rank
  is gone, and while no rank finishes a step (a hang) for where each rank
  is: its steps, its last step's end, and whether it waits in a gradient
  all-reduce (stallscope.ddp) since when. Layout: docs/hook-protocol.md.
- arm_stacks: faulthandler dumps every thread's Python stack into
  STALLSCOPE_STACKS/rank-R.PID.txt on the real-time signal
  STALLSCOPE_STACK_SIGNAL, which `run` sends when it judges a hang. Never
  armed over a handler the job installed; the ring says whether it is armed
  (the recorder never sends a signal it would die of).
- install_excepthooks / exception_record: the exception that ends a rank
  (sys.excepthook) or a thread (threading.excepthook), as one `exception`
  record: its type, message and innermost frame. The job's own hooks still
  run, after ours.

Nothing here raises into the job; stdlib only.
"""
import faulthandler
import mmap
import os
import signal
import sys
import threading

MAGIC = 0x676E6972_6C747373   # "sstlring", little-endian
VERSION = 1
HEADER_WORDS = 16
SLOT_WORDS = 3                # t_start, t_got_batch, t_end (monotonic ns)
SLOTS = 4096                  # a power of two: the hot path masks

# Header words (int64).
W_MAGIC, W_VERSION, W_PID, W_RANK, W_SLOTS, W_SLOT_WORDS = 0, 1, 2, 3, 4, 5
# Word 6 is unused (steps are told apart by their end times).
W_LAUNCHED, W_DONE = 7, 8     # gradient all-reduces launched / completed
W_WAIT_SINCE = 9              # launch (ns) of the oldest one not completed
W_MAIN_THREAD = 10            # threading.main_thread().ident (pthread_self)
W_STACK_SIGNAL = 11           # the signal faulthandler answers; 0: not armed

_MAX_TEXT = 300


class Ring:
    """The mapped ring; `words` is a memoryview of int64 the hot path writes."""

    __slots__ = ("words", "mask", "count", "_map")

    @staticmethod
    def open(socket_path, pid, rank):
        if os.environ.get("STALLSCOPE_RING", "1") == "0":
            return None
        path = os.path.join(os.path.dirname(socket_path), "ring-%d" % pid)
        size = (HEADER_WORDS + SLOTS * SLOT_WORDS) * 8
        fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_TRUNC | getattr(os, "O_CLOEXEC", 0) |
                     getattr(os, "O_NOFOLLOW", 0), 0o600)
        try:
            os.ftruncate(fd, size)
            m = mmap.mmap(fd, size, mmap.MAP_SHARED, mmap.PROT_READ | mmap.PROT_WRITE)
        finally:
            os.close(fd)
        r = Ring()
        r._map = m
        r.words = memoryview(m).cast("q")
        r.mask = SLOTS - 1
        r.count = [0]            # steps written; step n's slot is n % SLOTS
        w = r.words
        w[W_PID], w[W_RANK], w[W_SLOTS], w[W_SLOT_WORDS] = pid, rank, SLOTS, SLOT_WORDS
        w[W_VERSION] = VERSION
        try:
            w[W_MAIN_THREAD] = threading.main_thread().ident or 0
        except Exception:
            pass
        w[W_MAGIC] = MAGIC       # last: a reader sees a whole header or none
        return r

    def append(self, t0, t1, t2):
        w = self.words
        n = self.count[0]
        self.count[0] = n + 1
        i = HEADER_WORDS + (n & self.mask) * SLOT_WORDS
        w[i] = t0
        w[i + 1] = t1
        w[i + 2] = t2

    def collective_entered(self, t_ns):
        w = self.words
        if w[W_LAUNCHED] == w[W_DONE]:
            w[W_WAIT_SINCE] = t_ns
        w[W_LAUNCHED] += 1

    def collective_done(self):
        self.words[W_DONE] += 1


def arm_stacks(ring, pid, rank):
    """Registers faulthandler on STALLSCOPE_STACK_SIGNAL into a file of
    STALLSCOPE_STACKS; returns (the open file, the signal), kept by the
    caller until disarm_stacks, or None."""
    folder = os.environ.get("STALLSCOPE_STACKS")
    try:
        signum = int(os.environ.get("STALLSCOPE_STACK_SIGNAL", "0"))
    except ValueError:
        return None
    if not folder or signum <= 0 or not hasattr(faulthandler, "register"):
        return None
    try:
        # The job's own handler is never replaced: one set from Python
        # (getsignal), or from C (None there; SigCgt in /proc says so too).
        if signal.getsignal(signum) is not signal.SIG_DFL or _handled_in_c(signum):
            return None
        f = open(os.path.join(folder, "rank-%d.%d.txt" % (rank, pid)), "w")
        faulthandler.register(signum, file=f, all_threads=True, chain=False)
    except Exception:
        return None
    ring.words[W_STACK_SIGNAL] = signum
    return (f, signum)


def _handled_in_c(signum):
    """Whether the kernel sees this process catch or ignore `signum`
    (SigCgt/SigIgn of /proc/self/status): a handler Python does not know."""
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith(("SigCgt:", "SigIgn:")):
                    if (int(line.split()[1], 16) >> (signum - 1)) & 1:
                        return True
    except Exception:
        return False
    return False


def disarm_stacks(armed, ring=None):
    """Undoes arm_stacks (a new socket path, a new state, the exit): the
    ring says so first (the recorder then never sends the signal), then the
    signal back to its default and the file closed."""
    if ring is not None:
        try:
            ring.words[W_STACK_SIGNAL] = 0
        except Exception:
            pass
    if armed is None:
        return
    try:
        faulthandler.unregister(armed[1])
    except Exception:
        pass
    try:
        armed[0].close()
    except Exception:
        pass


def _clean(text):
    text = " ".join(str(text).split())
    return text[:_MAX_TEXT]


def _innermost(tb):
    frame = None
    while tb is not None:
        frame = tb
        tb = tb.tb_next
    if frame is None:
        return "-"
    code = frame.tb_frame.f_code
    return "%s:%d in %s" % (code.co_filename, frame.tb_lineno, code.co_name)


def exception_record(pid, rank, t_ns, where, thread, exc_type, exc, tb):
    """exception PID RANK T_NS WHERE<TAB>THREAD<TAB>TYPE<TAB>MESSAGE<TAB>FRAME"""
    name = getattr(exc_type, "__qualname__", None) or str(exc_type)
    module = getattr(exc_type, "__module__", "builtins")
    if module and module != "builtins":
        name = "%s.%s" % (module, name)
    fields = [_clean(where), _clean(thread) or "-", _clean(name),
              _clean(exc) if exc is not None else "", _clean(_innermost(tb))]
    return "exception %d %d %d %s" % (pid, rank, t_ns, "\t".join(f.replace("\t", " ")
                                                                   for f in fields))


def script_of():
    """The script this interpreter runs, for `history`'s jobs: `-m MODULE`,
    else sys.argv[0] made absolute (against the folder the job started in),
    else `-c`."""
    main = sys.modules.get("__main__")
    spec = getattr(main, "__spec__", None)
    name = getattr(spec, "name", None)
    if name and name != "__main__":
        return _clean("-m " + name)
    first = sys.argv[0] if sys.argv else ""
    if first in ("", "-c", "-"):
        return "-c"
    return _clean(os.path.abspath(first))


_installed = [False]


def install_excepthooks(report):
    """report(where, thread, exc_type, exc, tb) before the job's own hooks."""
    if _installed[0]:
        return
    _installed[0] = True
    before = sys.excepthook

    def excepthook(exc_type, exc, tb):
        try:
            if not (isinstance(exc_type, type) and issubclass(exc_type, KeyboardInterrupt)):
                report("main", threading.current_thread().name, exc_type, exc, tb)
        finally:
            before(exc_type, exc, tb)

    sys.excepthook = excepthook
    if hasattr(threading, "excepthook"):
        before_thread = threading.excepthook

        def thread_hook(args):
            try:
                if args.exc_type is not SystemExit:
                    name = args.thread.name if args.thread is not None else "-"
                    report("thread", name, args.exc_type, args.exc_value, args.exc_traceback)
            finally:
                before_thread(args)

        threading.excepthook = thread_hook
