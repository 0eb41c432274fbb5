// A node's place in a multi-node job: see node_layout.h.
#include "dist/node_layout.h"

#include <fmt/format.h>

#include "core/text.h"

namespace stallscope {
namespace {

constexpr size_t kMaxHosts = size_t{1} << 20;

// A variable that must be a non-negative integer when set: nullopt when
// unset, InvalidArgument naming it when it is something else.
Result<std::optional<int>> IntVariable(const EnvLookup& env, std::string_view name) {
  std::optional<std::string> value = env(name);
  if (!value) return std::optional<int>();
  std::optional<uint64_t> n = ParseUint(Trim(*value));
  if (!n || *n > (1u << 30)) {
    return Status::InvalidArgument(fmt::format("{}={}: not a count or an index", name, *value));
  }
  return std::optional<int>(static_cast<int>(*n));
}

// srun's step (not the batch script's: it has SLURM_NODEID too).
bool UnderSrunStep(const EnvLookup& env) {
  std::optional<std::string> step = env("SLURM_STEP_ID");
  return step && *step != "4294967294" && *step != "batch" && env("SLURM_NODEID");
}

// The node's place from srun's variables, for each field the flags left out.
Status FillFromSlurm(const EnvLookup& env, NodeLayoutFlags& wanted, std::string& source) {
  Result<std::optional<int>> node_id = IntVariable(env, "SLURM_NODEID");
  if (!node_id.ok()) return node_id.status();
  Result<std::optional<int>> nnodes = IntVariable(env, "SLURM_NNODES");
  if (!nnodes.ok()) return nnodes.status();
  if (!nnodes->has_value()) nnodes = IntVariable(env, "SLURM_JOB_NUM_NODES");
  if (!nnodes.ok()) return nnodes.status();
  Result<std::optional<int>> ntasks = IntVariable(env, "SLURM_STEP_NUM_TASKS");
  if (ntasks.ok() && !ntasks->has_value()) ntasks = IntVariable(env, "SLURM_NTASKS");
  if (!ntasks.ok()) return ntasks.status();
  if (nnodes->has_value() && ntasks->has_value() && **ntasks != **nnodes) {
    return Status::InvalidArgument(fmt::format(
        "srun started {} tasks on {} nodes; run --procs starts the ranks of one node, so it "
        "wants one task per node (srun --ntasks-per-node=1 stallscope run --procs K ...)",
        **ntasks, **nnodes));
  }
  std::vector<std::string> used;
  if (!wanted.node_rank && node_id->has_value()) {
    wanted.node_rank = **node_id;
    used.push_back(fmt::format("SLURM_NODEID={}", **node_id));
  }
  if (!wanted.nnodes && nnodes->has_value()) {
    wanted.nnodes = **nnodes;
    used.push_back(fmt::format("SLURM_NNODES={}", **nnodes));
  }
  if (wanted.master_addr.empty()) {
    std::optional<std::string> list = env("SLURM_JOB_NODELIST");
    if (!list) list = env("SLURM_NODELIST");
    if (list && !Trim(*list).empty()) {
      Result<std::vector<std::string>> hosts = ExpandSlurmHostList(Trim(*list));
      if (!hosts.ok()) return hosts.status();
      wanted.master_addr = hosts->front();
      used.push_back(fmt::format("SLURM_JOB_NODELIST={}", Trim(*list)));
    }
  }
  if (!used.empty()) source = "srun (" + Join(used, " ") + ")";
  return Status::Ok();
}

// mpirun with one task per node: the world rank is the node rank.
Status FillFromOpenMpi(const EnvLookup& env, NodeLayoutFlags& wanted, std::string& source) {
  Result<std::optional<int>> rank = IntVariable(env, "OMPI_COMM_WORLD_RANK");
  if (!rank.ok()) return rank.status();
  Result<std::optional<int>> size = IntVariable(env, "OMPI_COMM_WORLD_SIZE");
  if (!size.ok()) return size.status();
  Result<std::optional<int>> local_size = IntVariable(env, "OMPI_COMM_WORLD_LOCAL_SIZE");
  if (!local_size.ok()) return local_size.status();
  if (!rank->has_value() || !size->has_value()) return Status::Ok();
  if (local_size->has_value() && **local_size != 1) {
    return Status::InvalidArgument(fmt::format(
        "mpirun started {} tasks on this node (OMPI_COMM_WORLD_LOCAL_SIZE={}); run --procs "
        "starts the ranks of one node, so it wants one task per node (mpirun --map-by "
        "ppr:1:node stallscope run --procs K ...)",
        **local_size, **local_size));
  }
  std::vector<std::string> used;
  if (!wanted.node_rank) {
    wanted.node_rank = **rank;
    used.push_back(fmt::format("OMPI_COMM_WORLD_RANK={}", **rank));
  }
  if (!wanted.nnodes) {
    wanted.nnodes = **size;
    used.push_back(fmt::format("OMPI_COMM_WORLD_SIZE={}", **size));
  }
  if (!used.empty()) source = "mpirun (" + Join(used, " ") + ")";
  return Status::Ok();
}

// One host-list token ("rack[1-2]-n[01,03]") appended expanded to `out`.
Status ExpandToken(std::string_view list, std::string_view token, std::vector<std::string>& out) {
  size_t open = token.find('[');
  if (open == std::string_view::npos) {
    if (token.find(']') != std::string_view::npos) {
      return Status::InvalidArgument(fmt::format("host list {}: ']' without '['", list));
    }
    out.emplace_back(token);
    return Status::Ok();
  }
  size_t close = token.find(']', open);
  if (close == std::string_view::npos) {
    return Status::InvalidArgument(fmt::format("host list {}: '[' without ']'", list));
  }
  std::string_view head = token.substr(0, open);
  std::string_view body = token.substr(open + 1, close - open - 1);
  std::string_view tail = token.substr(close + 1);
  if (body.empty() || head.find(']') != std::string_view::npos) {
    return Status::InvalidArgument(fmt::format("host list {}: an empty or broken range", list));
  }
  std::vector<std::string> tails;
  if (Status s = ExpandToken(list, tail, tails); !s.ok()) return s;
  for (std::string_view part : Split(body, ',')) {
    size_t dash = part.find('-');
    std::string_view first = part.substr(0, dash);
    std::string_view last = dash == std::string_view::npos ? first : part.substr(dash + 1);
    std::optional<uint64_t> from = ParseUint(first);
    std::optional<uint64_t> to = ParseUint(last);
    if (!from || !to || *to < *from || *to - *from >= kMaxHosts) {
      return Status::InvalidArgument(
          fmt::format("host list {}: range '{}' is not N or N-M with N <= M", list, part));
    }
    for (uint64_t i = *from; i <= *to; ++i) {
      std::string number = std::to_string(i);
      if (number.size() < first.size()) number.insert(0, first.size() - number.size(), '0');
      for (const std::string& t : tails) {
        if (out.size() >= kMaxHosts) {
          return Status::InvalidArgument(
              fmt::format("host list {}: over {} hosts", list, kMaxHosts));
        }
        out.push_back(std::string(head) + number + t);
      }
    }
  }
  return Status::Ok();
}

}  // namespace

Result<std::string> ExpandRunFileName(std::string_view pattern, std::string_view short_host,
                                      int node_rank) {
  std::string out;
  for (size_t i = 0; i < pattern.size(); ++i) {
    if (pattern[i] != '%') {
      out += pattern[i];
      continue;
    }
    char next = i + 1 < pattern.size() ? pattern[i + 1] : '\0';
    ++i;
    if (next == 'h') {
      out += short_host.empty() ? std::string_view("host") : short_host;
    } else if (next == 'r') {
      out += std::to_string(node_rank);
    } else if (next == '%') {
      out += '%';
    } else {
      return Status::InvalidArgument(
          fmt::format("--out {}: '%{}' is not %h (host), %r (node rank) or %%", pattern,
                      next == '\0' ? std::string() : std::string(1, next)));
    }
  }
  return out;
}

Result<std::vector<std::string>> ExpandSlurmHostList(std::string_view list) {
  std::vector<std::string> hosts;
  size_t start = 0;
  int depth = 0;
  for (size_t i = 0; i <= list.size(); ++i) {
    char c = i < list.size() ? list[i] : ',';
    if (c == '[') ++depth;
    if (c == ']') --depth;
    if (depth < 0)
      return Status::InvalidArgument(fmt::format("host list {}: ']' without '['", list));
    if (c != ',' || depth > 0) continue;
    std::string_view token = Trim(list.substr(start, i - start));
    start = i + 1;
    if (token.empty()) continue;
    if (Status s = ExpandToken(list, token, hosts); !s.ok()) return s;
  }
  if (depth != 0)
    return Status::InvalidArgument(fmt::format("host list {}: '[' without ']'", list));
  if (hosts.empty()) return Status::InvalidArgument(fmt::format("host list '{}': no host", list));
  return hosts;
}

Result<NodeLayout> ResolveNodeLayout(const NodeLayoutFlags& flags, const EnvLookup& env) {
  if (flags.procs < 1) {
    return Status::InvalidArgument(fmt::format("--procs {}: must be at least 1", flags.procs));
  }
  NodeLayoutFlags wanted = flags;
  std::string source;
  bool any_flag = flags.nnodes || flags.node_rank || !flags.master_addr.empty();
  if (UnderSrunStep(env)) {
    if (Status s = FillFromSlurm(env, wanted, source); !s.ok()) return s;
  } else if (env("OMPI_COMM_WORLD_RANK")) {
    if (Status s = FillFromOpenMpi(env, wanted, source); !s.ok()) return s;
  }
  if (source.empty())
    source = any_flag ? "flags" : "one node";
  else if (any_flag)
    source = "flags and " + source;

  NodeLayout layout;
  layout.procs = flags.procs;
  layout.source = source;
  if (std::optional<std::string> job = env("SLURM_JOB_ID"))
    layout.launcher_job = std::string(Trim(*job));
  if (wanted.nnodes && *wanted.nnodes < 1) {
    return Status::InvalidArgument(fmt::format("--nnodes {}: must be at least 1", *wanted.nnodes));
  }
  layout.nnodes = wanted.nnodes.value_or(1);
  if (wanted.node_rank) {
    if (*wanted.node_rank < 0 || *wanted.node_rank >= layout.nnodes) {
      return Status::InvalidArgument(
          fmt::format("--node-rank {}: must be below --nnodes {} (node ranks count from 0)",
                      *wanted.node_rank, layout.nnodes));
    }
    layout.node_rank = *wanted.node_rank;
  } else if (layout.nnodes > 1) {
    return Status::InvalidArgument(fmt::format(
        "--nnodes {} needs --node-rank R: this node's place, 0 .. {} (rank 0's node serves "
        "the rendezvous)",
        layout.nnodes, layout.nnodes - 1));
  }
  if (static_cast<int64_t>(layout.nnodes) * layout.procs > (1 << 20)) {
    return Status::InvalidArgument(fmt::format("--nnodes {} x --procs {}: over {} ranks",
                                               layout.nnodes, layout.procs, 1 << 20));
  }
  if (wanted.master_port && (*wanted.master_port < 1 || *wanted.master_port > 65535)) {
    return Status::InvalidArgument(
        fmt::format("--master-port {}: must be 1 .. 65535", *wanted.master_port));
  }
  layout.master_addr = std::string(Trim(wanted.master_addr));
  if (layout.master_addr.empty()) {
    if (layout.nnodes > 1) {
      return Status::InvalidArgument(fmt::format(
          "--nnodes {} needs --master-addr: the address of node rank 0, where rank 0 serves the "
          "rendezvous ({})",
          layout.nnodes,
          source.find("mpirun") != std::string::npos ? "Open MPI exports no such variable"
                                                     : "no SLURM_JOB_NODELIST gives it"));
    }
    layout.master_addr = "127.0.0.1";
  }
  if (wanted.master_port) {
    layout.master_port = *wanted.master_port;
  } else if (layout.nnodes > 1 || !flags.master_addr.empty() || source.find("srun") == 0) {
    layout.master_port = kDefaultMasterPort;
  }
  return layout;
}

}  // namespace stallscope
