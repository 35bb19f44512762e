/* backends/gpu/gpu_model.c: the conv layer groups of an ONNX model as GPU
 * layers, for `covenant run MODEL --target <GPU>` (one kernel per group on
 * the device, the rest on the CPU).
 *
 * The model is read through the frontend's public interface only, as
 * every backend does: each compute group's description
 * (cov_model_group_describe: its codelet calls with their attributes and
 * constants) is matched against what one matrix kernel computes — conv2d
 * (equal strides, dilations and pads), then a constant bias_add, relu or
 * clip, and a 2x2/2 max pool after them — and becomes a gpu_layer named
 * MODEL_gI_KIND. Groups it cannot build are refused with their node and
 * reason, or skipped with a note (whole-model compilation,
 * gpu_mcompile.c, takes every group). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backends/gpu/gpu_model.h"
#include "covenant/model.h"

static int64_t attr_i(const cov_model_group_call *c, const char *name, int64_t def) {
  for (size_t i = 0; i < c->n_attrs; i++)
    if (!strcmp(c->attrs[i].name, name)) return c->attrs[i].is_float ? (int64_t)c->attrs[i].f : c->attrs[i].i;
  return def;
}
static double attr_f(const cov_model_group_call *c, const char *name, double def) {
  for (size_t i = 0; i < c->n_attrs; i++)
    if (!strcmp(c->attrs[i].name, name)) return c->attrs[i].is_float ? c->attrs[i].f : (double)c->attrs[i].i;
  return def;
}

/* The epilogue from calls[1..]: a bias, relu / clip, then a 2x2/2 max pool. */
static const char *epilogue(const cov_model_group *d, gpu_problem *q) {
  size_t n = cov_model_group_num_calls(d);
  for (size_t i = 1; i < n; i++) {
    const cov_model_group_call *c = cov_model_group_call_at(d, i);
    if (c->n_args < 1 || c->args[0].kind != COV_MODEL_ARG_PREV) return "its calls are not one chain";
    if (!strcmp(c->codelet, "bias_add") && i == 1 && c->n_args == 2) {
      if (c->args[1].kind != COV_MODEL_ARG_CONST) return "its bias is not constant";
      q->epi.bias = true;
    } else if (!strcmp(c->codelet, "relu") && q->epi.act == GPU_ACT_NONE && !q->epi.maxpool2x2) {
      q->epi.act = GPU_ACT_RELU;
    } else if ((!strcmp(c->codelet, "clip") || !strcmp(c->codelet, "relu6")) && q->epi.act == GPU_ACT_NONE &&
               !q->epi.maxpool2x2) {
      int six = !strcmp(c->codelet, "relu6");
      q->epi.act = GPU_ACT_CLIP;
      q->epi.clip_lo = six ? 0.0f : (float)attr_f(c, "lo", -3.4028234663852886e38);
      q->epi.clip_hi = six ? 6.0f : (float)attr_f(c, "hi", 3.4028234663852886e38);
    } else if (!strcmp(c->codelet, "maxpool") && !q->epi.maxpool2x2) {
      if (attr_i(c, "kernel_h", 0) != 2 || attr_i(c, "kernel_w", 0) != 2 || attr_i(c, "stride_h", 1) != 2 ||
          attr_i(c, "stride_w", 1) != 2 || attr_i(c, "pad_top", 0) || attr_i(c, "pad_left", 0) ||
          attr_i(c, "pad_bottom", 0) || attr_i(c, "pad_right", 0) || attr_i(c, "dilation_h", 1) != 1 ||
          attr_i(c, "dilation_w", 1) != 1)
        return "only 2x2 max pooling with stride 2 and no padding is fused (covenant compile takes the model whole)";
      q->epi.maxpool2x2 = true;
    } else {
      return "its epilogue (only bias, relu, clip and a 2x2 max pool are fused per group; covenant compile takes "
             "the model whole)";
    }
  }
  if (q->epi.maxpool2x2 && !(q->epi.act == GPU_ACT_RELU || (q->epi.act == GPU_ACT_CLIP && q->epi.clip_lo >= 0)))
    return "a fused max pool needs a relu (or a clip at >= 0) before it";
  return NULL;
}

