/* backends/gpu/gpu_model_run.c: a whole ONNX model on a GPU.
 *
 * The model is loaded once (cov_model_load_file); gpu_model_layers gives
 * each of its layer groups the GPU lowering takes as a gpu_layer tagged with
 * its group index. Through the frontend's group hook (cov_model_run_groups)
 * every compute group is offered with its concrete inputs and its
 * description, whose constant arguments carry the weights and bias: a group
 * with a GPU layer is bound to it (gpu_bind_group: shapes checked against
 * the layer's problem), compiled, run on the device (the same upload /
 * launch / download as the suite layers, gpu_launch_layer) and its f32
 * result handed back; every other compute group runs on the CPU reference
 * interpreter, and layout operations in the frontend. The outputs are then
 * checked against the CPU reference target on the same inputs. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "backends/gpu/gpu_model.h"
#include "backends/gpu/gpu_ref.h"
#include "backends/gpu/gpu_run.h"
#include "backends/gpu/gpu_vendor.h"
#include "covenant/gpu.h"
#include "covenant/model.h"
#include "covenant/tensor.h"

static cov_status bind_error(const char *path, const cov_model_group_offer *o, const char *node, const char *fmt,
                             const char *detail) {
  return cov_error(COV_UNSUPPORTED, NULL, "%s: layer group %d (%s, node '%s'): %s%s", path, o->group, o->kind, node,
                   fmt, detail ? detail : "");
}

static int same_shape(const cov_tensor *t, int rank, const int64_t *dims) {
  if (t->rank != rank) return 0;
  for (int i = 0; i < rank; i++)
    if (t->shape[i] != dims[i]) return 0;
  return 1;
}

static void shape_str(const cov_tensor *t, char *buf, size_t n) {
  size_t k = (size_t)snprintf(buf, n, "[");
  for (int i = 0; i < t->rank && k < n; i++)
    k += (size_t)snprintf(buf + k, n - k, "%s%lld", i ? ", " : "", (long long)t->shape[i]);
  if (k < n) snprintf(buf + k, n - k, "]");
}

cov_status gpu_bind_group(const char *path, const gpu_layer *layer, const cov_model_group_offer *o,
                          gpu_group_operands *ops) {
  memset(ops, 0, sizeof *ops);
  const char *node = o->desc ? cov_model_group_name(o->desc) : layer->node;
  if (!o->desc) return bind_error(path, o, node, "the group cannot be described: ", o->why_not);
  /* both readings of the file must have grouped the same way */
  if (o->group != layer->group || strcmp(node, layer->node))
    return cov_error(COV_INTERNAL, NULL,
                     "%s: layer group %d (node '%s') is offered for GPU layer %s (group %d, node '%s')", path,
                     o->group, node, layer->name, layer->group, layer->node);
  const gpu_problem *q = &layer->prob;
  if (q->kind != GPU_OP_CONV2D) return bind_error(path, o, node, "only conv layers run from models", NULL);
  const cov_model_arg *x = NULL, *w = NULL, *bias = NULL;
  size_t nc = cov_model_group_num_calls(o->desc);
  for (size_t c = 0; c < nc; c++) {
    const cov_model_group_call *call = cov_model_group_call_at(o->desc, c);
    if (!strcmp(call->codelet, "conv2d") && !x && call->n_args == 2) {
      x = &call->args[0], w = &call->args[1];
    } else if (!strcmp(call->codelet, "bias_add") && x && !bias && call->n_args == 2) {
      bias = call->args[1].kind == COV_MODEL_ARG_CONST ? &call->args[1] : &call->args[0];
    }
  }
  if (!x || x->kind != COV_MODEL_ARG_EXTERNAL || x->input < 0 || (size_t)x->input >= o->n_in)
    return bind_error(path, o, node, "no conv2d call reading an input from outside the group", NULL);
  if (w->kind != COV_MODEL_ARG_CONST || !w->t.data)
    return bind_error(path, o, node, "the conv2d weights are not a constant", NULL);
  if (q->epi.bias != (bias != NULL) || (bias && (bias->kind != COV_MODEL_ARG_CONST || !bias->t.data)))
    return bind_error(path, o, node, q->epi.bias ? "the layer has a bias but the group no constant bias_add"
                                                 : "the group adds a bias the layer does not have",
                      NULL);
  const cov_tensor *xt = &o->in[x->input];
  char got[96];
  int64_t xd[4] = {q->cn, q->cc, q->ch, q->cw}, wd[4] = {q->ck, q->cc / q->groups, q->cr, q->cs};
  if (xt->dtype != COV_F32 || !same_shape(xt, 4, xd)) {
    shape_str(xt, got, sizeof got);
    char why[160];
    snprintf(why, sizeof why, "the input is %s%s, the GPU layer takes f32[%lld, %lld, %lld, %lld]",
             cov_dtype_name(xt->dtype), got, (long long)xd[0], (long long)xd[1], (long long)xd[2], (long long)xd[3]);
    return bind_error(path, o, node, why, NULL);
  }
  if (w->t.dtype != COV_F32 || !same_shape(&w->t, 4, wd)) {
    shape_str(&w->t, got, sizeof got);
    char why[200];
    snprintf(why, sizeof why, "the weights '%s' are %s%s, the GPU layer takes f32[%lld, %lld, %lld, %lld]",
             w->value, cov_dtype_name(w->t.dtype), got, (long long)wd[0], (long long)wd[1], (long long)wd[2],
             (long long)wd[3]);
    return bind_error(path, o, node, why, NULL);
  }
  if (bias && (bias->t.dtype != COV_F32 || cov_tensor_numel(&bias->t) != q->ck)) {
    shape_str(&bias->t, got, sizeof got);
    char why[200];
    snprintf(why, sizeof why, "the bias '%s' is %s%s, the GPU layer takes %lld f32 values", bias->value,
             cov_dtype_name(bias->t.dtype), got, (long long)q->ck);
    return bind_error(path, o, node, why, NULL);
  }
  /* the kernel's output: NCHW, after the fused 2x2/2 pool (floor) */
  int64_t oh = (q->ch + 2 * q->pad - q->dilation * (q->cr - 1) - 1) / q->stride + 1;
  int64_t ow = (q->cw + 2 * q->pad - q->dilation * (q->cs - 1) - 1) / q->stride + 1;
  if (q->epi.maxpool2x2) oh /= 2, ow /= 2;
  cov_model_group_output(o->desc, &ops->out);
  if (ops->out.dtype != COV_F32 || cov_tensor_numel(&ops->out) != q->cn * q->ck * oh * ow) {
    shape_str(&ops->out, got, sizeof got);
    char why[200];
    snprintf(why, sizeof why, "the group's result is %s%s, the GPU layer writes f32[%lld, %lld, %lld, %lld]",
             cov_dtype_name(ops->out.dtype), got, (long long)q->cn, (long long)q->ck, (long long)oh, (long long)ow);
    return bind_error(path, o, node, why, NULL);
  }
  ops->x = xt, ops->w = &w->t, ops->bias = bias ? &bias->t : NULL;
  return NULL;
}

