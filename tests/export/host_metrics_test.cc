// The exporter's congestion series: the NICs' pause/ECN/CNP/drop sums per
// interface and the RDMA ports' xmit_wait and hw_counters, read from the
// congestion_host fixture (its ethtool/ files and sys/class/infiniband).
#include "export/host_metrics.h"

#include <gtest/gtest.h>

#include <string>

#include "probe/ethtool_stats.h"
#include "probe/infiniband.h"

namespace stallscope {
namespace {

const Root kHost(std::string(STALLSCOPE_FIXTURES) + "/congestion_host");

TEST(ExporterCongestion, NicSeriesPerInterfaceOnlyForWhatTheDriverCounts) {
  Exposition out;
  EmitNicCongestion(ReadEveryNicStats(kHost, nullptr), out);
  std::string text = RenderExposition(out.families());
  // mlx5: the per-priority pauses and the total beside them counted once.
  EXPECT_NE(text.find("stallscope_network_pause_frames_received_total{interface=\"ens1f0np0\"} "
                      "52000"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("stallscope_network_cnp_handled_total{interface=\"ens1f0np0\"} 40125"),
            std::string::npos);
  EXPECT_NE(text.find("stallscope_network_allowance_exceeded_total{interface=\"ens5\"} 13032"),
            std::string::npos);
  // virtio counts no pause frames: no series, rather than a 0 that says "none".
  EXPECT_EQ(text.find("stallscope_network_pause_frames_received_total{interface=\"eth0\"}"),
            std::string::npos);
  EXPECT_NE(text.find("stallscope_network_buffer_drops_total{interface=\"eth0\"} 3"),
            std::string::npos);
}

TEST(ExporterCongestion, RdmaPortsXmitWaitAndHwCounters) {
  Result<std::vector<InfinibandDevice>> devices = ReadInfinibandDevices(kHost);
  ASSERT_TRUE(devices.ok()) << devices.status().ToString();
  Exposition out;
  EmitInfiniband(*devices, out);
  std::string text = RenderExposition(out.families());
  EXPECT_NE(text.find("stallscope_infiniband_port_transmit_wait_ticks_total{device=\"mlx5_0\","
                      "port=\"1\"} 93456781234"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("stallscope_infiniband_port_out_of_buffer_total{device=\"mlx5_1\",port="
                      "\"1\"} 4821"),
            std::string::npos);
  // The IB port has no hw_counters: no out_of_buffer series for it.
  EXPECT_EQ(text.find("stallscope_infiniband_port_out_of_buffer_total{device=\"mlx5_0\""),
            std::string::npos);
}

}  // namespace
}  // namespace stallscope
