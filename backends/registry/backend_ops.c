/* backends/registry/backend_ops.c: backend_op_support (backend_ops.h):
 * what every target shares (the reference runs everything, an operator
 * whose codelets follow its attributes depends on them), then the row's
 * op_support (backend_npu.c, backend_gpu.c):
 *
 * NPU: the frontend runs layout operations on the host CPU; a compute
 * operator runs on the NPU when every codelet it lowers to maps on the ACG
 * and compiles to an NPU program at a representative size
 * (cov_layer_example, 8 per dim), else its calls fall back to the CPU
 * reference interpreter, as `covenant run` does. GPU: a compute operator
 * compiles when the model compiler has a kernel for each of its codelets
 * (gpu_codelet_has_kernel), layout becomes copies; anything else refuses
 * the model (a GPU model runs whole on the device). */
#include "backends/registry/backend_ops.h"

#include <stdio.h>
#include <string.h>


const char *backend_op_where_name(backend_op_where w) {
  switch (w) {
    case BACKEND_OP_ACCEL: return "npu";
    case BACKEND_OP_CPU: return "cpu";
    case BACKEND_OP_GPU: return "gpu";
    case BACKEND_OP_REF: return "ref";
    case BACKEND_OP_REFUSED: return "refused";
    case BACKEND_OP_DEPENDS: return "depends";
  }
  return "?";
}

cov_status backend_op_support(const backend_target *t, const cov_onnx_op *op, backend_op_where *where, char *why,
                              size_t size) {
  why[0] = '\0';
  *where = BACKEND_OP_REF;
  if (t->backend->ops & BACKEND_ORACLE) return NULL;
  if (!op->layout && op->n_codelets == 0) {
    snprintf(why, size, "its codelets follow the node's attributes (an equation, a mode)");
    *where = BACKEND_OP_DEPENDS;
    return NULL;
  }
  if (!t->backend->op_support) {
    snprintf(why, size, "the %s backend does not say", t->backend->name);
    *where = BACKEND_OP_REFUSED;
    return NULL;
  }
  return t->backend->op_support(t, op, where, why, size);
}
