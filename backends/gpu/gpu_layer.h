/* backends/gpu/gpu_layer.h: layer specifications -> gpu_problem.
 *
 * A spec names what to compile:
 *   NAME         an entry of the layer suite (bench/suite/layers.json);
 *   NAME@bN      the same layer at batch N (conv2d: N images; gemm: M rows
 *                times N; batch_matmul: N batches);
 *   gemm_MxNxK   a plain matmul of those sizes (the suite's gpu_shapes).
 * A maxpool entry is the standalone pool kernel. Post-ops the GPU epilogue
 * fuses (bias, relu, relu6, gelu, maxpool2x2 after a conv, softmax after a
 * matmul) go into the problem; any others are listed in `unfused` and left
 * to a separate kernel: the caller decides whether that is acceptable. */
#ifndef COV_GPU_LAYER_H
#define COV_GPU_LAYER_H

#include "backends/gpu/gpu_plan.h"

typedef struct gpu_layer {
  char name[96];
  gpu_problem prob;
  char unfused[64]; /* comma-separated post-ops not fused; "" when none */
  /* model layers only (gpu_model_layers): the layer group's index and its
   * first node's name, which bind the layer to the group a model run
   * offers (the name checks that both saw the same grouping) */
  int group;
  char node[128];
} gpu_layer;

/* Reads `spec` against the suite file `suite_path`. */
cov_status gpu_layer_from_spec(const char *suite_path, const char *spec, cov_dtype in_dtype,
                               gpu_layer *out);

/* Names of the suite's layers in file order (for "all"); returns the count
 * written to names (each up to 95 characters). */
cov_status gpu_layer_suite_names(const char *suite_path, char (*names)[96], int max, int *count);

/* The suite every command reads by default: $COVENANT_SUITE, else the
 * shipped one. */
const char *gpu_default_suite(void);

#endif
