"""A job across two "nodes" as one job: two network namespaces joined by a
veth pair (net_namespaces.VethPair), each `stallscope run --procs 1
--nnodes 2 --node-rank R --master-addr A` in its own UTS namespace with its
own host name, a real gloo DDP job (examples/train_cpu.py --ddp, Debian's
python3-torch, GLOO_SOCKET_IFNAME on the veth) whose rank 1, on node-b, is
slowed 200 ms a step. `report a.db b.db --json` must name rank 1 on node-b
as the straggler, hold every step of both files, and refuse or note the bad
inputs (a file twice, files of another job, a rank claimed twice, ranks
missing, a file cut short, a clock offset edited with sqlite3). Also the
srun and mpirun variable paths, with a plain shell command as the job.

Needs root; skips (saying why) without it or without torch.
Run: /usr/bin/python3 multi_node.py PATH_TO_STALLSCOPE
"""

import json
import os
import random
import shutil
import sqlite3
import subprocess
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import e2e_common as e2e  # noqa: E402
import net_namespaces  # noqa: E402

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
EXAMPLE = os.path.join(REPO, "examples", "train_cpu.py")
PYTHON = "/usr/bin/python3"
TMP = None
FILES = {}  # the two-node run's files, recorded once for every case


def have_torch():
    return e2e.have_torch(PYTHON, "torch")


def setUpModule():
    global TMP
    TMP = tempfile.mkdtemp(prefix="stallscope-e2e-nodes-")


def tearDownModule():
    shutil.rmtree(TMP, ignore_errors=True)


def record_two_nodes(test, name, slow_rank):
    """Runs the two-node job; returns (report JSON, [a.db, b.db])."""
    out_dir = os.path.join(TMP, name)
    os.makedirs(out_dir)
    images = os.path.join(TMP, "images")
    if not os.path.isdir(images):
        subprocess.run([PYTHON, "-c", "import sys; sys.path.insert(0, %r); "
                        "from train_cpu import make_images; make_images(%r, 900)"
                        % (os.path.dirname(EXAMPLE), images)], check=True, timeout=120)
    with net_namespaces.VethPair() as pair:
        port = random.randint(20000, 40000)
        procs = []
        for rank, ns, host, ifname in ((0, pair.ns_a, "node-a", pair.if_a),
                                       (1, pair.ns_b, "node-b", pair.if_b)):
            args = ["ip", "netns", "exec", ns, "unshare", "--uts", "sh", "-c",
                    'hostname "$0" && exec "$@"', host, e2e.BINARY, "run", "--procs", "1",
                    "--nnodes", "2", "--node-rank", str(rank), "--master-addr", pair.addr_a,
                    "--master-port", str(port), "--interval", "0.5", "--json",
                    "--out", os.path.join(out_dir, "%h.db"), "--",
                    PYTHON, EXAMPLE, "--ddp", "--epochs", "1", "--steps-per-epoch", "14",
                    "--batch-size", "32", "--workers", "0", "--data", images]
            if slow_rank is not None:
                args += ["--slow-rank", str(slow_rank), "--slow-ms", "200"]
            else:
                args += ["--step-ms", "300"]
            env = dict(os.environ, GLOO_SOCKET_IFNAME=ifname)
            procs.append(subprocess.Popen(args, stdout=subprocess.PIPE,
                                          stderr=subprocess.PIPE, env=env))
        for p in procs:
            try:
                out, err = p.communicate(timeout=150)
            except subprocess.TimeoutExpired:
                for q in procs:
                    q.kill()
                test.fail("the two-node job hung")
            test.assertEqual(p.returncode, 0, err.decode(errors="replace")[-3000:])
        interfaces = [pair.if_a, pair.if_b]
    files = [os.path.join(out_dir, "node-a.db"), os.path.join(out_dir, "node-b.db")]
    report = e2e.run_json(test, ["report"] + files + ["--json"])
    return report, files, interfaces


def copy(path, name):
    dest = os.path.join(TMP, name)
    shutil.copy(path, dest)
    return dest


def edit(path, sql):
    with sqlite3.connect(path) as con:
        con.executescript(sql)


