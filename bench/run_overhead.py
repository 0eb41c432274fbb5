"""The overhead of `stallscope run` on a real training job: the healthy
example's steps/s alone and under `stallscope run`, measured as pairs in one
run (alone, wrapped, alone, wrapped, ...), so both sides see the same machine.
Prints each pair and the median ratio.

    /usr/bin/python3 bench/run_overhead.py build/stallscope [PAIRS]
"""
import os
import resource
import re
import statistics
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
EXAMPLE = os.path.join(HERE, "..", "examples", "train_cpu.py")
RATE = re.compile(r"mode healthy: \d+ steps in [\d.]+ s, ([\d.]+) steps/s")
OWN_CPU = re.compile(r"stallscope itself used ([\d.]+) s of CPU in ([\d.]+) s")


def measure(argv, env):
    """steps/s of the job, the job's CPU seconds, and stallscope's own CPU
    seconds as it reports them (None when it does not run)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    out = subprocess.run(argv, env=env, capture_output=True, text=True, check=True)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    text = out.stdout + out.stderr
    match = RATE.search(text)
    if not match:
        raise SystemExit("no steps/s in the output of " + " ".join(argv))
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    own = OWN_CPU.search(text)
    return float(match.group(1)), cpu, float(own.group(1)) if own else None


def main():
    binary, pairs = sys.argv[1], int(sys.argv[2]) if len(sys.argv) > 2 else 5
    job = ["/usr/bin/python3", EXAMPLE, "--mode", "healthy", "--epochs", "4"]
    env = dict(os.environ)
    env["PYTHONPATH"] = os.path.join(HERE, "..", "python")
    env.pop("STALLSCOPE_SOCKET", None)
    ratios = []
    with tempfile.TemporaryDirectory() as tmp:
        measure(job, env)  # warm the page cache and make the images
        shares = []
        for i in range(pairs):
            alone, _, _ = measure(job, env)
            run_file = os.path.join(tmp, f"run{i}.db")
            wrapped, total_cpu, own = measure([binary, "run", "--out", run_file, "--"] + job, env)
            ratios.append(wrapped / alone)
            shares.append(own / (total_cpu - own))
            print(f"pair {i + 1}: alone {alone:6.1f} steps/s, under stallscope run "
                  f"{wrapped:6.1f} steps/s, ratio {wrapped / alone:.3f}; stallscope's own CPU "
                  f"{own:.2f} s = {100 * own / (total_cpu - own):.2f}% of the job's")
    median = statistics.median(ratios)
    print(f"median steps/s ratio {median:.3f} (alone, the hook is a no-op: no STALLSCOPE_SOCKET)")
    print(f"median CPU stallscope took beside the job: {100 * statistics.median(shares):.2f}% "
          f"of the job's own CPU time")


if __name__ == "__main__":
    main()
