/* backends/registry/backend_ops.c: backend_op_support (backend_ops.h).
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

#include "covenant/mapper.h"
#include "covenant/npu.h"
#ifdef COV_HAVE_GPU_BACKENDS
#include "backends/gpu/gpu_artifact.h"
#endif

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

/* The first line of an error's message, into why. */
static void say(cov_status st, const char *codelet, char *why, size_t size) {
  const char *m = cov_status_message(st);
  snprintf(why, size, "%s: %.*s", codelet, (int)strcspn(m, "\n"), m);
}

static cov_status npu_takes(const cov_acg *acg, const char *codelet) {
  cov_layer *layer = NULL;
  cov_schedule *s = NULL;
  cov_npu_program *p = NULL;
  cov_map_options o = {.budget = 2000};
  cov_status st = cov_layer_example(codelet, 8, &layer);
  if (!st) st = cov_map(layer, acg, &o, &s);
  if (!st) st = cov_npu_compile(s, &p);
  cov_npu_program_free(p);
  cov_schedule_free(s);
  cov_layer_free(layer);
  return st;
}

/* A codelet the NPU path refuses falls back to the CPU; running out of
 * memory while asking is the caller's error. */
static cov_status npu_support(const backend_target *t, const cov_onnx_op *op, backend_op_where *where, char *why,
                              size_t size) {
  *where = BACKEND_OP_ACCEL;
  if (op->layout) {
    snprintf(why, size, "layout: moved by the frontend on the host");
    *where = BACKEND_OP_CPU;
    return NULL;
  }
  for (int i = 0; i < op->n_codelets; i++) {
    cov_status st = npu_takes(t->acg, op->codelets[i]);
    if (st && cov_status_code(st) == COV_OUT_OF_MEMORY) return st;
    if (st) {
      say(st, op->codelets[i], why, size);
      cov_status_free(st);
      *where = BACKEND_OP_CPU;
      return NULL;
    }
  }
  return NULL;
}

static backend_op_where gpu_support(const cov_onnx_op *op, char *why, size_t size) {
#ifdef COV_HAVE_GPU_BACKENDS
  if (op->layout) {
    snprintf(why, size, "layout: copies (refused where the group changes values: cov_model_group_info.alters)");
    return BACKEND_OP_GPU;
  }
  for (int i = 0; i < op->n_codelets; i++)
    if (!gpu_codelet_has_kernel(op->codelets[i])) {
      snprintf(why, size, "%s: no GPU kernel", op->codelets[i]);
      return BACKEND_OP_REFUSED;
    }
  return BACKEND_OP_GPU;
#else
  (void)op;
  snprintf(why, size, "built without the GPU backends");
  return BACKEND_OP_REFUSED;
#endif
}

cov_status backend_op_support(const backend_target *t, const cov_onnx_op *op, backend_op_where *where, char *why,
                              size_t size) {
  why[0] = '\0';
  *where = BACKEND_OP_REF;
  if (!t->acg) return NULL;
  if (!op->layout && op->n_codelets == 0) {
    snprintf(why, size, "its codelets follow the node's attributes (an equation, a mode)");
    *where = BACKEND_OP_DEPENDS;
    return NULL;
  }
  if (t->backend->gpu) {
    *where = gpu_support(op, why, size);
    return NULL;
  }
  return npu_support(t, op, where, why, size);
}
