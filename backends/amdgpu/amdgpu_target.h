/* backends/amdgpu/amdgpu_target.h: AMD's answers to the shared GPU lowering. */
#ifndef COV_AMDGPU_TARGET_H
#define COV_AMDGPU_TARGET_H

#include "backends/gpu/gpu_target.h"

/* workitem/workgroup ids, s_barrier after draining LDS and memory counters,
 * a static LDS array (so the code object states its LDS size), copies
 * through registers (no asynchronous global->LDS path), and MFMA:
 * v_mfma_f32_16x16x16f16 / _32x32x8f16 and the bf16_1k forms. */
extern const gpu_target_ops amdgpu_target_ops;

#endif
