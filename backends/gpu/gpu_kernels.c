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
  } t[] = {{"relu", GPU_FN_RELU}, {"relu6", GPU_FN_CLIP}, {"clip", GPU_FN_CLIP}, {"gelu", GPU_FN_GELU}};
  for (size_t i = 0; i < sizeof t / sizeof *t; i++)
    if (!strcmp(name, t[i].n)) return t[i].f;
  return GPU_FN_NONE;
}

bool gpu_codelet_has_kernel(const char *codelet) {
  /* every codelet lowers from its loop nest (gpu_cdl.h); a call may still
   * be refused at compile time for its dtypes or shapes, located there */
  return codelet && codelet[0];
}
