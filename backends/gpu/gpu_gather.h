/* backends/gpu/gpu_gather.h: the row gather kernel (gpu_lower_gather.c):
 * y[n*D + d] = x[ids[n]*D + d] for a [V, D] f32 table x and i64 ids; with
 * e->N indices, y[(a*N + n)*D + d] = x[(a*V + ids[n])*D + d] (a Gather on
 * any axis of an f32 value). */
#ifndef COV_GPU_GATHER_H
#define COV_GPU_GATHER_H

#include <stdint.h>

#include "backends/gpu/gpu_mplan.h"
#include "backends/gpu/gpu_target.h"

/* Work item i's element (the caller bounds i below e->n = N*D); with an
 * addend (e->bias, argument 3: f32 laid out as y; NULL without) y[i] +=
 * add[i] (an embedding plus the position embedding: gpu_mfuse.c). */
void gpu_lower_rows(gpu_gen *g, const gpu_ew *e, LLVMValueRef i, LLVMValueRef x, LLVMValueRef ids, LLVMValueRef y,
                    LLVMValueRef add);
/* The same in C, every work item. */
void gpu_gather_emulate(const gpu_ew *e, const float *x, const int64_t *ids, float *y, const float *add);

#endif
