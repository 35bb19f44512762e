/* tests/common/test_grow.c: common_grow against what a naive array of
 * the same elements holds. Growth keeps the elements there, zeroes the new
 * ones and doubles the capacity (from `first`); capacities near INT_MAX
 * and byte sizes past SIZE_MAX are refused as out of memory, leaving the
 * array as it was, without doubling an int past its range (which wraps
 * to zero and never ends). */
#include <limits.h>
#include <stdint.h>
#include <stdlib.h>

#include "common/grow.h"
#include "tests/check.h"

static void test_grows(void) {
  int64_t *a = NULL, want[100];
  int cap = 0;
  for (int n = 0; n < 100; n++) {
    cov_status st = common_grow((void **)&a, &cap, n + 1, sizeof *a, 8, "testing");
    CHECK(!st);
    cov_status_free(st);
    if (st) break;
    CHECK(a[n] == 0); /* new elements are zero */
    a[n] = want[n] = (int64_t)n * 7919 - 3;
  }
  CHECK(cap == 128); /* 8, 16, 32, 64, 128 */
  int same = 1;
  for (int n = 0; n < 100; n++) same &= a[n] == want[n];
  CHECK(same);
  /* need <= cap: nothing moves */
  int64_t *before = a;
  cov_status st = common_grow((void **)&a, &cap, 50, sizeof *a, 8, "testing");
  CHECK(!st && a == before && cap == 128);
  cov_status_free(st);
  /* a jump past several doublings */
  st = common_grow((void **)&a, &cap, 1000, sizeof *a, 8, "testing");
  CHECK(!st && cap == 1024 && a[999] == 0 && a[99] == want[99]);
  cov_status_free(st);
  free(a);
}

static void test_refuses(void) {
  /* a byte size past SIZE_MAX */
  char *p = NULL;
  int cap = 0;
  cov_status st = common_grow((void **)&p, &cap, 16, SIZE_MAX / 8, 16, "testing");
  CHECK(st && cov_status_code(st) == COV_OUT_OF_MEMORY && p == NULL && cap == 0);
  CHECK(st && strstr(cov_status_message(st), "out of memory testing"));
  cov_status_free(st);
  /* a capacity whose doubling passes INT_MAX, each element too large for
   * INT_MAX of them to fit: refused, not doubled round to zero (the array
   * is never touched: no allocation is attempted) */
  cap = INT_MAX / 2 + 2;
  st = common_grow((void **)&p, &cap, INT_MAX, SIZE_MAX / INT_MAX + 1, 16, "testing");
  CHECK(st && cov_status_code(st) == COV_OUT_OF_MEMORY && p == NULL && cap == INT_MAX / 2 + 2);
  cov_status_free(st);
}

int main(void) {
  test_grows();
  test_refuses();
  return check_summary();
}
