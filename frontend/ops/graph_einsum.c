/* frontend/ops/graph_einsum.c: ONNX Einsum, lowered onto batch_matmul and
 * reduce_sum.
 *
 * Each operand becomes a strided view with one entry per distinct label: a
 * repeated label (a diagonal, "ii->i") is one entry whose stride is the sum
 * of its strides, and a broadcast ellipsis dim of size 1 has stride 0. The
 * operands are then contracted left to right: before a pair is combined,
 * labels that neither the other operand nor anything later needs are summed
 * out (reduce_sum over a [kept, summed] copy); the pair is copied into
 * [batch, m, k] and [batch, k, n] order (labels in both and needed later,
 * only in the left, in both and not needed, only in the right) and
 * multiplied by batch_matmul, whose [batch, m, n] result is the next left
 * operand. What the output does not name is summed last, and the result is
 * copied into the output's label order. The copies are layout work, like
 * Transpose; the arithmetic is the codelets'. Which codelets run depends on
 * the equation's labels only, so graph_codelets_einsum replays the same
 * plan without shapes.
 *
 * Supported: any number of operands, explicit ("->") and implicit outputs,
 * diagonals, "..." (broadcast as numpy does; an output that drops it is
 * refused). Labels are the letters a-z and A-Z. */
#include <stdlib.h>
#include <string.h>

#include "frontend/graph.h"
#include "frontend/ops/graph_lower.h"
#include "frontend/graph_opfns.h"

#define EIN_LETTERS 52            /* a-z, A-Z */
#define EIN_LABELS 64             /* letters, then one label per ellipsis dim */
#define EIN_MAX_OPS 16            /* operands of one equation */
#define EIN_ELL(j) (EIN_LETTERS + (j))

typedef uint64_t lset; /* a set of labels */

typedef struct ein_term {
  int n;                  /* letters and the ellipsis marker, in order */
  int lab[COV_MAX_RANK + 1];
  int ell;                /* index of the ellipsis in lab[], -1 if none */
} ein_term;

typedef struct ein_eq {
  const char *text;
  int n_in;
  ein_term in[EIN_MAX_OPS];
  ein_term out;
  bool explicit_out;
} ein_eq;

/* A strided view of an operand with distinct labels. */
typedef struct ein_view {
  const void *data;
  void *owned;
  int n;
  int lab[EIN_LABELS];
  int64_t stride[EIN_LABELS];
} ein_view;

static int letter(char c) {
  if (c >= 'a' && c <= 'z') return c - 'a';
  if (c >= 'A' && c <= 'Z') return 26 + (c - 'A');
  return -1;
}

static cov_status eq_error(const graph *g, const graph_node *n, const char *eq, const char *why) {
  return graph_node_error(g, n, COV_INVALID_INPUT, "equation '%s': %s", eq, why);
}

/* One term ("bij", "...ii", "") from [p, end), blanks ignored. */
static cov_status parse_term(const graph *g, const graph_node *n, const char *eq, const char *p,
                             const char *end, ein_term *t) {
  t->n = 0;
  t->ell = -1;
  while (p < end) {
    if (*p == ' ') {
      p++;
      continue;
    }
    if (t->n > COV_MAX_RANK)
      return eq_error(g, n, eq, "a term has more labels than covenant's largest rank (8)");
    if (*p == '.') {
      if (end - p < 3 || p[1] != '.' || p[2] != '.')
        return eq_error(g, n, eq, "'.' must be part of an ellipsis '...'");
      if (t->ell >= 0) return eq_error(g, n, eq, "a term has two ellipses");
      t->ell = t->n;
      t->lab[t->n++] = -1;
      p += 3;
      continue;
    }
    int l = letter(*p);
    if (l < 0) {
      char msg[80];
      snprintf(msg, sizeof msg, "character '%c' is not a label (labels are a-z and A-Z)", *p);
      return eq_error(g, n, eq, msg);
    }
    t->lab[t->n++] = l;
    p++;
  }
  return NULL;
}

