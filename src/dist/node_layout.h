// Where `stallscope run --procs K` places its ranks in a job that may span
// nodes, with torchrun's meaning: K ranks on each of N nodes, this node's
// ranks R*K .. R*K+K-1, rank 0's host as the rendezvous (MASTER_ADDR:PORT).
// The node's place comes from the flags (--nnodes, --node-rank,
// --master-addr, --master-port), and where a flag is absent from the
// launcher that started this stallscope: srun (SLURM_NODEID, SLURM_NNODES,
// the first host of SLURM_JOB_NODELIST) or mpirun with one task per node
// (OMPI_COMM_WORLD_RANK and _SIZE; Open MPI names no master). Also the
// expansion of SLURM's host-list form "node[01-04,07],gpu5". Pure (the
// environment comes through an EnvLookup); thread-safe. The caller checks
// that the master address resolves (net/route.h), which is I/O.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"
#include "dist/launcher.h"

namespace stallscope {

// torchrun's default rendezvous port, used when the job spans nodes or names
// a master and no port is given.
inline constexpr int kDefaultMasterPort = 29500;

// What the user typed; nullopt / empty for a flag not given.
struct NodeLayoutFlags {
  int procs = 0;  // --procs K (>= 1)
  std::optional<int> nnodes;
  std::optional<int> node_rank;
  std::string master_addr;
  std::optional<int> master_port;
};

struct NodeLayout {
  int procs = 1;  // ranks on this node: LOCAL_WORLD_SIZE
  int nnodes = 1;
  int node_rank = 0;         // GROUP_RANK
  std::string master_addr;   // "127.0.0.1" for one node without --master-addr
  int master_port = 0;       // 0: one node without --master-port; a free port is picked
  std::string source;        // "flags", or the launcher's variables that decided it
  std::string launcher_job;  // SLURM_JOB_ID when set, else ""

  int world_size() const { return procs * nnodes; }
  int first_rank() const { return node_rank * procs; }
};

// InvalidArgument naming the flag or variable for: a node rank >= the node
// count, a node count or rank below 0/1, a port out of 1..65535, a job of
// several nodes without a master, srun with other than one task per node,
// mpirun with more than one task on a node.
Result<NodeLayout> ResolveNodeLayout(const NodeLayoutFlags& flags, const EnvLookup& env);

// --out's pattern: %h the short host name, %r the node rank, %% a '%'.
// InvalidArgument for any other %-sequence (naming it), so a typo never
// becomes a file name.
Result<std::string> ExpandRunFileName(std::string_view pattern, std::string_view short_host,
                                      int node_rank);

// "node[01-04,07],gpu5" -> node01 node02 node03 node04 node07 gpu5; the
// zero padding of a range's first bound is kept. InvalidArgument naming the
// list for an unbalanced bracket, a reversed or non-numeric range, or more
// than 1<<20 hosts.
Result<std::vector<std::string>> ExpandSlurmHostList(std::string_view list);

}  // namespace stallscope
