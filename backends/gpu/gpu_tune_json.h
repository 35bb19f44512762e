/* backends/gpu/gpu_tune_json.h: the JSON documents of measured tuning (the
 * tuning file, covenant-run's times.json), read with Jansson and located
 * with common/json_pos.h so that every error names the file, the JSON path
 * and line:col. Internal to gpu_tune*.c. */
#ifndef COV_GPU_TUNE_JSON_H
#define COV_GPU_TUNE_JSON_H

#include <jansson.h>

#include "common/json_pos.h"
#include "covenant/arena.h"
#include "covenant/status.h"

typedef struct gpu_tdoc {
  const char *file;
  char *text;
  cov_jpos pos;
  cov_arena *arena;
  json_t *root;
} gpu_tdoc;

/* Reads and parses `path` (at most 64 MiB); a syntax error is located. */
cov_status gpu_tdoc_open(const char *path, gpu_tdoc *d);
void gpu_tdoc_close(gpu_tdoc *d);
/* A COV_INVALID_INPUT error at JSON path `path` of d. */
cov_status gpu_tdoc_fail(const gpu_tdoc *d, const char *path, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
/* ".key" / "[i]" appended to a path (in d's arena). */
const char *gpu_tdoc_key(gpu_tdoc *d, const char *base, const char *key);
const char *gpu_tdoc_index(gpu_tdoc *d, const char *base, size_t i);

#endif
