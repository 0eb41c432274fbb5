"""The overhead of `stallscope run` on a real training job: the healthy
example's steps/s alone and under `stallscope run`, measured as pairs in one
run (alone, wrapped, alone, wrapped, ...), so both sides see the same machine.
Prints each pair and the median ratio.

    /usr/bin/python3 bench/run_overhead.py build/stallscope [PAIRS]
"""
import os
import re
import statistics
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
EXAMPLE = os.path.join(HERE, "..", "examples", "train_cpu.py")
RATE = re.compile(r"mode healthy: \d+ steps in [\d.]+ s, ([\d.]+) steps/s")


def steps_per_second(argv, env):
    out = subprocess.run(argv, env=env, capture_output=True, text=True, check=True)
    match = RATE.search(out.stdout + out.stderr)
    if not match:
        raise SystemExit("no steps/s in the output of " + " ".join(argv))
    return float(match.group(1))


def main():
    binary, pairs = sys.argv[1], int(sys.argv[2]) if len(sys.argv) > 2 else 5
    job = ["/usr/bin/python3", EXAMPLE, "--mode", "healthy", "--epochs", "4"]
    env = dict(os.environ)
    env["PYTHONPATH"] = os.path.join(HERE, "..", "python")
    env.pop("STALLSCOPE_SOCKET", None)
    ratios = []
    with tempfile.TemporaryDirectory() as tmp:
        steps_per_second(job, env)  # warm the page cache and make the images
        for i in range(pairs):
            alone = steps_per_second(job, env)
            run_file = os.path.join(tmp, f"run{i}.db")
            wrapped = steps_per_second([binary, "run", "--out", run_file, "--"] + job, env)
            ratios.append(wrapped / alone)
            print(f"pair {i + 1}: alone {alone:6.1f} steps/s, under stallscope run "
                  f"{wrapped:6.1f} steps/s, ratio {wrapped / alone:.3f}")
    median = statistics.median(ratios)
    print(f"median ratio {median:.3f}: stallscope run costs {100 * (1 - median):+.1f}% of steps/s "
          f"(alone, the hook is a no-op: no STALLSCOPE_SOCKET)")


if __name__ == "__main__":
    main()
