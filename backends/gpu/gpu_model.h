/* backends/gpu/gpu_model.h: an ONNX model's layer groups as GPU layers. */
#ifndef COV_GPU_MODEL_H
#define COV_GPU_MODEL_H

#include <stdio.h>

#include "backends/gpu/gpu_layer.h"
#include "covenant/model.h"

/* The compute groups of a loaded model (`path` names it in messages), in
 * order (conv chains with relu / clip / 2x2
 * max pool now; MatMul/Gemm groups are refused for the time being); any
 * other group is an error naming it, or, with skip_others, a note on
 * `notes` and skipped (residual adds, pools, ... then run elsewhere);
 * skip_others 2 skips contractions the lowering does not take as well
 * (a model run: the CPU runs them). `notes` may be NULL.
 * *out is malloc'ed. */
cov_status gpu_model_layers(const cov_model *m, const char *path, cov_dtype dtype, int skip_others, FILE *notes,
                            gpu_layer **out, int *count);

/* A conv layer's operands in a group a model run offers (o->desc set):
 * the input (one of the group's concrete inputs), the weights (the conv2d
 * call's constant) and the bias (the bias_add call's constant; NULL when
 * the layer has none), all f32, checked against the layer's problem
 * (shapes, and that the group's first node is the layer's); the group's
 * result, whose element count must be the kernel's output. Refused with an
 * error naming `path`, the group and its node. */
typedef struct gpu_group_operands {
  const cov_tensor *x, *w, *bias;
  cov_tensor out; /* dtype and shape of the group's result (data NULL) */
} gpu_group_operands;
cov_status gpu_bind_group(const char *path, const gpu_layer *layer, const cov_model_group_offer *o,
                          gpu_group_operands *ops);

#endif
