/* frontend/ops/graph_conv.c: the convolutions, Conv and ConvTranspose, lowered
 * onto the conv2d and bias_add codelets (codelets/README.md); window
 * geometry in graph_geom.c.
 *
 * Geometry is kept for three spatial dims (depth, height, width); 1-D and
 * 2-D operations leave the leading ones trivial. 1-D convolutions and pools
 * run as 2-D ones with a height of 1; 3-D pools as two 2-D pool calls; 3-D
 * convolutions have no codelet and are refused. ConvTranspose runs as conv2d over the
 * input with zeros inserted between its elements and the kernel flipped:
 * the flip is index arithmetic on the weights (done here); the zero
 * insertion is two matrix products with constant 0/1 placement matrices
 * (batch_matmul, matmul), so that every step that touches run-time data is
 * a codelet call and a layer group is a plain chain of calls. The 3-D form
 * builds its zero-inserted input here. */
#include <stdlib.h>
#include <string.h>

#include "frontend/graph.h"
#include "frontend/ops/graph_geom.h"
#include "frontend/ops/graph_lower.h"
#include "frontend/graph_opfns.h"

static int64_t dims4(const graph_value *v, int64_t *d) {
  d[0] = v->dims[0];
  d[1] = v->dims[1];
  d[2] = v->rank == 4 ? v->dims[2] : 1;
  d[3] = v->dims[v->rank - 1];
  return d[0] * d[1] * d[2] * d[3];
}

/* ---- Conv ------------------------------------------------------------- */

static cov_status conv_geom(const graph *g, const graph_node *n, graph_value *const *in, geom *c,
                            int64_t *group) {
  const graph_value *x = in[0], *w = in[1];
  COV_RETURN_IF_ERROR(graph_check_float(g, n, x));
  if (w->dtype != x->dtype)
    return graph_node_error(g, n, COV_INVALID_INPUT, "weights '%s' are %s but the input is %s",
                            w->name, cov_dtype_name(w->dtype), cov_dtype_name(x->dtype));
  COV_RETURN_IF_ERROR(graph_geom_spatial_rank(g, n, x, 3, &c->sp));
  if (w->rank != x->rank)
    return graph_node_error(g, n, COV_INVALID_INPUT,
                            "weights '%s' have rank %d but the input has rank %d", w->name, w->rank,
                            x->rank);
  COV_RETURN_IF_ERROR(graph_attr_int(g, n, "group", 1, group));
  if (*group < 1 || *group > GEOM_MAX)
    return graph_node_error(g, n, COV_INVALID_INPUT, "group %lld must be positive",
                            (long long)*group);
  c->k[0] = c->sp == 3 ? w->dims[2] : 1;
  c->k[1] = c->sp >= 2 ? w->dims[w->rank - 2] : 1;
  c->k[2] = w->dims[w->rank - 1];
  if (c->k[0] <= 0 || c->k[1] <= 0 || c->k[2] <= 0)
    return graph_node_error(g, n, COV_INVALID_INPUT, "weights '%s' have an empty kernel", w->name);
  int64_t ks[3];
  const int64_t *kattr;
  size_t nk;
  COV_RETURN_IF_ERROR(graph_attr_ints(g, n, "kernel_shape", &kattr, &nk));
  if (kattr) {
    COV_RETURN_IF_ERROR(graph_geom_read_spatial(g, n, "kernel_shape", c->sp, 1, 1, ks));
    if (ks[1] != c->k[1] || ks[2] != c->k[2])
      return graph_node_error(g, n, COV_INVALID_INPUT,
                              "kernel_shape does not match the weights '%s'", w->name);
  }
  graph_geom_set_in(c, x);
  return graph_geom_window(g, n, c, false, true);
}

/* Input channels = weight channels x group, output channels a multiple of
 * group (unknown dims pass: shapes are checked again once known). */
