/* tests/fault/fault_alloc.c: allocation-failure injection for the
 * fault-injection build (COV_FAULT_INJECT).
 *
 * The program is linked with -Wl,--wrap for malloc, calloc, realloc, strdup
 * and strndup, so every allocation covenant's own code makes (the libraries
 * and the CLI; not libc's or Jansson's internal ones) passes through here.
 * COV_FAULT_ALLOC=N makes the Nth of them (counting from 1) return NULL, as
 * an exhausted heap would, and every other one succeed;
 * COV_FAULT_REPORT=1 prints the number of allocations made to stderr at
 * exit, which bounds the N worth trying (tests/fault/fault_sweep.sh);
 * COV_FAULT_TRACE=1 prints the call stack of the failed allocation.
 *
 * The counter is process-wide mutable state, which the library itself must
 * not have; it lives in this test-only object and is atomic, so threaded
 * programs count every allocation once. */
#include <execinfo.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void *__real_malloc(size_t n);
void *__real_calloc(size_t k, size_t n);
void *__real_realloc(void *p, size_t n);
void *__wrap_malloc(size_t n);
void *__wrap_calloc(size_t k, size_t n);
void *__wrap_realloc(void *p, size_t n);
char *__wrap_strdup(const char *s);
char *__wrap_strndup(const char *s, size_t n);

static atomic_ulong g_count;
static atomic_ulong g_fail_at; /* 0: not read yet; ULONG_MAX: never fail */
static atomic_int g_report;

static void report(void) { fprintf(stderr, "fault: %lu allocations\n", (unsigned long)atomic_load(&g_count)); }

static unsigned long fail_at(void) {
  unsigned long f = atomic_load(&g_fail_at);
  if (f) return f;
  const char *e = getenv("COV_FAULT_ALLOC");
  char *end = NULL;
  unsigned long v = e && *e ? strtoul(e, &end, 10) : 0;
  f = v && end && !*end ? v : (unsigned long)-1;
  unsigned long expect = 0;
  if (atomic_compare_exchange_strong(&g_fail_at, &expect, f)) {
    const char *r = getenv("COV_FAULT_REPORT");
    if (r && *r == '1' && !atomic_exchange(&g_report, 1)) atexit(report);
  }
  return atomic_load(&g_fail_at);
}

/* true when this allocation is the one to fail */
static int injected(void) {
  if (atomic_fetch_add(&g_count, 1) + 1 != fail_at()) return 0;
  const char *t = getenv("COV_FAULT_TRACE");
  if (t && *t == '1') {
    void *frames[32];
    backtrace_symbols_fd(frames, backtrace(frames, 32), 2);
  }
  return 1;
}

void *__wrap_malloc(size_t n) { return injected() ? NULL : __real_malloc(n); }
void *__wrap_calloc(size_t k, size_t n) { return injected() ? NULL : __real_calloc(k, n); }
void *__wrap_realloc(void *p, size_t n) { return injected() ? NULL : __real_realloc(p, n); }

char *__wrap_strdup(const char *s) {
  size_t n = strlen(s) + 1;
  char *d = __wrap_malloc(n);
  return d ? memcpy(d, s, n) : NULL;
}

char *__wrap_strndup(const char *s, size_t n) {
  size_t len = strnlen(s, n);
  char *d = __wrap_malloc(len + 1);
  if (!d) return NULL;
  memcpy(d, s, len);
  d[len] = '\0';
  return d;
}
