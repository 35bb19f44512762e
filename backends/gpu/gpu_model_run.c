/* backends/gpu/gpu_model_run.c: a whole ONNX model on a GPU.
 *
 * gpu_run_model compiles the model whole (gpu_model_compile_with: every
 * layer group into kernels), turns the plan into an artifact in memory
 * (gpu_artifact.c: the bytes `covenant compile` writes) and runs that
 * through the runtime (runtime/crt.h), as covenant-run would: weights
 * uploaded once, every step on the device, intermediates kept there. The
 * outputs are checked against the CPU reference target on the same inputs.
 * gpu_bind_group (a conv group's operands from a group offer) stays for
 * the tests of the binding. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "backends/gpu/gpu_artifact.h"
#include "backends/gpu/gpu_model.h"
#include "backends/gpu/gpu_mplan.h"
#include "backends/gpu/gpu_ref.h"
#include "backends/gpu/gpu_run.h"
#include "backends/gpu/gpu_vendor.h"
#include "covenant/gpu.h"
#include "covenant/model.h"
#include "covenant/tensor.h"
#include "runtime/crt.h"

static cov_status bind_error(const char *path, const cov_model_group_offer *o, const char *node, const char *fmt,
                             const char *detail) {
  return cov_error(COV_UNSUPPORTED, GPU_LOC(path, node), "layer group %d (%s, node '%s'): %s%s", o->group, o->kind,
                   node, fmt, detail ? detail : "");
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
    return cov_error(COV_INTERNAL, GPU_LOC(path, node),
                     "layer group %d (node '%s') is offered for GPU layer %s (group %d, node '%s')", o->group, node,
                     layer->name, layer->group, layer->node);
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

/* element i of an f32 or integer (a quantized model's; a detector's i64
 * labels) output */
static double out_value(const cov_tensor *t, int64_t i) {
  if (t->dtype == COV_I64) return (double)((const int64_t *)t->data)[i];
  if (t->dtype == COV_I32) return ((const int32_t *)t->data)[i];
  if (t->dtype == COV_I8) return ((const int8_t *)t->data)[i];
  if (t->dtype == COV_U8 || t->dtype == COV_BOOL) return ((const uint8_t *)t->data)[i];
  return ((const float *)t->data)[i];
}

static void print_values(FILE *out, const char *name, const cov_tensor *t) {
  char shape[96];
  shape_str(t, shape, sizeof shape);
  fprintf(out, "  %s: %s%s:", name, cov_dtype_name(t->dtype), shape);
  int64_t n = cov_tensor_numel(t);
  for (int64_t i = 0; t->dtype == COV_F32 && i < n && i < 8; i++) fprintf(out, " %.6g", ((const float *)t->data)[i]);
  fprintf(out, "%s\n", n > 8 ? " ..." : "");
}

