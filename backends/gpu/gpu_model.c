/* backends/gpu/gpu_model.c: the contraction layer groups of an ONNX model
 * as GPU layers.
 *
 * The frontend reads the model, infers shapes, folds batch norms and fuses
 * layer groups (conv+bias+relu+maxpool, matmul+bias+relu, ...); each group
 * whose shape the GPU lowering builds becomes a gpu_layer named
 * MODEL_gI_KIND (relu, clip and a 2x2/2 max pool fused). Groups it cannot build are refused with their name and
 * reason (layout groups, which the frontend runs itself, are skipped). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backends/gpu/gpu_model.h"
#include "covenant/model.h"
#include "frontend/graph.h"

static cov_status group_error(const char *file, int gi, const graph_group *grp, const char *why) {
  return cov_error(COV_UNSUPPORTED, NULL, "%s: layer group %d (%s, node '%s'): %s", file, gi, grp->kind,
                   grp->nodes[0]->name, why);
}

static int known_shape(const graph_value *v, int rank) {
  if (!v || v->rank != rank) return 0;
  for (int i = 0; i < rank; i++)
    if (v->dims[i] < 1) return 0;
  return 1;
}

/* The epilogue of nodes[1..]: relu, then a 2x2/2 max pool. */
static const char *epilogue(const graph *g, const graph_group *grp, gpu_problem *q) {
  for (int i = 1; i < grp->n_nodes; i++) {
    const graph_node *n = grp->nodes[i];
    if (!strcmp(n->op_type, "Relu") && q->epi.act == GPU_ACT_NONE && !q->epi.maxpool2x2) {
      q->epi.act = GPU_ACT_RELU;
    } else if (!strcmp(n->op_type, "Clip") && q->epi.act == GPU_ACT_NONE && !q->epi.maxpool2x2) {
      /* bounds: constant inputs from opset 11, attributes before */
      double lo = -3.4028234663852886e38, hi = 3.4028234663852886e38;
      cov_status st = NULL;
      if (n->n_in > 1 && n->in[1]) st = graph_read_scalar(g, n, n->in[1], "min", &lo);
      if (!st && n->n_in > 2 && n->in[2]) st = graph_read_scalar(g, n, n->in[2], "max", &hi);
      if (!st && n->n_in == 1) {
        float flo = (float)lo, fhi = (float)hi;
        st = graph_attr_float(g, n, "min", flo, &flo);
        if (!st) st = graph_attr_float(g, n, "max", fhi, &fhi);
        lo = flo, hi = fhi;
      }
      int failed = st != NULL;
      cov_status_free(st);
      if (failed) return "its Clip bounds are not constant";
      q->epi.act = GPU_ACT_CLIP, q->epi.clip_lo = (float)lo, q->epi.clip_hi = (float)hi;
    } else if (!strcmp(n->op_type, "MaxPool") && q->kind == GPU_OP_CONV2D && !q->epi.maxpool2x2) {
      const int64_t *k = NULL, *s = NULL, *p = NULL;
      size_t nk = 0, ns = 0, np = 0;
      cov_status st = graph_attr_ints(g, n, "kernel_shape", &k, &nk);
      if (!st) st = graph_attr_ints(g, n, "strides", &s, &ns);
      if (!st) st = graph_attr_ints(g, n, "pads", &p, &np);
      int64_t ceil_mode = 0;
      if (!st) st = graph_attr_int(g, n, "ceil_mode", 0, &ceil_mode);
      cov_status_free(st);
      int pad = 0;
      for (size_t j = 0; j < np; j++) pad |= p[j] != 0;
      if (st || nk != 2 || k[0] != 2 || k[1] != 2 || ns != 2 || s[0] != 2 || s[1] != 2 || pad || ceil_mode)
        return "only 2x2 max pooling with stride 2 and no padding is fused";
      q->epi.maxpool2x2 = true;
    } else {
      return "its epilogue (only relu, clip and a 2x2 max pool are fused from models)";
    }
  }
  if (q->epi.maxpool2x2 && !(q->epi.act == GPU_ACT_RELU || (q->epi.act == GPU_ACT_CLIP && q->epi.clip_lo >= 0)))
    return "a fused max pool needs a relu (or a clip at >= 0) before it";
  return NULL;
}