/* Parses the equation attribute; the operand count must match the inputs. */
static cov_status parse_eq(const graph *g, const graph_node *n, ein_eq *e) {
  COV_RETURN_IF_ERROR(graph_attr_string(g, n, "equation", NULL, &e->text));
  if (!e->text)
    return graph_node_error(g, n, COV_INVALID_INPUT, "the 'equation' attribute is missing");
  const char *eq = e->text, *arrow = strstr(eq, "->");
  const char *lhs_end = arrow ? arrow : eq + strlen(eq);
  e->n_in = 0;
  for (const char *p = eq;;) {
    const char *c = memchr(p, ',', (size_t)(lhs_end - p));
    const char *stop = c ? c : lhs_end;
    if (e->n_in == EIN_MAX_OPS) return eq_error(g, n, eq, "more than 16 operands");
    COV_RETURN_IF_ERROR(parse_term(g, n, eq, p, stop, &e->in[e->n_in++]));
    if (!c) break;
    p = c + 1;
  }
  if (e->n_in != n->n_in) {
    char msg[96];
    snprintf(msg, sizeof msg, "names %d operands but the node has %d inputs", e->n_in, n->n_in);
    return eq_error(g, n, eq, msg);
  }
  e->explicit_out = arrow != NULL;
  if (arrow) {
    if (strstr(arrow + 2, "->")) return eq_error(g, n, eq, "more than one '->'");
    return parse_term(g, n, eq, arrow + 2, arrow + strlen(arrow), &e->out);
  }
  /* Implicit output: the ellipsis, then the letters used once, in ASCII
   * order (upper case first), as numpy orders them. */
  int uses[EIN_LETTERS] = {0};
  bool any_ell = false;
  for (int i = 0; i < e->n_in; i++)
    for (int k = 0; k < e->in[i].n; k++) {
      if (e->in[i].lab[k] >= 0) uses[e->in[i].lab[k]]++;
      else any_ell = true;
    }
  e->out.n = 0;
  e->out.ell = -1;
  if (any_ell) e->out.ell = 0, e->out.lab[e->out.n++] = -1;
  for (int k = 0; k < EIN_LETTERS; k++) {
    int l = k < 26 ? 26 + k : k - 26; /* 'A'..'Z' sort before 'a'..'z' */
    if (uses[l] != 1) continue;
    if (e->out.n > COV_MAX_RANK) return eq_error(g, n, eq, "the output has rank > 8");
    e->out.lab[e->out.n++] = l;
  }
  return NULL;
}

/* Checks the equation against the operands' ranks and makes the output
 * term; sizes[] gets every label's extent (1 where only broadcast). */