static cov_status check_groups(const graph *g, const graph_node *n, const graph_value *x,
                               const graph_value *w, int64_t group) {
  int64_t cin = x->dims[1], m = w->dims[0], wc = w->dims[1];
  if (cin >= 0 && wc >= 0 && cin != wc * group)
    return graph_node_error(g, n, COV_INVALID_INPUT,
                            "input '%s' has %lld channels, but the weights '%s' expect %lld x "
                            "group %lld",
                            x->name, (long long)cin, w->name, (long long)wc, (long long)group);
  if (m >= 0 && m % group)
    return graph_node_error(g, n, COV_INVALID_INPUT,
                            "%lld output channels do not divide into %lld groups", (long long)m,
                            (long long)group);
  return NULL;
}

cov_status graph_infer_conv(const graph *g, const graph_node *n, graph_value *const *in,
                            graph_value *const *out) {
  const graph_value *x = in[0], *w = in[1], *b = n->n_in > 2 ? in[2] : NULL;
  if (x->rank < 0 || w->rank < 0) {
    out[0]->dtype = x->dtype;
    graph_set_shape(out[0], -1, NULL);
    return NULL;
  }
  geom c;
  int64_t group;
  COV_RETURN_IF_ERROR(conv_geom(g, n, in, &c, &group));
  int64_t m = w->dims[0];
  COV_RETURN_IF_ERROR(check_groups(g, n, x, w, group));
  if (b) {
    if (b->dtype != x->dtype || b->rank != 1 || (m >= 0 && b->dims[0] >= 0 && b->dims[0] != m))
      return graph_node_error(g, n, COV_INVALID_INPUT, "bias '%s' must be %s[%lld]", b->name,
                              cov_dtype_name(x->dtype), (long long)m);
  }
  int64_t d[4] = {x->dims[0], m, c.out[1], c.out[2]};
  out[0]->dtype = x->dtype;
  if (c.sp == 1) {
    d[2] = c.out[2];
    graph_set_shape(out[0], 3, d);
  } else {
    graph_set_shape(out[0], 4, d);
  }
  return NULL;
}

static void conv_attrs(const geom *c, int64_t group, cov_attr *a) {
  a[0] = graph_lower_attr_i("stride_h", c->s[1]);
  a[1] = graph_lower_attr_i("stride_w", c->s[2]);
  a[2] = graph_lower_attr_i("pad_top", c->pb[1]);
  a[3] = graph_lower_attr_i("pad_left", c->pb[2]);
  a[4] = graph_lower_attr_i("pad_bottom", c->pe[1] + c->extra[1]);
  a[5] = graph_lower_attr_i("pad_right", c->pe[2] + c->extra[2]);
  a[6] = graph_lower_attr_i("dilation_h", c->d[1]);
  a[7] = graph_lower_attr_i("dilation_w", c->d[2]);
  a[8] = graph_lower_attr_i("groups", group);
}

/* y = conv2d(x, w) [+ bias], written into out (whose shape is inferred). */
/* const_mask: as graph_lower_call_const's, for conv2d's inputs. */
static cov_status run_conv2d(graph_exec *x, const graph_node *n, cov_tensor xt, cov_tensor wt,
                             const geom *c, int64_t group, const graph_value *bias,
                             graph_value *out, unsigned const_mask) {
  cov_attr a[9];
  conv_attrs(c, group, a);
  cov_tensor in2[2] = {xt, wt}, y;
  COV_RETURN_IF_ERROR(graph_lower_call_const(x, n, "conv2d", a, 9, in2, 2, &y, const_mask));
  if (bias) {
    cov_tensor bin[2] = {y, graph_view(bias)}, yb;
    cov_status st = graph_call_codelet(x, n, "bias_add", NULL, 0, bin, 2, &yb, 1);
    cov_tensor_release(&y);
    COV_RETURN_IF_ERROR(st);
    y = yb;
  }
  return graph_lower_adopt(x, n, &y, out);
}

cov_status graph_exec_conv(graph_exec *x, const graph_node *n, graph_value *const *in,
                           graph_value *const *out) {
  geom c;
  int64_t group, xd[4], wd[4];
  COV_RETURN_IF_ERROR(conv_geom(x->g, n, in, &c, &group));
  dims4(in[0], xd);
  dims4(in[1], wd);
  return run_conv2d(x, n, graph_view_as(in[0], 4, xd), graph_view_as(in[1], 4, wd), &c, group,
                    n->n_in > 2 ? in[2] : NULL, out[0], 0);
}

