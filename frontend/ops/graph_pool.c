/* frontend/ops/graph_pool.c: the pools, MaxPool, AveragePool, GlobalAveragePool
 * and GlobalMaxPool, lowered onto the maxpool, avgpool, global_avgpool and
 * global_maxpool codelets (codelets/README.md); window geometry in
 * graph_geom.c. 1-D pools run as 2-D ones with a height of 1, 3-D pools as
 * two 2-D pool calls. */
#include <stdlib.h>
#include <string.h>

#include "frontend/graph.h"
#include "frontend/ops/graph_geom.h"
#include "frontend/ops/graph_lower.h"
#include "frontend/graph_opfns.h"

/* ---- MaxPool, AveragePool --------------------------------------------- */

static cov_status pool_geom(const graph *g, const graph_node *n, const graph_value *x, geom *c,
                            bool is_max) {
  if (is_max && (x->dtype == COV_I8 || x->dtype == COV_U8)) {
    if (n->opset < 12)
      return graph_node_error(g, n, COV_INVALID_INPUT, "int8/uint8 MaxPool needs opset 12");
  } else {
    COV_RETURN_IF_ERROR(graph_check_float(g, n, x));
  }
  COV_RETURN_IF_ERROR(graph_geom_spatial_rank(g, n, x, 3, &c->sp));
  const int64_t *ka;
  size_t nk;
  COV_RETURN_IF_ERROR(graph_attr_ints(g, n, "kernel_shape", &ka, &nk));
  if (!ka) return graph_node_error(g, n, COV_INVALID_INPUT, "needs 'kernel_shape'");
  COV_RETURN_IF_ERROR(graph_geom_read_spatial(g, n, "kernel_shape", c->sp, 1, 1, c->k));
  int64_t ceil_mode = 0;
  if (n->opset >= 10) COV_RETURN_IF_ERROR(graph_attr_int(g, n, "ceil_mode", 0, &ceil_mode));
  graph_geom_set_in(c, x);
  bool dil = is_max ? n->opset >= 10 : n->opset >= 19;
  COV_RETURN_IF_ERROR(graph_geom_window(g, n, c, ceil_mode != 0, dil));
  if (!is_max && (c->d[0] != 1 || c->d[1] != 1 || c->d[2] != 1))
    return graph_node_error(g, n, COV_UNSUPPORTED,
                            "dilated AveragePool is not supported (the avgpool codelet has no "
                            "dilation)");
  return NULL;
}

static cov_status infer_pool(const graph *g, const graph_node *n, graph_value *const *in,
                             graph_value *const *out, bool is_max) {
  const graph_value *x = in[0];
  out[0]->dtype = x->dtype;
  bool indices = is_max && n->n_out > 1 && out[1];
  if (indices) {
    int64_t so;
    COV_RETURN_IF_ERROR(graph_attr_int(g, n, "storage_order", 0, &so));
    if (so != 0 && so != 1)
      return graph_node_error(g, n, COV_INVALID_INPUT, "storage_order %lld is not 0 or 1",
                              (long long)so);
    out[1]->dtype = COV_I64;
  }
  if (x->rank < 0) {
    graph_set_shape(out[0], -1, NULL);
    if (indices) graph_set_shape(out[1], -1, NULL);
    return NULL;
  }
  geom c;
  COV_RETURN_IF_ERROR(pool_geom(g, n, x, &c, is_max));
  if (indices && c.sp == 3)
    return graph_node_error(g, n, COV_UNSUPPORTED,
                            "the Indices output of a 3-D MaxPool is not supported (it pools in "
                            "two separable calls)");
  if (!is_max) {
    int64_t cip = 0;
    COV_RETURN_IF_ERROR(graph_attr_int(g, n, "count_include_pad", 0, &cip));
    if (cip && (c.extra[0] || c.extra[1] || c.extra[2]))
      return graph_node_error(g, n, COV_UNSUPPORTED,
                              "ceil_mode with count_include_pad=1 is not supported when the last "
                              "window runs past the padding");
  }
  int64_t d[5] = {x->dims[0], x->dims[1]};
  for (int i = 0; i < c.sp; i++) d[2 + i] = c.out[3 - c.sp + i];
  graph_set_shape(out[0], c.sp + 2, d);
  if (indices) graph_set_shape(out[1], c.sp + 2, d);
  return NULL;
}

