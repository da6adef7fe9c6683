/* zcclRedOpCreatePreMulSum and zcclRedOpDestroy on the simulator: two ranks as threads. Each
 * all_reduces with a PreMulSum of 0.25 (f32, in place) and of 0.5 (bf16 scalar, out of place),
 * reduce_scatters with the f32 one, all_reduces twice with a bf16 scalar in "device" memory
 * (zcclScalarDevice) changed between the calls, and checks every element; then each misuse must be
 * zcclInvalidArgument and leave the communicator usable (a plain sum after them is right).
 * Prints "rank R: ok" per rank; exit status 0 when both are. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#define COUNT 3000

#include "ranks.h"

static float value(int i, int rank) { return (float)(i % 97 - 40 + 3 * rank); }

/* bf16 bits of a float whose low 16 bits are zero */
static uint16_t bf16(float f) {
  union { float f; uint32_t u; } v = {f};
  return (uint16_t)(v.u >> 16);
}

static float from_bf16(uint16_t b) {
  union { uint32_t u; float f; } v = {(uint32_t)b << 16};
  return v.f;
}

static void *rank_main(void *arg) {
  int rank = (int)(long)arg;
  zcclComm_t comm = NULL;
  CHECK(zcclCommInitRank(&comm, NRANKS, id, rank));

  float *a = malloc(COUNT * sizeof(float));
  float *rs = malloc(COUNT / NRANKS * sizeof(float));
  float *s = malloc(COUNT * sizeof(float));
  uint16_t *h = malloc(COUNT * sizeof(uint16_t));
  uint16_t *hout = malloc(COUNT * sizeof(uint16_t));
  for (int i = 0; i < COUNT; i++) {
    a[i] = s[i] = value(i, rank);
    h[i] = bf16(value(i, rank));
  }

  float quarter = 0.25f;
  uint16_t half = bf16(0.5f);
  zcclRedOp_t by_quarter, by_half;
  CHECK(zcclRedOpCreatePreMulSum(&by_quarter, &quarter, zcclFloat32, zcclScalarHostImmediate, comm));
  CHECK(zcclRedOpCreatePreMulSum(&by_half, &half, zcclBfloat16, zcclScalarHostImmediate, comm));
  if (by_quarter < zcclNumOps || by_half < zcclNumOps || by_quarter == by_half)
    FAIL("operators %d and %d", by_quarter, by_half);
  CHECK(zcclReduceScatter(a, rs, COUNT / NRANKS, zcclFloat32, by_quarter, comm, NULL));
  CHECK(zcclAllReduce(a, a, COUNT, zcclFloat32, by_quarter, comm, NULL));
  CHECK(zcclAllReduce(h, hout, COUNT, zcclBfloat16, by_half, comm, NULL));
  CHECK(zcclCommFinalize(comm));

  int wrong = 0;
  for (int i = 0; i < COUNT; i++) {
    float sum = 0;
    for (int r = 0; r < NRANKS; r++) sum += value(i, r);
    /* every value is a small integer: the products and sums are exact */
    wrong += a[i] != 0.25f * sum;
    wrong += from_bf16(hout[i]) != 0.5f * sum;
    if (i / (COUNT / NRANKS) == rank) wrong += rs[i % (COUNT / NRANKS)] != 0.25f * sum;
  }
  if (wrong) FAIL("%d wrong elements", wrong);

  /* a scalar in device memory (host memory on the simulator): written after the operator is
   * made, and each call reads the value it holds then */
  uint16_t *on_device = malloc(sizeof(uint16_t));
  zcclRedOp_t by_device;
  CHECK(zcclRedOpCreatePreMulSum(&by_device, on_device, zcclBfloat16, zcclScalarDevice, comm));
  for (int round = 0; round < 2; round++) {
    float scale = round == 0 ? 0.5f : -2.0f;
    *on_device = bf16(scale);
    CHECK(zcclAllReduce(h, hout, COUNT, zcclBfloat16, by_device, comm, NULL));
    CHECK(zcclCommFinalize(comm));
    for (int i = 0; i < COUNT; i++) {
      float sum = 0;
      for (int r = 0; r < NRANKS; r++) sum += value(i, r);
      wrong += from_bf16(hout[i]) != scale * sum;
    }
  }
  if (wrong) FAIL("%d wrong elements with the scalar in device memory", wrong);
  CHECK(zcclRedOpDestroy(by_device, comm));
  free(on_device);

  /* misuse: refused, and the communicator goes on */
  zcclRedOp_t unused;
  REFUSED(zcclRedOpCreatePreMulSum(&unused, &quarter, zcclFloat32, 7, comm)); /* no such residence */
  REFUSED(zcclRedOpCreatePreMulSum(&unused, NULL, zcclFloat32, zcclScalarHostImmediate, comm));
  REFUSED(zcclAllReduce(h, h, COUNT, zcclBfloat16, by_quarter, comm, NULL)); /* made for f32 */
  REFUSED(zcclAllReduce(s, s, COUNT, zcclFloat32, by_half + 7, comm, NULL));
  REFUSED(zcclAllReduce(s, s, COUNT, zcclFloat32, -2147483647 - 1, comm, NULL));
  CHECK(zcclRedOpDestroy(by_quarter, comm));
  REFUSED(zcclRedOpDestroy(by_quarter, comm));
  REFUSED(zcclAllReduce(s, s, COUNT, zcclFloat32, by_quarter, comm, NULL)); /* destroyed */
  REFUSED(zcclRedOpDestroy(zcclSum, comm));
  CHECK(zcclRedOpDestroy(by_half, comm));
  CHECK(zcclAllReduce(s, s, COUNT, zcclFloat32, zcclSum, comm, NULL));
  CHECK(zcclCommFinalize(comm));
  for (int i = 0; i < COUNT; i++) {
    float sum = 0;
    for (int r = 0; r < NRANKS; r++) sum += value(i, r);
    wrong += s[i] != sum;
  }
  if (wrong) FAIL("%d wrong elements of the sum after the refused calls", wrong);

  CHECK(zcclCommDestroy(comm));
  free(a);
  free(rs);
  free(s);
  free(h);
  free(hout);
  printf("rank %d: ok\n", rank);
  return NULL;
}

int main(void) { return run_ranks(rank_main); }