int graph_codelets_conv(const graph_node *n, const char **names, int max) {
  int k = 0;
  if (k < max) names[k++] = "conv2d";
  if (n->n_in > 2 && n->in[2] && k < max) names[k++] = "bias_add";
  return k;
}

/* ---- ConvTranspose ---------------------------------------------------- */

typedef struct tgeom {
  geom c;
  int64_t group, op[3], m;
} tgeom;

static cov_status convt_geom(const graph *g, const graph_node *n, graph_value *const *in,
                             tgeom *t) {
  const graph_value *x = in[0], *w = in[1];
  geom *c = &t->c;
  COV_RETURN_IF_ERROR(graph_check_float(g, n, x));
  if (w->dtype != x->dtype)
    return graph_node_error(g, n, COV_INVALID_INPUT, "weights '%s' are %s but the input is %s",
                            w->name, cov_dtype_name(w->dtype), cov_dtype_name(x->dtype));
  COV_RETURN_IF_ERROR(graph_geom_spatial_rank(g, n, x, 3, &c->sp));
  if (w->rank != x->rank)
    return graph_node_error(g, n, COV_INVALID_INPUT, "weights '%s' have rank %d, the input %d",
                            w->name, w->rank, x->rank);
  COV_RETURN_IF_ERROR(graph_attr_int(g, n, "group", 1, &t->group));
  if (t->group < 1 || t->group > GEOM_MAX)
    return graph_node_error(g, n, COV_INVALID_INPUT, "group %lld must be positive",
                            (long long)t->group);
  if (x->dims[1] >= 0 && w->dims[0] >= 0 && x->dims[1] != w->dims[0])
    return graph_node_error(g, n, COV_INVALID_INPUT,
                            "input '%s' has %lld channels, the weights '%s' %lld", x->name,
                            (long long)x->dims[1], w->name, (long long)w->dims[0]);
  if (w->dims[0] >= 0 && w->dims[0] % t->group)
    return graph_node_error(g, n, COV_INVALID_INPUT, "channels do not divide into groups");
  t->m = w->dims[1] >= 0 ? w->dims[1] * t->group : -1;
  c->k[0] = c->sp == 3 ? w->dims[2] : 1;
  c->k[1] = c->sp >= 2 ? w->dims[w->rank - 2] : 1;
  c->k[2] = w->dims[w->rank - 1];
  if (c->k[0] <= 0 || c->k[1] <= 0 || c->k[2] <= 0)
    return graph_node_error(g, n, COV_INVALID_INPUT, "weights '%s' have an empty kernel", w->name);
  graph_geom_set_in(c, x);
  COV_RETURN_IF_ERROR(graph_geom_read_spatial(g, n, "strides", c->sp, 1, 1, c->s));
  COV_RETURN_IF_ERROR(graph_geom_read_spatial(g, n, "dilations", c->sp, 1, 1, c->d));
  COV_RETURN_IF_ERROR(graph_geom_read_spatial(g, n, "output_padding", c->sp, 0, 0, t->op));
  const char *auto_pad;
  COV_RETURN_IF_ERROR(graph_attr_string(g, n, "auto_pad", "NOTSET", &auto_pad));
  bool upper = strcmp(auto_pad, "SAME_UPPER") == 0, lower = strcmp(auto_pad, "SAME_LOWER") == 0;
  if (!upper && !lower && strcmp(auto_pad, "VALID") != 0 && strcmp(auto_pad, "NOTSET") != 0)
    return graph_node_error(g, n, COV_INVALID_INPUT, "auto_pad '%s' is not valid", auto_pad);
  const int64_t *pads, *oshape;
  size_t np, no;
  COV_RETURN_IF_ERROR(graph_attr_ints(g, n, "pads", &pads, &np));
  COV_RETURN_IF_ERROR(graph_attr_ints(g, n, "output_shape", &oshape, &no));
  if (pads && (int)np != 2 * c->sp)
    return graph_node_error(g, n, COV_INVALID_INPUT, "'pads' has %zu values; expected %d", np,
                            2 * c->sp);
  if (oshape && (int)no != c->sp && (int)no != c->sp + 2)
    return graph_node_error(g, n, COV_INVALID_INPUT, "'output_shape' has %zu values", no);
  for (int i = 0; i < 3; i++) {
    c->pb[i] = c->pe[i] = c->extra[i] = 0;
    int j = i - (3 - c->sp); /* index in the model's spatial lists, <0 for fake dims */
    if (j >= 0 && pads) {
      c->pb[i] = pads[j];
      c->pe[i] = pads[c->sp + j];
      if (c->pb[i] < 0 || c->pe[i] < 0 || c->pb[i] > GEOM_MAX || c->pe[i] > GEOM_MAX)
        return graph_node_error(g, n, COV_INVALID_INPUT, "pads must be from 0 to %lld",
                                (long long)GEOM_MAX);
    }
    int64_t span = (c->k[i] - 1) * c->d[i] + 1;
    if (c->in[i] < 0) {
      c->out[i] = -1;
      continue;
    }
    int64_t full = c->s[i] * (c->in[i] - 1) + t->op[i] + span;
    int64_t want = -1;
    if (j >= 0 && oshape)
      want = oshape[no - (size_t)c->sp + (size_t)j];
    else if (j >= 0 && (upper || lower))
      want = c->in[i] * c->s[i];
    if (want >= 0) {
      /* onnx's rule for pads derived from output_shape or SAME. */
      /* A negative total (output_shape past the full size) becomes
       * negative pads: extra zero rows, at the end when the split is odd,
       * as onnx's floor division puts them. */
      int64_t total = full - want;
      if (total < -GEOM_MAX || want > GEOM_MAX)
        return graph_node_error(g, n, COV_INVALID_INPUT, "output_shape %lld is out of range",
                                (long long)want);
      int64_t half = total >= 0 ? total / 2 : -((-total + 1) / 2); /* floor(total / 2) */
      if (upper) {
        c->pb[i] = half;
        c->pe[i] = total - half;
      } else {
        c->pb[i] = total - half;
        c->pe[i] = half;
      }
    }
    c->out[i] = full - c->pb[i] - c->pe[i];
    if (c->out[i] <= 0)
      return graph_node_error(g, n, COV_INVALID_INPUT, "the padding leaves no output");
  }
  return NULL;
}

