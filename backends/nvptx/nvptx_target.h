/* backends/nvptx/nvptx_target.h: NVIDIA's answers to the shared GPU lowering. */
#ifndef COV_NVPTX_TARGET_H
#define COV_NVPTX_TARGET_H

#include "backends/gpu/gpu_target.h"

/* ids from the PTX special registers, bar.sync, shared memory as dynamic
 * `.extern .shared` (so plans may use more than 48 KiB), cp.async.cg 16-byte
 * copies, and mma.sync m16n8k16 (f16/bf16 -> f32) fed by ldmatrix. */
extern const gpu_target_ops nvptx_target_ops;

#endif
