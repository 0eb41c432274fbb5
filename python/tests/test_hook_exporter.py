"""The hook's parts for `stallscope exporter` and `stallscope ab`: the `job`
record that names a job's ranks, and STALLSCOPE_LOADER_WORKERS, which
rebuilds a real torch DataLoader with another num_workers. Each job runs in
a subprocess (/usr/bin/python3, Debian's torch) against a real receiving
socket, as the exporter and ab read it.
"""
import os
import socket
import subprocess
import sys
import tempfile
import unittest

PYTHON_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

JOB = r"""
import stallscope, sys
try:
    import torch
    from torch.utils.data import DataLoader, TensorDataset
except ImportError:
    sys.exit(77)
ds = TensorDataset(torch.arange(50).float())
dl = DataLoader(ds, batch_size=8, shuffle=True, num_workers=2, drop_last=True)
seen = []
for epoch in range(2):
    for (b,) in stallscope.loader(dl):
        seen.extend(int(v) for v in b)
print(len(seen), len(set(seen)), sorted(seen) != seen)
"""


# No torch: a plain iterable, 20 steps if nothing stops it.
PLAIN_JOB = r"""
import stallscope
n = 0
for x in stallscope.loader(range(20)):
    n += 1
print(n)
"""


class HookForExporter(unittest.TestCase):
    def run_job(self, job=JOB, **env):
        with tempfile.TemporaryDirectory() as tmp:
            path = os.path.join(tmp, "hook.sock")
            rx = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
            rx.bind(path)
            full = dict(os.environ, STALLSCOPE_SOCKET=path, PYTHONPATH=PYTHON_DIR, **env)
            for k in ("STALLSCOPE_JOB", "TORCHELASTIC_RUN_ID", "SLURM_JOB_ID", "SLURM_PROCID",
                      "SLURM_LOCALID", "SLURM_NTASKS", "SLURM_STEP_NUM_TASKS", "RANK", "LOCAL_RANK", "WORLD_SIZE"):
                if k not in env:
                    full.pop(k, None)
            proc = subprocess.run([sys.executable, "-c", job], env=full,
                                  capture_output=True, text=True, timeout=120)
            rx.setblocking(False)
            recs = []
            try:
                while True:
                    recs += [l.split(" ") for l in rx.recv(65536).decode().splitlines()]
            except BlockingIOError:
                pass
            rx.close()
        if proc.returncode == 77:
            self.skipTest("no torch in /usr/bin/python3")
        self.assertEqual(proc.returncode, 0, proc.stderr)
        return proc.stdout.split(), recs

    def test_job_record_and_loader_rebuilt_with_no_workers(self):
        out, recs = self.run_job(STALLSCOPE_JOB="my job\tx", RANK="3",
                                 STALLSCOPE_LOADER_WORKERS="0")
        kinds = [r[0] for r in recs]
        self.assertEqual(kinds.count("job"), 1)
        self.assertLess(kinds.index("job"), kinds.index("loader"))
        job = recs[kinds.index("job")]
        self.assertEqual(job[2], "3")
        self.assertEqual(job[3], "my_job_x")            # printable, no spaces
        loaders = [r for r in recs if r[0] == "loader"]
        self.assertEqual(len(loaders), 1)              # rebuilt once, not per epoch
        # batch_size 8, num_workers 0 (was 2), pin 0, prefetch 0, persistent 0, 50 items
        self.assertEqual(loaders[0][3:9], ["8", "0", "0", "0", "0", "50"])
        # Same batching (drop_last: 6 batches of 8 per epoch), still shuffled.
        self.assertEqual((out[0], out[2]), ("96", "True"))
        self.assertEqual(len([r for r in recs if r[0] == "step"]), 12)

    def test_max_steps_ends_the_job_and_elastic_id_names_it(self):
        out, recs = self.run_job(PLAIN_JOB, STALLSCOPE_MAX_STEPS="5",
                                 TORCHELASTIC_RUN_ID="elastic-1")
        self.assertEqual(out, [])                      # never reached its print
        self.assertEqual(len([r for r in recs if r[0] == "step"]), 5)
        self.assertEqual([r[3] for r in recs if r[0] == "job"], ["elastic-1"])
        out, recs = self.run_job(PLAIN_JOB, STALLSCOPE_LOADER_WORKERS="0")
        self.assertEqual(out, ["20"])                  # not a DataLoader: left as it is
        self.assertEqual(len([r for r in recs if r[0] == "step"]), 20)


    def test_a_task_srun_started_is_its_rank_in_its_slurm_job(self):
        # srun sets SLURM_PROCID / SLURM_LOCALID / SLURM_NTASKS, not RANK.
        out, recs = self.run_job(PLAIN_JOB, SLURM_JOB_ID="4242", SLURM_PROCID="1",
                                 SLURM_LOCALID="1", SLURM_NTASKS="4", SLURM_STEP_NUM_TASKS="2")
        self.assertEqual(out, ["20"])
        hello = [r for r in recs if r[0] == "hello"]
        self.assertEqual(hello[0][2:5], ["1", "1", "2"])    # rank, local rank, world
        kinds = [r[0] for r in recs]
        self.assertEqual(kinds.count("slurm"), 1)
        self.assertLess(kinds.index("job"), kinds.index("slurm"))
        self.assertEqual(recs[kinds.index("slurm")][2:], ["1", "4242"])
        # torchrun's variables win where both are set; no Slurm, no record.
        out, recs = self.run_job(PLAIN_JOB, SLURM_PROCID="1", RANK="5", WORLD_SIZE="8")
        self.assertEqual([r[2:5] for r in recs if r[0] == "hello"][0][0], "5")
        self.assertEqual([r for r in recs if r[0] == "slurm"], [])
        out, recs = self.run_job(PLAIN_JOB, SLURM_JOB_ID="12x")
        self.assertEqual([r for r in recs if r[0] == "slurm"], [])
        # The batch script itself (no step count): a world of one, whatever
        # the job's task count.
        out, recs = self.run_job(PLAIN_JOB, SLURM_JOB_ID="7", SLURM_PROCID="0", SLURM_NTASKS="4")
        self.assertEqual([r[2:5] for r in recs if r[0] == "hello"][0], ["0", "0", "1"])

if __name__ == "__main__":
    unittest.main()
