/* frontend/graph_conv.c: the operations with weights or windows: Conv,
 * ConvTranspose, MaxPool, AveragePool, GlobalAveragePool, GlobalMaxPool,
 * Gemm and MatMul, lowered onto the conv2d, maxpool, avgpool,
 * global_avgpool, global_maxpool, gemm, gemm_bias, matmul, batch_matmul and
 * bias_add codelets (codelets/README.md).
 *
 * Geometry is kept for three spatial dims (depth, height, width); 1-D and
 * 2-D operations leave the leading ones trivial. 1-D convolutions and pools
 * run as 2-D ones with a height of 1; 3-D pools as two 2-D pool calls; 3-D
 * convolutions have no codelet and are refused. ConvTranspose runs as conv2d over the
 * input with zeros inserted between its elements and the kernel flipped:
 * the zero insertion and flip are index arithmetic (done here), the
 * multiply-accumulates go through the conv2d codelet. */
#include <stdlib.h>
#include <string.h>

#include "frontend/graph.h"
#include "frontend/graph_lower.h"
#include "frontend/graph_opfns.h"

/* Attribute values beyond this are refused: nothing real needs them and it
 * keeps every size computation far from int64 overflow. */
#define GEOM_MAX ((int64_t)1 << 30)

/* Window geometry of up to two spatial dims (a 1-D op uses index 1 only;
 * index 0 is then the trivial height 1). */
typedef struct geom {
  int sp; /* spatial dims as the model has them: 1 or 2 */
  int64_t in[3], k[3], s[3], d[3], pb[3], pe[3], out[3], extra[3];
} geom;

static cov_status read_spatial(const graph *g, const graph_node *n, const char *name, int sp,
                               int64_t def, int64_t lo, int64_t *v) {
  const int64_t *a;
  size_t na;
  COV_RETURN_IF_ERROR(graph_attr_ints(g, n, name, &a, &na));
  for (int i = 0; i < 3; i++) v[i] = def;
  if (!a) return NULL;
  if ((int)na != sp)
    return graph_node_error(g, n, COV_INVALID_INPUT, "'%s' has %zu values for %d spatial dims",
                            name, na, sp);
  for (int i = 0; i < sp; i++) {
    if (a[i] < lo || a[i] > GEOM_MAX)
      return graph_node_error(g, n, COV_INVALID_INPUT,
                              "'%s' value %lld is out of range (%lld to %lld)", name,
                              (long long)a[i], (long long)lo, (long long)GEOM_MAX);
    v[3 - sp + i] = a[i];
  }
  return NULL;
}

/* Strides, dilations, pads and auto_pad; kernel and input sizes already in
 * c->k and c->in (an input dim of -1 leaves the output dim unknown). */
