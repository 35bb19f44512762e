/* mapper/map_suite.h: one entry of the layer suite (bench/suite/layers.json,
 * format in bench/suite/README.md), read with one set of rules for every
 * module that takes suite layers: the mapper (cov_layer_from_suite), the
 * GPU lowering (gpu_layer_from_spec) and explore (its layer counts). Each
 * finds the entry its own way (names, did-you-mean hints) and builds its
 * own form of it from these fields, so all three see the same layer. */
#ifndef COV_MAP_SUITE_H
#define COV_MAP_SUITE_H

#include <jansson.h>
#include <stdint.h>

#include "covenant/status.h"

#define MAP_SUITE_MAX_POST 8

typedef struct map_suite_entry {
  const char *name; /* the entry's "name" (NULL when it has none) */
  const char *op;   /* conv2d, maxpool, gemm, matmul or batch_matmul */
  /* conv2d/maxpool: input N x C x H x W, K filters (maxpool: K = C) of
   * R x S; gemm/matmul/batch_matmul: B batches (1 unless batch_matmul) of
   * [M x K] x [K x N]. Absent fields take their defaults: N = 1, B = 1,
   * stride = 1, pad = 0, dilation = 1, groups = 1. */
  int64_t N, C, H, W, K, R, S, stride, pad, dilation, groups;
  int64_t B, M;
  const char *post[MAP_SUITE_MAX_POST]; /* post-ops in order: bias, relu, ..., maxpool2x2 */
  int n_post;
} map_suite_entry;

/* Reads entry `e` (a member of "layers", located by `loc`: the file and its
 * JSON path). Strings point into `e`. Errors name the layer and the field:
 * a missing or non-integer field (integers in [0, 2^24]), a missing op, a
 * "post" that is not an array of at most MAP_SUITE_MAX_POST strings,
 * dilation on anything but a conv2d. An op other than those above reads
 * no fields: its reader refuses it with the ops it builds. */
cov_status map_suite_entry_read(const json_t *e, const cov_loc *loc, map_suite_entry *out);

/* The output rows (cols) of a window of r taps, dilated, over h inputs:
 * (h + 2 pad - dilation (r - 1) - 1) / stride + 1, or 0 when the window
 * does not fit. */
int64_t map_suite_out_dim(int64_t h, int64_t r, int64_t stride, int64_t pad, int64_t dilation);

#endif