/* One pooling codelet call over [N, C, H, W] with the window of geometry
 * dims a (height) and b (width). */
static cov_status pool_call(graph_exec *x, const graph_node *n, const geom *c, int a, int b,
                            bool is_max, int64_t cip, cov_tensor xt, cov_tensor *y) {
  cov_attr at[12];
  int na = 0;
  at[na++] = graph_lower_attr_i("kernel_h", c->k[a]);
  at[na++] = graph_lower_attr_i("kernel_w", c->k[b]);
  at[na++] = graph_lower_attr_i("stride_h", c->s[a]);
  at[na++] = graph_lower_attr_i("stride_w", c->s[b]);
  at[na++] = graph_lower_attr_i("pad_top", c->pb[a]);
  at[na++] = graph_lower_attr_i("pad_left", c->pb[b]);
  at[na++] = graph_lower_attr_i("pad_bottom", c->pe[a] + c->extra[a]);
  at[na++] = graph_lower_attr_i("pad_right", c->pe[b] + c->extra[b]);
  if (is_max) {
    at[na++] = graph_lower_attr_i("dilation_h", c->d[a]);
    at[na++] = graph_lower_attr_i("dilation_w", c->d[b]);
  } else {
    at[na++] = graph_lower_attr_i("count_include_pad", cip != 0);
  }
  const char *name = is_max ? "maxpool" : "avgpool";
  if (is_max && cip >= 0) { /* MaxPool's Indices: cip carries storage_order */
    at[na++] = graph_lower_attr_i("storage_order", cip);
    name = "maxpool_index";
  }
  return graph_call_codelet(x, n, name, at, (size_t)na, &xt, 1, y, 1);
}

/* 1-D and 2-D pools are one codelet call. A 3-D pool is separable: pool
 * H and W of [N, C*D, H, W], then D of the result seen as [N, C, D, P*Q].
 * That is exact for max (a max of maxes) and for average: the in-bounds part
 * of a box is a box, so its count is the product of the per-axis counts. */
static cov_status exec_pool(graph_exec *x, const graph_node *n, graph_value *const *in,
                            graph_value *const *out, bool is_max) {
  geom c;
  const graph_value *v = in[0];
  COV_RETURN_IF_ERROR(pool_geom(x->g, n, v, &c, is_max));
  int64_t cip = is_max ? -1 : 0;
  if (!is_max) COV_RETURN_IF_ERROR(graph_attr_int(x->g, n, "count_include_pad", 0, &cip));
  int64_t xd[4] = {v->dims[0], v->dims[1] * c.in[0], c.in[1], c.in[2]};
  cov_tensor y;
  if (is_max && n->n_out > 1 && out[1]) { /* 1-D or 2-D (infer refuses 3-D) */
    int64_t so;
    COV_RETURN_IF_ERROR(graph_attr_int(x->g, n, "storage_order", 0, &so));
    COV_RETURN_IF_ERROR(pool_call(x, n, &c, 1, 2, true, so, graph_view_as(v, 4, xd), &y));
    COV_RETURN_IF_ERROR(graph_lower_adopt(x, n, &y, out[1]));
  }
  COV_RETURN_IF_ERROR(pool_call(x, n, &c, 1, 2, is_max, cip, graph_view_as(v, 4, xd), &y));
  if (c.sp == 3) {
    geom d = c;
    d.k[2] = d.s[2] = d.d[2] = 1;
    d.pb[2] = d.pe[2] = d.extra[2] = 0;
    cov_tensor t = y, y2;
    t.shape[0] = v->dims[0];
    t.shape[1] = v->dims[1];
    t.shape[2] = c.in[0];
    t.shape[3] = c.out[1] * c.out[2];
    cov_status st = pool_call(x, n, &d, 0, 2, is_max, cip, t, &y2);
    cov_tensor_release(&y);
    COV_RETURN_IF_ERROR(st);
    y = y2;
  }
  return graph_lower_adopt(x, n, &y, out[0]);
}

