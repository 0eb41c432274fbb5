#!/usr/bin/python3
"""Writes PyTorch Flight Recorder dumps (NCCL backend) of made-up jobs, for
the tests of `stallscope hang` and to compare it with PyTorch's own analyzer
(torch/distributed/flight_recorder, fr_trace).

Debian's torch (1.13) has no Flight Recorder, so the dumps are written here
the way torch's writer writes them (torch/csrc/distributed/c10d/
FlightRecorderDetail.hpp: getCollectiveTrace, getPgConfig, getPgStatus,
dump and dump_json), with Python's own pickle: protocol 2 as torch's
pickler, or pickle's default. One file a rank, named PREFIX<rank> as
torch's DebugInfoWriter names them. The keys each format version has:

  2.2  collective_seq_id, p2p_seq_id, op_id (seq_id before), is_p2p,
       input/output dtypes, duration_ms, timeout_ms, pg_config
  2.3  + pg_status (last enqueued/started/completed collective per pg_id)
  2.7  + an entry per collective inside a coalesced group, ending with the
       group's own ("nccl:allreduce_coalesced"); p2p groups end "nccl:coalesced"
  2.8  + thread_id, thread_name
  2.9  + nccl_version
  2.10 comm_lib_version instead of nccl_version

At a timeout torch dumps only the entries still in flight (onlyActive);
`--full` scenarios keep completed ones too, as a dump on demand does. The
JSON form (dump_json) differs: pg_status values are text, unknown times are
0 rather than None, process_group is a list, and "entries" is left out when
empty.

Usage: gen_fr_dumps.py OUT_DIR   (writes OUT_DIR/<scenario>/ and
OUT_DIR/expect.json: what each scenario should be found to be)
"""

import json
import os
import pickle
import sys

NCCL_VERSION = "2.21.5"
START_NS = 1_700_000_000_000_000_000
TIMEOUT_MS = 600000


def minor(version):
    return int(version.split(".")[1])


class Group:
    def __init__(self, name, desc, ranks):
        self.name, self.desc, self.ranks = name, desc, sorted(ranks)

    def local(self, rank):
        return self.ranks.index(rank)


class Rank:
    """One rank's Flight Recorder: its ring buffer and its groups' counters."""

    def __init__(self, rank, groups, buffer_size):
        self.rank = rank
        self.entries = []
        self.next_record = 0
        self.buffer_size = buffer_size
        self.groups = [g for g in groups if rank in g.ranks]
        self.pg_id = {g.name: i for i, g in enumerate(self.groups)}  # the rank's own uid
        self.coll_seq = {g.name: 0 for g in self.groups}
        self.p2p_seq = {g.name: 0 for g in self.groups}
        self.op_id = {g.name: 0 for g in self.groups}
        self.status = {}  # pg_id -> [enqueued, started, completed]

    def record(self, group, name, sizes, dtypes, state, is_p2p, seq=None, frames=None,
               thread="pt_main_thread", count_op=True):
        if count_op:
            self.op_id[group.name] += 1
        created = START_NS + 1000 * (self.next_record + 1)
        e = {
            "record_id": self.next_record,
            "pg_id": self.pg_id[group.name],
            "process_group": (group.name, group.desc),
            "thread_name": thread,
            "thread_id": str(140000000000000 + self.rank),
            "collective_seq_id": self.coll_seq[group.name],
            "p2p_seq_id": self.p2p_seq[group.name],
            "op_id": self.op_id[group.name],
            "profiling_name": name,
            "time_created_ns": created,
            "input_sizes": [list(s) for s in sizes[0]],
            "input_dtypes": list(dtypes[0]),
            "output_sizes": [list(s) for s in sizes[1]],
            "output_dtypes": list(dtypes[1]),
            "state": state,
            "time_discovered_started_ns": created + 10 if state != "scheduled" else None,
            "time_discovered_completed_ns": created + 20 if state == "completed" else None,
            "retired": state == "completed",
            "timeout_ms": TIMEOUT_MS,
            "is_p2p": is_p2p,
            "frames": frames or [],
        }
        if state == "completed":
            e["duration_ms"] = 0.25
        self.next_record += 1
        self.entries.append(e)
        if len(self.entries) > self.buffer_size:
            self.entries.pop(0)  # the ring buffer overwrites its oldest
        st = self.status.setdefault(self.pg_id[group.name], [-1, -1, -1])
        counter = self.p2p_seq[group.name] if is_p2p else self.coll_seq[group.name]
        st[0] = counter
        if state == "completed":
            st[2] = counter
        return e


