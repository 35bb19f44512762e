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
  } t[] = {{"relu", GPU_FN_RELU},   {"relu6", GPU_FN_CLIP},         {"clip", GPU_FN_CLIP}, {"sigmoid", GPU_FN_SIGMOID},
           {"tanh", GPU_FN_TANH},   {"gelu", GPU_FN_GELU},          {"gelu_tanh", GPU_FN_GELU_TANH},
           {"exp", GPU_FN_EXP},     {"sqrt", GPU_FN_SQRT},          {"abs", GPU_FN_ABS},   {"neg", GPU_FN_NEG},
           {"leaky_relu", GPU_FN_LEAKY}, {"erf", GPU_FN_ERF}};
  for (size_t i = 0; i < sizeof t / sizeof *t; i++)
    if (!strcmp(name, t[i].n)) return t[i].f;
  return GPU_FN_NONE;
}

gpu_ew_fn gpu_binary_fn(const char *name) {
  static const char *n[] = {"add", "sub", "mul", "div", "max", "min"};
  for (int i = 0; i < 6; i++)
    if (!strcmp(name, n[i])) return (gpu_ew_fn)(GPU_FN_ADD + i);
  return GPU_FN_NONE;
}

bool gpu_codelet_has_kernel(const char *codelet) {
  /* every codelet lowers from its loop nest (gpu_cdl.h); a call may still
   * be refused at compile time for its dtypes or shapes, located there */
  return codelet && codelet[0];
}
