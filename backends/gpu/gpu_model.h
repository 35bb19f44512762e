/* backends/gpu/gpu_model.h: an ONNX model's layer groups as GPU layers. */
#ifndef COV_GPU_MODEL_H
#define COV_GPU_MODEL_H

#include <stdio.h>

#include "backends/gpu/gpu_layer.h"

/* The model's compute groups in order (conv chains with relu / clip / 2x2
 * max pool now; MatMul/Gemm groups are refused for the time being); any
 * other group is an error naming it, or, with skip_others, a note on
 * `notes` and skipped (residual adds, pools, ... then run elsewhere).
 * *out is malloc'ed. */
cov_status gpu_model_layers(const char *path, cov_dtype dtype, int skip_others, FILE *notes, gpu_layer **out,
                            int *count);

#endif