class Job:
    def __init__(self, world, groups, buffer_size=2000):
        self.groups = {g.name: g for g in groups}
        self.ranks = {r: Rank(r, groups, buffer_size) for r in range(world)}

    def collective(self, group, name, in_sizes, out_sizes=None, dtype="Float", enter=None,
                   completed=True, states=None, sizes_by_rank=None, dtypes_by_rank=None,
                   frames=None):
        """Every member of `group` in `enter` (all by default) enqueues it."""
        g = self.groups[group]
        for r in g.ranks:
            if enter is not None and r not in enter:
                continue
            rank = self.ranks[r]
            rank.coll_seq[g.name] += 1
            ins = (sizes_by_rank or {}).get(r, in_sizes)
            outs = out_sizes if out_sizes is not None else ins
            dt = (dtypes_by_rank or {}).get(r, dtype)
            state = (states or {}).get(r, "completed" if completed else "scheduled")
            rank.record(g, "nccl:" + name, ([ins], [outs]), ([dt], [dt]), state, False,
                        frames=frames)

    def coalesced(self, group, names, sizes, end_name, enter=None, completed=True):
        """Collectives coalesced into one launch (format 2.7 on): one
        collective_seq_id for all, an entry each, then the group's own."""
        g = self.groups[group]
        for r in g.ranks:
            if enter is not None and r not in enter:
                continue
            rank = self.ranks[r]
            rank.coll_seq[g.name] += 1
            state = "completed" if completed else "scheduled"
            for name, size in zip(names, sizes):
                rank.record(g, "nccl:" + name, ([size], [size]), (["Float"], ["Float"]), state,
                            False)
            rank.record(g, "nccl:" + end_name, ([], []), ([], []), state, False, count_op=False)

    def send(self, group, src, dst, sizes, src_state="completed", dst_state="completed",
             post_recv=True):
        g = self.groups[group]
        s, d = g.local(src), g.local(dst)
        a = self.ranks[src]
        a.p2p_seq[g.name] += 1
        a.record(g, "nccl:send %d->%d" % (s, d), ([sizes], [sizes]), (["BFloat16"], ["BFloat16"]),
                 src_state, True, thread="python3")
        if post_recv:
            b = self.ranks[dst]
            b.p2p_seq[g.name] += 1
            b.record(g, "nccl:recv %d<-%d" % (d, s), ([sizes], [sizes]),
                     (["BFloat16"], ["BFloat16"]), dst_state, True, thread="python3")


def pickle_dump(job, rank, version, only_active):
    r = job.ranks[rank]
    v = minor(version)
    out = {"version": version}
    out["pg_config"] = {g.name: {"name": g.name, "desc": g.desc, "ranks": str(g.ranks)}
                        for g in r.groups}
    if v >= 10:
        out["comm_lib_version"] = NCCL_VERSION
    elif v >= 9:
        out["nccl_version"] = NCCL_VERSION
    if v >= 3:
        out["pg_status"] = {str(pg): {"last_enqueued_collective": s[0],
                                      "last_started_collective": -1,
                                      "last_completed_collective": s[2]}
                            for pg, s in sorted(r.status.items())}
    entries = []
    for e in r.entries:
        if only_active and e["state"] == "completed":
            continue
        entries.append(entry_for(e, v))
    out["entries"] = entries
    return out


def entry_for(e, v):
    """The entry's keys in the writer's order, as format 2.`v` has them."""
    d = {}
    if e["frames"]:
        d["frames"] = e["frames"]
    for k in ["record_id", "pg_id", "process_group"]:
        d[k] = e[k]
    if v >= 8:
        d["thread_name"] = e["thread_name"]
        d["thread_id"] = e["thread_id"]
    for k in ["collective_seq_id", "p2p_seq_id", "op_id", "profiling_name", "time_created_ns"]:
        d[k] = e[k]
    if "duration_ms" in e:
        d["duration_ms"] = e["duration_ms"]
    for k in ["input_sizes", "input_dtypes", "output_sizes", "output_dtypes", "state",
              "time_discovered_started_ns", "time_discovered_completed_ns", "retired",
              "timeout_ms", "is_p2p"]:
        d[k] = e[k]
    return d