static cov_status window(const graph *g, const graph_node *n, geom *c, bool ceil_mode,
                         bool has_dilations) {
  int sp = c->sp;
  COV_RETURN_IF_ERROR(read_spatial(g, n, "strides", sp, 1, 1, c->s));
  if (has_dilations)
    COV_RETURN_IF_ERROR(read_spatial(g, n, "dilations", sp, 1, 1, c->d));
  else
    c->d[0] = c->d[1] = c->d[2] = 1;
  const int64_t *pads;
  size_t np;
  COV_RETURN_IF_ERROR(graph_attr_ints(g, n, "pads", &pads, &np));
  const char *auto_pad;
  COV_RETURN_IF_ERROR(graph_attr_string(g, n, "auto_pad", "NOTSET", &auto_pad));
  bool same_upper = strcmp(auto_pad, "SAME_UPPER") == 0,
       same_lower = strcmp(auto_pad, "SAME_LOWER") == 0, valid = strcmp(auto_pad, "VALID") == 0;
  if (!same_upper && !same_lower && !valid && strcmp(auto_pad, "NOTSET") != 0)
    return graph_node_error(g, n, COV_INVALID_INPUT,
                            "auto_pad '%s' is not NOTSET, SAME_UPPER, SAME_LOWER or VALID",
                            auto_pad);
  if (pads && (same_upper || same_lower || valid))
    return graph_node_error(g, n, COV_INVALID_INPUT, "has both 'pads' and auto_pad %s", auto_pad);
  for (int i = 0; i < 3; i++) c->pb[i] = c->pe[i] = c->extra[i] = 0;
  if (pads) {
    if ((int)np != 2 * sp)
      return graph_node_error(g, n, COV_INVALID_INPUT, "'pads' has %zu values; expected %d", np,
                              2 * sp);
    for (int i = 0; i < sp; i++) {
      if (pads[i] < 0 || pads[sp + i] < 0 || pads[i] > GEOM_MAX || pads[sp + i] > GEOM_MAX)
        return graph_node_error(g, n, COV_INVALID_INPUT, "pads must be from 0 to %lld",
                                (long long)GEOM_MAX);
      c->pb[3 - sp + i] = pads[i];
      c->pe[3 - sp + i] = pads[sp + i];
    }
  }
  for (int i = 0; i < 3; i++) {
    int64_t span = (c->k[i] - 1) * c->d[i] + 1;
    if (c->in[i] < 0) {
      c->out[i] = -1;
      continue;
    }
    if (same_upper || same_lower) {
      int64_t out = (c->in[i] + c->s[i] - 1) / c->s[i];
      int64_t total = (out - 1) * c->s[i] + span - c->in[i];
      if (total < 0) total = 0;
      c->pb[i] = same_upper ? total / 2 : total - total / 2;
      c->pe[i] = total - c->pb[i];
    }
    int64_t room = c->in[i] + c->pb[i] + c->pe[i] - span;
    if (room < 0)
      return graph_node_error(g, n, COV_INVALID_INPUT,
                              "the window (%lld with dilation %lld) is larger than the padded "
                              "input (%lld)",
                              (long long)c->k[i], (long long)c->d[i],
                              (long long)(c->in[i] + c->pb[i] + c->pe[i]));
    c->out[i] = room / c->s[i] + 1;
    if (ceil_mode && room % c->s[i]) {
      c->out[i]++;
      /* The last window must start inside the input or its left padding
       * (PyTorch's rule, which onnxruntime follows). */
      if ((c->out[i] - 1) * c->s[i] >= c->in[i] + c->pb[i]) c->out[i]--;
      int64_t need = (c->out[i] - 1) * c->s[i] + span - (c->in[i] + c->pb[i] + c->pe[i]);
      c->extra[i] = need > 0 ? need : 0;
    }
  }
  return NULL;
}

static cov_status spatial_rank(const graph *g, const graph_node *n, const graph_value *x,
                               int max_sp, int *sp) {
  if (x->rank >= 3 && x->rank - 2 <= max_sp) {
    *sp = x->rank - 2;
    return NULL;
  }
  if (x->rank > 2)
    return graph_node_error(g, n, COV_UNSUPPORTED,
                            "%d-D %s is not supported (covenant has %d-D codelets at most)",
                            x->rank - 2, n->op_type, max_sp);
  return graph_node_error(g, n, COV_INVALID_INPUT,
                          "input '%s' has rank %d; expected [N, C, spatial...] (rank 3 to %d)",
                          x->name, x->rank, max_sp + 2);
}