static const char *conv_problem(const graph *g, const graph_group *grp, gpu_problem *q) {
  const graph_node *n = grp->nodes[0];
  if (strcmp(n->op_type, "Conv")) return "not a Conv";
  if (!known_shape(n->in[0], 4) || !known_shape(n->in[1], 4) || !known_shape(n->out[0], 4))
    return "its input, weights and output need known 4-D shapes";
  if (n->in[1]->kind != GV_INITIALIZER && n->in[1]->kind != GV_CONSTANT) return "its weights are not constant";
  const int64_t *strides = NULL, *pads = NULL, *dil = NULL;
  size_t ns = 0, np = 0, nd = 0;
  int64_t groups = 1;
  const char *autopad = NULL;
  cov_status st = graph_attr_ints(g, n, "strides", &strides, &ns);
  if (!st) st = graph_attr_ints(g, n, "pads", &pads, &np);
  if (!st) st = graph_attr_ints(g, n, "dilations", &dil, &nd);
  if (!st) st = graph_attr_int(g, n, "group", 1, &groups);
  if (!st) st = graph_attr_string(g, n, "auto_pad", "NOTSET", &autopad);
  int failed = st != NULL;
  cov_status_free(st);
  if (failed) return "its attributes could not be read";
  if (autopad && strcmp(autopad, "NOTSET")) return "auto_pad is not supported (only explicit pads)";
  if ((ns && (ns != 2 || strides[0] != strides[1])) || (nd && (nd != 2 || dil[0] != dil[1])))
    return "only equal strides and dilations in both dimensions are supported";
  if (np && (np != 4 || pads[0] != pads[1] || pads[0] != pads[2] || pads[0] != pads[3]))
    return "only equal padding on all sides is supported";
  const int64_t *x = n->in[0]->dims, *w = n->in[1]->dims;
  q->kind = GPU_OP_CONV2D;
  q->cn = x[0], q->cc = x[1], q->ch = x[2], q->cw = x[3];
  q->ck = w[0], q->cr = w[2], q->cs = w[3];
  q->stride = ns ? strides[0] : 1, q->dilation = nd ? dil[0] : 1, q->pad = np ? pads[0] : 0, q->groups = groups;
  if (w[1] * groups != x[1]) return "weights do not match the input channels";
  q->epi.bias = n->n_in > 2 && n->in[2];
  return epilogue(g, grp, q);
}

cov_status gpu_model_layers(const cov_model *m, const char *path, cov_dtype dtype, int skip_others, FILE *notes,
                            gpu_layer **out, int *count) {
  *out = NULL;
  *count = 0;
  /* the groups of the model as loaded (and run): the same indices as the
   * frontend's group hook offers */
  const graph *g = graph_of_model(m);
  if (!g) return cov_error(COV_INVALID_ARGUMENT, NULL, "gpu_model_layers: NULL model");
  gpu_layer *layers = calloc(g->n_groups ? g->n_groups : 1, sizeof *layers);
  if (!layers) return cov_error(COV_OUT_OF_MEMORY, NULL, "out of memory");
  cov_status st = NULL;
  int n = 0;
  const char *base = strrchr(path, '/') ? strrchr(path, '/') + 1 : path;
  size_t blen = strcspn(base, ".");
  for (size_t i = 0; !st && i < g->n_groups; i++) {
    const graph_group *grp = &g->groups[i];
    if (grp->layout) continue;
    gpu_layer *l = &layers[n];
    memset(l, 0, sizeof *l);
    l->prob.in_dtype = dtype;
    l->prob.batch = 1, l->prob.stride = 1, l->prob.dilation = 1, l->prob.groups = 1;
    const char *op = grp->nodes[0]->op_type;
    const char *why = !strcmp(op, "Conv") ? conv_problem(g, grp, &l->prob)
                      : (!strcmp(op, "MatMul") || !strcmp(op, "Gemm"))
                          ? "MatMul/Gemm groups are not lowered from models yet (their bias and weight "
                            "layouts need binding); compile them as suite layers or gemm_MxNxK"
                          : "not a contraction (only Conv groups are lowered from models)";
    int contraction = !strcmp(op, "Conv") || !strcmp(op, "MatMul") || !strcmp(op, "Gemm");
    if (why && (skip_others > 1 || (skip_others && !contraction))) {
      if (notes)
        fprintf(notes, "note: %s: layer group %zu (%s, node '%s') is not lowered to the GPU: %s\n", path, i,
                grp->kind, grp->nodes[0]->name, why);
      continue;
    }
    if (why) {
      st = group_error(path, (int)i, grp, why);
      break;
    }
    l->group = (int)i;
    snprintf(l->node, sizeof l->node, "%s", grp->nodes[0]->name);
    snprintf(l->name, sizeof l->name, "%.*s_g%zu_%s", (int)(blen < 40 ? blen : 40), base, i, grp->kind);
    for (char *c = l->name; *c; c++)
      if (!((*c >= 'a' && *c <= 'z') || (*c >= 'A' && *c <= 'Z') || (*c >= '0' && *c <= '9'))) *c = '_';
    n++;
  }
  if (!st && n == 0) st = cov_error(COV_UNSUPPORTED, NULL, "%s: no layer group for the GPU lowering", path);
  if (st) {
    free(layers);
    return st;
  }
  *out = layers;
  *count = n;
  return NULL;
}
