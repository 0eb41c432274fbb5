// A NIC's driver statistics (sample/nic_stats.h), read as `ethtool -S`
// reads them, without the ethtool binary. On the live root: the SIOCETHTOOL
// ioctl (ETHTOOL_GSSET_INFO for the count, ETHTOOL_GSTRINGS for the names,
// ETHTOOL_GSTATS for the values) in the caller's network namespace. Under a
// fixture or capture root: the file `ethtool/IFACE` below the root, in
// `ethtool -S`'s own format, so a user's saved `ethtool -S eth0 >
// ethtool/eth0` reads as it is. An interface whose driver has no statistics
// (lo, a bridge, a tun) is NotFound. ParseEthtoolStats is pure and fuzzed.
// Older kernels write as many counters as the driver has at each call, not
// as many as asked; the live read leaves room, cannot be written past, and
// reads again when the count changed under it (see ethtool_stats.cc). Stateless; thread-safe.
#pragma once

#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "core/file.h"
#include "core/status.h"
#include "sample/nic_stats.h"

namespace stallscope {

// "NIC statistics:" then one "     name: value" a line. A line that is
// neither (no colon, a value that is not a whole number) is a ParseError
// naming `source` and the line; blank lines are skipped.
Result<NicStats> ParseEthtoolStats(std::string_view text, std::string_view source);

// The statistics of `interface` under `root` (see above). The interface
// name is checked first: one that could not name an interface (empty, over
// 15 bytes, a '/') is InvalidArgument.
Result<NicStats> ReadNicStats(const Root& root, const std::string& interface);

// One SIOCETHTOOL on `interface` with `block` as the command block: 0, or
// -1 with errno set, as ioctl(2). Tests pass a driver whose count changes.
using EthtoolIoctl = std::function<int(const std::string& interface, void* block)>;

// The live read of `interface` through `call` (see above): NotFound when
// the driver has no statistics, Unavailable naming the interface when its
// count kept changing through every try.
Result<NicStats> ReadLiveNicStats(const std::string& interface, const EthtoolIoctl& call);

// The statistics of every interface that has them: on the live root those
// of /sys/class/net, under another root the files of ethtool/ (the first
// 64). Interfaces without (lo, bridges) are left out; other errors go to
// `notes` when it is not null.
std::vector<NicStats> ReadEveryNicStats(const Root& root, std::vector<std::string>* notes);

}  // namespace stallscope
