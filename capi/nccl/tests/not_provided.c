/* The NCCL calls zipcoll's libnccl.so exports but does not provide: each must return
 * ncclInvalidArgument (4) and name itself in ncclGetLastError(NULL); ncclGetVersion reports
 * the API it implements (2.28: 22800). The prototypes are NCCL's, with opaque pointers for the
 * types zipcoll.h does not declare. Prints "not provided: ok"; exit status 0 when it is. */
#include <stdio.h>
#include <string.h>

#include "zipcoll.h"

typedef zcclResult_t ncclResult_t;
ncclResult_t ncclGetVersion(int *version);
const char *ncclGetLastError(zcclComm_t comm);
ncclResult_t ncclMemAlloc(void **ptr, size_t size);
ncclResult_t ncclMemFree(void *ptr);
ncclResult_t ncclCommWindowRegister(zcclComm_t comm, void *buff, size_t size, void **win, int winFlags);
ncclResult_t ncclCommWindowDeregister(zcclComm_t comm, void *win);
ncclResult_t ncclDevCommCreate(zcclComm_t comm, const void *reqs, void *devComm);
ncclResult_t ncclDevCommDestroy(zcclComm_t comm, const void *devComm);
ncclResult_t ncclCommShrink(zcclComm_t comm, int *exclude, int count, zcclComm_t *newcomm, zcclConfig_t *config,
                            int flags);
ncclResult_t ncclGroupSimulateEnd(void *simInfo);

static int failed = 0;

static void refused(ncclResult_t r, const char *name) {
  const char *why = ncclGetLastError(NULL);
  if (r != 4 || strstr(why, name) == NULL || strstr(why, "not provided") == NULL) {
    fprintf(stderr, "%s gave %d (%s)\n", name, r, why);
    failed = 1;
  }
}

int main(void) {
  int version = 0;
  if (ncclGetVersion(&version) != 0 || version != 22800) {
    fprintf(stderr, "ncclGetVersion: %d\n", version);
    failed = 1;
  }
  void *p = NULL;
  zcclComm_t c = NULL;
  refused(ncclMemAlloc(&p, 1024), "ncclMemAlloc");
  refused(ncclMemFree(p), "ncclMemFree");
  refused(ncclCommWindowRegister(c, p, 1024, &p, 0), "ncclCommWindowRegister");
  refused(ncclCommWindowDeregister(c, p), "ncclCommWindowDeregister");
  refused(ncclDevCommCreate(c, NULL, NULL), "ncclDevCommCreate");
  refused(ncclDevCommDestroy(c, NULL), "ncclDevCommDestroy");
  refused(ncclCommShrink(c, NULL, 0, &c, NULL, 0), "ncclCommShrink");
  refused(ncclGroupSimulateEnd(NULL), "ncclGroupSimulateEnd");
  if (!failed) printf("not provided: ok\n");
  return failed;
}