/* Compiles the model whole into an artifact in memory (the bytes
 * covenant compile writes), runs it through the runtime (crt_session:
 * weights uploaded once, every step on the device, intermediates kept
 * there) and checks the outputs against cov_model_run_ref on the same
 * inputs. */
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
  gpu_device_close(&dev);
  cov_model *m = NULL;
  gpu_model_plan mp;
  int have_plan = 0;
  uint8_t *bytes = NULL;
  size_t n_bytes = 0;
  crt_artifact *a = NULL;
  crt_session *s = NULL;
  cov_tensor *inputs = NULL, *outputs = NULL, *ref = NULL;
  size_t ni = 0, no = 0;
  if ((st = cov_model_load_file(path, NULL, &m))) goto done;
  if ((st = gpu_model_compile_with(m, path, &t, 1, &mp))) goto done;
  have_plan = 1;
  if ((st = gpu_model_artifact(&mp, path, &bytes, &n_bytes))) goto done;
  if ((st = crt_artifact_read(bytes, n_bytes, path, &a))) goto done;
  crt_options o = {.expect_target = cov_acg_name(t.acg)};
  if ((st = crt_session_open(a, &o, &s))) goto done;
  fprintf(out, "device: %s\n", crt_session_device(s));
  ni = cov_model_num_inputs(m), no = cov_model_num_outputs(m);
  inputs = calloc(ni ? ni : 1, sizeof *inputs);
  outputs = calloc(no ? no : 1, sizeof *outputs);
  ref = calloc(no ? no : 1, sizeof *ref);
  if (!inputs || !outputs || !ref) {
    st = cov_error(COV_OUT_OF_MEMORY, NULL, "out of memory for %s's tensors", path);
    goto done;
  }
  if ((st = fill_inputs(user, m, inputs, ni))) goto done;
  if ((size_t)a->n_inputs != ni || (size_t)a->n_outputs != no) {
    st = cov_error(COV_INTERNAL, GPU_LOC(path, NULL), "the artifact has %d inputs and %d outputs, the model %zu and %zu",
                   a->n_inputs, a->n_outputs, ni, no);
    goto done;
  }
  if ((st = crt_session_run(s, inputs, ni, outputs, no))) goto done;
  double ms = 0;
  const char *how = "";
  if ((st = crt_session_time(s, 3, 20, &ms, &how))) goto done;
  if ((st = cov_model_run_ref(m, inputs, ni, ref, no))) goto done;
  int launches = 0;
  for (int i = 0; i < a->n_steps; i++) launches += a->steps[i].op == CRT_STEP_LAUNCH;
  fprintf(out, "%d steps (%d kernel launches, %d modules), every layer group on the GPU; weights %llu bytes, "
               "intermediates in a %llu-byte arena\n",
          a->n_steps, launches, a->n_modules, (unsigned long long)a->weight_bytes, (unsigned long long)a->arena_bytes);
  fprintf(out, "model time %.4f ms (%s, mean of 20)\n", ms, how);
  fprintf(out, "outputs:\n");
  for (size_t k = 0; k < no; k++) print_values(out, cov_model_output_name(m, k), &outputs[k]);
  fprintf(out, "check against --target ref (max|%s - ref| / max|ref|, tolerance %g, %s operands on the GPU):\n",
          opts->target, tolerance, cov_dtype_name(dt));
  int failed = 0;
  for (size_t k = 0; k < no; k++) {
    double md = 0, mr = 0;
    cov_dtype od = outputs[k].dtype;
    int same = od == ref[k].dtype &&
               (od == COV_F32 || od == COV_I64 || od == COV_I32 || od == COV_I8 || od == COV_U8 || od == COV_BOOL) &&
               cov_tensor_numel(&outputs[k]) == cov_tensor_numel(&ref[k]);
    for (int64_t i = 0; same && i < cov_tensor_numel(&ref[k]); i++) {
      double x = out_value(&outputs[k], i), y = out_value(&ref[k], i);
      if (!(fabs(x - y) <= md)) md = fabs(x - y); /* NaN propagates */
      if (fabs(y) > mr) mr = fabs(y);
    }
    double e = same ? md / (mr > 1e-30 ? mr : 1e-30) : INFINITY;
    int pass = e <= tolerance;
    failed += !pass;
    fprintf(out, "  %-20s max rel err %.3e  %s\n", cov_model_output_name(m, k), e, pass ? "PASS" : "FAIL");
  }
  if (failed)
    st = cov_error(COV_INTERNAL, GPU_LOC(path, NULL), "on %s: %d output(s) differ from the CPU reference by more than %g",
                   opts->target, failed, tolerance);
done:
  for (size_t i = 0; inputs && i < ni; i++) cov_tensor_release(&inputs[i]);
  for (size_t i = 0; outputs && i < no; i++) cov_tensor_release(&outputs[i]);
  for (size_t i = 0; ref && i < no; i++) cov_tensor_release(&ref[i]);
  free(inputs), free(outputs), free(ref), free(bytes);
  crt_session_close(s);
  crt_artifact_free(a);
  if (have_plan) gpu_model_plan_free(&mp);
  cov_model_free(m);
  gpu_target_close(&t);
  return st;
}
