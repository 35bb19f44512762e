/* covenant/arena.h: region allocation.
 *
 * Every IR object of one compilation (an ACG, a codelet, a graph, a schedule)
 * lives in one arena and is freed with it at once: no per-node frees, no leaks
 * by construction, and no ownership questions inside a pass. */
#ifndef COVENANT_ARENA_H
#define COVENANT_ARENA_H

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>

#include "covenant/api.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct cov_arena cov_arena;

COV_API cov_arena *cov_arena_create(void);
COV_API void cov_arena_destroy(cov_arena *arena);

/* Zeroed memory aligned for any type; NULL when out of memory. */
COV_API void *cov_arena_alloc(cov_arena *arena, size_t size);
/* n * size bytes, with the multiplication checked; NULL on overflow or OOM. */
COV_API void *cov_arena_array(cov_arena *arena, size_t n, size_t size);
/* Grows an array allocated from this arena (the old block is abandoned). */
COV_API void *cov_arena_grow(cov_arena *arena, void *old, size_t old_n, size_t new_n, size_t size);
COV_API char *cov_arena_strdup(cov_arena *arena, const char *s);
COV_API char *cov_arena_strndup(cov_arena *arena, const char *s, size_t n);
COV_API char *cov_arena_printf(cov_arena *arena, const char *fmt, ...)
            __attribute__((format(printf, 2, 3)));
COV_API char *cov_arena_vprintf(cov_arena *arena, const char *fmt, va_list ap);
/* Bytes handed out so far (for statistics and tests). */
COV_API size_t cov_arena_used(const cov_arena *arena);
/* True when an allocation from the arena has failed (or arena is NULL):
 * whatever was built in it may be incomplete, so the phase that built it
 * reports COV_OUT_OF_MEMORY instead of using it. */
COV_API bool cov_arena_failed(const cov_arena *arena);

/* Releases memory the API hands out as malloc'ed (the JSON texts of
 * cov_acg_to_json, cov_schedule_json, cov_npu_report_json, ...): for
 * callers that cannot reach the C library's free() (ctypes, other
 * languages). NULL is ignored. */
COV_API void cov_free(void *p);

#ifdef __cplusplus
}
#endif
#endif
