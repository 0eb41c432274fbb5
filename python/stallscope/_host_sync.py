"""Host syncs: the time a training loop's thread is blocked waiting for the
GPU, which the step's clock alone counts as compute.

A CUDA call returns before the GPU has done the work; the calls below make
the host wait until it has: torch.cuda.synchronize(), a torch.cuda.Event's
or Stream's synchronize(), and on a CUDA tensor .item(), .tolist(), .cpu(),
bool(), float() and int() (a loss printed every step, `if loss < best:`).
install() wraps them, once per process, where torch.cuda.is_available(); on
a machine without CUDA nothing is wrapped (no call there waits for a GPU)
and nothing is added to any call. A wrapped call made on the thread of the
training loop (set by the loop, loop_thread()) appends its (start, end)
monotonic ns to `spans`; the hook's flush hands each step its syncs
(per_step()) and sends them as `hostsync` records (docs/hook-protocol.md).
Calls from other threads and from forked children are not timed. At most
_MAX spans wait at once: a job that syncs outside any loop does not grow.
Not timed: .to("cpu"), .numpy() after .cpu() (the .cpu() is), copies
with non_blocking=False written as copy_().
"""
import os
import threading
import time

_mono = time.monotonic_ns
_ident = threading.get_ident

spans = []                   # (start_ns, end_ns), in the order they ended
_MAX = 65536
_loop = [None]               # the ident of the thread running the training loop
_inside = [False]            # a timed call in progress (one sync calling another)
_done = [None]               # install()'s answer, once asked


def loop_thread():
    """The calling thread runs the training loop from now on. Spans still
    waiting are before this loop's first step: dropped."""
    _loop[0] = _ident()
    del spans[:]


def _after_fork():
    _loop[0] = None
    _inside[0] = False
    del spans[:]


def _timed(fn, cuda_only=False):
    """fn, timed when called on the loop's thread (and, cuda_only, on a
    CUDA tensor: its first argument)."""
    def call(*args, **kwargs):
        if (_inside[0] or _loop[0] != _ident() or len(spans) >= _MAX
                or (cuda_only and not getattr(args[0] if args else None, "is_cuda", False))):
            return fn(*args, **kwargs)
        _inside[0] = True
        t0 = _mono()
        try:
            return fn(*args, **kwargs)
        finally:
            spans.append((t0, _mono()))
            _inside[0] = False
    call.__wrapped__ = fn
    call.__name__ = getattr(fn, "__name__", "call")
    call.__doc__ = getattr(fn, "__doc__", None)
    return call


def install(torch):
    """Wraps the synchronizing calls once, where torch has CUDA; True when
    they are wrapped (now or before)."""
    if _done[0] is not None:
        return _done[0]
    try:
        _done[0] = bool(torch.cuda.is_available())
    except Exception:
        _done[0] = False
    if not _done[0]:
        return False
    cuda = torch.cuda
    for owner, name in ((cuda, "synchronize"),
                        (getattr(cuda, "Event", None), "synchronize"),
                        (getattr(cuda, "Stream", None), "synchronize")):
        fn = getattr(owner, name, None) if owner is not None else None
        if fn is not None and not hasattr(fn, "__wrapped__"):
            try:
                setattr(owner, name, _timed(fn))
            except Exception:
                pass
    for name in ("item", "tolist", "cpu", "__bool__", "__float__", "__int__"):
        fn = getattr(torch.Tensor, name, None)
        if fn is not None and not hasattr(fn, "__wrapped__"):
            try:
                setattr(torch.Tensor, name, _timed(fn, cuda_only=True))
            except Exception:
                pass
    return True


def per_step(bounds):
    """bounds: the (start_ns, end_ns) of the steps about to be sent, in
    order. Returns [(ns, calls)] per step, or None when no step waited.
    Takes the spans up to the last step's end; those after it wait for the
    next steps; those before a step (between loops) are dropped."""
    if not spans or not bounds:
        return None
    n = len(spans)
    mine = spans[:n]
    del spans[:n]
    last = bounds[-1][1]
    later = [s for s in mine if s[0] >= last]
    if later:
        spans[:0] = later
    out = [(0, 0)] * len(bounds)
    i, any_sync = 0, False
    for a, b in sorted(s for s in mine if s[0] < last):
        while i < len(bounds) and bounds[i][1] <= a:
            i += 1
        if i == len(bounds):
            break
        start, end = bounds[i]
        if a < start:
            continue
        ns, calls = out[i]
        out[i] = (ns + max(0, min(b, end) - a), calls + 1)
        any_sync = True
    return out if any_sync else None


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork)