cov_status graph_infer_conv_transpose(const graph *g, const graph_node *n, graph_value *const *in,
                                      graph_value *const *out) {
  const graph_value *x = in[0], *b = n->n_in > 2 ? in[2] : NULL;
  out[0]->dtype = x->dtype;
  if (x->rank < 0 || in[1]->rank < 0) {
    graph_set_shape(out[0], -1, NULL);
    return NULL;
  }
  tgeom t;
  COV_RETURN_IF_ERROR(convt_geom(g, n, in, &t));
  if (b &&
      (b->dtype != x->dtype || b->rank != 1 || (t.m >= 0 && b->dims[0] >= 0 && b->dims[0] != t.m)))
    return graph_node_error(g, n, COV_INVALID_INPUT, "bias '%s' must be %s[%lld]", b->name,
                            cov_dtype_name(x->dtype), (long long)t.m);
  int64_t d[5] = {x->dims[0], t.m};
  for (int i = 0; i < t.c.sp; i++) d[2 + i] = t.c.out[3 - t.c.sp + i];
  graph_set_shape(out[0], t.c.sp + 2, d);
  return NULL;
}

/* The 3-D form: the zero-inserted, padded input (as the 2-D form builds
 * it, over three axes) through conv3d with the weights flipped in every
 * spatial axis, then bias_add over [N, M, D, H * W]. */
