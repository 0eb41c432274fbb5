"""`stallscope run --profile A:B`: torch.profiler over the job's steps A to B.

`run` sets STALLSCOPE_PROFILE=A:B and STALLSCOPE_PROFILE_DIR=DIR. The hook
counts the steps it times (from 0, over every epoch and wrapped loader, as
its step records count them); as step A begins it starts torch.profiler
(CPU, and CUDA when a GPU is there), marks each step with a
`ProfilerStep#N` record_function covering the step from the `next()` that
fetches its batch to the one that fetches the following batch (so the data
wait is inside the step, as in the run file), and once step B ends writes the
trace to DIR/rank<RANK>.json (Kineto's format, or the legacy autograd list
where torch was built without Kineto), written to a temporary name and
renamed. A job that ends inside the window writes what it recorded at exit.

Outside the window a step costs one attribute test. torch is imported only
as the window opens; any failure turns profiling off for the process, never
into the job.
"""
import os
import time


class Window:
    """The profiling window of this process; begin() as each step begins."""

    def __init__(self, first, last, out_dir, rank):
        self.first = first
        self.last = last
        self.path = os.path.join(out_dir, "rank%d.json" % rank)
        self.next = 0        # the number of the step about to begin
        self.prof = None     # torch.profiler.profile while recording
        self.mark = None     # the open ProfilerStep#N record_function
        self.done = False
        # Called with the (start, end) monotonic ns of the trace's writing:
        # the hook sends it as a `profile` span (the trace's writes are no
        # checkpoint).
        self.on_written = None

    def begin(self):
        """Step self.next begins: opens, marks or closes the window."""
        n = self.next
        self.next = n + 1
        try:
            if self.mark is not None:
                self.mark.__exit__(None, None, None)
                self.mark = None
            if self.prof is None:
                if n != self.first:
                    return
                import torch
                acts = [torch.profiler.ProfilerActivity.CPU]
                if torch.cuda.is_available():
                    acts.append(torch.profiler.ProfilerActivity.CUDA)
                self.prof = torch.profiler.profile(activities=acts)
                self.prof.start()
            if n > self.last:
                self.finish()
                return
            import torch
            self.mark = torch.autograd.profiler.record_function("ProfilerStep#%d" % n)
            self.mark.__enter__()
        except Exception:
            self.done = True
            prof, self.prof = self.prof, None
            try:
                if prof is not None:
                    prof.stop()  # never left recording for the rest of the job
            except Exception:
                pass

    def pause(self):
        """The loader ran out: the step just begun was none; its number is
        the next loop's first."""
        self.next -= 1
        try:
            if self.mark is not None:
                self.mark.__exit__(None, None, None)
                self.mark = None
        except Exception:
            self.done = True

    def finish(self):
        """Stops recording and writes the trace (at B's end, or at exit)."""
        prof, self.prof, self.done = self.prof, None, True
        if prof is None:
            return
        try:
            if self.mark is not None:
                self.mark.__exit__(None, None, None)
                self.mark = None
            t0 = time.monotonic_ns()
            prof.stop()
            tmp = self.path + ".tmp"
            prof.export_chrome_trace(tmp)
            os.replace(tmp, self.path)
            if self.on_written is not None:
                self.on_written(t0, time.monotonic_ns())
        except Exception:
            pass


def from_env(rank):
    """The Window STALLSCOPE_PROFILE and STALLSCOPE_PROFILE_DIR ask for, or None."""
    spec = os.environ.get("STALLSCOPE_PROFILE", "")
    out_dir = os.environ.get("STALLSCOPE_PROFILE_DIR", "")
    if not spec or not out_dir:
        return None
    try:
        a, b = spec.split(":")
        first, last = int(a), int(b)
    except ValueError:
        return None
    if first < 0 or last < first or not os.path.isdir(out_dir):
        return None
    return Window(first, last, out_dir, rank)
