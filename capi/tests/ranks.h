/* What the C tests share: NRANKS ranks as threads of one process on the simulator, each
 * running `rank_main((void *)rank)` and returning NULL when all its checks held, and the
 * macros a rank checks its calls with (`rank` and `comm` in scope). */
#ifndef ZIPCOLL_TESTS_RANKS_H
#define ZIPCOLL_TESTS_RANKS_H

#include <pthread.h>
#include <stdio.h>

#include "zipcoll.h"

#define NRANKS 2

/* The rank's failure: prints why and ends `rank_main` with a non-NULL result. */
#define FAIL(...)                       \
  do {                                  \
    fprintf(stderr, "rank %d: ", rank); \
    fprintf(stderr, __VA_ARGS__);       \
    fprintf(stderr, "\n");              \
    return (void *)1;                   \
  } while (0)

/* The call must succeed. */
#define CHECK(call)                                                                                   \
  do {                                                                                                \
    zcclResult_t r_ = (call);                                                                         \
    if (r_ != zcclSuccess) FAIL("%s: %s (%s)", #call, zcclGetErrorString(r_), zcclGetLastError(comm)); \
  } while (0)

/* The call must be refused as an invalid argument. */
#define REFUSED(call)                                                                      \
  do {                                                                                     \
    zcclResult_t r_ = (call);                                                              \
    if (r_ != zcclInvalidArgument) FAIL("%s gave %d, not zcclInvalidArgument", #call, r_); \
  } while (0)

/* The id every rank initializes its communicator with (set by `run_ranks`). */
static zcclUniqueId id;

/* Runs `rank_main` on NRANKS threads; the exit status: 0 when every rank returned NULL. */
static int run_ranks(void *(*rank_main)(void *)) {
  if (zcclGetUniqueId(&id) != zcclSuccess) {
    fprintf(stderr, "zipcoll: %s\n", zcclGetLastError(NULL));
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
  return failed;
}

#endif
