/* backends/gpu/gpu_kernels.c: which codelets the model compiler
 * (gpu_mcompile.c) has GPU kernels for (all: any codelet lowers from its
 * loop nest, gpu_cdl.h), for listings (`covenant ops`), and the
 * activations the matrix chains and the depthwise kernel fuse. */
#include <string.h>

#include "backends/gpu/gpu_artifact.h"
#include "backends/gpu/gpu_mplan.h"

gpu_ew_fn gpu_unary_fn(const char *name) {
  static const struct {
    const char *n;
    gpu_ew_fn f;
  } t[] = {{"relu", GPU_FN_RELU}, {"relu6", GPU_FN_CLIP}, {"clip", GPU_FN_CLIP}, {"gelu", GPU_FN_GELU},
           {"hard_swish", GPU_FN_HSWISH}, {"hard_sigmoid", GPU_FN_HSIGMOID}};
  for (size_t i = 0; i < sizeof t / sizeof *t; i++)
    if (!strcmp(name, t[i].n)) return t[i].f;
  return GPU_FN_NONE;
}

gpu_ew_fn gpu_act_fn(gpu_act a) {
  switch (a) {
  case GPU_ACT_RELU: return GPU_FN_RELU;
  case GPU_ACT_CLIP: return GPU_FN_CLIP;
  case GPU_ACT_GELU: return GPU_FN_GELU;
  case GPU_ACT_HSWISH: return GPU_FN_HSWISH;
  case GPU_ACT_HSIGMOID: return GPU_FN_HSIGMOID;
  case GPU_ACT_SILU: return GPU_FN_SILU;
  default: return GPU_FN_NONE;
  }
}

gpu_act gpu_fn_act(gpu_ew_fn f) {
  switch (f) {
  case GPU_FN_RELU: return GPU_ACT_RELU;
  case GPU_FN_CLIP: return GPU_ACT_CLIP;
  case GPU_FN_GELU: return GPU_ACT_GELU;
  case GPU_FN_HSWISH: return GPU_ACT_HSWISH;
  case GPU_FN_HSIGMOID: return GPU_ACT_HSIGMOID;
  case GPU_FN_SILU: return GPU_ACT_SILU;
  default: return GPU_ACT_NONE;
  }
}

bool gpu_codelet_has_kernel(const char *codelet) {
  /* every codelet lowers from its loop nest (gpu_cdl.h); a call may still
   * be refused at compile time for its dtypes or shapes, located there */
  return codelet && codelet[0];
}