def json_dump(job, rank, version, only_active):
    """dump_json: text counters, 0 for unknown times, no frames, lists."""
    d = pickle_dump(job, rank, version, only_active)
    if "pg_status" in d:
        d["pg_status"] = {pg: {k: str(x) for k, x in s.items()} for pg, s in d["pg_status"].items()}
    for e in d["entries"]:
        e.pop("frames", None)
        for k in ["time_discovered_started_ns", "time_discovered_completed_ns"]:
            if e[k] is None:
                e[k] = 0
    if not d["entries"]:
        del d["entries"]
    return d


def write(job, out, version, form="pickle", protocol=2, only_active=True,
          prefix="nccl_trace_rank_", ranks=None):
    os.makedirs(out, exist_ok=True)
    for r in sorted(job.ranks):
        if ranks is not None and r not in ranks:
            continue
        path = os.path.join(out, "%s%d" % (prefix, r))
        if form == "json":
            with open(path, "w") as f:
                json.dump(json_dump(job, r, version, only_active), f)
        else:
            with open(path, "wb") as f:
                pickle.dump(pickle_dump(job, r, version, only_active), f, protocol=protocol)


def four_ranks():
    return Job(4, [Group("0", "default_pg", range(4))])


def steady(job, group="0", n=9):
    for _ in range(n):
        job.collective(group, "all_reduce", [2048])


FRAMES = [{"name": "all_reduce", "filename": "torch/distributed/distributed_c10d.py", "line": 2501},
          {"name": "train_step", "filename": "train.py", "line": 88},
          {"name": "<module>", "filename": "train.py", "line": 120}]


