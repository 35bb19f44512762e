/* frontend/ops/graph_matmul.c: Gemm and MatMul (numpy broadcasting of batch
 * dims), lowered onto the gemm, gemm_bias, matmul and batch_matmul codelets
 * (codelets/README.md). */
#include <stdlib.h>
#include <string.h>

#include "frontend/graph.h"
#include "frontend/ops/graph_lower.h"
#include "frontend/graph_opfns.h"

/* ---- Gemm ------------------------------------------------------------- */

typedef struct gemm_params {
  int64_t ta, tb, m, k, n;
  float alpha, beta;
  bool has_c;
  int64_t cm, cn; /* C as [CM, CN] */
} gemm_params;

static cov_status gemm_params_of(const graph *g, const graph_node *n, graph_value *const *in,
                                 gemm_params *p) {
  const graph_value *a = in[0], *b = in[1], *c = n->n_in > 2 ? in[2] : NULL;
  COV_RETURN_IF_ERROR(graph_check_numeric(g, n, a));
  if (b->dtype != a->dtype || (c && c->dtype != a->dtype))
    return graph_node_error(g, n, COV_INVALID_INPUT, "A, B and C must have the same dtype");
  COV_RETURN_IF_ERROR(graph_attr_int(g, n, "transA", 0, &p->ta));
  COV_RETURN_IF_ERROR(graph_attr_int(g, n, "transB", 0, &p->tb));
  COV_RETURN_IF_ERROR(graph_attr_float(g, n, "alpha", 1.0f, &p->alpha));
  COV_RETURN_IF_ERROR(graph_attr_float(g, n, "beta", 1.0f, &p->beta));
  if (n->opset < 11 && !c)
    return graph_node_error(g, n, COV_INVALID_INPUT, "input C is required before opset 11");
  if (a->rank != 2 || b->rank != 2)
    return graph_node_error(g, n, COV_INVALID_INPUT, "A and B must be 2-D (got rank %d and %d)",
                            a->rank, b->rank);
  p->m = p->ta ? a->dims[1] : a->dims[0];
  p->k = p->ta ? a->dims[0] : a->dims[1];
  int64_t kb = p->tb ? b->dims[1] : b->dims[0];
  p->n = p->tb ? b->dims[0] : b->dims[1];
  if (p->k >= 0 && kb >= 0 && p->k != kb)
    return graph_node_error(g, n, COV_INVALID_INPUT,
                            "inner dims differ: A gives K=%lld, B gives K=%lld", (long long)p->k,
                            (long long)kb);
  p->has_c = c && p->beta != 0.0f;
  p->cm = p->cn = 1;
  if (c) {
    if (c->rank > 2)
      return graph_node_error(g, n, COV_INVALID_INPUT, "C has rank %d; expected at most 2",
                              c->rank);
    if (c->rank == 2) {
      p->cm = c->dims[0];
      p->cn = c->dims[1];
    } else if (c->rank == 1) {
      p->cn = c->dims[0];
    }
    if ((p->cm >= 0 && p->m >= 0 && p->cm != 1 && p->cm != p->m) ||
        (p->cn >= 0 && p->n >= 0 && p->cn != 1 && p->cn != p->n))
      return graph_node_error(g, n, COV_INVALID_INPUT,
                              "C ('%s') does not broadcast to [%lld, %lld]", c->name,
                              (long long)p->m, (long long)p->n);
  }
  return NULL;
}

cov_status graph_infer_gemm(const graph *g, const graph_node *n, graph_value *const *in,
                            graph_value *const *out) {
  out[0]->dtype = in[0]->dtype;
  if (in[0]->rank < 0 || in[1]->rank < 0) {
    int64_t d[2] = {-1, -1};
    graph_set_shape(out[0], 2, d);
    return NULL;
  }
  gemm_params p;
  COV_RETURN_IF_ERROR(gemm_params_of(g, n, in, &p));
  int64_t d[2] = {p.m, p.n};
  graph_set_shape(out[0], 2, d);
  return NULL;
}

