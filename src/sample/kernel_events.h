// What the kernel log says about GPUs and RDMA ports, as plain data: NVIDIA
// driver Xid errors ("NVRM: Xid (PCI:0000:3b:00): 79, pid=..., GPU has
// fallen off the bus.") and mlx5/InfiniBand link-down messages. Parsed by
// probe/kernel_log.h, judged by analyze/host/gpu_health_rules.h. The meanings of
// the common Xid numbers are here so that every output names them the same
// way. Plain data; thread-safe.
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace stallscope {

struct GpuXid {
  int xid = 0;
  std::string bus_id;  // as the driver prints it, lower-case: "0000:3b:00" (no function)
  std::optional<int> pid;
  std::string process;  // "name=" of the line; empty when "<unknown>" or absent
  std::optional<double> monotonic_seconds;
  size_t line = 0;      // 1-based line of the text it came from
  std::string message;  // the message without the record prefix
};

// A link of an RDMA or mlx5 port going down, or its cable or module
// missing, as the driver logged it.
struct PortLogEvent {
  std::string device;  // the PCI address or device name the line names: "0000:5e:00.0", "mlx5_0"
  std::optional<double> monotonic_seconds;
  size_t line = 0;
  std::string message;
};

// What an Xid number means, in the user's words, from NVIDIA's Xid
// catalog: 79 -> "GPU has fallen off the bus". Empty for numbers not listed.
std::string_view XidMeaning(int xid);
// The Xids after which the GPU needs a reset or replacement before it can be
// trusted: 48 (double-bit ECC), 64 (row remapping failed), 79 (fell off the
// bus), 95 (uncontained ECC error).
bool XidNeedsReset(int xid);
// Whether an Xid number points at the application (13, 31, 43, 45) rather
// than the hardware.
bool XidUsuallyApplication(int xid);

}  // namespace stallscope
