"""Measures the Python hook's cost per training step.

Times a loop of N iterations over a plain list, bare and through
`stallscope.loader(...)`, with a real receiver: another process bound to the
Unix datagram socket, draining it as `stallscope run` would. Prints the
overhead in ns per step (best of several rounds) and how many step records the
receiver got, so a drop would show.

    PYTHONPATH=python /usr/bin/python3 bench/hook_cost.py [N] [ROUNDS]
"""
import os
import subprocess
import sys
import tempfile
import time

RECEIVER = r"""
import socket, sys
s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4 << 20)
s.bind(sys.argv[1])
print("ready", flush=True)
steps = 0
while True:
    d = s.recv(65536)
    if d == b"quit":
        break
    steps += sum(1 for line in d.split(b"\n") if line.startswith(b"step "))
print(steps, flush=True)
"""


def timed(make_iter, items, rounds):
    best = float("inf")
    for _ in range(rounds):
        t0 = time.perf_counter_ns()
        for _x in make_iter(items):
            pass
        best = min(best, time.perf_counter_ns() - t0)
    return best


def main():
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 1_000_000
    rounds = int(sys.argv[2]) if len(sys.argv) > 2 else 7
    items = list(range(n))
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "hook.sock")
        rx = subprocess.Popen([sys.executable, "-c", RECEIVER, path],
                              stdout=subprocess.PIPE, text=True)
        assert rx.stdout.readline().strip() == "ready"
        os.environ["STALLSCOPE_SOCKET"] = path
        import stallscope
        assert stallscope.enabled()

        bare = timed(lambda x: x, items, rounds)
        hooked = timed(stallscope.loader, items, rounds)
        stallscope._flush()
        dropped = stallscope._state.dropped

        import socket
        with socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM) as s:
            s.sendto(b"quit", path)
        received = int(rx.stdout.readline())
        rx.wait()

    print(f"python {sys.version.split()[0]}, N={n} steps, best of {rounds} rounds")
    print(f"bare loop:   {bare / n:8.1f} ns/step")
    print(f"with hook:   {hooked / n:8.1f} ns/step")
    print(f"overhead:    {(hooked - bare) / n:8.1f} ns/step")
    print(f"receiver got {received} step records of {n * rounds}, "
          f"{dropped} datagrams dropped")


if __name__ == "__main__":
    main()
