// MpiWorld over the dlopened MPI plugin: see mpi_world.h.
#include "dist/mpi_world.h"

#include <dlfcn.h>
#include <fmt/format.h>
#include <unistd.h>

#include <climits>
#include <cstdlib>

#include "dist/mpi_plugin_api.h"

namespace stallscope {
namespace {

constexpr const char* kPluginName = "libstallscope_mpi.so";

std::string ExecutableDir() {
  char path[PATH_MAX] = {};
  ssize_t n = ::readlink("/proc/self/exe", path, sizeof(path) - 1);
  if (n <= 0) return "";
  std::string exe(path, static_cast<size_t>(n));
  size_t slash = exe.rfind('/');
  return slash == std::string::npos ? "" : exe.substr(0, slash);
}

std::vector<std::string> PluginCandidates() {
  if (const char* given = std::getenv("STALLSCOPE_MPI_PLUGIN"); given && *given) return {given};
  std::string dir = ExecutableDir();
  return {dir + "/" + kPluginName, dir + "/../lib/stallscope/" + kPluginName};
}

}  // namespace

Result<std::unique_ptr<MpiWorld>> MpiWorld::Init() {
  std::unique_ptr<MpiWorld> world(new MpiWorld());
  std::vector<std::string> candidates = PluginCandidates();
  std::string tried;
  for (const std::string& path : candidates) {
    if (::access(path.c_str(), R_OK) != 0) {
      tried += fmt::format("\n  {}: not found", path);
      continue;
    }
    world->handle_ = ::dlopen(path.c_str(), RTLD_NOW | RTLD_GLOBAL);
    if (world->handle_ == nullptr) {
      // Present but its MPI library is not: say which library is missing.
      return Status::Unavailable(
          fmt::format("cannot load the MPI plugin {}: {} (install the MPI it was built against: "
                      "apt-get install openmpi-bin libopenmpi3)",
                      path, ::dlerror()));
    }
    world->plugin_path_ = path;
    break;
  }
  if (world->handle_ == nullptr) {
    return Status::Unavailable(
        "this stallscope has no MPI plugin (it is built only where CMake finds MPI: "
        "apt-get install libopenmpi-dev and rebuild); looked for" +
        tried);
  }
  using ApiFunction = const StallscopeMpiApi* (*)();
  auto entry = reinterpret_cast<ApiFunction>(::dlsym(world->handle_, "stallscope_mpi_api"));
  if (entry == nullptr) {
    return Status::Unavailable(fmt::format(
        "{}: no stallscope_mpi_api symbol; not a stallscope MPI plugin", world->plugin_path_));
  }
  world->api_ = entry();
  if (world->api_ == nullptr || world->api_->version != STALLSCOPE_MPI_API_VERSION) {
    return Status::Unavailable(
        fmt::format("{}: plugin table version {} (this stallscope needs {})", world->plugin_path_,
                    world->api_ ? world->api_->version : -1, STALLSCOPE_MPI_API_VERSION));
  }
  if (Status s = world->Check(world->api_->init(), "MPI_Init"); !s.ok()) return s;
  if (Status s = world->Check(world->api_->rank(&world->rank_), "MPI_Comm_rank"); !s.ok()) return s;
  if (Status s = world->Check(world->api_->size(&world->size_), "MPI_Comm_size"); !s.ok()) return s;
  world->library_version_ = world->api_->library_version ? world->api_->library_version : "";
  return world;
}

MpiWorld::~MpiWorld() {
  // The plugin stays loaded: Open MPI cannot be initialized twice anyway,
  // and unloading it under its own atexit handlers crashes.
  if (api_ != nullptr) (void)api_->finalize();
}

Status MpiWorld::Check(int rc, std::string_view call) const {
  if (rc == 0) return Status::Ok();
  char text[512] = "";
  if (api_ != nullptr) api_->error_string(rc, text, sizeof(text));
  return Status::Unavailable(fmt::format("{} failed on rank {}: {}", call, rank_, text));
}

Status MpiWorld::Barrier() { return Check(api_->barrier(), "MPI_Barrier"); }

Status MpiWorld::AllreduceFloatSum(const float* send, float* recv, size_t count) {
  return Check(api_->allreduce(send, recv, count, kStallscopeMpiFloat, kStallscopeMpiSum),
               "MPI_Allreduce");
}

template <typename T>
Result<T> MpiWorld::AllreduceValue(T value, int type, int op) {
  T out = 0;
  if (Status s = Check(api_->allreduce(&value, &out, 1, type, op), "MPI_Allreduce"); !s.ok()) {
    return s;
  }
  return out;
}

Result<double> MpiWorld::AllreduceMax(double value) {
  return AllreduceValue(value, kStallscopeMpiDouble, kStallscopeMpiMax);
}

Result<int64_t> MpiWorld::AllreduceSum(int64_t value) {
  return AllreduceValue(value, kStallscopeMpiInt64, kStallscopeMpiSum);
}

Result<int64_t> MpiWorld::AllreduceMin(int64_t value) {
  return AllreduceValue(value, kStallscopeMpiInt64, kStallscopeMpiMin);
}

Status MpiWorld::Broadcast(void* buffer, size_t bytes, int root) {
  return Check(api_->bcast(buffer, bytes, root), "MPI_Bcast");
}

Result<std::vector<std::string>> MpiWorld::Gather(std::string_view mine, int root) {
  std::vector<int64_t> lengths(rank_ == root ? static_cast<size_t>(size_) : 0);
  if (Status s = Check(api_->gather_int64(static_cast<int64_t>(mine.size()), lengths.data(), root),
                       "MPI_Gather");
      !s.ok())
    return s;
  std::string all;
  if (rank_ == root) {
    size_t total = 0;
    for (int64_t n : lengths) total += static_cast<size_t>(n);
    all.resize(total);
  }
  if (Status s = Check(api_->gatherv(mine.data(), mine.size(), all.data(),
                                     rank_ == root ? lengths.data() : nullptr, root),
                       "MPI_Gatherv");
      !s.ok())
    return s;
  std::vector<std::string> out;
  size_t offset = 0;
  for (int64_t n : lengths) {
    out.push_back(all.substr(offset, static_cast<size_t>(n)));
    offset += static_cast<size_t>(n);
  }
  return out;
}

Result<std::vector<std::string>> MpiWorld::AllGather(std::string_view mine) {
  Result<std::vector<std::string>> gathered = Gather(mine, 0);
  if (!gathered.ok()) return gathered.status();
  // Rank 0 packs "length:bytes" records; everyone unpacks the same blob.
  std::string blob;
  for (const std::string& s : *gathered) blob += fmt::format("{}:", s.size()) + s;
  uint64_t length = blob.size();
  if (Status s = Broadcast(&length, sizeof(length), 0); !s.ok()) return s;
  blob.resize(length);
  if (Status s = Broadcast(blob.data(), length, 0); !s.ok()) return s;
  std::vector<std::string> out;
  size_t at = 0;
  while (at < blob.size()) {
    size_t colon = blob.find(':', at);
    if (colon == std::string::npos) break;
    size_t n = std::strtoull(blob.c_str() + at, nullptr, 10);
    out.push_back(blob.substr(colon + 1, n));
    at = colon + 1 + n;
  }
  return out;
}

Status MpiWorld::Send(const void* bytes, size_t length, int dest, int tag) {
  return Check(api_->send(bytes, length, dest, tag), "MPI_Send");
}

Status MpiWorld::Recv(void* bytes, size_t length, int source, int tag) {
  return Check(api_->recv(bytes, length, source, tag), "MPI_Recv");
}

void MpiWorld::Abort(int code) {
  api_->abort(code);
  std::_Exit(code);
}

}  // namespace stallscope