static cov_status bind_eq(const graph *g, const graph_node *n, ein_eq *e, graph_value *const *in,
                          int *n_ell, int64_t *sizes) {
  const char *eq = e->text;
  int ecount[EIN_MAX_OPS], maxe = 0, uses[EIN_LETTERS] = {0};
  bool any_ell = false;
  for (int l = 0; l < EIN_LABELS; l++) sizes[l] = 1;
  for (int i = 0; i < e->n_in; i++) {
    const ein_term *t = &e->in[i];
    int letters = t->n - (t->ell >= 0);
    ecount[i] = in[i]->rank - letters;
    if (ecount[i] < 0 || (t->ell < 0 && ecount[i] != 0)) {
      char msg[128];
      snprintf(msg, sizeof msg, "operand %d ('%s') has rank %d but its term has %d labels", i,
               in[i]->name, in[i]->rank, letters);
      return eq_error(g, n, eq, msg);
    }
    any_ell |= t->ell >= 0;
    if (ecount[i] > maxe) maxe = ecount[i];
  }
  *n_ell = maxe;
  for (int i = 0; i < e->n_in; i++) {
    const ein_term *t = &e->in[i];
    int d = 0;
    for (int k = 0; k < t->n; k++) {
      if (k == t->ell) {
        for (int j = 0; j < ecount[i]; j++, d++) {
          int l = EIN_ELL(maxe - ecount[i] + j);
          int64_t s = in[i]->dims[d];
          if (s != 1 && sizes[l] != 1 && s != sizes[l] && s >= 0 && sizes[l] >= 0)
            return eq_error(g, n, eq, "the ellipsis dims of the operands do not broadcast");
          if (s != 1 && (sizes[l] == 1 || s < 0)) sizes[l] = s;
        }
        continue;
      }
      int l = t->lab[k];
      int64_t s = in[i]->dims[d++];
      if (uses[l]++ && s >= 0 && sizes[l] >= 0 && s != sizes[l]) {
        char msg[128];
        snprintf(msg, sizeof msg, "label '%c' has size %lld in operand %d but %lld before",
                 l < 26 ? 'a' + l : 'A' + (l - 26), (long long)s, i, (long long)sizes[l]);
        return eq_error(g, n, eq, msg);
      }
      if (uses[l] == 1 || s < 0) sizes[l] = s;
    }
  }
  if (e->explicit_out) {
    lset seen = 0;
    for (int k = 0; k < e->out.n; k++) {
      int l = e->out.lab[k];
      if (l < 0) {
        if (!any_ell) return eq_error(g, n, eq, "the output has '...' but no operand has");
        continue;
      }
      if (!uses[l]) return eq_error(g, n, eq, "an output label is in no operand");
      if (seen >> l & 1) return eq_error(g, n, eq, "an output label is repeated");
      seen |= (lset)1 << l;
    }
    if (any_ell && maxe > 0 && e->out.ell < 0)
      return eq_error(g, n, eq, "the output drops the operands' '...' dims (not supported)");
  }
  return NULL;
}

/* The output's labels with the ellipsis expanded. */
static int out_labels(const ein_eq *e, int n_ell, int *lab) {
  int k = 0;
  for (int i = 0; i < e->out.n; i++) {
    if (e->out.lab[i] >= 0) {
      lab[k++] = e->out.lab[i];
      continue;
    }
    for (int j = 0; j < n_ell; j++) lab[k++] = EIN_ELL(j);
  }
  return k;
}

static cov_status check_inputs(const graph *g, const graph_node *n, graph_value *const *in) {
  for (int i = 0; i < n->n_in; i++) {
    if (!in[i]) return graph_node_error(g, n, COV_INVALID_INPUT, "input %d is missing", i);
    COV_RETURN_IF_ERROR(graph_check_numeric(g, n, in[i]));
    if (in[i]->dtype != in[0]->dtype)
      return graph_node_error(g, n, COV_INVALID_INPUT, "input '%s' is %s but '%s' is %s",
                              in[i]->name, cov_dtype_name(in[i]->dtype), in[0]->name,
                              cov_dtype_name(in[0]->dtype));
  }
  return NULL;
}

cov_status graph_infer_einsum(const graph *g, const graph_node *n, graph_value *const *in,
                              graph_value *const *out) {
  ein_eq e;
  COV_RETURN_IF_ERROR(check_inputs(g, n, in));
  COV_RETURN_IF_ERROR(parse_eq(g, n, &e));
  out[0]->dtype = in[0]->dtype;
  for (int i = 0; i < n->n_in; i++)
    if (in[i]->rank < 0) {
      graph_set_shape(out[0], e.out.ell >= 0 ? -1 : e.out.n, NULL);
      return NULL;
    }
  int n_ell, lab[EIN_LABELS];
  int64_t sizes[EIN_LABELS];
  COV_RETURN_IF_ERROR(bind_eq(g, n, &e, in, &n_ell, sizes));
  int r = out_labels(&e, n_ell, lab);
  if (r > COV_MAX_RANK)
    return eq_error(g, n, e.text, "the output would have a rank over 8");
  int64_t d[COV_MAX_RANK];
  for (int k = 0; k < r; k++) d[k] = sizes[lab[k]];
  graph_set_shape(out[0], r, d);
  return graph_check_shape(g, n, out[0]);
}

/* ---- execution ---------------------------------------------------------- */

static lset view_set(const ein_view *v) {
  lset s = 0;
  for (int k = 0; k < v->n; k++) s |= (lset)1 << v->lab[k];
  return s;
}

