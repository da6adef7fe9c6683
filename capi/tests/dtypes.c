/* NCCL's integer dtypes and double from C on the simulator: two ranks as threads. Each
 * all_reduces int8 (sum wraps), uint8 (max), int32 (min, signed), uint32 (sum wraps), int64
 * (prod), uint64 (min, unsigned) and double (sum, and a PreMulSum with a double scalar), and
 * checks every element against the same arithmetic in C; then the int32 average (the wrapped
 * sum divided toward zero) and an int64 PreMulSum by INT64_MIN + 12345; an unknown dtype must
 * be zcclInvalidArgument and leave the communicator usable.
 * Prints "rank R: ok" per rank; exit status 0 when both are. */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#define COUNT 1001

#include "ranks.h"

/* element i of rank r's input: a spread of magnitudes and both signs, as 64 bits */
static uint64_t bits(int i, int r) {
  uint64_t x = (uint64_t)(i * 2654435761u + r * 40503u);
  return x * 0x9E3779B97F4A7C15ull;
}

static void *rank_main(void *arg) {
  int rank = (int)(long)arg;
  zcclComm_t comm = NULL;
  CHECK(zcclCommInitRank(&comm, NRANKS, id, rank));

  static int8_t i8[NRANKS][COUNT];
  static uint8_t u8[NRANKS][COUNT];
  static int32_t i32[NRANKS][COUNT];
  static uint32_t u32[NRANKS][COUNT];
  static int64_t i64[NRANKS][COUNT];
  static uint64_t u64[NRANKS][COUNT];
  static double f64[NRANKS][COUNT], g64[NRANKS][COUNT];
  for (int i = 0; i < COUNT; i++) {
    uint64_t b = bits(i, rank);
    i8[rank][i] = (int8_t)b;
    u8[rank][i] = (uint8_t)(b >> 8);
    i32[rank][i] = (int32_t)(b >> 16);
    u32[rank][i] = (uint32_t)(b >> 24);
    i64[rank][i] = (int64_t)(b >> (i % 40)) - (int64_t)(b >> 3);
    u64[rank][i] = b;
    f64[rank][i] = g64[rank][i] = (double)(int32_t)(b >> 32) * 1e-3 + 1e-300 * (double)(i % 7);
  }
  CHECK(zcclAllReduce(i8[rank], i8[rank], COUNT, zcclInt8, zcclSum, comm, NULL));
  CHECK(zcclAllReduce(u8[rank], u8[rank], COUNT, zcclUint8, zcclMax, comm, NULL));
  CHECK(zcclAllReduce(i32[rank], i32[rank], COUNT, zcclInt32, zcclMin, comm, NULL));
  CHECK(zcclAllReduce(u32[rank], u32[rank], COUNT, zcclUint32, zcclSum, comm, NULL));
  CHECK(zcclAllReduce(i64[rank], i64[rank], COUNT, zcclInt64, zcclProd, comm, NULL));
  CHECK(zcclAllReduce(u64[rank], u64[rank], COUNT, zcclUint64, zcclMin, comm, NULL));
  CHECK(zcclAllReduce(f64[rank], f64[rank], COUNT, zcclFloat64, zcclSum, comm, NULL));
  double third = 1.0 / 3.0;
  zcclRedOp_t by_third;
  CHECK(zcclRedOpCreatePreMulSum(&by_third, &third, zcclFloat64, zcclScalarHostImmediate, comm));
  CHECK(zcclAllReduce(g64[rank], g64[rank], COUNT, zcclDouble, by_third, comm, NULL));
  CHECK(zcclCommFinalize(comm));

  int wrong = 0;
  for (int i = 0; i < COUNT; i++) {
    uint64_t b0 = bits(i, 0), b1 = bits(i, 1);
    wrong += i8[rank][i] != (int8_t)(uint8_t)((uint8_t)b0 + (uint8_t)b1);
    uint8_t u0 = (uint8_t)(b0 >> 8), u1 = (uint8_t)(b1 >> 8);
    wrong += u8[rank][i] != (u0 > u1 ? u0 : u1);
    int32_t s0 = (int32_t)(b0 >> 16), s1 = (int32_t)(b1 >> 16);
    wrong += i32[rank][i] != (s0 < s1 ? s0 : s1);
    wrong += u32[rank][i] != (uint32_t)((uint32_t)(b0 >> 24) + (uint32_t)(b1 >> 24));
    uint64_t p0 = (uint64_t)((int64_t)(b0 >> (i % 40)) - (int64_t)(b0 >> 3));
    uint64_t p1 = (uint64_t)((int64_t)(b1 >> (i % 40)) - (int64_t)(b1 >> 3));
    wrong += (uint64_t)i64[rank][i] != p0 * p1;
    wrong += u64[rank][i] != (b0 < b1 ? b0 : b1);
    double d0 = (double)(int32_t)(b0 >> 32) * 1e-3 + 1e-300 * (double)(i % 7);
    double d1 = (double)(int32_t)(b1 >> 32) * 1e-3 + 1e-300 * (double)(i % 7);
    /* two ranks: the sum (and the sum of the scaled values) is one rounding, in either order */
    wrong += memcmp(&f64[rank][i], &(double){d0 + d1}, sizeof(double)) != 0;
    wrong += memcmp(&g64[rank][i], &(double){d0 * third + d1 * third}, sizeof(double)) != 0;
  }
  if (wrong) FAIL("%d wrong elements", wrong);

  /* the integer average (the wrapped sum divided toward zero, NCCL's SumPostDiv) and a
   * PreMulSum of int64 by a scalar no double holds (the product and the sum wrap) */
  static int32_t avg[NRANKS][COUNT];
  static int64_t pms[NRANKS][COUNT];
  for (int i = 0; i < COUNT; i++) {
    avg[rank][i] = (int32_t)(uint32_t)(bits(i, rank) >> 16);
    pms[rank][i] = (int64_t)bits(i, rank);
  }
  int64_t big = INT64_MIN + 12345;
  zcclRedOp_t by_big;
  CHECK(zcclRedOpCreatePreMulSum(&by_big, &big, zcclInt64, zcclScalarHostImmediate, comm));
  CHECK(zcclAllReduce(avg[rank], avg[rank], COUNT, zcclInt32, zcclAvg, comm, NULL));
  CHECK(zcclAllReduce(pms[rank], pms[rank], COUNT, zcclInt64, by_big, comm, NULL));
  CHECK(zcclCommFinalize(comm));
  for (int i = 0; i < COUNT; i++) {
    uint32_t sum = 0;
    uint64_t scaled = 0;
    for (int r = 0; r < NRANKS; r++) {
      sum += (uint32_t)(bits(i, r) >> 16);
      scaled += bits(i, r) * (uint64_t)big;
    }
    /* C's division truncates toward zero */
    wrong += avg[rank][i] != (int32_t)sum / NRANKS;
    wrong += (uint64_t)pms[rank][i] != scaled;
  }
  if (wrong) FAIL("%d wrong elements of the integer average or PreMulSum", wrong);

  /* an unknown dtype: refused, and the communicator goes on */
  REFUSED(zcclAllReduce(i32[rank], i32[rank], COUNT, 12, zcclSum, comm, NULL));
  int32_t ones[COUNT];
  for (int i = 0; i < COUNT; i++) ones[i] = 1;
  CHECK(zcclAllReduce(ones, ones, COUNT, zcclInt, zcclSum, comm, NULL));
  CHECK(zcclCommFinalize(comm));
  for (int i = 0; i < COUNT; i++) wrong += ones[i] != NRANKS;
  if (wrong) FAIL("%d wrong elements of the sum after the refused calls", wrong);

  CHECK(zcclRedOpDestroy(by_third, comm));
  CHECK(zcclRedOpDestroy(by_big, comm));
  CHECK(zcclCommDestroy(comm));
  printf("rank %d: ok\n", rank);
  return NULL;
}

int main(void) { return run_ranks(rank_main); }
