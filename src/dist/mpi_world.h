// MpiWorld: MPI_COMM_WORLD of a stallscope started by mpirun/srun, through
// the plugin libstallscope_mpi.so (dist/mpi_plugin_api.h), loaded with dlopen
// only when a command needs it. The plugin is looked for in
// $STALLSCOPE_MPI_PLUGIN, beside the stallscope binary, then in
// ../lib/stallscope/ from it. dlopen uses RTLD_GLOBAL because Open MPI's
// components (mca_*.so, dlopened by libmpi) resolve libmpi's symbols
// through the global scope. Errors are Status::Unavailable with MPI's text.
// One per process; not thread-safe (MPI_THREAD_SINGLE).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"

struct StallscopeMpiApi;

namespace stallscope {

class MpiWorld {
 public:
  // Loads the plugin and calls MPI_Init. Call only under a launcher
  // (dist/launcher.h): outside one MPI_Init may hang or start a singleton.
  static Result<std::unique_ptr<MpiWorld>> Init();
  ~MpiWorld();  // MPI_Finalize
  MpiWorld(const MpiWorld&) = delete;
  MpiWorld& operator=(const MpiWorld&) = delete;

  int rank() const { return rank_; }
  int size() const { return size_; }
  const std::string& library_version() const { return library_version_; }
  const std::string& plugin_path() const { return plugin_path_; }

  Status Barrier();
  Status AllreduceFloatSum(const float* send, float* recv, size_t count);
  Result<double> AllreduceMax(double value);
  Result<int64_t> AllreduceSum(int64_t value);
  Result<int64_t> AllreduceMin(int64_t value);
  Status Broadcast(void* buffer, size_t bytes, int root);
  // Every rank's string to `root`, in rank order; other ranks get an empty list.
  Result<std::vector<std::string>> Gather(std::string_view mine, int root);
  // Every rank gets every rank's string.
  Result<std::vector<std::string>> AllGather(std::string_view mine);
  Status Send(const void* bytes, size_t length, int dest, int tag);
  Status Recv(void* bytes, size_t length, int source, int tag);
  // Ends every rank of the job (MPI_Abort); for a rank that cannot go on
  // while the others wait in a collective.
  [[noreturn]] void Abort(int code);

 private:
  MpiWorld() = default;
  Status Check(int rc, std::string_view call) const;
  // One value reduced over every rank; type and op are the plugin's
  // kStallscopeMpi* codes (dist/mpi_plugin_api.h).
  template <typename T>
  Result<T> AllreduceValue(T value, int type, int op);

  void* handle_ = nullptr;
  const StallscopeMpiApi* api_ = nullptr;
  int rank_ = 0;
  int size_ = 1;
  std::string library_version_;
  std::string plugin_path_;
};

}  // namespace stallscope