/* ---- the run ----------------------------------------------------------- */

typedef struct run_row {
  int group;
  char node[128], kind[48];
  int gpu;
  float ms;
} run_row;

typedef struct run_ctx {
  const char *path;
  const gpu_target *t;
  const cov_gpu_options *opts;
  gpu_device *dev;
  gpu_layer *layers;
  int n_layers;
  run_row *rows;
  size_t n_rows, max_rows;
} run_ctx;

static cov_status run_group(run_ctx *c, gpu_layer *layer, const cov_model_group_offer *o, cov_tensor *out,
                            float *ms) {
  gpu_group_operands ops;
  COV_RETURN_IF_ERROR(gpu_bind_group(c->path, layer, o, &ops));
  gpu_plan plan;
  char *code = NULL;
  size_t code_size = 0;
  gpu_kernel_info info;
  gpu_layer l = *layer;
  cov_status st = gpu_compile_layer(c->t, c->opts, &l, NULL, &plan, &code, &code_size, &info);
  if (st) return cov_status_annotate(st, "%s: layer group %d (node '%s'): ", c->path, o->group, layer->node);
  size_t na, nb, no, nbias;
  gpu_buffer_sizes(&plan, &na, &nb, &no, &nbias);
  if ((int64_t)na != cov_tensor_numel(ops.x) || (int64_t)nb != cov_tensor_numel(ops.w) ||
      (int64_t)no != cov_tensor_numel(&ops.out) || (ops.bias && (int64_t)nbias != cov_tensor_numel(ops.bias))) {
    free(code);
    return cov_error(COV_INTERNAL, NULL, "%s: layer group %d (node '%s'): the kernel's buffers (%zu, %zu, %zu, %zu "
                     "elements) do not match the group's operands", c->path, o->group, layer->node, na, nb, no, nbias);
  }
  st = cov_tensor_alloc(out, COV_F32, ops.out.rank, ops.out.shape);
  if (!st) {
    char kernel[128];
    snprintf(kernel, sizeof kernel, "covenant_%s", l.name);
    st = gpu_launch_layer(c->dev, &plan, code, kernel, ops.x->data, ops.w->data, ops.bias ? ops.bias->data : NULL,
                          out->data, ms);
    if (st) {
      cov_tensor_release(out);
      st = cov_status_annotate(st, "%s: layer group %d (node '%s') on the GPU: ", c->path, o->group, layer->node);
    }
  }
  free(code);
  return st;
}

