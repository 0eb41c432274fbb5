"""Runs stallscope's sampler and pidstat+iostat over the same 64-process tree
for the same number of samples at the same interval, and compares the CPU
time (user + system, from the kernel's rusage of each child) they spent.

Each side is a whole process, start-up included, as a user would run it.

Then the boundary samples `run` takes at epoch marks (the tree and
/proc/diskstats, record/epoch_boundaries.h): the sampler again with 1 of them
in each interval (an epoch an interval) and with 19 (at a 1 s interval, the
most their 50 ms spacing allows), against the same pidstat + iostat.
"""
import os
import resource
import shutil
import subprocess
import sys
import time


def spawn_tree(count):
    # A bash parent with count-1 sleeping children: 64 processes in all, each
    # child holding 4 regular files open for reading, as a loader worker
    # holds its shards (the open-files probe reads each one's link, fdinfo
    # and stat).
    data = os.path.abspath(__file__)
    opened = " ".join(f"{fd}<{data}" for fd in range(3, 7))
    root = subprocess.Popen(
        ["bash", "-c", f"for i in $(seq {count - 1}); do sleep 600 {opened} & done; wait"],
        start_new_session=True)
    deadline = time.time() + 10
    while time.time() < deadline:
        kids = open(f"/proc/{root.pid}/task/{root.pid}/children").read().split()
        if len(kids) >= count - 1:
            return root, [root.pid] + [int(k) for k in kids]
        time.sleep(0.05)
    raise SystemExit("could not start the process tree")


def cpu_of(commands, boundaries=0):
    """Runs the commands side by side; returns their summed user+sys seconds."""
    env = dict(os.environ, SAMPLE_COST_BOUNDARIES=str(boundaries))
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    procs = [subprocess.Popen(c, stdout=subprocess.DEVNULL, env=env) for c in commands]
    for p in procs:
        if p.wait() != 0:
            raise SystemExit(f"{p.args[0]} failed with {p.returncode}")
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def run_both(root, pids, samples, interval):
    """(stallscope CPU s, stallscope as if busy CPU s, pidstat+iostat CPU s)
    for `samples` samples each."""
    ours = cpu_of([[SAMPLER, str(root.pid), str(samples), str(interval)]])
    # QUIET_SLOW_EVERY 1: no member counts as quiet, so every member's status
    # and smaps_rollup are read on every 10th sample, and its open files on
    # every sample, as in a busy tree.
    busy = cpu_of([[SAMPLER, str(root.pid), str(samples), str(interval), "1"]])
    # pidstat and iostat take integer intervals; the first report is the
    # since-boot one, so samples + 1 reports give samples intervals.
    theirs = cpu_of([
        ["pidstat", "-rud", "-p", ",".join(map(str, pids)), str(int(interval)), str(samples)],
        ["iostat", "-x", str(int(interval)), str(samples + 1)],
    ])
    return ours, busy, theirs


def run_boundaries(root, samples, interval, per_interval):
    """The sampler's CPU s with `per_interval` boundary samples in each interval."""
    return cpu_of([[SAMPLER, str(root.pid), str(samples), str(interval)]], per_interval)


def main():
    global SAMPLER
    SAMPLER, samples, interval = sys.argv[1], int(sys.argv[2]), float(sys.argv[3])
    for tool in ("pidstat", "iostat"):
        if not shutil.which(tool):
            raise SystemExit(f"{tool} not found: apt-get install sysstat")
    if samples < 4:
        raise SystemExit("SAMPLES must be at least 4 (the per-sample cost is the "
                         "difference between a SAMPLES run and a SAMPLES/4 run)")
    short = max(1, samples // 4)
    root, pids = spawn_tree(64)
    try:
        ours, busy, theirs = run_both(root, pids, samples, interval)
        ours_short, busy_short, theirs_short = run_both(root, pids, short, interval)
        bounded = {b: (run_boundaries(root, samples, interval, b),
                       run_boundaries(root, short, interval, b)) for b in (1, 19)}
    finally:
        os.killpg(root.pid, 15)
        root.wait()
    print(f"samples: {samples} at {interval:g} s, tree of {len(pids)} processes")
    print("whole processes (start-up and the first, full sample included):")
    print(f"  stallscope sampler      : {ours * 1e3:8.1f} ms CPU, {ours / samples * 1e3:7.3f} ms/sample")
    print(f"  same, no member quiet   : {busy * 1e3:8.1f} ms CPU, {busy / samples * 1e3:7.3f} ms/sample")
    print(f"  pidstat -rud + iostat -x: {theirs * 1e3:8.1f} ms CPU, {theirs / samples * 1e3:7.3f} ms/sample")
    print(f"  ratio (pidstat+iostat / stallscope): {theirs / ours:.1f}x (no member quiet: {theirs / busy:.1f}x)")
    # The cost of one more sample: the long run less the short one, per extra
    # sample, on both sides, so neither side's start-up counts.
    extra = samples - short
    ours_each = (ours - ours_short) / extra
    busy_each = (busy - busy_short) / extra
    theirs_each = (theirs - theirs_short) / extra
    print(f"each further sample ({samples}-sample run less a {short}-sample run, over {extra}):")
    print(f"  stallscope sampler      : {ours_each * 1e3:7.3f} ms/sample")
    print(f"  same, no member quiet   : {busy_each * 1e3:7.3f} ms/sample")
    print(f"  pidstat -rud + iostat -x: {theirs_each * 1e3:7.3f} ms/sample")
    if ours_each > 0 and busy_each > 0:
        print(f"  ratio (pidstat+iostat / stallscope): {theirs_each / ours_each:.1f}x "
              f"(no member quiet: {theirs_each / busy_each:.1f}x)")
    else:
        print("  ratio: not measurable (the clock ticks are coarser than the difference)")
    print("boundary samples (the tree and /proc/diskstats at each epoch mark, at most one per 50 ms):")
    for b, (whole, whole_short) in bounded.items():
        each = (whole - whole_short) / extra
        one = (each - ours_each) / b if each > ours_each else 0.0
        print(f"  {b:2d} an interval: {whole * 1e3:8.1f} ms CPU in all, {each * 1e3:7.3f} ms per "
              f"interval with them, {one * 1e3:6.3f} ms per boundary sample; "
              f"pidstat+iostat / this: {theirs_each / each:.1f}x" if each > 0 else
              f"  {b:2d} an interval: not measurable")


SAMPLER = None

if __name__ == "__main__":
    main()