cov_status graph_exec_gemm(graph_exec *x, const graph_node *n, graph_value *const *in,
                           graph_value *const *out) {
  gemm_params p;
  COV_RETURN_IF_ERROR(gemm_params_of(x->g, n, in, &p));
  cov_attr a[4] = {graph_lower_attr_i("transA", p.ta != 0), graph_lower_attr_i("transB", p.tb != 0),
                   graph_lower_attr_f("alpha", p.alpha), graph_lower_attr_f("beta", p.beta)};
  cov_tensor t[3] = {graph_view(in[0]), graph_view(in[1])}, y;
  if (p.has_c) {
    int64_t cd[2] = {p.cm, p.cn};
    t[2] = graph_view_as(in[2], 2, cd);
    COV_RETURN_IF_ERROR(graph_call_codelet(x, n, "gemm_bias", a, 4, t, 3, &y, 1));
  } else {
    COV_RETURN_IF_ERROR(graph_call_codelet(x, n, "gemm", a, 3, t, 2, &y, 1));
  }
  return graph_lower_adopt(x, n, &y, out[0]);
}

int graph_codelets_gemm(const graph_node *n, const char **names, int max) {
  if (max < 1) return 0;
  float beta = 1.0f;
  const graph_attr *a = graph_attr_find(n, "beta");
  if (a && a->type == GA_FLOAT) beta = a->f;
  names[0] = n->n_in > 2 && n->in[2] && beta != 0.0f ? "gemm_bias" : "gemm";
  return 1;
}

/* ---- MatMul (numpy semantics) ----------------------------------------- */

typedef struct mm_params {
  int64_t m, k, n;
  int brank; /* batch dims of the output */
  int64_t batch[COV_MAX_RANK];
  bool a_vec, b_vec; /* 1-D operands, promoted and then dropped */
} mm_params;

static cov_status mm_params_of(const graph *g, const graph_node *n, graph_value *const *in,
                               mm_params *p) {
  const graph_value *a = in[0], *b = in[1];
  COV_RETURN_IF_ERROR(graph_check_numeric(g, n, a));
  if (b->dtype != a->dtype)
    return graph_node_error(g, n, COV_INVALID_INPUT, "A is %s but B is %s",
                            cov_dtype_name(a->dtype), cov_dtype_name(b->dtype));
  if (a->rank < 1 || b->rank < 1)
    return graph_node_error(g, n, COV_INVALID_INPUT, "MatMul operands must have rank >= 1");
  p->a_vec = a->rank == 1;
  p->b_vec = b->rank == 1;
  p->m = p->a_vec ? 1 : a->dims[a->rank - 2];
  p->k = a->dims[a->rank - 1];
  int64_t kb = p->b_vec ? b->dims[0] : b->dims[b->rank - 2];
  p->n = p->b_vec ? 1 : b->dims[b->rank - 1];
  if (p->k >= 0 && kb >= 0 && p->k != kb)
    return graph_node_error(g, n, COV_INVALID_INPUT,
                            "inner dims differ: '%s' has K=%lld, '%s' has K=%lld", a->name,
                            (long long)p->k, b->name, (long long)kb);
  graph_value ba = {.name = a->name, .rank = a->rank > 2 ? a->rank - 2 : 0};
  graph_value bb = {.name = b->name, .rank = b->rank > 2 ? b->rank - 2 : 0};
  for (int i = 0; i < ba.rank; i++) ba.dims[i] = a->dims[i];
  for (int i = 0; i < bb.rank; i++) bb.dims[i] = b->dims[i];
  return graph_broadcast(g, n, &ba, &bb, &p->brank, p->batch);
}