def scenarios():
    """(name, job, write options, what stallscope should find)."""
    out = []
    job = four_ranks()
    steady(job, n=20)
    out.append(("all_complete", job, {"version": "2.9", "only_active": False},
                {"culprits": [], "severity": None}))

    for version in ["2.2", "2.3", "2.4", "2.7", "2.8", "2.9", "2.10"]:
        job = four_ranks()
        steady(job)
        job.collective("0", "all_reduce", [2048], enter={0, 1, 3}, completed=False)
        out.append(("missing_rank_v" + version, job,
                    {"version": version, "only_active": False},
                    {"culprits": [2], "severity": "critical", "group": "0", "seq": 10,
                     "missing": [2], "op": "nccl:all_reduce"}))

    job = four_ranks()
    steady(job)
    job.collective("0", "all_reduce", [2048], enter={0, 1, 3}, completed=False)
    out.append(("missing_rank_active_default_protocol", job,
                {"version": "2.9", "protocol": pickle.DEFAULT_PROTOCOL, "prefix": "_dump_"},
                {"culprits": [2], "severity": "critical", "group": "0", "seq": 10,
                 "missing": [2], "op": "nccl:all_reduce"}))

    job = four_ranks()
    steady(job)
    job.collective("0", "all_reduce", [2048], enter={0, 1, 3}, completed=False)
    out.append(("missing_rank_json", job, {"version": "2.10", "form": "json"},
                {"culprits": [2], "severity": "critical", "group": "0", "seq": 10,
                 "missing": [2], "op": "nccl:all_reduce"}))

    job = four_ranks()
    steady(job)
    job.collective("0", "all_reduce", [2048], completed=False, sizes_by_rank={3: [1024]},
                   frames=FRAMES)
    out.append(("size_mismatch", job, {"version": "2.9", "protocol": 5, "only_active": False},
                {"culprits": [], "severity": "critical", "group": "0", "seq": 10, "missing": [],
                 "mismatch": "size", "mismatch_ranks": [0, 3]}))

    job = four_ranks()
    steady(job)
    job.collective("0", "all_reduce", [2048], completed=False, dtypes_by_rank={1: "BFloat16"})
    out.append(("dtype_mismatch", job, {"version": "2.9", "only_active": False},
                {"culprits": [], "severity": "critical", "group": "0", "seq": 10, "missing": [],
                 "mismatch": "dtype", "mismatch_ranks": [0, 1]}))

    job = four_ranks()
    steady(job, n=4)
    job.coalesced("0", ["all_reduce", "all_reduce", "all_reduce"], [[64], [128], [256]],
                  "allreduce_coalesced")
    job.coalesced("0", ["all_reduce", "all_reduce"], [[64], [128]], "allreduce_coalesced",
                  enter={0, 2, 3}, completed=False)
    out.append(("coalesced", job, {"version": "2.9", "only_active": False},
                {"culprits": [1], "severity": "critical", "group": "0", "seq": 6,
                 "missing": [1], "op": "nccl:allreduce_coalesced"}))

    # A ring buffer of 16 entries after 100 collectives: sequence ids start
    # at 85, and rank 0's buffer starts later (it also ran p2p ops).
    job = Job(4, [Group("0", "default_pg", range(4)), Group("1", "PIPELINE", [0, 1])],
              buffer_size=16)
    steady(job, n=99)
    for _ in range(3):
        job.send("1", 0, 1, [16])
    job.collective("0", "all_reduce", [2048], enter={0, 1, 3}, completed=False)
    out.append(("wrapped", job, {"version": "2.9", "only_active": False},
                {"culprits": [2], "severity": "critical", "group": "0", "seq": 100,
                 "missing": [2], "op": "nccl:all_reduce"}))

    # Pipeline: rank 1 waits in a recv from rank 2, which never sends.
    job = Job(3, [Group("0", "default_pg", range(3)), Group("5", "PIPELINE", range(3))])
    steady(job, n=3)
    job.send("5", 0, 1, [4096, 1024])
    job.send("5", 1, 2, [4096, 1024])
    job.send("5", 0, 1, [4096, 1024], src_state="scheduled", dst_state="scheduled")
    b = job.ranks[1]
    g = job.groups["5"]
    b.p2p_seq["5"] += 1
    b.record(g, "nccl:recv 1<-2", ([[4096, 1024]], [[4096, 1024]]),
             (["BFloat16"], ["BFloat16"]), "scheduled", True, thread="python3")
    out.append(("p2p_unmatched", job, {"version": "2.9"},
                {"culprits": [2], "severity": "critical", "unmatched": [[1, 2]]}))

    # Every rank entered the collective and none completed it.
    job = four_ranks()
    steady(job)
    job.collective("0", "all_reduce", [2048], completed=False)
    out.append(("stuck_together", job, {"version": "2.9"},
                {"culprits": [], "severity": "warning", "group": "0", "seq": 10, "missing": []}))

    # A rank whose Python thread stopped: it dumped nothing in flight.
    job = four_ranks()
    steady(job)
    job.collective("0", "all_reduce", [2048], enter={0, 1, 2}, completed=False)
    out.append(("no_entries_rank", job, {"version": "2.9"},
                {"culprits": [3], "severity": "critical", "group": "0", "seq": 10,
                 "missing": [3], "ranks_without_entries": [3]}))
    return out


def refused(out_dir):
    """Files a reader must refuse, each in a folder of its own: expected
    error text -> folder."""
    import collections
    cases = {}
    d = os.path.join(out_dir, "refused_global")
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, "nccl_trace_rank_0"), "wb") as f:
        pickle.dump({"version": "2.9", "x": collections.OrderedDict()}, f, protocol=2)
    cases["refused_global"] = "GLOBAL"
    d = os.path.join(out_dir, "refused_major")
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, "nccl_trace_rank_0"), "wb") as f:
        pickle.dump({"version": "3.0", "entries": []}, f, protocol=2)
    cases["refused_major"] = "format version 3.0"
    d = os.path.join(out_dir, "refused_truncated")
    os.makedirs(d, exist_ok=True)
    job = four_ranks()
    steady(job)
    data = pickle.dumps(pickle_dump(job, 0, "2.9", False), protocol=2)
    with open(os.path.join(d, "nccl_trace_rank_0"), "wb") as f:
        f.write(data[:len(data) // 2])
    cases["refused_truncated"] = "cut short"
    return cases


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    out_dir = sys.argv[1]
    expect = {}
    for name, job, options, found in scenarios():
        write(job, os.path.join(out_dir, name), **options)
        expect[name] = dict(found, version=options["version"],
                            form=options.get("form", "pickle"))
    expect["refused"] = refused(out_dir)
    with open(os.path.join(out_dir, "expect.json"), "w") as f:
        json.dump(expect, f, indent=1, sort_keys=True)


if __name__ == "__main__":
    main()
