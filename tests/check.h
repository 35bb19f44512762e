/* tests/check.h: a minimal assertion harness for C tests.
 * CHECK records a failure and carries on, so one run shows every broken
 * expectation; check_summary() prints "N passed, N failed" and gives the exit
 * status. */
#ifndef COV_TESTS_CHECK_H
#define COV_TESTS_CHECK_H

#include <stdio.h>
#include <string.h>

static int check_passed, check_failed;

#define CHECK(cond)                                                      \
  do {                                                                   \
    if (cond) {                                                          \
      check_passed++;                                                    \
    } else {                                                             \
      check_failed++;                                                    \
      fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__, __LINE__, #cond); \
    }                                                                    \
  } while (0)

#define CHECK_STR(a, b)                                                        \
  do {                                                                         \
    const char *ca_ = (a), *cb_ = (b);                                         \
    if (ca_ && cb_ && strcmp(ca_, cb_) == 0) {                                 \
      check_passed++;                                                          \
    } else {                                                                   \
      check_failed++;                                                          \
      fprintf(stderr, "%s:%d: check failed: %s == %s\n  got:  %s\n  want: %s\n", \
              __FILE__, __LINE__, #a, #b, ca_ ? ca_ : "(null)", cb_ ? cb_ : "(null)"); \
    }                                                                          \
  } while (0)

static inline int check_summary(void) {
  printf("%d passed, %d failed\n", check_passed, check_failed);
  return check_failed ? 1 : 0;
}

#endif
