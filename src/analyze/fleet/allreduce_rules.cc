// The all-reduce rules: see allreduce_rules.h.
#include "analyze/fleet/allreduce_rules.h"

#include <fmt/format.h>

#include "analyze/host/network_rules.h"
#include "core/units.h"

namespace stallscope {
namespace {

bool Usable(const NetInterface& i) {
  return i.kind != InterfaceKind::kLoopback && i.operstate != "down";
}

std::optional<AllreduceLink> InterfaceLink(const NetInterface& i, std::string chosen_by) {
  AllreduceLink link{i.name, "interface", std::move(chosen_by), std::nullopt};
  if (i.speed_mbps && *i.speed_mbps > 0) link.line_rate_gbps = *i.speed_mbps / 1000.0;
  return link;
}

}  // namespace

std::optional<AllreduceLink> ChooseAllreduceLink(const AllreduceLinkInput& in) {
  bool ib_disabled = in.nccl_ib_disable && *in.nccl_ib_disable != "0";
  if (in.backend == "nccl" && !ib_disabled) {
    std::optional<InterfaceList> hca;
    if (in.nccl_ib_hca) hca = ParseInterfaceList(*in.nccl_ib_hca);
    for (const InfinibandDevice& d : in.infiniband) {
      for (const InfinibandPort& p : d.ports) {
        if (!p.state || p.state->name != "ACTIVE") continue;
        if (hca && !ListSelects(*hca, d.name, static_cast<int>(p.port))) continue;
        AllreduceLink link{
            fmt::format("{}:{}", d.name, p.port), "rdma port",
            hca ? "NCCL_IB_HCA=" + *in.nccl_ib_hca : std::string("NCCL's first ACTIVE RDMA port"),
            std::nullopt};
        if (p.rate && p.rate->gbps > 0) link.line_rate_gbps = p.rate->gbps;
        return link;
      }
    }
  }
  const std::optional<std::string>& pinned =
      in.backend == "nccl" ? in.nccl_socket_ifname : in.ompi_tcp_if_include;
  const char* variable =
      in.backend == "nccl" ? "NCCL_SOCKET_IFNAME" : "OMPI_MCA_btl_tcp_if_include";
  if (pinned && !pinned->empty()) {
    InterfaceList list = ParseInterfaceList(*pinned);
    for (const NetInterface& i : in.interfaces) {
      if (Usable(i) && ListSelects(list, i.name, std::nullopt))
        return InterfaceLink(i, fmt::format("{}={}", variable, *pinned));
    }
  }
  if (!in.route_interface.empty()) {
    for (const NetInterface& i : in.interfaces) {
      if (i.name == in.route_interface)
        return InterfaceLink(i, fmt::format("the route to {}", in.route_peer));
    }
  }
  return std::nullopt;
}

AllreduceJudgement JudgeAllreduce(const AllreduceJudgeInput& in) {
  AllreduceJudgement out;
  if (in.wrong_total > 0) {
    Finding f;
    f.id = "distributed.allreduce_wrong";
    f.layer = Layer::kDistributed;
    f.severity = Severity::kCritical;
    f.summary = fmt::format("the all-reduce returned {} wrong element(s) in {} size(s)",
                            in.wrong_total, in.sizes_with_wrong);
    f.evidence = {{"wrong_elements", in.wrong_total},
                  {"sizes_with_wrong", static_cast<int64_t>(in.sizes_with_wrong)},
                  {"ranks", static_cast<int64_t>(in.ranks)}};
    f.next =
        "rerun with fewer ranks to find the rank or node that corrupts data; check the NICs' "
        "error counters (stallscope doctor) and GPU ECC errors (nvidia-smi -q -d ECC)";
    out.findings.push_back(std::move(f));
  }
  if (in.hosts <= 1) {
    out.note = fmt::format(
        "all {} ranks on one host: the traffic went through shared memory or loopback, not a "
        "network link, so the line-rate comparison does not apply",
        in.ranks);
    return out;
  }
  if (!in.link) {
    out.note = "the link in use could not be told (no route to a peer node, no interface named)";
    return out;
  }
  const AllreduceLink& link = *in.link;
  if (!link.line_rate_gbps) {
    out.note = fmt::format("{} {} ({}) reports no line rate (a virtual NIC?): no comparison",
                           link.kind, link.name, link.chosen_by);
    return out;
  }
  double busbw_gbit = in.largest_busbw_gbps * 8;
  double fraction = busbw_gbit / *link.line_rate_gbps;
  out.percent_of_line_rate = fraction * 100;
  out.note = fmt::format("busbw {:.2f} Gbit/s at {} is {:.0f}% of {} {} line rate {:g} Gbit/s ({})",
                         busbw_gbit, FormatBytes(in.largest_bytes), fraction * 100, link.kind,
                         link.name, *link.line_rate_gbps, link.chosen_by);
  if (in.largest_bytes < kAllreduceJudgeMinBytes) {
    out.note += fmt::format("; not judged: the largest size is under {} (latency-bound)",
                            FormatBytes(kAllreduceJudgeMinBytes));
    return out;
  }
  if (fraction >= kAllreduceSlowWarningFraction) return out;
  Finding f;
  f.id = "network.allreduce_slow";
  f.layer = Layer::kNetwork;
  f.severity = fraction < kAllreduceSlowCriticalFraction ? Severity::kCritical : Severity::kWarning;
  f.summary = fmt::format("all-reduce busbw {:.2f} Gbit/s is {:.0f}% of {}'s {:g} Gbit/s line rate",
                          busbw_gbit, fraction * 100, link.name, *link.line_rate_gbps);
  f.evidence = {{"busbw_gbit_per_s", busbw_gbit},
                {"line_rate_gbit_per_s", *link.line_rate_gbps},
                {"fraction_of_line_rate", fraction},
                {"size_bytes", static_cast<int64_t>(in.largest_bytes)},
                {"link", link.name},
                {"chosen_by", link.chosen_by},
                {"ranks", static_cast<int64_t>(in.ranks)},
                {"hosts", static_cast<int64_t>(in.hosts)}};
  f.next = link.kind == "rdma port"
               ? "NCCL_DEBUG=INFO in the job and stallscope nccl-log LOG: is NET/IB used on every "
                 "rank? then stallscope cluster (MTU, NCCL env per node) and ibstat per node"
               : "stallscope cluster under the same launcher (MTU and interface per node), then "
                 "stallscope net probe PEER between two nodes for the raw TCP rate";
  out.findings.push_back(std::move(f));
  return out;
}

}  // namespace stallscope