static cov_status exec_convt3d(graph_exec *x, const graph_node *n, graph_value *const *in,
                               graph_value *const *out, const tgeom *t) {
  const geom *c = &t->c;
  const graph_value *v = in[0], *w = in[1];
  size_t es = cov_dtype_size(v->dtype);
  int64_t lo[3], hp[3];
  for (int a = 0; a < 3; a++) {
    int64_t span = c->d[a] * (c->k[a] - 1);
    lo[a] = span - c->pb[a];
    hp[a] = (c->in[a] - 1) * c->s[a] + 1 + lo[a] + span - c->pe[a] + t->op[a];
    if (hp[a] <= 0)
      return graph_node_error(x->g, n, COV_INVALID_INPUT, "the padding leaves no input");
  }
  graph_value xp = {.name = "zero-inserted input", .dtype = v->dtype, .rank = 5,
                    .dims = {v->dims[0], v->dims[1], hp[0], hp[1], hp[2]}};
  graph_value wf = {.name = "flipped weights", .dtype = w->dtype, .rank = 5,
                    .dims = {t->m, w->dims[0] / t->group, c->k[0], c->k[1], c->k[2]}};
  if (graph_numel(&xp) < 0)
    return graph_node_error(x->g, n, COV_OUT_OF_RANGE, "the zero-inserted input is too large");
  COV_RETURN_IF_ERROR(graph_alloc_data(x->g, n, &xp));
  cov_status st = graph_alloc_data(x->g, n, &wf);
  if (st) {
    free(xp.data);
    return st;
  }
  const char *src = v->data, *ws = w->data;
  for (int64_t nc = 0; nc < v->dims[0] * v->dims[1]; nc++)
    for (int64_t i = 0; i < c->in[0]; i++)
      for (int64_t j = 0; j < c->in[1]; j++)
        for (int64_t k = 0; k < c->in[2]; k++) {
          int64_t pi = i * c->s[0] + lo[0], pj = j * c->s[1] + lo[1], pk = k * c->s[2] + lo[2];
          if (pi < 0 || pi >= hp[0] || pj < 0 || pj >= hp[1] || pk < 0 || pk >= hp[2]) continue;
          memcpy((char *)xp.data + (size_t)(((nc * hp[0] + pi) * hp[1] + pj) * hp[2] + pk) * es,
                 src + (size_t)(((nc * c->in[0] + i) * c->in[1] + j) * c->in[2] + k) * es, es);
        }
  int64_t cg = wf.dims[1], mg = w->dims[1], ka = c->k[0], kr = c->k[1], ks = c->k[2];
  for (int64_t gi = 0; gi < t->group; gi++)
    for (int64_t m = 0; m < mg; m++)
      for (int64_t ci = 0; ci < cg; ci++)
        for (int64_t e = 0; e < ka * kr * ks; e++) {
          int64_t dst = ((gi * mg + m) * cg + ci) * ka * kr * ks + e;
          int64_t from = ((gi * cg + ci) * mg + m) * ka * kr * ks + (ka * kr * ks - 1 - e);
          memcpy((char *)wf.data + (size_t)dst * es, ws + (size_t)from * es, es);
        }
  cov_attr a[4] = {graph_lower_attr_i("dilation_d", c->d[0]), graph_lower_attr_i("dilation_h", c->d[1]),
                   graph_lower_attr_i("dilation_w", c->d[2]), graph_lower_attr_i("groups", t->group)};
  cov_tensor in2[2] = {graph_view(&xp), graph_view(&wf)}, y;
  st = graph_call_codelet(x, n, "conv3d", a, 4, in2, 2, &y, 1);
  free(xp.data);
  free(wf.data);
  COV_RETURN_IF_ERROR(st);
  if (n->n_in > 2 && in[2]) {
    cov_tensor yv = y, yb;
    yv.rank = 4;
    yv.shape[3] = y.shape[3] * y.shape[4];
    cov_tensor bin[2] = {yv, graph_view(in[2])};
    st = graph_call_codelet(x, n, "bias_add", NULL, 0, bin, 2, &yb, 1);
    cov_tensor_release(&y);
    COV_RETURN_IF_ERROR(st);
    y = yb;
  }
  return graph_lower_adopt(x, n, &y, out[0]);
}

/* A 0/1 matrix placing input element i of an axis at position i*s + lo of
 * a length-hp axis (positions outside are dropped): [hp, len] when
 * transposed is false, else [len, hp]. NULL when out of memory. */
static void *placement(cov_dtype dt, int64_t len, int64_t s, int64_t lo, int64_t hp,
                       bool transposed) {
  size_t count = (size_t)len * (size_t)hp;
  void *m = calloc(count ? count : 1, cov_dtype_size(dt));
  if (!m) return NULL;
  for (int64_t i = 0; i < len; i++) {
    int64_t p = i * s + lo;
    if (p >= 0 && p < hp) graph_store_elem(m, dt, (size_t)(transposed ? i * hp + p : p * len + i), 1.0);
  }
  return m;
}

