/* zipcoll's C ABI: three ranks, one process each, as NCCL programs run. The first process makes
 * the unique id and starts the ranks (this program again, told its rank and the id by two
 * environment variables, where an MPI program would broadcast the id); each rank all_reduces a
 * float buffer in place, then passes a buffer to the next rank with a grouped send and
 * receive, and checks both results. Exit status 0 when every rank's results are right.
 *
 * As it stands it runs on the simulator (host memory, no stream; the ranks reach each other
 * over NET), as the test command does. Compiled with -DZCCL_EXAMPLE_CUDA (and linked with
 * -lcudart) the same program runs on GPUs: each rank's buffers are device memory (cudaMalloc)
 * and its calls are ordered on a CUDA stream of its own; the ranks share the GPUs round-robin. */
#define _POSIX_C_SOURCE 200809L
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#include "zipcoll.h"

#ifdef ZCCL_EXAMPLE_CUDA
#include <cuda_runtime.h>
#endif

extern char **environ;

#ifndef NRANKS
#define NRANKS 3
#endif
#define COUNT 5000

#define CHECK(call)                                                                         \
  do {                                                                                      \
    zcclResult_t r_ = (call);                                                               \
    if (r_ != zcclSuccess) {                                                                \
      fprintf(stderr, "rank %d: %s: %s (%s)\n", rank, #call, zcclGetErrorString(r_),        \
              zcclGetLastError(comm));                                                      \
      return 1;                                                                             \
    }                                                                                       \
  } while (0)

static zcclUniqueId id;

static float value(int i, int rank) { return (float)(i % 100 + 10 * rank); }

#ifdef ZCCL_EXAMPLE_CUDA
#define CUDA_CHECK(call)                                                                    \
  do {                                                                                      \
    cudaError_t e_ = (call);                                                                \
    if (e_ != cudaSuccess) {                                                                \
      fprintf(stderr, "rank %d: %s: %s\n", rank, #call, cudaGetErrorString(e_));            \
      return 1;                                                                             \
    }                                                                                       \
  } while (0)
#endif

static int rank_main(int rank) {
  int n = 0, me = -1;
  zcclComm_t comm = NULL;
  size_t bytes = COUNT * sizeof(float);
  float *sum = malloc(bytes);
  float *mine = malloc(bytes);
  float *prev = malloc(bytes);
  for (int i = 0; i < COUNT; i++) sum[i] = mine[i] = value(i, rank);
#ifdef ZCCL_EXAMPLE_CUDA
  /* the rank's GPU is current when it initializes, as NCCL expects */
  int devices = 0;
  CUDA_CHECK(cudaGetDeviceCount(&devices));
  CUDA_CHECK(cudaSetDevice(rank % devices));
  cudaStream_t stream;
  CUDA_CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  float *sum_d = NULL, *mine_d = NULL, *prev_d = NULL;
  CUDA_CHECK(cudaMalloc((void **)&sum_d, bytes));
  CUDA_CHECK(cudaMalloc((void **)&mine_d, bytes));
  CUDA_CHECK(cudaMalloc((void **)&prev_d, bytes));
  CUDA_CHECK(cudaMemcpyAsync(sum_d, sum, bytes, cudaMemcpyHostToDevice, stream));
  CUDA_CHECK(cudaMemcpyAsync(mine_d, mine, bytes, cudaMemcpyHostToDevice, stream));
#else
  void *stream = NULL;
  float *sum_d = sum, *mine_d = mine, *prev_d = prev;
#endif
  CHECK(zcclCommInitRank(&comm, NRANKS, id, rank));
  CHECK(zcclCommCount(comm, &n));
  CHECK(zcclCommUserRank(comm, &me));
  if (n != NRANKS || me != rank) return 1;

  CHECK(zcclAllReduce(sum_d, sum_d, COUNT, zcclFloat32, zcclSum, comm, stream));
  CHECK(zcclGroupStart());
  CHECK(zcclSend(mine_d, COUNT, zcclFloat32, (rank + 1) % NRANKS, comm, stream));
  CHECK(zcclRecv(prev_d, COUNT, zcclFloat32, (rank + NRANKS - 1) % NRANKS, comm, stream));
  CHECK(zcclGroupEnd());
#ifdef ZCCL_EXAMPLE_CUDA
  CUDA_CHECK(cudaMemcpyAsync(sum, sum_d, bytes, cudaMemcpyDeviceToHost, stream));
  CUDA_CHECK(cudaMemcpyAsync(prev, prev_d, bytes, cudaMemcpyDeviceToHost, stream));
  CUDA_CHECK(cudaStreamSynchronize(stream));
#endif
  CHECK(zcclCommFinalize(comm));

  int wrong = 0;
  for (int i = 0; i < COUNT; i++) {
    float want = 0;
    for (int r = 0; r < NRANKS; r++) want += value(i, r);
    wrong += sum[i] != want;
    wrong += prev[i] != value(i, (rank + NRANKS - 1) % NRANKS);
  }
  CHECK(zcclCommDestroy(comm));
#ifdef ZCCL_EXAMPLE_CUDA
  CUDA_CHECK(cudaFree(sum_d));
  CUDA_CHECK(cudaFree(mine_d));
  CUDA_CHECK(cudaFree(prev_d));
  CUDA_CHECK(cudaStreamDestroy(stream));
#endif
  free(sum);
  free(mine);
  free(prev);
  printf("rank %d: %s\n", rank, wrong ? "WRONG" : "ok");
  return wrong != 0;
}

int main(int argc, char **argv) {
  (void)argc;
  int rank = -1;
  zcclComm_t comm = NULL;
  const char *my_rank = getenv("ZCCL_EXAMPLE_RANK"), *my_id = getenv("ZCCL_EXAMPLE_ID");
  if (my_rank && my_id) {
    /* a rank: the id is text, NUL-padded */
    strncpy(id.internal, my_id, sizeof id.internal);
    return rank_main(atoi(my_rank));
  }
  int version = 0;
  if (zcclGetVersion(&version) != zcclSuccess || zcclGetUniqueId(&id) != zcclSuccess) {
    fprintf(stderr, "zipcoll: %s\n", zcclGetLastError(comm));
    return 1;
  }
  /* the id's root runs in this process: it stays until every rank is done */
  char id_var[sizeof id.internal + 32], rank_var[32];
  snprintf(id_var, sizeof id_var, "ZCCL_EXAMPLE_ID=%.*s", (int)sizeof id.internal, id.internal);
  size_t n_env = 0;
  while (environ[n_env]) n_env++;
  char **env = calloc(n_env + 3, sizeof *env);
  memcpy(env, environ, n_env * sizeof *env);
  env[n_env] = id_var;
  env[n_env + 1] = rank_var;
  pid_t pids[NRANKS];
  int failed = 0;
  for (rank = 0; rank < NRANKS; rank++) {
    snprintf(rank_var, sizeof rank_var, "ZCCL_EXAMPLE_RANK=%d", rank);
    if (posix_spawn(&pids[rank], "/proc/self/exe", NULL, NULL, argv, env) != 0) {
      fprintf(stderr, "rank %d: could not start\n", rank);
      pids[rank] = -1;
      failed = 1;
    }
  }
  for (rank = 0; rank < NRANKS; rank++) {
    int status = 0;
    if (pids[rank] > 0 && (waitpid(pids[rank], &status, 0) < 0 || !WIFEXITED(status) || WEXITSTATUS(status)))
      failed = 1;
  }
  free(env);
  printf("zipcoll %d: %s\n", version, failed ? "FAILED" : "all ranks ok");
  return failed;
}
