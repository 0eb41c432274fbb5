// The C table between stallscope and its MPI plugin (libstallscope_mpi.so).
//
// stallscope itself never links an MPI library: every command but `cluster`
// and `bench allreduce` must start fast and run on hosts without MPI. The
// plugin is a small shared object built against the MPI found at build time
// (find_package(MPI)); dist/mpi_world.cc dlopens it only under a launcher.
// Keeping MPI's handles (pointers in OpenMPI, integers in MPICH) on the
// plugin's side of this table makes the table the same for every MPI.
// Every call returns 0 on success or an MPI error code, whose text
// error_string gives. Bumping kStallscopeMpiApiVersion breaks old plugins on
// purpose: the loader refuses a table of another version.
#pragma once

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define STALLSCOPE_MPI_API_VERSION 1

enum StallscopeMpiType {
  kStallscopeMpiFloat = 0,
  kStallscopeMpiDouble = 1,
  kStallscopeMpiInt64 = 2
};
enum StallscopeMpiOp { kStallscopeMpiSum = 0, kStallscopeMpiMax = 1, kStallscopeMpiMin = 2 };

struct StallscopeMpiApi {
  int version;                  // STALLSCOPE_MPI_API_VERSION
  const char* library_version;  // MPI_Get_library_version's first line
  int (*init)(void);
  int (*finalize)(void);
  int (*rank)(int* rank);
  int (*size)(int* size);
  int (*barrier)(void);
  int (*allreduce)(const void* send, void* recv, size_t count, int type, int op);
  int (*bcast)(void* buffer, size_t bytes, int root);
  // Every rank's int64 to the root (counts: size entries, root only).
  int (*gather_int64)(int64_t value, int64_t* values, int root);
  // Every rank's bytes to the root, concatenated in rank order; lengths as
  // gathered by gather_int64 (root only; others pass null).
  int (*gatherv)(const void* bytes, size_t length, void* out, const int64_t* lengths, int root);
  int (*send)(const void* bytes, size_t length, int dest, int tag);
  int (*recv)(void* bytes, size_t length, int source, int tag);
  void (*error_string)(int code, char* text, size_t capacity);
  void (*abort)(int code);
};

// The one symbol the plugin exports.
const struct StallscopeMpiApi* stallscope_mpi_api(void);

#ifdef __cplusplus
}
#endif