/* ConvTranspose's zero-inserted, padded (or cropped) input [N, C, hp0, hp1]
 * as two codelet calls with constant 0/1 placement matrices, so that a
 * layer group sees a chain of calls rather than a copy made in the node:
 * batch_matmul places the rows ([1, hp0, H] @ [N*C, H, W]), matmul the
 * columns ([N*C*hp0, W] @ [W, hp1]). Every output element is one input
 * element times 1 plus zeros, or 0: the copy is exact for finite inputs
 * (a non-finite input also reaches its zero neighbours as NaN, 0 * inf). */
static cov_status zero_insert(graph_exec *x, const graph_node *n, const graph_value *v,
                              const int64_t *xd, const int64_t *s, const int64_t *lo,
                              const int64_t *hp, cov_tensor *y) {
  cov_dtype dt = v->dtype;
  void *zh = placement(dt, xd[2], s[0], lo[0], hp[0], false);
  void *zw = placement(dt, xd[3], s[1], lo[1], hp[1], true);
  cov_status st = NULL;
  cov_tensor rows = {0};
  if (!zh || !zw) st = graph_node_error(x->g, n, COV_OUT_OF_MEMORY, "out of memory");
  if (!st) {
    int64_t d3[3] = {xd[0] * xd[1], xd[2], xd[3]};
    cov_tensor t[2] = {{.dtype = dt, .rank = 3, .shape = {1, hp[0], xd[2]}, .data = zh},
                       graph_view_as(v, 3, d3)};
    st = graph_lower_call_const(x, n, "batch_matmul", NULL, 0, t, 2, &rows, 1u << 0);
  }
  if (!st) {
    cov_tensor a = rows;
    a.rank = 2;
    a.shape[0] = xd[0] * xd[1] * hp[0];
    a.shape[1] = xd[3];
    cov_tensor t[2] = {a, {.dtype = dt, .rank = 2, .shape = {xd[3], hp[1]}, .data = zw}};
    st = graph_lower_call_const(x, n, "matmul", NULL, 0, t, 2, y, 1u << 1);
    cov_tensor_release(&rows);
  }
  free(zh);
  free(zw);
  if (st) return st;
  y->rank = 4;
  y->shape[0] = xd[0];
  y->shape[1] = xd[1];
  y->shape[2] = hp[0];
  y->shape[3] = hp[1];
  return NULL;
}