@unittest.skipIf(net_namespaces.skip_reason(), net_namespaces.skip_reason())
@e2e.needs(have_torch(), "needs Debian's python3-torch at /usr/bin/python3")
class TwoNodes(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.report, cls.files, cls.interfaces = record_two_nodes(cls(), "straggler", slow_rank=1)

    def test_straggler_is_named_with_its_host(self):
        f = e2e.finding(self.report, "distributed.straggler")
        self.assertIsNotNone(f, json.dumps(self.report["findings"], indent=1))
        self.assertEqual(f["evidence"]["rank"], 1)
        self.assertEqual(f["evidence"]["host"], "node-b")
        nodes = self.report["nodes"]
        self.assertEqual([(n["host"], n["node_rank"], n["ranks"]) for n in nodes],
                         [("node-a", 0, [0]), ("node-b", 1, [1])])
        # node-a waits for node-b in the sync; node-b hardly waits.
        self.assertGreater(nodes[0]["sync_wait_fraction"], nodes[1]["sync_wait_fraction"] + 0.3)
        # Each node's job interface is its end of the veth (the route to
        # MASTER_ADDR; on node-a the interface holding that address), and
        # gloo's traffic on it was measured while the ranks synced.
        self.assertEqual([n["net_interface"] for n in nodes], self.interfaces)
        for n in nodes:
            self.assertEqual(n["receive_measured"], "during_sync", n)
            self.assertGreater(n["receive_bytes_per_s"], 0, n)
        print("receive rates while syncing:",
              [(n["host"], n["receive_bytes_per_s"]) for n in nodes], file=sys.stderr)
        self.assertIsNone(e2e.finding(self.report, "network.node_receive_slow"),
                          json.dumps(self.report["findings"], indent=1))
        # Every host finding says which host it is of.
        for finding in self.report["findings"]:
            if finding["layer"] in ("memory", "io", "network"):
                self.assertIn("host", finding["evidence"], finding["id"])

    def test_merged_steps_are_the_sum_of_the_files(self):
        counted = {}
        for path in self.files:
            with sqlite3.connect(path) as con:
                for rank, n in con.execute("SELECT rank, count(*) FROM steps GROUP BY rank"):
                    counted[rank] = n - 2  # the warm-up steps are not counted
            with sqlite3.connect(path) as con:
                node = con.execute("SELECT node_rank, nnodes, world_size, master_port "
                                   "FROM node").fetchone()
                self.assertEqual(node[1:3], (2, 2))
        self.assertEqual({r["rank"]: r["steps"] for r in self.report["ranks"]}, counted)
        self.assertEqual(sorted(counted), [0, 1])

    def test_diff_of_two_jobs_across_nodes(self):
        # diff --a A1 --a A2 --b B1 --b B2: the healthy job (each rank 300 ms
        # a step) against this one (rank 1 on node-b 200 ms slower a step,
        # rank 0 waiting for it in the sync): each side one job of two nodes.
        healthy = FILES.get("healthy")
        if healthy is None:
            _, healthy, _ = record_two_nodes(self, "healthy-for-diff", slow_rank=None)
        args = ["diff", "--a", healthy[0], "--a", healthy[1],
                "--b", self.files[0], "--b", self.files[1], "--json"]
        d = e2e.run_json(self, args)
        self.assertEqual(d["a"]["files"], healthy)
        self.assertEqual(d["b"]["files"], self.files)
        self.assertEqual((d["a"]["world_size"], d["b"]["world_size"]), (2, 2))
        self.assertTrue(d["same_world_size"])
        self.assertTrue({"node-a", "node-b"} <= set(d["a"]["hosts"]), d["a"]["hosts"])
        self.assertEqual([r["rank"] for r in d["ranks"]], [0, 1])
        # The two sides' steps pooled over both files: every counted step.
        self.assertEqual(d["b"]["steps"], sum(r["steps"] for r in self.report["ranks"]))
        self.assertFalse(any(c["what"].startswith("loader.") for c in d["changes"]), d["changes"])

    def test_text_report_has_the_node_table(self):
        rc, text, err, _ = e2e.run(["report"] + self.files)
        self.assertEqual(rc, 0, err)
        self.assertIn("per node", text)
        self.assertIn("run files, one job", text)
        table = text[text.index("per node"):].splitlines()[2:4]
        self.assertEqual([line.split()[1] for line in table], ["node-a", "node-b"])

    def test_bad_inputs_are_refused_naming_the_files(self):
        a, b = self.files
        rc, out, err, _ = e2e.run(["report", a, a])
        self.assertEqual(rc, 1)
        self.assertIn("named twice", err)
        self.assertEqual(out, "")
        other = copy(b, "other-job.db")
        edit(other, "UPDATE node SET master_port = master_port + 1")
        rc, out, err, _ = e2e.run(["report", a, other, "--json"])
        self.assertEqual(rc, 1)
        self.assertIn("different jobs", err)
        self.assertIn(other, err)
        self.assertEqual(out, "")
        twice = copy(a, "rank0-again.db")
        edit(twice, "UPDATE run SET hostname = 'node-c'")
        rc, _, err, _ = e2e.run(["report", a, twice])
        self.assertEqual(rc, 1)
        self.assertIn("rank 0 has steps in both", err)
        late = copy(b, "late.db")
        edit(late, "UPDATE node SET start_realtime_seconds = start_realtime_seconds + 7200")
        rc, _, err, _ = e2e.run(["report", a, late])
        self.assertEqual(rc, 1)
        self.assertIn("did not record at the same time", err)

    def test_missing_ranks_and_a_cut_file_are_notes(self):
        a, b = self.files
        a4, b4 = copy(a, "a4.db"), copy(b, "b4.db")
        for path in (a4, b4):
            edit(path, "UPDATE node SET world_size = 4, nnodes = 4")
        report = e2e.run_json(self, ["report", a4, b4, "--json"])
        self.assertTrue(any("ranks 2-3 are missing" in n and "2 of 4 nodes" in n
                            for n in report["notes"]), report["notes"])
        cut = copy(b, "cut.db")
        edit(cut, "DELETE FROM samples WHERE t_seconds > 1; UPDATE run SET duration_seconds = 1;"
                  "UPDATE node SET start_realtime_seconds = start_realtime_seconds - 30")
        report = e2e.run_json(self, ["report", a, cut, "--json"])
        self.assertTrue(any("cut.db (node-b) ends" in n for n in report["notes"]),
                        report["notes"])
        self.assertTrue(report["nodes"][1]["truncated"])

    def test_without_node_0_the_first_node_is_read_whole(self):
        # node-a's file said to be node 2: node-b's (node 1) comes first and
        # is the job's timeline; it must not be the trimmed copy (no
        # processes, no inputs) the other nodes are held as.
        a, b = self.files
        a2 = copy(a, "a-as-node2.db")
        edit(a2, "UPDATE node SET node_rank = 2")
        report = e2e.run_json(self, ["report", a2, b, "--json"])
        self.assertEqual([n["host"] for n in report["nodes"]], ["node-b", "node-a"])
        alone = e2e.run_json(self, ["report", b, "--json"])
        self.assertEqual(report["inputs"], alone["inputs"])
        self.assertIsNotNone(report["inputs"])
        html = os.path.join(TMP, "b-first.html")
        rc, _, err, _ = e2e.run(["report", a2, b, "--html", html])
        self.assertEqual(rc, 0, err)

    def test_a_recorded_clock_offset_is_applied(self):
        a, b = self.files
        base = {n["host"]: n["clock_shift_seconds"] for n in self.report["nodes"]}
        shifted = copy(b, "offset.db")
        edit(shifted, "UPDATE node SET clock_offset_seconds = 5.0, clock_round_trip_seconds = 0.001")
        report = e2e.run_json(self, ["report", a, shifted, "--json"])
        now = {n["host"]: n["clock_shift_seconds"] for n in report["nodes"]}
        self.assertAlmostEqual(now["node-b"], base["node-b"] - 5.0, places=3)
        self.assertTrue(any("node-b's clock is +5000.000 ms" in n for n in report["notes"]),
                        report["notes"])


@unittest.skipIf(net_namespaces.skip_reason(), net_namespaces.skip_reason())
@e2e.needs(have_torch(), "needs Debian's python3-torch at /usr/bin/python3")
class HealthyTwoNodes(unittest.TestCase):
    def test_no_straggler(self):
        report, files, _ = record_two_nodes(self, "healthy", slow_rank=None)
        FILES["healthy"] = files
        self.assertIsNone(e2e.finding(report, "distributed.straggler"),
                          json.dumps(report["findings"], indent=1))
        self.assertEqual(len(report["nodes"]), 2)


SHOW_ENV = 'echo "$RANK $LOCAL_RANK $WORLD_SIZE $GROUP_RANK $MASTER_ADDR $MASTER_PORT"'


class LauncherVariables(unittest.TestCase):
    def test_srun_places_the_node(self):
        out = os.path.join(TMP, "srun-%r.db")
        env = dict(os.environ, SLURM_STEP_ID="0", SLURM_NODEID="1", SLURM_NNODES="2",
                   SLURM_NTASKS="2", SLURM_JOB_ID="4242", SLURM_JOB_NODELIST="localhost,gpu[2-3]")
        rc, stdout, err, _ = e2e.run(["run", "--procs", "2", "--out", out, "--", "sh", "-c",
                                      SHOW_ENV], env=env)
        self.assertEqual(rc, 0, err)
        lines = sorted(line for line in err.splitlines() + stdout.splitlines()
                       if line.endswith(" 29500") and "localhost" in line)
        self.assertEqual(lines, ["2 0 4 1 localhost 29500", "3 1 4 1 localhost 29500"])
        with sqlite3.connect(os.path.join(TMP, "srun-1.db")) as con:
            row = con.execute("SELECT node_rank, nnodes, launcher_job, source FROM node").fetchone()
        self.assertEqual(row[:3], (1, 2, "4242"))
        self.assertIn("SLURM_NODEID=1", row[3])
        env["SLURM_NTASKS"] = "4"
        rc, _, err, _ = e2e.run(["run", "--procs", "2", "--", "true"], env=env)
        self.assertEqual(rc, 2)
        self.assertIn("one task per node", err)

    def test_mpirun_one_task_per_node(self):
        if shutil.which("mpirun") is None:
            self.skipTest("needs Open MPI's mpirun")
        base = ["mpirun", "--allow-run-as-root", "--oversubscribe"]
        out = os.path.join(TMP, "mpi-%r.db")
        proc = subprocess.run(base + ["-np", "1", e2e.BINARY, "run", "--procs", "2", "--out",
                                      out, "--", "sh", "-c", SHOW_ENV],
                              capture_output=True, timeout=120)
        self.assertEqual(proc.returncode, 0, proc.stderr.decode()[-2000:])
        with sqlite3.connect(os.path.join(TMP, "mpi-0.db")) as con:
            row = con.execute("SELECT node_rank, nnodes, world_size, source FROM node").fetchone()
        self.assertEqual(row[:3], (0, 1, 2))
        self.assertIn("OMPI_COMM_WORLD_RANK=0", row[3])
        # Two tasks on one host: not one task per node; refused before anything runs.
        proc = subprocess.run(base + ["-np", "2", e2e.BINARY, "run", "--procs", "2",
                                      "--master-addr", "127.0.0.1", "--out",
                                      os.path.join(TMP, "mpi2-%r.db"), "--", "true"],
                              capture_output=True, timeout=120)
        self.assertNotEqual(proc.returncode, 0)
        self.assertIn("OMPI_COMM_WORLD_LOCAL_SIZE=2", proc.stderr.decode())
        self.assertFalse(os.path.exists(os.path.join(TMP, "mpi2-0.db")))

    def test_bad_flags_are_usage_errors(self):
        for args, words in ((["--nnodes", "2"], "needs --node-rank"),
                            (["--nnodes", "2", "--node-rank", "2", "--master-addr", "x"],
                             "--node-rank 2: must be below --nnodes 2"),
                            (["--nnodes", "2", "--node-rank", "1"], "needs --master-addr"),
                            (["--nnodes", "2", "--node-rank", "1", "--master-addr",
                              "no-such-host.invalid"], "does not resolve"),
                            (["--master-port", "0"], "--master-port 0"),
                            (["--out", "x%y.db"], "'%y'")):
            rc, _, err, _ = e2e.run(["run", "--procs", "1"] + args + ["--", "true"])
            self.assertEqual(rc, 2, (args, err))
            self.assertIn(words, err, args)
        rc, _, err, _ = e2e.run(["run", "--nnodes", "2", "--", "true"])
        self.assertEqual(rc, 2)
        self.assertIn("without --procs", err)


if __name__ == "__main__":
    e2e.main()