/* The view of operand i: distinct labels, diagonal strides summed, stride 0
 * for a broadcast (size-1) ellipsis dim. */
static void make_view(const ein_term *t, const graph_value *v, int n_ell, const int64_t *sizes,
                      ein_view *out) {
  int64_t st[COV_MAX_RANK], s = 1;
  for (int d = v->rank - 1; d >= 0; d--) st[d] = s, s *= v->dims[d];
  int ecount = v->rank - (t->n - (t->ell >= 0));
  out->data = v->data;
  out->owned = NULL;
  out->n = 0;
  for (int k = 0, d = 0; k < t->n; k++) {
    int labs[COV_MAX_RANK], m = 0;
    if (k == t->ell)
      for (int j = 0; j < ecount; j++) labs[m++] = EIN_ELL(n_ell - ecount + j);
    else
      labs[m++] = t->lab[k];
    for (int q = 0; q < m; q++, d++) {
      int64_t stride = (v->dims[d] == 1 && sizes[labs[q]] != 1) ? 0 : st[d];
      int j = 0;
      while (j < out->n && out->lab[j] != labs[q]) j++;
      if (j == out->n) out->lab[out->n] = labs[q], out->stride[out->n++] = 0;
      out->stride[j] += stride;
    }
  }
}

/* A contiguous copy of v with its labels in the order order[0..r) (or v's
 * own data when it already is); *numel gets the element count. */
static cov_status materialize(graph_exec *x, const graph_node *n, const ein_view *v,
                              cov_dtype dt, const int *order, int r, const int64_t *sizes,
                              void **owned, const void **data) {
  int64_t st[EIN_LABELS], dims[EIN_LABELS], numel = 1, want = 1;
  bool contiguous = true;
  for (int k = r - 1; k >= 0; k--) {
    int j = 0;
    while (v->lab[j] != order[k]) j++;
    st[k] = v->stride[j];
    dims[k] = sizes[order[k]];
    if (dims[k] != 1 && st[k] != want) contiguous = false;
    want *= dims[k];
    if (__builtin_mul_overflow(numel, dims[k], &numel)) numel = INT64_MAX;
  }
  *owned = NULL;
  if (contiguous) {
    *data = v->data;
    return NULL;
  }
  size_t es = cov_dtype_size(dt);
  if (numel > (int64_t)(graph_memory_limit(x->g) / es))
    return graph_node_error(x->g, n, COV_OUT_OF_RANGE,
                            "an intermediate of %lld elements is over the memory limit",
                            (long long)numel);
  unsigned char *dst = malloc(numel > 0 ? (size_t)numel * es : 1);
  if (!dst) return graph_node_error(x->g, n, COV_OUT_OF_MEMORY, "out of memory");
  int64_t idx[EIN_LABELS] = {0}, off = 0;
  const unsigned char *src = v->data;
  for (int64_t i = 0; i < numel; i++) {
    memcpy(dst + (size_t)i * es, src + (size_t)off * es, es);
    for (int k = r - 1; k >= 0; k--) {
      off += st[k];
      if (++idx[k] < dims[k]) break;
      off -= st[k] * dims[k];
      idx[k] = 0;
    }
  }
  *owned = dst;
  *data = dst;
  return NULL;
}

static int64_t prod(const int *lab, int r, const int64_t *sizes) {
  int64_t p = 1;
  for (int k = 0; k < r; k++) p *= sizes[lab[k]];
  return p;
}

/* Replaces *v by the contiguous result of a codelet with labels lab[0..r). */
static void adopt(ein_view *v, cov_tensor *y, const int *lab, int r, const int64_t *sizes) {
  free(v->owned);
  v->owned = y->data;
  v->data = y->data;
  y->data = NULL;
  v->n = r;
  int64_t s = 1;
  for (int k = r - 1; k >= 0; k--) {
    v->lab[k] = lab[k];
    v->stride[k] = s;
    s *= sizes[lab[k]];
  }
}