cov_status graph_exec_conv_transpose(graph_exec *x, const graph_node *n, graph_value *const *in,
                                     graph_value *const *out) {
  const graph *g = x->g;
  tgeom t;
  COV_RETURN_IF_ERROR(convt_geom(g, n, in, &t));
  if (t.c.sp == 3) return exec_convt3d(x, n, in, out, &t);
  geom *c = &t.c;
  int64_t xd[4], wd[4];
  dims4(in[0], xd);
  dims4(in[1], wd);
  size_t es = cov_dtype_size(in[0]->dtype);
  /* Input with (stride - 1) zeros between elements, padded (or cropped) by
   * dilation*(k-1) - pad on each side, plus output_padding at the end. */
  int64_t lo[2], hp[2];
  for (int i = 0; i < 2; i++) {
    int a = i + 1; /* geometry index of height, width */
    int64_t span = c->d[a] * (c->k[a] - 1);
    lo[i] = span - c->pb[a];
    hp[i] = (c->in[a] - 1) * c->s[a] + 1 + lo[i] + span - c->pe[a] + t.op[a];
  }
  int64_t pd[4] = {xd[0], xd[1], hp[0], hp[1]};
  /* Dilation and padding can make this intermediate far larger than the
   * output; its size is checked like any tensor's. */
  graph_value padded = {.name = "zero-inserted input", .dtype = in[0]->dtype, .rank = 4};
  memcpy(padded.dims, pd, sizeof pd);
  /* So are the placement matrices, [hp0, H] and [W, hp1]. */
  graph_value zh = {.dtype = in[0]->dtype, .rank = 2, .dims = {hp[0], xd[2]}};
  graph_value zw = {.dtype = in[0]->dtype, .rank = 2, .dims = {xd[3], hp[1]}};
  if (hp[0] <= 0 || hp[1] <= 0 || graph_numel(&padded) < 0 || graph_numel(&zh) < 0 ||
      graph_numel(&zw) < 0)
    return graph_node_error(g, n, COV_OUT_OF_RANGE,
                            "the zero-inserted input would be larger than %llu bytes",
                            (unsigned long long)COV_TENSOR_MAX_BYTES);
  cov_tensor xt;
  COV_RETURN_IF_ERROR(zero_insert(x, n, in[0], xd, c->s + 1, lo, hp, &xt));
  /* Weights [C, M/g, R, S] -> [M, C/g, R, S], flipped in both spatial dims. */
  int64_t cg = wd[0] / t.group, mg = wd[1], kr = wd[2], ks = wd[3];
  int64_t fd[4] = {t.m, cg, kr, ks};
  char *wf = malloc((size_t)(t.m * cg * kr * ks) * es + 1);
  if (!wf) {
    cov_tensor_release(&xt);
    return graph_node_error(g, n, COV_OUT_OF_MEMORY, "out of memory");
  }
  const char *wsrc = in[1]->data;
  for (int64_t gi = 0; gi < t.group; gi++)
    for (int64_t m = 0; m < mg; m++)
      for (int64_t ci = 0; ci < cg; ci++)
        for (int64_t r = 0; r < kr; r++)
          for (int64_t s = 0; s < ks; s++) {
            int64_t dst = (((gi * mg + m) * cg + ci) * kr + r) * ks + s;
            int64_t from = (((gi * cg + ci) * mg + m) * kr + (kr - 1 - r)) * ks + (ks - 1 - s);
            memcpy(wf + (size_t)dst * es, wsrc + (size_t)from * es, es);
          }
  geom cc = {.sp = 2};
  for (int i = 0; i < 3; i++) {
    cc.s[i] = 1;
    cc.d[i] = c->d[i];
  }
  cov_tensor wt = {.dtype = in[1]->dtype, .rank = 4, .data = wf};
  memcpy(wt.shape, fd, sizeof fd);
  /* The flipped weights are a constant when the weights are. */
  bool wconst = n->in[1] && x->g->values[n->in[1]->id]->data != NULL;
  cov_status st = run_conv2d(x, n, xt, wt, &cc, t.group, n->n_in > 2 ? in[2] : NULL, out[0],
                             wconst ? 1u << 1 : 0);
  cov_tensor_release(&xt);
  free(wf);
  return st;
}

int graph_codelets_conv_transpose(const graph_node *n, const char **names, int max) {
  if (n->in[0] && n->in[0]->rank == 5) {
    int k = graph_codelets_conv(n, names, max);
    if (k > 0) names[0] = "conv3d";
    return k;
  }
  /* The zero insertion's two placements, then Conv's calls. */
  int k = 0;
  if (k < max) names[k++] = "batch_matmul";
  if (k < max) names[k++] = "matmul";
  return k + graph_codelets_conv(n, names + k, max - k);
}

/* ---- geometry for the integer convolutions (graph_quant.c) ------------- */

/* QLinearConv and ConvInteger share Conv's attributes; their operands are
 * integers, so the geometry is read through float stand-ins of x and w (the
 * dtype rules are the caller's). a[] gets conv2d's nine attributes. */
cov_status graph_conv_geometry(const graph *g, const graph_node *n, const graph_value *x,
                               const graph_value *w, cov_attr a[9], int64_t out_dims[4],
                               int *sp) {
  graph_value xf = *x, wf = *w;
  xf.dtype = wf.dtype = COV_F32;
  graph_value *in[2] = {&xf, &wf};
  geom c;
  int64_t group;
  COV_RETURN_IF_ERROR(conv_geom(g, n, in, &c, &group));
  int64_t m = w->dims[0];
  COV_RETURN_IF_ERROR(check_groups(g, n, x, w, group));
  conv_attrs(&c, group, a);
  out_dims[0] = x->dims[0];
  out_dims[1] = m;
  out_dims[2] = c.out[1];
  out_dims[3] = c.out[2];
  *sp = c.sp;
  return NULL;
}
