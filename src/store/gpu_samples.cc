#include "store/gpu_samples.h"

#include <sqlite3.h>

#include "core/text.h"
#include "store/run_schema.h"
#include "store/run_writer.h"

namespace stallscope {
namespace store {
namespace {

constexpr const char* kCreateGpuSamples = R"sql(
CREATE TABLE IF NOT EXISTS gpu_samples (
  interval INTEGER NOT NULL REFERENCES samples(interval),
  t_seconds REAL NOT NULL,
  gpu_index INTEGER NOT NULL,
  name TEXT NOT NULL,
  uuid TEXT NOT NULL,
  pci_bus_id TEXT NOT NULL,
  lost INTEGER NOT NULL CHECK (lost IN (0, 1)),
  utilization_gpu_percent REAL NOT NULL,
  utilization_memory_percent REAL NOT NULL,
  memory_used_bytes INTEGER NOT NULL,
  memory_total_bytes INTEGER NOT NULL,
  sm_clock_mhz INTEGER,
  sm_clock_max_mhz INTEGER,
  throttle_reasons INTEGER,
  temperature_c INTEGER,
  power_w REAL,
  power_limit_w REAL,
  pcie_tx_kib_per_s REAL,
  pcie_rx_kib_per_s REAL,
  gpm_sm_active_percent REAL,
  gpm_sm_occupancy_percent REAL,
  gpm_tensor_active_percent REAL,
  gpm_dram_bw_percent REAL,
  processes TEXT NOT NULL
);
)sql";

constexpr const char* kInsert =
    "INSERT INTO gpu_samples (interval, t_seconds, gpu_index, name, uuid, pci_bus_id, lost, "
    "utilization_gpu_percent, utilization_memory_percent, memory_used_bytes, "
    "memory_total_bytes, sm_clock_mhz, sm_clock_max_mhz, throttle_reasons, temperature_c, "
    "power_w, power_limit_w, pcie_tx_kib_per_s, pcie_rx_kib_per_s, gpm_sm_active_percent, "
    "gpm_sm_occupancy_percent, gpm_tensor_active_percent, gpm_dram_bw_percent, processes) "
    "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)";

struct Finalize {
  void operator()(sqlite3_stmt* s) const { sqlite3_finalize(s); }
};
using Statement = std::unique_ptr<sqlite3_stmt, Finalize>;

template <typename T>
int BindOptional(sqlite3_stmt* s, int i, const std::optional<T>& v) {
  if (!v) return sqlite3_bind_null(s, i);
  if constexpr (std::is_floating_point_v<T>) return sqlite3_bind_double(s, i, *v);
  return sqlite3_bind_int64(s, i, static_cast<sqlite3_int64>(*v));
}

std::optional<double> GpmField(const GpuState& g, std::optional<double> GpmMetrics::*field) {
  if (!g.gpm) return std::nullopt;
  return (*g.gpm).*field;
}

}  // namespace

std::string FormatGpuProcesses(const std::vector<GpuProcess>& processes) {
  std::string out;
  for (const GpuProcess& p : processes) {
    if (!out.empty()) out += ',';
    out += std::to_string(p.pid) + ":" + std::to_string(p.used_bytes);
  }
  return out;
}

std::vector<GpuProcess> ParseGpuProcesses(const std::string& text) {
  std::vector<GpuProcess> out;
  size_t start = 0;
  while (start < text.size()) {
    size_t end = text.find(',', start);
    if (end == std::string::npos) end = text.size();
    std::string_view item(text.data() + start, end - start);
    size_t colon = item.find(':');
    if (colon != std::string_view::npos) {
      std::optional<int64_t> pid = ParseInt(item.substr(0, colon));
      std::optional<uint64_t> bytes = ParseUint(item.substr(colon + 1));
      if (pid && bytes) out.push_back({static_cast<int32_t>(*pid), *bytes});
    }
    start = end + 1;
  }
  return out;
}

Status ReadGpuSamples(sqlite3* db, const std::string& path, Timeline& timeline) {
  sqlite3_stmt* raw = nullptr;
  if (sqlite3_prepare_v2(db,
                         "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = "
                         "'gpu_samples'",
                         -1, &raw, nullptr) != SQLITE_OK) {
    return SqliteError(path, db, "cannot look for gpu_samples");
  }
  Statement exists(raw);
  if (sqlite3_step(exists.get()) != SQLITE_ROW) return Status::Ok();  // a run without GPUs
  raw = nullptr;
  if (sqlite3_prepare_v2(db,
                         "SELECT t_seconds, gpu_index, name, uuid, pci_bus_id, lost, "
                         "utilization_gpu_percent, utilization_memory_percent, "
                         "memory_used_bytes, memory_total_bytes, sm_clock_mhz, sm_clock_max_mhz, "
                         "throttle_reasons, temperature_c, power_w, power_limit_w, "
                         "pcie_tx_kib_per_s, pcie_rx_kib_per_s, gpm_sm_active_percent, "
                         "gpm_sm_occupancy_percent, gpm_tensor_active_percent, "
                         "gpm_dram_bw_percent, processes FROM gpu_samples ORDER BY rowid",
                         -1, &raw, nullptr) != SQLITE_OK) {
    return SqliteError(path, db, "cannot read gpu_samples");
  }
  Statement select(raw);
  sqlite3_stmt* s = select.get();
  auto text = [s](int i) {
    const unsigned char* t = sqlite3_column_text(s, i);
    return t ? std::string(reinterpret_cast<const char*>(t), sqlite3_column_bytes(s, i))
             : std::string();
  };
  auto opt_real = [s](int i) -> std::optional<double> {
    if (sqlite3_column_type(s, i) == SQLITE_NULL) return std::nullopt;
    return sqlite3_column_double(s, i);
  };
  auto opt_int = [s](int i) -> std::optional<int64_t> {
    if (sqlite3_column_type(s, i) == SQLITE_NULL) return std::nullopt;
    return sqlite3_column_int64(s, i);
  };
  int rc;
  while ((rc = sqlite3_step(s)) == SQLITE_ROW) {
    GpuPoint& p = timeline.gpus.emplace_back();
    GpuState& g = p.gpu;
    p.t = sqlite3_column_double(s, 0);
    g.index = static_cast<unsigned>(sqlite3_column_int64(s, 1));
    g.name = text(2);
    g.uuid = text(3);
    g.pci_bus_id = text(4);
    g.lost = sqlite3_column_int64(s, 5) != 0;
    g.utilization_gpu_percent = sqlite3_column_double(s, 6);
    g.utilization_memory_percent = sqlite3_column_double(s, 7);
    g.memory_used_bytes = static_cast<uint64_t>(sqlite3_column_int64(s, 8));
    g.memory_total_bytes = static_cast<uint64_t>(sqlite3_column_int64(s, 9));
    if (auto v = opt_int(10)) g.sm_clock_mhz = static_cast<unsigned>(*v);
    if (auto v = opt_int(11)) g.sm_clock_max_mhz = static_cast<unsigned>(*v);
    if (auto v = opt_int(12)) g.throttle_reasons = static_cast<uint64_t>(*v);
    if (auto v = opt_int(13)) g.temperature_c = static_cast<unsigned>(*v);
    g.power_w = opt_real(14);
    g.power_limit_w = opt_real(15);
    g.pcie_tx_kib_per_s = opt_real(16);
    g.pcie_rx_kib_per_s = opt_real(17);
    if (auto sm = opt_real(18)) {
      GpmMetrics m;
      m.sm_active_percent = sm;
      m.sm_occupancy_percent = opt_real(19);
      m.tensor_active_percent = opt_real(20);
      m.dram_bw_percent = opt_real(21);
      g.gpm = m;
    }
    g.processes = ParseGpuProcesses(text(22));
  }
  if (rc != SQLITE_DONE) return SqliteError(path, db, "cannot read gpu_samples");
  return Status::Ok();
}

}  // namespace store

