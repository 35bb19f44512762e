/* frontend/passes/graph_widen.c: a 16-bit model computed in f32
 * (cov_model_options.compute_f32).
 *
 * A model exported in float16 (or bfloat16) has 16-bit inputs, weights,
 * activations and outputs. A backend that computes in f32 — the GPU model
 * path, whose capture carries 32-bit tags through the frontend's data
 * movement — takes the same model with every 16-bit value widened: after
 * shape inference each f16/bf16 value becomes f32 (constants and tensor
 * attributes, such as ConstantOfShape's fill, converted exactly), so casts
 * to f16 become casts to f32 (exact widenings, not roundings) and every
 * group binds its f32 codelets. The inputs and outputs remember the dtype
 * the model declares (graph_value.io_dtype, graph.output_io_dtypes): callers give and get that one,
 * the runtime converting at the edges. Results differ from the 16-bit
 * model's by its roundings only (the f32 ones are the more accurate). */
#include <string.h>

#include "frontend/graph.h"

static int is16(cov_dtype d) { return d == COV_F16 || d == COV_BF16; }

static cov_status widen_value(graph *g, graph_value *v) {
  if (!v || !is16(v->dtype)) return NULL;
  if (v->data) {
    int64_t n = graph_numel(v);
    float *f = n >= 0 ? cov_arena_array(g->arena, (size_t)(n ? n : 1), sizeof *f) : NULL;
    if (!f) return graph_value_error(g, v, COV_OUT_OF_MEMORY, "out of memory widening it to f32");
    const uint16_t *h = v->data;
    for (int64_t i = 0; i < n; i++) f[i] = v->dtype == COV_F16 ? cov_f16_to_f32(h[i]) : cov_bf16_to_f32(h[i]);
    v->data = f;
  }
  v->dtype = COV_F32;
  return NULL;
}

cov_status graph_widen_16(graph *g) {
  for (size_t i = 0; i < g->n_inputs; i++) g->inputs[i]->io_dtype = g->inputs[i]->dtype;
  g->output_io_dtypes = cov_arena_array(g->arena, g->n_outputs ? g->n_outputs : 1, sizeof *g->output_io_dtypes);
  if (!g->output_io_dtypes) return cov_error(COV_OUT_OF_MEMORY, NULL, "out of memory");
  for (size_t i = 0; i < g->n_outputs; i++) g->output_io_dtypes[i] = g->outputs[i]->dtype;
  for (size_t i = 0; i < g->n_values; i++) COV_RETURN_IF_ERROR(widen_value(g, g->values[i]));
  for (size_t i = 0; i < g->n_inputs; i++) COV_RETURN_IF_ERROR(widen_value(g, (graph_value *)g->inputs[i]->default_value));
  for (size_t k = 0; k < g->n_nodes; k++) {
    graph_node *n = g->nodes[k];
    for (int a = 0; a < n->n_attrs; a++) COV_RETURN_IF_ERROR(widen_value(g, n->attrs[a].t));
    graph_attr *to = (graph_attr *)graph_attr_find(n, "to");
    if (to && to->type == GA_INT && !strcmp(n->op_type, "Cast") && (to->i == 10 || to->i == 16))
      to->i = 1; /* ONNX FLOAT16 / BFLOAT16 -> FLOAT */
  }
  return NULL;
}
