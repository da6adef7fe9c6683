/* zipcoll's C ABI on the simulator (no GPU): three ranks as threads of one process; each
 * all_reduces a float buffer in place, then passes a buffer to the next rank with a grouped
 * send and receive, and checks both results. On a GPU the buffers would be device memory
 * (cudaMalloc), as with NCCL. Exit status 0 when every rank's results are right. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

#include "zipcoll.h"

#define NRANKS 3
#define COUNT 5000

#define CHECK(call)                                                                         \
  do {                                                                                      \
    zcclResult_t r_ = (call);                                                               \
    if (r_ != zcclSuccess) {                                                                \
      fprintf(stderr, "rank %d: %s: %s (%s)\n", rank, #call, zcclGetErrorString(r_),        \
              zcclGetLastError(comm));                                                      \
      return (void *)1;                                                                     \
    }                                                                                       \
  } while (0)

static zcclUniqueId id;

static float value(int i, int rank) { return (float)(i % 100 + 10 * rank); }

static void *rank_main(void *arg) {
  int rank = (int)(long)arg, n = 0, me = -1;
  zcclComm_t comm = NULL;
  CHECK(zcclCommInitRank(&comm, NRANKS, id, rank));
  CHECK(zcclCommCount(comm, &n));
  CHECK(zcclCommUserRank(comm, &me));
  if (n != NRANKS || me != rank) return (void *)1;

  float *sum = malloc(COUNT * sizeof(float));
  float *mine = malloc(COUNT * sizeof(float));
  float *prev = malloc(COUNT * sizeof(float));
  for (int i = 0; i < COUNT; i++) sum[i] = mine[i] = value(i, rank);

  CHECK(zcclAllReduce(sum, sum, COUNT, zcclFloat32, zcclSum, comm, NULL));
  CHECK(zcclGroupStart());
  CHECK(zcclSend(mine, COUNT, zcclFloat32, (rank + 1) % NRANKS, comm, NULL));
  CHECK(zcclRecv(prev, COUNT, zcclFloat32, (rank + NRANKS - 1) % NRANKS, comm, NULL));
  CHECK(zcclGroupEnd());
  CHECK(zcclCommFinalize(comm));

  int wrong = 0;
  for (int i = 0; i < COUNT; i++) {
    float want = 0;
    for (int r = 0; r < NRANKS; r++) want += value(i, r);
    wrong += sum[i] != want;
    wrong += prev[i] != value(i, (rank + NRANKS - 1) % NRANKS);
  }
  CHECK(zcclCommDestroy(comm));
  free(sum);
  free(mine);
  free(prev);
  printf("rank %d: %s\n", rank, wrong ? "WRONG" : "ok");
  return (void *)(long)(wrong != 0);
}

int main(void) {
  int rank = -1;
  zcclComm_t comm = NULL;
  int version = 0;
  if (zcclGetVersion(&version) != zcclSuccess || zcclGetUniqueId(&id) != zcclSuccess) {
    fprintf(stderr, "zipcoll: %s\n", zcclGetLastError(comm));
    return 1;
  }
  pthread_t t[NRANKS];
  for (long r = 0; r < NRANKS; r++) pthread_create(&t[r], NULL, rank_main, (void *)r);
  int failed = 0;
  for (int r = 0; r < NRANKS; r++) {
    void *rc = NULL;
    pthread_join(t[r], &rc);
    failed |= rc != NULL;
  }
  printf("zipcoll %d: %s\n", version, failed ? "FAILED" : "all ranks ok");
  (void)rank;
  return failed;
}
