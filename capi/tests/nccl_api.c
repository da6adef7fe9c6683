/* The calls zipcoll's C ABI gained for NCCL's programs, on the simulator with two ranks as
 * threads: zcclCommInitRankConfig with a config (its layout is NCCL 2.28's ncclConfig_t; a
 * config without the magic, or with maxCTAs 0, is refused), zcclBcast, zcclAlltoAll (in place
 * refused), zcclCommRegister/Deregister, zcclCommSplit with a config, and zcclCommInitAll from
 * one thread with its ranks then used by a thread each. Every result is checked element by
 * element; each refusal leaves the communicator usable. Prints "rank R: ok" per rank and
 * "init_all: ok"; exit status 0 when all are. */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "ranks.h"

#define COUNT 777

/* NCCL 2.28's ncclConfig_t, field by field */
_Static_assert(offsetof(zcclConfig_t, magic) == 8, "magic");
_Static_assert(offsetof(zcclConfig_t, blocking) == 16, "blocking");
_Static_assert(offsetof(zcclConfig_t, maxCTAs) == 28, "maxCTAs");
_Static_assert(offsetof(zcclConfig_t, netName) == 32, "netName");
_Static_assert(offsetof(zcclConfig_t, commName) == 48, "commName");
_Static_assert(offsetof(zcclConfig_t, nvlinkCentricSched) == 76, "nvlinkCentricSched");
_Static_assert(sizeof(zcclConfig_t) == 80, "size");

static float value(int i, int r) { return (float)(i % 97) * 0.5f + (float)r * 1000.0f; }

static void *rank_main(void *arg) {
  int rank = (int)(long)arg;
  zcclComm_t comm = NULL, refused = NULL;

  zcclConfig_t bad = ZCCL_CONFIG_INITIALIZER;
  bad.magic = 0;
  REFUSED(zcclCommInitRankConfig(&refused, NRANKS, id, rank, &bad));
  zcclConfig_t none = ZCCL_CONFIG_INITIALIZER;
  none.maxCTAs = 0;
  REFUSED(zcclCommInitRankConfig(&refused, NRANKS, id, rank, &none));
  zcclConfig_t config = ZCCL_CONFIG_INITIALIZER;
  config.maxCTAs = 1;
  config.blocking = 0;
  config.commName = "nccl_api";
  CHECK(zcclCommInitRankConfig(&comm, NRANKS, id, rank, &config));

  /* broadcast in place from rank 1 */
  static float b[NRANKS][COUNT];
  for (int i = 0; i < COUNT; i++) b[rank][i] = value(i, rank);
  CHECK(zcclBcast(b[rank], COUNT, zcclFloat32, 1, comm, NULL));

  /* all_to_all: block q of rank r's input goes to rank q's block r */
  static int32_t send[NRANKS][NRANKS * COUNT], recv[NRANKS][NRANKS * COUNT];
  for (int i = 0; i < NRANKS * COUNT; i++) send[rank][i] = rank * 1000000 + i;
  CHECK(zcclAlltoAll(send[rank], recv[rank], COUNT, zcclInt32, comm, NULL));
  REFUSED(zcclAlltoAll(send[rank], send[rank], COUNT, zcclInt32, comm, NULL));

  void *handle = NULL;
  CHECK(zcclCommRegister(comm, b[rank], sizeof b[rank], &handle));
  if (handle == NULL) FAIL("zcclCommRegister gave no handle");
  CHECK(zcclCommDeregister(comm, handle));
  REFUSED(zcclCommRegister(comm, NULL, 16, &handle));

  /* a split with a config: both ranks in one new communicator, in reverse order */
  zcclComm_t half = NULL;
  REFUSED(zcclCommSplit(comm, 0, -rank, &half, &bad));
  CHECK(zcclCommSplit(comm, 0, -rank, &half, &config));
  int me = -1;
  CHECK(zcclCommUserRank(half, &me));
  static uint8_t u[NRANKS][COUNT];
  for (int i = 0; i < COUNT; i++) u[rank][i] = (uint8_t)(i * 7 + rank);
  CHECK(zcclAllReduce(u[rank], u[rank], COUNT, zcclUint8, zcclMax, half, NULL));
  CHECK(zcclCommFinalize(half));
  CHECK(zcclCommDestroy(half));
  CHECK(zcclCommFinalize(comm));

  int wrong = me != NRANKS - 1 - rank;
  for (int i = 0; i < COUNT; i++) {
    wrong += b[rank][i] != value(i, 1);
    uint8_t u0 = (uint8_t)(i * 7), u1 = (uint8_t)(i * 7 + 1);
    wrong += u[rank][i] != (u0 > u1 ? u0 : u1);
    for (int q = 0; q < NRANKS; q++) wrong += recv[rank][q * COUNT + i] != q * 1000000 + rank * COUNT + i;
  }
  CHECK(zcclCommDestroy(comm));
  if (wrong) FAIL("%d wrong elements", wrong);
  printf("rank %d: ok\n", rank);
  return NULL;
}

/* zcclCommInitAll's communicators, one per thread: an all_reduce of ints and a destroy */
static zcclComm_t all[NRANKS];

static void *init_all_rank(void *arg) {
  int rank = (int)(long)arg;
  zcclComm_t comm = all[rank];
  static int64_t x[NRANKS][COUNT];
  for (int i = 0; i < COUNT; i++) x[rank][i] = (int64_t)i << (20 * rank);
  CHECK(zcclAllReduce(x[rank], x[rank], COUNT, zcclInt64, zcclSum, comm, NULL));
  CHECK(zcclCommFinalize(comm));
  CHECK(zcclCommDestroy(comm));
  for (int i = 0; i < COUNT; i++)
    if (x[rank][i] != (int64_t)i + ((int64_t)i << 20)) FAIL("element %d: %lld", i, (long long)x[rank][i]);
  return NULL;
}

int main(void) {
  int failed = run_ranks(rank_main);
  if (zcclCommInitAll(all, NRANKS, NULL) != zcclSuccess) {
    fprintf(stderr, "zcclCommInitAll: %s\n", zcclGetLastError(NULL));
    return 1;
  }
  pthread_t t[NRANKS];
  for (long r = 0; r < NRANKS; r++) pthread_create(&t[r], NULL, init_all_rank, (void *)r);
  for (int r = 0; r < NRANKS; r++) {
    void *rc = NULL;
    pthread_join(t[r], &rc);
    failed |= rc != NULL;
  }
  if (!failed) printf("init_all: ok\n");
  return failed;
}