static cov_status group_hook(void *user, const cov_model_group_offer *o, cov_tensor *out, size_t n_out,
                             int *handled) {
  run_ctx *c = user;
  *handled = 0;
  gpu_layer *layer = NULL;
  for (int i = 0; i < c->n_layers && !layer; i++)
    if (c->layers[i].group == o->group) layer = &c->layers[i];
  if (c->n_rows == c->max_rows)
    return cov_error(COV_INTERNAL, NULL, "%s: more groups offered than the model's %zu", c->path, c->max_rows);
  run_row *r = &c->rows[c->n_rows++];
  memset(r, 0, sizeof *r);
  r->group = o->group;
  snprintf(r->node, sizeof r->node, "%s", o->desc ? cov_model_group_name(o->desc) : layer ? layer->node : "-");
  snprintf(r->kind, sizeof r->kind, "%s", o->kind);
  if (!layer) return NULL; /* the CPU interpreter runs it */
  if (n_out != 1)
    return bind_error(c->path, o, layer->node, "the group has more than one result", NULL);
  COV_RETURN_IF_ERROR(run_group(c, layer, o, &out[0], &r->ms));
  r->gpu = 1;
  *handled = 1;
  return NULL;
}

static void print_values(FILE *out, const char *name, const cov_tensor *t) {
  char shape[96];
  shape_str(t, shape, sizeof shape);
  fprintf(out, "  %s: %s%s:", name, cov_dtype_name(t->dtype), shape);
  int64_t n = cov_tensor_numel(t);
  for (int64_t i = 0; t->dtype == COV_F32 && i < n && i < 8; i++) fprintf(out, " %.6g", ((const float *)t->data)[i]);
  fprintf(out, "%s\n", n > 8 ? " ..." : "");
}