static const char *conv_problem(const cov_model_group *d, gpu_problem *q) {
  if (cov_model_group_num_calls(d) < 1) return "no calls";
  const cov_model_group_call *c = cov_model_group_call_at(d, 0);
  if (strcmp(c->codelet, "conv2d") || c->n_args != 2) return "not a conv2d chain";
  if (c->args[0].kind != COV_MODEL_ARG_EXTERNAL || c->args[0].t.rank != 4 || c->args[1].t.rank != 4)
    return "its input and weights need 4-D shapes";
  if (c->args[1].kind != COV_MODEL_ARG_CONST) return "its weights are not constant";
  int64_t sh = attr_i(c, "stride_h", 1), sw = attr_i(c, "stride_w", 1), dh = attr_i(c, "dilation_h", 1),
          dw = attr_i(c, "dilation_w", 1), pt = attr_i(c, "pad_top", 0), pl = attr_i(c, "pad_left", 0),
          pb = attr_i(c, "pad_bottom", 0), pr = attr_i(c, "pad_right", 0);
  if (sh != sw || dh != dw) return "only equal strides and dilations in both dimensions are supported";
  if (pt != pl || pt != pb || pt != pr) return "only equal padding on all sides is supported";
  const int64_t *x = c->args[0].t.shape, *w = c->args[1].t.shape;
  q->kind = GPU_OP_CONV2D;
  q->cn = x[0], q->cc = x[1], q->ch = x[2], q->cw = x[3];
  q->ck = w[0], q->cr = w[2], q->cs = w[3];
  q->stride = sh, q->dilation = dh, q->pad = pt, q->groups = attr_i(c, "groups", 1);
  if (w[1] * q->groups != x[1]) return "weights do not match the input channels";
  return epilogue(d, q);
}

cov_status gpu_model_layers(const cov_model *m, const char *path, cov_dtype dtype, int skip_others, FILE *notes,
                            gpu_layer **out, int *count) {
  *out = NULL;
  *count = 0;
  if (!m) return cov_error(COV_INVALID_ARGUMENT, GPU_LOC(path, NULL), "gpu_model_layers: NULL model");
  size_t ng = cov_model_num_groups(m);
  gpu_layer *layers = calloc(ng ? ng : 1, sizeof *layers);
  if (!layers) return cov_error(COV_OUT_OF_MEMORY, NULL, "out of memory");
  cov_status st = NULL;
  int n = 0;
  const char *base = strrchr(path, '/') ? strrchr(path, '/') + 1 : path;
  size_t blen = strcspn(base, ".");
  for (size_t i = 0; !st && i < ng; i++) {
    cov_model_group_info info;
    st = cov_model_group_get_info(m, i, &info);
    if (st || info.layout) continue;
    gpu_layer *l = &layers[n];
    memset(l, 0, sizeof *l);
    l->prob.in_dtype = dtype;
    l->prob.file = path;
    l->prob.batch = 1, l->prob.stride = 1, l->prob.dilation = 1, l->prob.groups = 1;
    cov_model_group *d = NULL;
    char why_buf[256] = "";
    const char *why = NULL, *node = "";
    cov_status ds = cov_model_group_describe(m, i, &d);
    int contraction = 0;
    if (ds) {
      snprintf(why_buf, sizeof why_buf, "%s", cov_status_message(ds));
      cov_status_free(ds);
      why = why_buf;
    } else {
      node = cov_model_group_name(d);
      snprintf(l->prob.node, sizeof l->prob.node, "%s", node);
      const char *cd = cov_model_group_num_calls(d) ? cov_model_group_call_at(d, 0)->codelet : "";
      contraction = !strcmp(cd, "conv2d") || !strcmp(cd, "gemm") || !strcmp(cd, "gemm_bias") ||
                    !strcmp(cd, "matmul") || !strcmp(cd, "batch_matmul");
      why = !strcmp(cd, "conv2d") ? conv_problem(d, &l->prob)
            : contraction         ? "MatMul/Gemm groups run on the CPU in a per-group run (covenant compile takes "
                                    "the model whole)"
                                  : "not a contraction (only Conv groups run per group; covenant compile takes the "
                                    "model whole)";
    }
    if (why && (skip_others > 1 || (skip_others && !contraction))) {
      if (notes)
        fprintf(notes, "note: %s: layer group %zu (%s, node '%s') is not lowered to the GPU: %s\n", path, i,
                info.kind, node, why);
      cov_model_group_free(d);
      continue;
    }
    if (why) {
      st = cov_error(COV_UNSUPPORTED, GPU_LOC(path, node[0] ? node : NULL), "layer group %zu (%s, node '%s'): %s", i,
                     info.kind, node, why);
      cov_model_group_free(d);
      break;
    }
    l->group = (int)i;
    snprintf(l->node, sizeof l->node, "%s", node);
    snprintf(l->name, sizeof l->name, "%.*s_g%zu_%s", (int)(blen < 40 ? blen : 40), base, i, info.kind);
    for (char *c = l->name; *c; c++)
      if (!((*c >= 'a' && *c <= 'z') || (*c >= 'A' && *c <= 'Z') || (*c >= '0' && *c <= '9'))) *c = '_';
    cov_model_group_free(d);
    n++;
  }
  if (!st && n == 0) st = cov_error(COV_UNSUPPORTED, GPU_LOC(path, NULL), "no layer group for the GPU lowering");
  if (st) {
    free(layers);
    return st;
  }
  *out = layers;
  *count = n;
  return NULL;
}