static void set_in(geom *c, const graph_value *x) {
  c->in[0] = c->sp == 3 ? x->dims[2] : 1;
  c->in[1] = c->sp >= 2 ? x->dims[x->rank - 2] : 1;
  c->in[2] = x->dims[x->rank - 1];
}

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
  COV_RETURN_IF_ERROR(spatial_rank(g, n, x, 2, &c->sp));
  if (w->rank != x->rank)
    return graph_node_error(g, n, COV_INVALID_INPUT,
                            "weights '%s' have rank %d but the input has rank %d", w->name, w->rank,
                            x->rank);
  COV_RETURN_IF_ERROR(graph_attr_int(g, n, "group", 1, group));
  if (*group < 1 || *group > GEOM_MAX)
    return graph_node_error(g, n, COV_INVALID_INPUT, "group %lld must be positive",
                            (long long)*group);
  c->k[0] = 1;
  c->k[1] = c->sp == 2 ? w->dims[2] : 1;
  c->k[2] = w->dims[w->rank - 1];
  if (c->k[1] <= 0 || c->k[2] <= 0)
    return graph_node_error(g, n, COV_INVALID_INPUT, "weights '%s' have an empty kernel", w->name);
  int64_t ks[3];
  const int64_t *kattr;
  size_t nk;
  COV_RETURN_IF_ERROR(graph_attr_ints(g, n, "kernel_shape", &kattr, &nk));
  if (kattr) {
    COV_RETURN_IF_ERROR(read_spatial(g, n, "kernel_shape", c->sp, 1, 1, ks));
    if (ks[1] != c->k[1] || ks[2] != c->k[2])
      return graph_node_error(g, n, COV_INVALID_INPUT,
                              "kernel_shape does not match the weights '%s'", w->name);
  }
  set_in(c, x);
  return window(g, n, c, false, true);
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
  a[0] = lower_attr_i("stride_h", c->s[1]);
  a[1] = lower_attr_i("stride_w", c->s[2]);
  a[2] = lower_attr_i("pad_top", c->pb[1]);
  a[3] = lower_attr_i("pad_left", c->pb[2]);
  a[4] = lower_attr_i("pad_bottom", c->pe[1] + c->extra[1]);
  a[5] = lower_attr_i("pad_right", c->pe[2] + c->extra[2]);
  a[6] = lower_attr_i("dilation_h", c->d[1]);
  a[7] = lower_attr_i("dilation_w", c->d[2]);
  a[8] = lower_attr_i("groups", group);
}

/* y = conv2d(x, w) [+ bias], written into out (whose shape is inferred). */
static cov_status run_conv2d(graph_exec *x, const graph_node *n, const graph_value *xv,
                             cov_tensor xt, cov_tensor wt, const geom *c, int64_t group,
                             const graph_value *bias, graph_value *out) {
  (void)xv;
  cov_attr a[9];
  conv_attrs(c, group, a);
  cov_tensor in2[2] = {xt, wt}, y;
  COV_RETURN_IF_ERROR(graph_call_codelet(x, n, "conv2d", a, 9, in2, 2, &y, 1));
  if (bias) {
    cov_tensor bin[2] = {y, graph_view(bias)}, yb;
    cov_status st = graph_call_codelet(x, n, "bias_add", NULL, 0, bin, 2, &yb, 1);
    cov_tensor_release(&y);
    COV_RETURN_IF_ERROR(st);
    y = yb;
  }
  return lower_adopt(x, n, &y, out);
}

cov_status graph_exec_conv(graph_exec *x, const graph_node *n, graph_value *const *in,
                           graph_value *const *out) {
  geom c;
  int64_t group, xd[4], wd[4];
  COV_RETURN_IF_ERROR(conv_geom(x->g, n, in, &c, &group));
  dims4(in[0], xd);
  dims4(in[1], wd);
  return run_conv2d(x, n, in[0], graph_view_as(in[0], 4, xd), graph_view_as(in[1], 4, wd), &c,
                    group, n->n_in > 2 ? in[2] : NULL, out[0]);
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
  COV_RETURN_IF_ERROR(spatial_rank(g, n, x, 2, &c->sp));
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
  c->k[0] = 1;
  c->k[1] = c->sp == 2 ? w->dims[2] : 1;
  c->k[2] = w->dims[w->rank - 1];
  if (c->k[1] <= 0 || c->k[2] <= 0)
    return graph_node_error(g, n, COV_INVALID_INPUT, "weights '%s' have an empty kernel", w->name);
  set_in(c, x);
  COV_RETURN_IF_ERROR(read_spatial(g, n, "strides", c->sp, 1, 1, c->s));
  COV_RETURN_IF_ERROR(read_spatial(g, n, "dilations", c->sp, 1, 1, c->d));
  COV_RETURN_IF_ERROR(read_spatial(g, n, "output_padding", c->sp, 0, 0, t->op));
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
  int64_t d[4] = {x->dims[0], t.m, t.c.out[1], t.c.out[2]};
  if (t.c.sp == 1) d[2] = t.c.out[2];
  graph_set_shape(out[0], t.c.sp + 2, d);
  return NULL;
}

