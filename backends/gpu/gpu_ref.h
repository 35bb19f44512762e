/* backends/gpu/gpu_ref.h: the independent CPU reference for GPU kernels.
 *
 * A naive loop nest over the layer's own definition (matmul, or conv2d
 * straight from NCHW/OIHW indices, not through the implicit-GEMM view the
 * kernel uses), accumulating in double, then bias, activation and pooling
 * as the codelets define them (gelu with the C library's erf). Inputs are
 * given as f32 values (already rounded to the input dtype). */
#ifndef COV_GPU_REF_H
#define COV_GPU_REF_H

#include <stddef.h>

#include "backends/gpu/gpu_plan.h"

/* Element counts of the kernel's four buffers (output after pooling). */
void gpu_buffer_sizes(const gpu_plan *p, size_t *a, size_t *b, size_t *out, size_t *bias);

void gpu_reference(const gpu_plan *p, const float *a, const float *b, const float *bias, float *out);

#endif
