/* backends/registry/backend_ops.h: what a target does with each ONNX
 * operator the frontend reads (`covenant ops`), answered by the target's
 * backend: the NPU by mapping and compiling a representative call of each
 * codelet, the GPU backends by their model compiler's kernel list, the
 * reference target by running everything. */
#ifndef COV_BACKEND_OPS_H
#define COV_BACKEND_OPS_H

#include <stddef.h>

#include "backends/registry/backend_registry.h"
#include "covenant/model.h"

/* Where operator `op` runs on the opened target t (*where); `why` (size
 * bytes) says why it does not run on the accelerator, or "". An error only
 * when the question could not be answered (out of memory): a codelet the
 * backend does not take is an answer, not an error. */
cov_status backend_op_support(const backend_target *t, const cov_onnx_op *op, backend_op_where *where, char *why,
                              size_t size);
/* "npu", "cpu", "gpu", "ref", "refused", "depends" */
const char *backend_op_where_name(backend_op_where w);

#endif
