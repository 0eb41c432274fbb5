// libstallscope_mpi.so: the MPI calls stallscope makes, behind the C table
// of dist/mpi_plugin_api.h. Built only when CMake finds MPI; linked against
// it, loaded by dist/mpi_world.cc with dlopen. Byte counts above INT_MAX are
// sent in chunks (MPI counts are int). Not thread-safe (MPI_THREAD_SINGLE).
#include <mpi.h>
#include <stdio.h>
#include <string.h>

#include <algorithm>
#include <climits>
#include <vector>

#include "dist/mpi_plugin_api.h"

namespace {

constexpr size_t kChunk = size_t{1} << 30;

char g_library_version[MPI_MAX_LIBRARY_VERSION_STRING + 1] = "";

MPI_Datatype TypeOf(int type) {
  switch (type) {
    case kStallscopeMpiDouble:
      return MPI_DOUBLE;
    case kStallscopeMpiInt64:
      return MPI_INT64_T;
    default:
      return MPI_FLOAT;
  }
}

size_t SizeOf(int type) { return type == kStallscopeMpiFloat ? 4 : 8; }

MPI_Op OpOf(int op) {
  switch (op) {
    case kStallscopeMpiMax:
      return MPI_MAX;
    case kStallscopeMpiMin:
      return MPI_MIN;
    default:
      return MPI_SUM;
  }
}

int Init() {
  int initialized = 0;
  MPI_Initialized(&initialized);
  if (initialized) return MPI_SUCCESS;
  int rc = MPI_Init(nullptr, nullptr);
  if (rc != MPI_SUCCESS) return rc;
  // Errors come back as codes, not as an abort of the whole job.
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
  int length = 0;
  MPI_Get_library_version(g_library_version, &length);
  char* newline = strchr(g_library_version, '\n');
  if (newline) *newline = '\0';
  return MPI_SUCCESS;
}

int Finalize() { return MPI_Finalize(); }
int Rank(int* rank) { return MPI_Comm_rank(MPI_COMM_WORLD, rank); }
int Size(int* size) { return MPI_Comm_size(MPI_COMM_WORLD, size); }
int Barrier() { return MPI_Barrier(MPI_COMM_WORLD); }

int Allreduce(const void* send, void* recv, size_t count, int type, int op) {
  size_t per_chunk = kChunk / SizeOf(type);
  for (size_t done = 0; done < count;) {
    size_t n = std::min(per_chunk, count - done);
    const char* s = static_cast<const char*>(send) + done * SizeOf(type);
    char* r = static_cast<char*>(recv) + done * SizeOf(type);
    int rc = MPI_Allreduce(s, r, static_cast<int>(n), TypeOf(type), OpOf(op), MPI_COMM_WORLD);
    if (rc != MPI_SUCCESS) return rc;
    done += n;
  }
  return MPI_SUCCESS;
}

int Bcast(void* buffer, size_t bytes, int root) {
  for (size_t done = 0; done < bytes;) {
    size_t n = std::min(kChunk, bytes - done);
    int rc = MPI_Bcast(static_cast<char*>(buffer) + done, static_cast<int>(n), MPI_BYTE, root,
                       MPI_COMM_WORLD);
    if (rc != MPI_SUCCESS) return rc;
    done += n;
  }
  return MPI_SUCCESS;
}

int GatherInt64(int64_t value, int64_t* values, int root) {
  return MPI_Gather(&value, 1, MPI_INT64_T, values, 1, MPI_INT64_T, root, MPI_COMM_WORLD);
}

// Node summaries are kilobytes: lengths over INT_MAX are refused, not chunked.
int Gatherv(const void* bytes, size_t length, void* out, const int64_t* lengths, int root) {
  if (length > INT_MAX) return MPI_ERR_COUNT;
  int rank = 0, size = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  std::vector<int> counts, displs;
  if (rank == root) {
    int64_t offset = 0;
    for (int i = 0; i < size; ++i) {
      if (lengths[i] < 0 || lengths[i] > INT_MAX || offset > INT_MAX) return MPI_ERR_COUNT;
      counts.push_back(static_cast<int>(lengths[i]));
      displs.push_back(static_cast<int>(offset));
      offset += lengths[i];
    }
  }
  return MPI_Gatherv(bytes, static_cast<int>(length), MPI_BYTE, out, counts.data(), displs.data(),
                     MPI_BYTE, root, MPI_COMM_WORLD);
}

int Send(const void* bytes, size_t length, int dest, int tag) {
  if (length > INT_MAX) return MPI_ERR_COUNT;
  return MPI_Send(bytes, static_cast<int>(length), MPI_BYTE, dest, tag, MPI_COMM_WORLD);
}

int Recv(void* bytes, size_t length, int source, int tag) {
  if (length > INT_MAX) return MPI_ERR_COUNT;
  return MPI_Recv(bytes, static_cast<int>(length), MPI_BYTE, source, tag, MPI_COMM_WORLD,
                  MPI_STATUS_IGNORE);
}

void ErrorString(int code, char* text, size_t capacity) {
  char buffer[MPI_MAX_ERROR_STRING + 1] = "";
  int length = 0;
  if (MPI_Error_string(code, buffer, &length) != MPI_SUCCESS)
    snprintf(buffer, sizeof(buffer), "MPI error %d", code);
  snprintf(text, capacity, "%s", buffer);
}

void Abort(int code) { MPI_Abort(MPI_COMM_WORLD, code); }

StallscopeMpiApi g_api = {STALLSCOPE_MPI_API_VERSION,
                          g_library_version,
                          Init,
                          Finalize,
                          Rank,
                          Size,
                          Barrier,
                          Allreduce,
                          Bcast,
                          GatherInt64,
                          Gatherv,
                          Send,
                          Recv,
                          ErrorString,
                          Abort};

}  // namespace

extern "C" __attribute__((visibility("default"))) const StallscopeMpiApi* stallscope_mpi_api(void) {
  return &g_api;
}
