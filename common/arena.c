/* common/arena.c: bump allocation in chained blocks (see covenant/arena.h). */
#include "covenant/arena.h"

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define ARENA_ALIGN 16u
#define ARENA_BLOCK 65536u

typedef struct block {
  struct block *prev;
  size_t size, used;
  _Alignas(16) unsigned char data[];
} block;

struct cov_arena {
  block *head;
  size_t total;
  /* Sticky: an allocation from this arena has failed. Code that builds
   * an IR in the arena may stop at a NULL quietly (a field left empty);
   * its phase checks this once at the end and reports out of memory,
   * so a failed allocation never yields a smaller, wrong result. */
  bool failed;
};

static void *arena_fail(cov_arena *a) {
  if (a) a->failed = true;
  return NULL;
}

cov_arena *cov_arena_create(void) { return calloc(1, sizeof(cov_arena)); }

void cov_arena_destroy(cov_arena *a) {
  if (!a) return;
  for (block *b = a->head; b;) {
    block *p = b->prev;
    free(b);
    b = p;
  }
  free(a);
}

void *cov_arena_alloc(cov_arena *a, size_t size) {
  if (!a) return NULL;
  if (size == 0) size = 1;
  if (size > SIZE_MAX - ARENA_ALIGN) return arena_fail(a);
  size_t need = (size + ARENA_ALIGN - 1) & ~(size_t)(ARENA_ALIGN - 1);
  block *b = a->head;
  if (!b || b->size - b->used < need) {
    size_t cap = need > ARENA_BLOCK ? need : ARENA_BLOCK;
    if (cap > SIZE_MAX - sizeof(block)) return arena_fail(a);
    block *nb = malloc(sizeof(block) + cap);
    if (!nb) return arena_fail(a);
    nb->prev = b;
    nb->size = cap;
    nb->used = 0;
    /* Keep filling the old head when the new block is a one-off big one. */
    if (b && need > ARENA_BLOCK && b->size - b->used >= ARENA_ALIGN) {
      nb->prev = b->prev;
      b->prev = nb;
      nb->used = need;
      a->total += need;
      memset(nb->data, 0, need);
      return nb->data;
    }
    a->head = b = nb;
  }
  void *p = b->data + b->used;
  b->used += need;
  a->total += need;
  memset(p, 0, need);
  return p;
}

void *cov_arena_array(cov_arena *a, size_t n, size_t size) {
  size_t bytes;
  if (__builtin_mul_overflow(n, size, &bytes)) return arena_fail(a);
  return cov_arena_alloc(a, bytes);
}

void *cov_arena_grow(cov_arena *a, void *old, size_t old_n, size_t new_n, size_t size) {
  void *p = cov_arena_array(a, new_n, size);
  if (p && old && old_n) memcpy(p, old, (old_n < new_n ? old_n : new_n) * size);
  return p;
}

char *cov_arena_strndup(cov_arena *a, const char *s, size_t n) {
  if (!s) return NULL;
  if (n == SIZE_MAX) return arena_fail(a);
  char *p = cov_arena_alloc(a, n + 1);
  if (!p) return NULL;
  memcpy(p, s, n);
  p[n] = '\0';
  return p;
}

char *cov_arena_strdup(cov_arena *a, const char *s) {
  return s ? cov_arena_strndup(a, s, strlen(s)) : NULL;
}

char *cov_arena_vprintf(cov_arena *a, const char *fmt, va_list ap) {
  va_list ap2;
  va_copy(ap2, ap);
  int n = vsnprintf(NULL, 0, fmt, ap);
  char *p = n < 0 ? NULL : cov_arena_alloc(a, (size_t)n + 1);
  if (p) vsnprintf(p, (size_t)n + 1, fmt, ap2);
  va_end(ap2);
  return p;
}

char *cov_arena_printf(cov_arena *a, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  char *p = cov_arena_vprintf(a, fmt, ap);
  va_end(ap);
  return p;
}

size_t cov_arena_used(const cov_arena *a) { return a ? a->total : 0; }

bool cov_arena_failed(const cov_arena *a) { return !a || a->failed; }

void cov_free(void *p) { free(p); }