Status RunWriter::AppendGpuSamples(std::span<const GpuPoint> gpus) {
  if (!db_) return Status::InvalidArgument(path_ + ": the run file is closed");
  if (gpus.empty() || next_interval_ == 0) return Status::Ok();
  sqlite3* db = db_.get();
  if (sqlite3_exec(db, store::kCreateGpuSamples, nullptr, nullptr, nullptr) != SQLITE_OK) {
    return Fail("cannot create gpu_samples");
  }
  // Prepared per interval (a few microseconds) rather than kept: the
  // statement then never outlives the connection Close() shuts.
  sqlite3_stmt* raw = nullptr;
  if (sqlite3_prepare_v2(db, store::kInsert, -1, &raw, nullptr) != SQLITE_OK) {
    return Fail("cannot prepare the gpu_samples insert");
  }
  store::Statement insert(raw);
  if (sqlite3_exec(db, "BEGIN IMMEDIATE", nullptr, nullptr, nullptr) != SQLITE_OK) {
    return Fail("cannot begin the GPU rows");
  }
  const int64_t interval = next_interval_ - 1;  // the interval just appended
  sqlite3_stmt* s = insert.get();
  for (const GpuPoint& p : gpus) {
    const GpuState& g = p.gpu;
    std::string processes = store::FormatGpuProcesses(g.processes);
    int rc = sqlite3_bind_int64(s, 1, interval);
    if (rc == SQLITE_OK) rc = sqlite3_bind_double(s, 2, p.t);
    if (rc == SQLITE_OK) rc = sqlite3_bind_int64(s, 3, g.index);
    if (rc == SQLITE_OK) rc = sqlite3_bind_text(s, 4, g.name.c_str(), -1, SQLITE_TRANSIENT);
    if (rc == SQLITE_OK) rc = sqlite3_bind_text(s, 5, g.uuid.c_str(), -1, SQLITE_TRANSIENT);
    if (rc == SQLITE_OK) rc = sqlite3_bind_text(s, 6, g.pci_bus_id.c_str(), -1, SQLITE_TRANSIENT);
    if (rc == SQLITE_OK) rc = sqlite3_bind_int(s, 7, g.lost ? 1 : 0);
    if (rc == SQLITE_OK) rc = sqlite3_bind_double(s, 8, g.utilization_gpu_percent);
    if (rc == SQLITE_OK) rc = sqlite3_bind_double(s, 9, g.utilization_memory_percent);
    if (rc == SQLITE_OK)
      rc = sqlite3_bind_int64(s, 10, static_cast<sqlite3_int64>(g.memory_used_bytes));
    if (rc == SQLITE_OK)
      rc = sqlite3_bind_int64(s, 11, static_cast<sqlite3_int64>(g.memory_total_bytes));
    if (rc == SQLITE_OK) rc = store::BindOptional(s, 12, g.sm_clock_mhz);
    if (rc == SQLITE_OK) rc = store::BindOptional(s, 13, g.sm_clock_max_mhz);
    if (rc == SQLITE_OK) rc = store::BindOptional(s, 14, g.throttle_reasons);
    if (rc == SQLITE_OK) rc = store::BindOptional(s, 15, g.temperature_c);
    if (rc == SQLITE_OK) rc = store::BindOptional(s, 16, g.power_w);
    if (rc == SQLITE_OK) rc = store::BindOptional(s, 17, g.power_limit_w);
    if (rc == SQLITE_OK) rc = store::BindOptional(s, 18, g.pcie_tx_kib_per_s);
    if (rc == SQLITE_OK) rc = store::BindOptional(s, 19, g.pcie_rx_kib_per_s);
    if (rc == SQLITE_OK)
      rc = store::BindOptional(s, 20, store::GpmField(g, &GpmMetrics::sm_active_percent));
    if (rc == SQLITE_OK)
      rc = store::BindOptional(s, 21, store::GpmField(g, &GpmMetrics::sm_occupancy_percent));
    if (rc == SQLITE_OK)
      rc = store::BindOptional(s, 22, store::GpmField(g, &GpmMetrics::tensor_active_percent));
    if (rc == SQLITE_OK)
      rc = store::BindOptional(s, 23, store::GpmField(g, &GpmMetrics::dram_bw_percent));
    if (rc == SQLITE_OK) rc = sqlite3_bind_text(s, 24, processes.c_str(), -1, SQLITE_TRANSIENT);
    if (rc == SQLITE_OK) rc = sqlite3_step(s) == SQLITE_DONE ? SQLITE_OK : SQLITE_ERROR;
    if (rc != SQLITE_OK) {
      Status failed = Fail("cannot write a GPU row");
      sqlite3_exec(db, "ROLLBACK", nullptr, nullptr, nullptr);
      return failed;
    }
    sqlite3_reset(s);
    sqlite3_clear_bindings(s);
  }
  if (sqlite3_exec(db, "COMMIT", nullptr, nullptr, nullptr) != SQLITE_OK) {
    Status failed = Fail("cannot commit the GPU rows");
    sqlite3_exec(db, "ROLLBACK", nullptr, nullptr, nullptr);
    return failed;
  }
  return Status::Ok();
}

}  // namespace stallscope