cov_status graph_infer_maxpool(const graph *g, const graph_node *n, graph_value *const *in,
                               graph_value *const *out) {
  return infer_pool(g, n, in, out, true);
}
cov_status graph_exec_maxpool(graph_exec *x, const graph_node *n, graph_value *const *in,
                              graph_value *const *out) {
  return exec_pool(x, n, in, out, true);
}
static int pool_codelets(const graph_node *n, const char *name, const char **names, int max) {
  int k = 0;
  bool three_d = n->in[0] && n->in[0]->rank == 5;
  if (k < max) names[k++] = name;
  if (three_d && k < max) names[k++] = name;
  return k;
}
int graph_codelets_maxpool(const graph_node *n, const char **names, int max) {
  if (n->n_out > 1 && n->out[1] && max >= 2) {
    names[0] = "maxpool_index";
    names[1] = "maxpool";
    return 2;
  }
  return pool_codelets(n, "maxpool", names, max);
}
cov_status graph_infer_avgpool(const graph *g, const graph_node *n, graph_value *const *in,
                               graph_value *const *out) {
  return infer_pool(g, n, in, out, false);
}
cov_status graph_exec_avgpool(graph_exec *x, const graph_node *n, graph_value *const *in,
                              graph_value *const *out) {
  return exec_pool(x, n, in, out, false);
}
int graph_codelets_avgpool(const graph_node *n, const char **names, int max) {
  return pool_codelets(n, "avgpool", names, max);
}

/* ---- GlobalAveragePool, GlobalMaxPool --------------------------------- */

static cov_status infer_global(const graph *g, const graph_node *n, graph_value *const *in,
                               graph_value *const *out) {
  const graph_value *x = in[0];
  COV_RETURN_IF_ERROR(graph_check_float(g, n, x));
  out[0]->dtype = x->dtype;
  if (x->rank < 0) {
    graph_set_shape(out[0], -1, NULL);
    return NULL;
  }
  if (x->rank < 3)
    return graph_node_error(g, n, COV_INVALID_INPUT,
                            "input '%s' has rank %d; expected [N, C, spatial...]", x->name,
                            x->rank);
  int64_t d[COV_MAX_RANK];
  for (int i = 0; i < x->rank; i++) d[i] = i < 2 ? x->dims[i] : 1;
  graph_set_shape(out[0], x->rank, d);
  return NULL;
}

/* Any number of spatial dims: they are contiguous, so [N, C, prod, 1]. */
static cov_status exec_global(graph_exec *x, const graph_node *n, graph_value *const *in,
                              graph_value *const *out, const char *codelet) {
  const graph_value *v = in[0];
  int64_t sp = 1;
  for (int i = 2; i < v->rank; i++) sp *= v->dims[i];
  int64_t d[4] = {v->dims[0], v->dims[1], sp, 1};
  cov_tensor xt = graph_view_as(v, 4, d), y;
  COV_RETURN_IF_ERROR(graph_call_codelet(x, n, codelet, NULL, 0, &xt, 1, &y, 1));
  return graph_lower_adopt(x, n, &y, out[0]);
}

cov_status graph_infer_global_avgpool(const graph *g, const graph_node *n, graph_value *const *in,
                                      graph_value *const *out) {
  return infer_global(g, n, in, out);
}
cov_status graph_exec_global_avgpool(graph_exec *x, const graph_node *n, graph_value *const *in,
                                     graph_value *const *out) {
  return exec_global(x, n, in, out, "global_avgpool");
}
int graph_codelets_global_avgpool(const graph_node *n, const char **names, int max) {
  (void)n;
  if (max < 1) return 0;
  names[0] = "global_avgpool";
  return 1;
}
cov_status graph_infer_global_maxpool(const graph *g, const graph_node *n, graph_value *const *in,
                                      graph_value *const *out) {
  return infer_global(g, n, in, out);
}
cov_status graph_exec_global_maxpool(graph_exec *x, const graph_node *n, graph_value *const *in,
                                     graph_value *const *out) {
  return exec_global(x, n, in, out, "global_maxpool");
}
int graph_codelets_global_maxpool(const graph_node *n, const char **names, int max) {
  (void)n;
  if (max < 1) return 0;
  names[0] = "global_maxpool";
  return 1;
}