cov_status graph_infer_matmul(const graph *g, const graph_node *n, graph_value *const *in,
                              graph_value *const *out) {
  out[0]->dtype = in[0]->dtype;
  if (in[0]->rank < 0 || in[1]->rank < 0) {
    graph_set_shape(out[0], -1, NULL);
    return NULL;
  }
  mm_params p;
  COV_RETURN_IF_ERROR(mm_params_of(g, n, in, &p));
  int64_t d[COV_MAX_RANK + 2];
  int r = 0;
  for (int i = 0; i < p.brank; i++) d[r++] = p.batch[i];
  if (!p.a_vec) d[r++] = p.m;
  if (!p.b_vec) d[r++] = p.n;
  if (r > COV_MAX_RANK)
    return graph_node_error(g, n, COV_UNSUPPORTED, "output rank %d is over the limit", r);
  graph_set_shape(out[0], r, d);
  return NULL;
}

static int64_t prod(const int64_t *d, int r) {
  int64_t p = 1;
  for (int i = 0; i < r; i++) p *= d[i];
  return p;
}

cov_status graph_exec_matmul(graph_exec *x, const graph_node *n, graph_value *const *in,
                             graph_value *const *out) {
  mm_params p;
  COV_RETURN_IF_ERROR(mm_params_of(x->g, n, in, &p));
  const graph_value *a = in[0], *b = in[1];
  int ra = a->rank > 2 ? a->rank - 2 : 0, rb = b->rank > 2 ? b->rank - 2 : 0;
  int64_t na = prod(a->dims, ra), nb = prod(b->dims, rb), nbatch = prod(p.batch, p.brank);
  cov_tensor y;
  if (p.brank == 0) {
    int64_t ad[2] = {p.m, p.k}, bd[2] = {p.k, p.n};
    cov_tensor t[2] = {graph_view_as(a, 2, ad), graph_view_as(b, 2, bd)};
    COV_RETURN_IF_ERROR(graph_call_codelet(x, n, "matmul", NULL, 0, t, 2, &y, 1));
    return graph_lower_adopt(x, n, &y, out[0]);
  }
  /* The codelet broadcasts a batch of 1; any other broadcast is expanded
   * here first (a copy, which is layout work). */
  void *ea = NULL, *eb = NULL;
  bool same = ra == rb && na == nb && memcmp(a->dims, b->dims, (size_t)ra * sizeof(int64_t)) == 0;
  bool simple = same || na == 1 || nb == 1;
  if (!simple) {
    int64_t td[COV_MAX_RANK];
    memcpy(td, p.batch, (size_t)p.brank * sizeof *td);
    td[p.brank] = p.m;
    td[p.brank + 1] = p.k;
    cov_status st = graph_expand_to(x->g, n, a, p.brank + 2, td, &ea);
    if (!st) {
      td[p.brank] = p.k;
      td[p.brank + 1] = p.n;
      st = graph_expand_to(x->g, n, b, p.brank + 2, td, &eb);
    }
    if (st) {
      free(ea);
      return st;
    }
    na = nb = nbatch;
  }
  int64_t ad[3] = {na, p.m, p.k}, bd[3] = {nb, p.k, p.n};
  cov_tensor t[2] = {graph_view_as(a, 3, ad), graph_view_as(b, 3, bd)};
  if (ea) t[0].data = ea;
  if (eb) t[1].data = eb;
  cov_status st = graph_call_codelet(x, n, "batch_matmul", NULL, 0, t, 2, &y, 1);
  free(ea);
  free(eb);
  COV_RETURN_IF_ERROR(st);
  return graph_lower_adopt(x, n, &y, out[0]);
}

int graph_codelets_matmul(const graph_node *n, const char **names, int max) {
  if (max < 1) return 0;
  const graph_value *a = n->in[0], *b = n->in[1];
  names[0] =
      (a->rank >= 0 && a->rank <= 2 && b->rank >= 0 && b->rank <= 2) ? "matmul" : "batch_matmul";
  return 1;
}