cov_status gpu_run_model(gpu_vendors vendors, const cov_gpu_options *opts, const char *path, double tolerance,
                         cov_gpu_inputs_fn fill_inputs, void *user, FILE *out) {
  cov_dtype dt = opts->dtype ? opts->dtype : COV_F16;
  gpu_target t;
  COV_RETURN_IF_ERROR(gpu_target_open(vendors, opts->target, dt, &t));
  /* the device first: without one, nothing else is worth doing */
  gpu_device dev;
  cov_status st = gpu_device_open(&t, opts->target, &dev);
  if (st) {
    gpu_target_close(&t);
    return st;
  }
  cov_model *m = NULL;
  gpu_layer *layers = NULL;
  int n_layers = 0;
  cov_tensor *inputs = NULL, *outputs = NULL, *ref = NULL;
  run_row *rows = NULL;
  size_t ni = 0, no = 0;
  run_ctx ctx = {0};
  fprintf(out, "device: %s\n", gpu_device_name(&dev));
  if ((st = cov_model_load_file(path, NULL, &m))) goto done;
  /* groups the lowering does not take run on the CPU (noted on `out`) */
  if ((st = gpu_model_layers(m, path, dt, 2, out, &layers, &n_layers))) goto done;
  ni = cov_model_num_inputs(m), no = cov_model_num_outputs(m);
  size_t ng = cov_model_num_groups(m);
  inputs = calloc(ni ? ni : 1, sizeof *inputs);
  outputs = calloc(no ? no : 1, sizeof *outputs);
  ref = calloc(no ? no : 1, sizeof *ref);
  rows = calloc(ng ? ng : 1, sizeof *rows);
  if (!inputs || !outputs || !ref || !rows) {
    st = cov_error(COV_OUT_OF_MEMORY, NULL, "out of memory for %s's tensors", path);
    goto done;
  }
  if ((st = fill_inputs(user, m, inputs, ni))) goto done;
  ctx = (run_ctx){path, &t, opts, &dev, layers, n_layers, rows, 0, ng};
  if ((st = cov_model_run_groups(m, inputs, ni, outputs, no, group_hook, NULL, &ctx))) goto done;
  if ((st = cov_model_run_ref(m, inputs, ni, ref, no))) goto done;

  fprintf(out, "%-6s %-20s %-26s %-5s %10s\n", "group", "node", "kind", "where", "ms");
  float total = 0;
  for (size_t i = 0; i < ctx.n_rows; i++) {
    const run_row *r = &rows[i];
    if (r->gpu)
      fprintf(out, "%-6d %-20s %-26s %-5s %10.4f\n", r->group, r->node, r->kind, "gpu", r->ms);
    else
      fprintf(out, "%-6d %-20s %-26s %-5s %10s\n", r->group, r->node, r->kind, "cpu", "-");
    total += r->ms;
  }
  fprintf(out, "GPU kernel time %.4f ms (layout operations run in the frontend, cpu groups on the reference "
               "interpreter)\n", total);
  fprintf(out, "outputs:\n");
  for (size_t k = 0; k < no; k++) print_values(out, cov_model_output_name(m, k), &outputs[k]);
  fprintf(out, "check against --target ref (max|%s - ref| / max|ref|, tolerance %g, %s inputs to the GPU):\n",
          opts->target, tolerance, cov_dtype_name(dt));
  int failed = 0;
  for (size_t k = 0; k < no; k++) {
    double md = 0, mr = 0;
    int same = outputs[k].dtype == COV_F32 && ref[k].dtype == COV_F32 &&
               cov_tensor_numel(&outputs[k]) == cov_tensor_numel(&ref[k]);
    for (int64_t i = 0; same && i < cov_tensor_numel(&ref[k]); i++) {
      double a = ((const float *)outputs[k].data)[i], b = ((const float *)ref[k].data)[i];
      if (!(fabs(a - b) <= md)) md = fabs(a - b); /* NaN propagates */
      if (fabs(b) > mr) mr = fabs(b);
    }
    double e = same ? md / (mr > 1e-30 ? mr : 1e-30) : INFINITY;
    int pass = e <= tolerance;
    failed += !pass;
    fprintf(out, "  %-20s max rel err %.3e  %s\n", cov_model_output_name(m, k), e, pass ? "PASS" : "FAIL");
  }
  if (failed)
    st = cov_error(COV_INTERNAL, NULL, "%s on %s: %d output(s) differ from the CPU reference by more than %g", path,
                   opts->target, failed, tolerance);
done:
  for (size_t i = 0; inputs && i < ni; i++) cov_tensor_release(&inputs[i]);
  for (size_t i = 0; outputs && i < no; i++) cov_tensor_release(&outputs[i]);
  for (size_t i = 0; ref && i < no; i++) cov_tensor_release(&ref[i]);
  free(inputs), free(outputs), free(ref), free(rows), free(layers);
  cov_model_free(m);
  gpu_device_close(&dev);
  gpu_target_close(&t);
  return st;
}