/* Sums the labels of `drop` out of *v (reduce_sum over [kept, dropped]). */
static cov_status sum_out(graph_exec *x, const graph_node *n, ein_view *v, lset drop,
                          cov_dtype dt, const int64_t *sizes) {
  if (!(view_set(v) & drop)) return NULL;
  int order[EIN_LABELS], r = 0, kept = 0;
  for (int k = 0; k < v->n; k++)
    if (!(drop >> v->lab[k] & 1)) order[r++] = v->lab[k];
  kept = r;
  for (int k = 0; k < v->n; k++)
    if (drop >> v->lab[k] & 1) order[r++] = v->lab[k];
  void *own;
  const void *data;
  COV_RETURN_IF_ERROR(materialize(x, n, v, dt, order, r, sizes, &own, &data));
  cov_tensor t = {.dtype = dt,
                  .rank = 2,
                  .shape = {prod(order, kept, sizes), prod(order + kept, r - kept, sizes)},
                  .data = (void *)data},
             y = {0};
  cov_status st = graph_call_codelet(x, n, "reduce_sum", NULL, 0, &t, 1, &y, 1);
  free(own);
  COV_RETURN_IF_ERROR(st);
  adopt(v, &y, order, kept, sizes);
  return NULL;
}

/* a := a (x) b over the labels `later` does not need: batch_matmul. */
static cov_status contract(graph_exec *x, const graph_node *n, ein_view *a, const ein_view *b,
                           lset later, cov_dtype dt, const int64_t *sizes) {
  lset sa = view_set(a), sb = view_set(b);
  int ord_a[EIN_LABELS], ord_b[EIN_LABELS], res[EIN_LABELS], nb = 0, nm = 0, nk = 0, nn = 0;
  for (int l = 0; l < EIN_LABELS; l++) {
    bool ia = sa >> l & 1, ib = sb >> l & 1, keep = later >> l & 1;
    if (ia && ib && keep) res[nb++] = l;
  }
  for (int l = 0; l < EIN_LABELS; l++)
    if ((sa >> l & 1) && !(sb >> l & 1)) res[nb + nm++] = l;
  for (int l = 0; l < EIN_LABELS; l++)
    if ((sb >> l & 1) && !(sa >> l & 1)) res[nb + nm + nn++] = l;
  memcpy(ord_a, res, (size_t)(nb + nm) * sizeof *res);
  memcpy(ord_b, res, (size_t)nb * sizeof *res);
  for (int l = 0; l < EIN_LABELS; l++)
    if ((sa & sb & ~later) >> l & 1) ord_a[nb + nm + nk] = ord_b[nb + nk] = l, nk++;
  memcpy(ord_b + nb + nk, res + nb + nm, (size_t)nn * sizeof *res);
  void *own_a = NULL, *own_b = NULL;
  const void *da = NULL, *db = NULL;
  cov_status st = materialize(x, n, a, dt, ord_a, nb + nm + nk, sizes, &own_a, &da);
  if (!st) st = materialize(x, n, b, dt, ord_b, nb + nk + nn, sizes, &own_b, &db);
  int64_t B = prod(res, nb, sizes), M = prod(res + nb, nm, sizes), N = prod(res + nb + nm, nn, sizes),
          K = prod(ord_b + nb, nk, sizes);
  cov_tensor t[2] = {{.dtype = dt, .rank = 3, .shape = {B, M, K}, .data = (void *)da},
                     {.dtype = dt, .rank = 3, .shape = {B, K, N}, .data = (void *)db}},
             y = {0};
  if (!st) st = graph_call_codelet(x, n, "batch_matmul", NULL, 0, t, 2, &y, 1);
  free(own_a);
  free(own_b);
  COV_RETURN_IF_ERROR(st);
  adopt(a, &y, res, nb + nm + nn, sizes);
  return NULL;
}

static lset term_set(const ein_term *t, int n_ell) {
  lset s = 0;
  for (int k = 0; k < t->n; k++)
    s |= t->lab[k] >= 0 ? (lset)1 << t->lab[k] : (((lset)1 << n_ell) - 1) << EIN_LETTERS;
  return s;
}