cov_status graph_exec_conv_transpose(graph_exec *x, const graph_node *n, graph_value *const *in,
                                     graph_value *const *out) {
  const graph *g = x->g;
  tgeom t;
  COV_RETURN_IF_ERROR(convt_geom(g, n, in, &t));
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
  if (hp[0] <= 0 || hp[1] <= 0 || graph_numel(&padded) < 0)
    return graph_node_error(g, n, COV_OUT_OF_RANGE,
                            "the zero-inserted input would be larger than %llu bytes",
                            (unsigned long long)COV_TENSOR_MAX_BYTES);
  int64_t plane = hp[0] * hp[1];
  size_t bytes = (size_t)graph_numel(&padded) * es;
  char *xp = calloc(bytes ? bytes : 1, 1);
  if (!xp) return graph_node_error(g, n, COV_OUT_OF_MEMORY, "out of memory");
  const char *src = in[0]->data;
  for (int64_t nc = 0; nc < xd[0] * xd[1]; nc++)
    for (int64_t h = 0; h < xd[2]; h++)
      for (int64_t w = 0; w < xd[3]; w++) {
        int64_t ph = h * c->s[1] + lo[0], pw = w * c->s[2] + lo[1];
        if (ph < 0 || ph >= hp[0] || pw < 0 || pw >= hp[1]) continue;
        memcpy(xp + (size_t)(nc * plane + ph * hp[1] + pw) * es,
               src + (size_t)((nc * xd[2] + h) * xd[3] + w) * es, es);
      }
  /* Weights [C, M/g, R, S] -> [M, C/g, R, S], flipped in both spatial dims. */
  int64_t cg = wd[0] / t.group, mg = wd[1], kr = wd[2], ks = wd[3];
  int64_t fd[4] = {t.m, cg, kr, ks};
  char *wf = malloc((size_t)(t.m * cg * kr * ks) * es + 1);
  if (!wf) {
    free(xp);
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
  cov_tensor xt = {.dtype = in[0]->dtype, .rank = 4, .data = xp};
  cov_tensor wt = {.dtype = in[1]->dtype, .rank = 4, .data = wf};
  memcpy(xt.shape, pd, sizeof pd);
  memcpy(wt.shape, fd, sizeof fd);
  cov_status st = run_conv2d(x, n, in[0], xt, wt, &cc, t.group, n->n_in > 2 ? in[2] : NULL, out[0]);
  free(xp);
  free(wf);
  return st;
}

int graph_codelets_conv_transpose(const graph_node *n, const char **names, int max) {
  return graph_codelets_conv(n, names, max);
}

/* ---- MaxPool, AveragePool --------------------------------------------- */

static cov_status pool_geom(const graph *g, const graph_node *n, const graph_value *x, geom *c,
                            bool is_max) {
  if (is_max && (x->dtype == COV_I8 || x->dtype == COV_U8)) {
    if (n->opset < 12)
      return graph_node_error(g, n, COV_INVALID_INPUT, "int8/uint8 MaxPool needs opset 12");
  } else {
    COV_RETURN_IF_ERROR(graph_check_float(g, n, x));
  }
  COV_RETURN_IF_ERROR(spatial_rank(g, n, x, 3, &c->sp));
  const int64_t *ka;
  size_t nk;
  COV_RETURN_IF_ERROR(graph_attr_ints(g, n, "kernel_shape", &ka, &nk));
  if (!ka) return graph_node_error(g, n, COV_INVALID_INPUT, "needs 'kernel_shape'");
  COV_RETURN_IF_ERROR(read_spatial(g, n, "kernel_shape", c->sp, 1, 1, c->k));
  int64_t ceil_mode = 0;
  if (n->opset >= 10) COV_RETURN_IF_ERROR(graph_attr_int(g, n, "ceil_mode", 0, &ceil_mode));
  set_in(c, x);
  bool dil = is_max ? n->opset >= 10 : n->opset >= 19;
  COV_RETURN_IF_ERROR(window(g, n, c, ceil_mode != 0, dil));
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
  if (is_max && n->n_out > 1 && out[1])
    return graph_node_error(g, n, COV_UNSUPPORTED,
                            "the Indices output is not supported (the maxpool codelet returns "
                            "values only)");
  if (x->rank < 0) {
    graph_set_shape(out[0], -1, NULL);
    return NULL;
  }
  geom c;
  COV_RETURN_IF_ERROR(pool_geom(g, n, x, &c, is_max));
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
  return NULL;
}

/* One pooling codelet call over [N, C, H, W] with the window of geometry
 * dims a (height) and b (width). */
static cov_status pool_call(graph_exec *x, const graph_node *n, const geom *c, int a, int b,
                            bool is_max, int64_t cip, cov_tensor xt, cov_tensor *y) {
  cov_attr at[11];
  int na = 0;
  at[na++] = lower_attr_i("kernel_h", c->k[a]);
  at[na++] = lower_attr_i("kernel_w", c->k[b]);
  at[na++] = lower_attr_i("stride_h", c->s[a]);
  at[na++] = lower_attr_i("stride_w", c->s[b]);
  at[na++] = lower_attr_i("pad_top", c->pb[a]);
  at[na++] = lower_attr_i("pad_left", c->pb[b]);
  at[na++] = lower_attr_i("pad_bottom", c->pe[a] + c->extra[a]);
  at[na++] = lower_attr_i("pad_right", c->pe[b] + c->extra[b]);
  if (is_max) {
    at[na++] = lower_attr_i("dilation_h", c->d[a]);
    at[na++] = lower_attr_i("dilation_w", c->d[b]);
  } else {
    at[na++] = lower_attr_i("count_include_pad", cip != 0);
  }
  return graph_call_codelet(x, n, is_max ? "maxpool" : "avgpool", at, (size_t)na, &xt, 1, y, 1);
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
  int64_t cip = 0;
  if (!is_max) COV_RETURN_IF_ERROR(graph_attr_int(x->g, n, "count_include_pad", 0, &cip));
  int64_t xd[4] = {v->dims[0], v->dims[1] * c.in[0], c.in[1], c.in[2]};
  cov_tensor y;
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
  return lower_adopt(x, n, &y, out[0]);
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
  return lower_adopt(x, n, &y, out[0]);
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
  cov_attr a[4] = {lower_attr_i("transA", p.ta != 0), lower_attr_i("transB", p.tb != 0),
                   lower_attr_f("alpha", p.alpha), lower_attr_f("beta", p.beta)};
  cov_tensor t[3] = {graph_view(in[0]), graph_view(in[1])}, y;
  if (p.has_c) {
    int64_t cd[2] = {p.cm, p.cn};
    t[2] = graph_view_as(in[2], 2, cd);
    COV_RETURN_IF_ERROR(graph_call_codelet(x, n, "gemm_bias", a, 4, t, 3, &y, 1));
  } else {
    COV_RETURN_IF_ERROR(graph_call_codelet(x, n, "gemm", a, 3, t, 2, &y, 1));
  }
  return lower_adopt(x, n, &y, out[0]);
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
    return lower_adopt(x, n, &y, out[0]);
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
  return lower_adopt(x, n, &y, out[0]);
}

int graph_codelets_matmul(const graph_node *n, const char **names, int max) {
  if (max < 1) return 0;
  const graph_value *a = n->in[0], *b = n->in[1];
  names[0] =
      (a->rank >= 0 && a->rank <= 2 && b->rank >= 0 && b->rank <= 2) ? "matmul" : "batch_matmul";
  return 1;
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
  conv_attrs(&c, group, a);
  out_dims[0] = x->dims[0];
  out_dims[1] = m;
  out_dims[2] = c.out[1];
  out_dims[3] = c.out[2];
  *sp = c.sp;
  return NULL;
}