/* The contraction plan, run (x != NULL) or replayed for the codelet list
 * (x NULL: names[] gets each codelet that would be called). */
static cov_status ein_plan(graph_exec *x, const graph_node *n, const ein_eq *e, int n_ell,
                           ein_view *v, cov_dtype dt, const int64_t *sizes, const char **names,
                           int max, int *count) {
  lset out = term_set(&e->out, n_ell), cur = term_set(&e->in[0], n_ell);
  cov_status st = NULL;
  for (int j = 1; j <= e->n_in && !st; j++) {
    lset later = out, b = j < e->n_in ? term_set(&e->in[j], n_ell) : 0;
    for (int i = j + 1; i < e->n_in; i++) later |= term_set(&e->in[i], n_ell);
    lset drop_a = cur & ~later & ~b, drop_b = b & ~later & ~cur;
    if (drop_a && *count < max) names[(*count)++] = "reduce_sum";
    if (x && drop_a) st = sum_out(x, n, &v[0], drop_a, dt, sizes);
    if (j == e->n_in) break;
    if (drop_b && *count < max) names[(*count)++] = "reduce_sum";
    if (x && drop_b && !st) st = sum_out(x, n, &v[j], drop_b, dt, sizes);
    if (*count < max) names[(*count)++] = "batch_matmul";
    if (x && !st) st = contract(x, n, &v[0], &v[j], later, dt, sizes);
    cur = ((cur & ~drop_a) | (b & ~drop_b)) & (later | ((cur & ~drop_a) ^ (b & ~drop_b)));
  }
  return st;
}

cov_status graph_exec_einsum(graph_exec *x, const graph_node *n, graph_value *const *in,
                             graph_value *const *out) {
  ein_eq e;
  COV_RETURN_IF_ERROR(parse_eq(x->g, n, &e));
  int n_ell, lab[EIN_LABELS], count = 0;
  int64_t sizes[EIN_LABELS];
  COV_RETURN_IF_ERROR(bind_eq(x->g, n, &e, in, &n_ell, sizes));
  for (int l = 0; l < EIN_LABELS; l++)
    if (sizes[l] < 0) return graph_node_error(x->g, n, COV_INTERNAL, "a label has no size");
  ein_view v[EIN_MAX_OPS];
  for (int i = 0; i < e.n_in; i++) make_view(&e.in[i], in[i], n_ell, sizes, &v[i]);
  const char *names[3 * EIN_MAX_OPS];
  cov_status st = ein_plan(x, n, &e, n_ell, v, in[0]->dtype, sizes, names, 3 * EIN_MAX_OPS,
                           &count);
  int r = out_labels(&e, n_ell, lab);
  void *own = NULL;
  const void *data = NULL;
  if (!st) st = materialize(x, n, &v[0], in[0]->dtype, lab, r, sizes, &own, &data);
  if (!st && !own && v[0].owned && data == v[0].owned) {
    /* The last codelet's result already is the output: no copy, so a
     * backend sees the group's result as its last call's. */
    out[0]->data = v[0].owned;
    v[0].owned = NULL;
  } else if (!st) {
    st = graph_alloc_data(x->g, n, out[0]);
  }
  if (!st && out[0]->data != v[0].data) {
    int64_t numel = graph_numel(out[0]);
    if (numel > 0) memcpy(out[0]->data, data, (size_t)numel * cov_dtype_size(out[0]->dtype));
  }
  free(own);
  for (int i = 0; i < e.n_in; i++) free(v[i].owned);
  return st;
}

int graph_codelets_einsum(const graph_node *n, const char **names, int max) {
  ein_eq e;
  int count = 0;
  /* The codelets depend on the labels only; an ellipsis stands for one
   * label that the output keeps. A bad equation binds nothing (inference
   * has refused it already). */
  cov_status st = parse_eq(NULL, n, &e);
  if (st) {
    cov_status_free(st);
    return 0;
  }
  ein_plan(NULL, n, &e, e.out.ell >= 0, NULL, COV_F32, NULL, names, max, &count);
  return count;
}
