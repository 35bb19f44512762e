/* frontend/ops/graph_signal.c: the signal operators DFT, STFT and the window
 * functions HannWindow, HammingWindow and BlackmanWindow, lowered onto the
 * codelets of codelets/signal.cdl.
 *
 * Sizes that come from inputs (a window's size, DFT's dft_length, STFT's
 * frame_step and frame_length) are read when known; an output dim that
 * depends on a value not known at load time is -1 there and resolved per
 * run. Each size is bounded (SIGNAL_MAX_LEN) before anything is allocated
 * or computed. DFT runs over the signal axis moved next to the last (real /
 * imaginary) axis by a transpose when it is not there already; a window
 * evaluates the cosine_window codelet at the points 0 .. size-1. */
#include <stdlib.h>
#include <string.h>

#include "frontend/graph.h"
#include "frontend/ops/graph_lower.h"
#include "frontend/graph_opfns.h"
#include "frontend/onnx/onnx_internal.h"

/* The longest window, transform or frame: 2^20 points (a DFT of this many
 * points is 2^40 multiply-adds per signal: bounded, but slow on purpose). */
#define SIGNAL_MAX_LEN ((int64_t)1 << 20)

/* An integer scalar input (rank 0 or [1]); *known = false when its value is
 * not known yet. */
static cov_status read_size(const graph *g, const graph_node *n, const graph_value *v,
                            const char *what, int64_t lo, int64_t *out, bool *known) {
  if (v->dtype != COV_I32 && v->dtype != COV_I64)
    return graph_node_error(g, n, COV_INVALID_INPUT, "%s '%s' must be int32 or int64, not %s",
                            what, v->name, cov_dtype_name(v->dtype));
  if (v->rank > 1 || (v->rank == 1 && v->dims[0] >= 0 && v->dims[0] != 1))
    return graph_node_error(g, n, COV_INVALID_INPUT, "%s '%s' must be a scalar", what, v->name);
  *known = v->data != NULL;
  if (!*known) return NULL;
  *out = graph_load_int(v->data, v->dtype, 0);
  if (*out < lo || *out > SIGNAL_MAX_LEN)
    return graph_node_error(g, n, COV_INVALID_INPUT, "%s %lld is outside %lld..%lld", what,
                            (long long)*out, (long long)lo, (long long)SIGNAL_MAX_LEN);
  return NULL;
}

static cov_status read_bool_attr(const graph *g, const graph_node *n, const char *name,
                                 int64_t def, int64_t *out) {
  COV_RETURN_IF_ERROR(graph_attr_int(g, n, name, def, out));
  if (*out != 0 && *out != 1)
    return graph_node_error(g, n, COV_INVALID_INPUT, "%s %lld is not 0 or 1", name,
                            (long long)*out);
  return NULL;
}

/* ---- HannWindow, HammingWindow, BlackmanWindow --------------------------- */

typedef struct window_params {
  cov_dtype dtype;
  int64_t size, period;
  bool known;
  double a0, a1, a2;
} window_params;

static cov_status window_params_of(const graph *g, const graph_node *n, graph_value *const *in,
                                   window_params *p) {
  int64_t dt, periodic;
  COV_RETURN_IF_ERROR(graph_attr_int(g, n, "output_datatype", 1, &dt));
  COV_RETURN_IF_ERROR(read_bool_attr(g, n, "periodic", 1, &periodic));
  p->dtype = dt >= 0 && dt <= INT32_MAX ? onnx_dtype((int32_t)dt) : COV_DTYPE_INVALID;
  if (!cov_dtype_is_float(p->dtype))
    return graph_node_error(g, n, COV_UNSUPPORTED,
                            "output_datatype %lld is not supported (FLOAT, FLOAT16, BFLOAT16 or "
                            "DOUBLE: the window is computed in floating point)",
                            (long long)dt);
  if (strcmp(n->op_type, "HannWindow") == 0)
    p->a0 = 0.5, p->a1 = 0.5, p->a2 = 0;
  else if (strcmp(n->op_type, "HammingWindow") == 0)
    p->a0 = 25.0 / 46.0, p->a1 = 21.0 / 46.0, p->a2 = 0;
  else
    p->a0 = 0.42, p->a1 = 0.5, p->a2 = 0.08;
  COV_RETURN_IF_ERROR(read_size(g, n, in[0], "size", 1, &p->size, &p->known));
  p->period = p->known ? p->size - (periodic ? 0 : 1) : 0;
  if (p->known && p->period < 1)
    return graph_node_error(g, n, COV_INVALID_INPUT,
                            "a symmetric window (periodic=0) needs size >= 2, got %lld",
                            (long long)p->size);
  return NULL;
}

cov_status graph_infer_window(const graph *g, const graph_node *n, graph_value *const *in,
                              graph_value *const *out) {
  window_params p;
  COV_RETURN_IF_ERROR(window_params_of(g, n, in, &p));
  int64_t d = p.known ? p.size : -1;
  out[0]->dtype = p.dtype;
  graph_set_shape(out[0], 1, &d);
  return NULL;
}

cov_status graph_exec_window(graph_exec *x, const graph_node *n, graph_value *const *in,
                             graph_value *const *out) {
  window_params p;
  COV_RETURN_IF_ERROR(window_params_of(x->g, n, in, &p));
  graph_value pts = {.name = out[0]->name, .dtype = p.dtype, .rank = 1, .dims = {p.size}};
  COV_RETURN_IF_ERROR(graph_alloc_data(x->g, n, &pts));
  for (int64_t i = 0; i < p.size; i++) graph_store_elem(pts.data, p.dtype, (size_t)i, (double)i);
  cov_attr a[4] = {graph_lower_attr_i("period", p.period), graph_lower_attr_f("a0", p.a0),
                   graph_lower_attr_f("a1", p.a1), graph_lower_attr_f("a2", p.a2)};
  cov_tensor t = graph_view(&pts), y;
  cov_status st = graph_call_codelet(x, n, "cosine_window", a, 4, &t, 1, &y, 1);
  free(pts.data);
  COV_RETURN_IF_ERROR(st);
  return graph_lower_adopt(x, n, &y, out[0]);
}

int graph_codelets_window(const graph_node *n, const char **names, int max) {
  (void)n;
  return graph_lower_single("cosine_window", names, max);
}

/* ---- DFT -------------------------------------------------------------------- */

typedef struct dft_params {
  int axis;
  int64_t length; /* -1 when not known yet */
  int64_t onesided, inverse;
} dft_params;

/* The signal axis; *axis = -1 while an axis input's value is not known. */
static cov_status dft_axis(const graph *g, const graph_node *n, graph_value *const *in, int r,
                           int *axis) {
  int64_t a = n->opset >= 20 ? -2 : 1;
  if (n->opset >= 20 && n->n_in > 2 && in[2]) {
    const graph_value *v = in[2];
    if ((v->dtype != COV_I32 && v->dtype != COV_I64) || v->rank > 1 ||
        (v->rank == 1 && v->dims[0] >= 0 && v->dims[0] != 1))
      return graph_node_error(g, n, COV_INVALID_INPUT, "axis '%s' must be an int32 or int64 scalar",
                              v->name);
    *axis = -1;
    if (!v->data) return NULL;
    a = graph_load_int(v->data, v->dtype, 0);
  } else if (n->opset < 20) {
    COV_RETURN_IF_ERROR(graph_attr_int(g, n, "axis", 1, &a));
  }
  int ax;
  COV_RETURN_IF_ERROR(graph_axis(g, n, a, r, "axis", &ax));
  if (ax == r - 1)
    return graph_node_error(g, n, COV_INVALID_INPUT,
                            "axis %lld is the last (real/imaginary) axis; the signal axis must "
                            "come before it",
                            (long long)a);
  *axis = ax;
  return NULL;
}

static cov_status dft_params_of(const graph *g, const graph_node *n, graph_value *const *in,
                                dft_params *p) {
  const graph_value *x = in[0];
  COV_RETURN_IF_ERROR(graph_check_float(g, n, x));
  COV_RETURN_IF_ERROR(read_bool_attr(g, n, "onesided", 0, &p->onesided));
  COV_RETURN_IF_ERROR(read_bool_attr(g, n, "inverse", 0, &p->inverse));
  if (x->rank < 0) return NULL;
  if (x->rank < 2)
    return graph_node_error(g, n, COV_INVALID_INPUT,
                            "input '%s' has rank %d; expected [..., signal, 1 or 2]", x->name,
                            x->rank);
  int64_t c = x->dims[x->rank - 1];
  if (c >= 0 && c != 1 && c != 2)
    return graph_node_error(g, n, COV_INVALID_INPUT,
                            "the last axis of '%s' is %lld; expected 1 (real) or 2 (complex)",
                            x->name, (long long)c);
  if (p->onesided && (p->inverse || c == 2))
    return graph_node_error(g, n, COV_UNSUPPORTED,
                            "onesided=1 needs a real input and a forward transform");
  COV_RETURN_IF_ERROR(dft_axis(g, n, in, x->rank, &p->axis));
  p->length = p->axis >= 0 ? x->dims[p->axis] : -1;
  if (n->n_in > 1 && in[1]) {
    bool known;
    COV_RETURN_IF_ERROR(read_size(g, n, in[1], "dft_length", 1, &p->length, &known));
    if (!known) p->length = -1;
  } else if (p->axis < 0) {
    return NULL;
  } else if (p->length > SIGNAL_MAX_LEN) {
    return graph_node_error(g, n, COV_INVALID_INPUT,
                            "the signal axis has %lld points; at most %lld",
                            (long long)p->length, (long long)SIGNAL_MAX_LEN);
  } else if (p->length == 0) {
    return graph_node_error(g, n, COV_INVALID_INPUT, "the signal axis of '%s' is empty", x->name);
  }
  return NULL;
}

cov_status graph_infer_dft(const graph *g, const graph_node *n, graph_value *const *in,
                           graph_value *const *out) {
  dft_params p;
  COV_RETURN_IF_ERROR(dft_params_of(g, n, in, &p));
  out[0]->dtype = in[0]->dtype;
  if (in[0]->rank < 0) {
    graph_set_shape(out[0], -1, NULL);
    return NULL;
  }
  int64_t d[COV_MAX_RANK];
  int r = in[0]->rank;
  memcpy(d, in[0]->dims, (size_t)r * sizeof *d);
  if (p.axis >= 0)
    d[p.axis] = p.length < 0 ? -1 : p.onesided ? p.length / 2 + 1 : p.length;
  else
    for (int i = 0; i < r - 1; i++) d[i] = -1; /* which axis changes is not known yet */
  d[r - 1] = 2;
  graph_set_shape(out[0], r, d);
  return NULL;
}

cov_status graph_exec_dft(graph_exec *x, const graph_node *n, graph_value *const *in,
                          graph_value *const *out) {
  dft_params p;
  COV_RETURN_IF_ERROR(dft_params_of(x->g, n, in, &p));
  const graph_value *v = in[0];
  int r = v->rank, perm[COV_MAX_RANK], inv[COV_MAX_RANK], k = 0;
  for (int i = 0; i < r - 1; i++)
    if (i != p.axis) perm[k++] = i;
  perm[k++] = p.axis;
  perm[k++] = r - 1;
  int64_t b = 1, tout[COV_MAX_RANK];
  bool in_order = true;
  for (int i = 0; i < r; i++) {
    in_order &= perm[i] == i;
    inv[perm[i]] = i;
    tout[i] = out[0]->dims[perm[i]];
  }
  for (int i = 0; i < r - 2; i++) b *= v->dims[perm[i]];
  void *tdata = NULL;
  if (!in_order)
    COV_RETURN_IF_ERROR(graph_transpose_data(x->g, n, v->data, v->dtype, r, v->dims, perm, &tdata));
  cov_tensor t = {.dtype = v->dtype, .rank = 3, .shape = {b, v->dims[p.axis], v->dims[r - 1]},
                  .data = tdata ? tdata : v->data},
             y;
  cov_attr a[3] = {graph_lower_attr_i("length", p.length), graph_lower_attr_i("onesided", p.onesided),
                   graph_lower_attr_i("inverse", p.inverse)};
  cov_status st = graph_call_codelet(x, n, "dft", a, 3, &t, 1, &y, 1);
  free(tdata);
  COV_RETURN_IF_ERROR(st);
  if (in_order) return graph_lower_adopt(x, n, &y, out[0]);
  void *back = NULL;
  st = graph_transpose_data(x->g, n, y.data, y.dtype, r, tout, inv, &back);
  cov_tensor_release(&y);
  COV_RETURN_IF_ERROR(st);
  out[0]->data = back;
  return NULL;
}

int graph_codelets_dft(const graph_node *n, const char **names, int max) {
  (void)n;
  return graph_lower_single("dft", names, max);
}

/* ---- STFT ------------------------------------------------------------------- */

typedef struct stft_params {
  int64_t step, length, onesided; /* length -1 when not known yet */
  bool known;                     /* step and length known */
} stft_params;

static cov_status stft_params_of(const graph *g, const graph_node *n, graph_value *const *in,
                                 stft_params *p) {
  const graph_value *x = in[0], *w = n->n_in > 2 ? in[2] : NULL;
  COV_RETURN_IF_ERROR(graph_check_float(g, n, x));
  COV_RETURN_IF_ERROR(read_bool_attr(g, n, "onesided", 1, &p->onesided));
  if (x->rank >= 0 && (x->rank != 3 || (x->dims[2] >= 0 && x->dims[2] != 1 && x->dims[2] != 2)))
    return graph_node_error(g, n, COV_INVALID_INPUT,
                            "signal '%s' must be [batch, length, 1 or 2]", x->name);
  if (x->rank == 3 && p->onesided && x->dims[2] == 2)
    return graph_node_error(g, n, COV_UNSUPPORTED, "onesided=1 needs a real signal");
  bool ks, kl = true;
  COV_RETURN_IF_ERROR(read_size(g, n, in[1], "frame_step", 1, &p->step, &ks));
  p->length = -1;
  if (w) {
    if (w->dtype != x->dtype || (w->rank >= 0 && w->rank != 1))
      return graph_node_error(g, n, COV_INVALID_INPUT,
                              "window '%s' must be a 1-D tensor of the signal's dtype", w->name);
    p->length = w->dims[0];
    if (p->length > SIGNAL_MAX_LEN)
      return graph_node_error(g, n, COV_INVALID_INPUT, "window '%s' has more than %lld points",
                              w->name, (long long)SIGNAL_MAX_LEN);
  }
  if (n->n_in > 3 && in[3]) {
    int64_t l;
    COV_RETURN_IF_ERROR(read_size(g, n, in[3], "frame_length", 1, &l, &kl));
    if (kl && p->length >= 0 && l != p->length)
      return graph_node_error(g, n, COV_INVALID_INPUT,
                              "frame_length %lld differs from the window's %lld points",
                              (long long)l, (long long)p->length);
    if (kl) p->length = l;
  } else if (!w) {
    return graph_node_error(g, n, COV_INVALID_INPUT, "needs a window or a frame_length");
  }
  p->known = ks && kl && p->length >= 0;
  if (p->known && x->rank == 3 && x->dims[1] >= 0 && p->length > x->dims[1])
    return graph_node_error(g, n, COV_INVALID_INPUT,
                            "frames of %lld points do not fit in the %lld samples of '%s'",
                            (long long)p->length, (long long)x->dims[1], x->name);
  return NULL;
}

cov_status graph_infer_stft(const graph *g, const graph_node *n, graph_value *const *in,
                            graph_value *const *out) {
  stft_params p;
  COV_RETURN_IF_ERROR(stft_params_of(g, n, in, &p));
  const graph_value *x = in[0];
  int64_t d[4] = {x->rank == 3 ? x->dims[0] : -1, -1, -1, 2};
  if (p.known && x->rank == 3 && x->dims[1] >= 0) d[1] = (x->dims[1] - p.length) / p.step + 1;
  if (p.length >= 0) d[2] = p.onesided ? p.length / 2 + 1 : p.length;
  out[0]->dtype = x->dtype;
  graph_set_shape(out[0], 4, d);
  return NULL;
}

cov_status graph_exec_stft(graph_exec *x, const graph_node *n, graph_value *const *in,
                           graph_value *const *out) {
  stft_params p;
  COV_RETURN_IF_ERROR(stft_params_of(x->g, n, in, &p));
  const graph_value *v = in[0], *w = n->n_in > 2 ? in[2] : NULL;
  graph_value ones = {.name = v->name, .dtype = v->dtype, .rank = 1, .dims = {p.length}};
  if (!w) {
    COV_RETURN_IF_ERROR(graph_alloc_data(x->g, n, &ones));
    for (int64_t i = 0; i < p.length; i++) graph_store_elem(ones.data, v->dtype, (size_t)i, 1.0);
  }
  cov_tensor t[2] = {graph_view(v), graph_view(w ? w : &ones)}, y;
  cov_attr a[2] = {graph_lower_attr_i("step", p.step), graph_lower_attr_i("onesided", p.onesided)};
  cov_status st = graph_call_codelet(x, n, "stft", a, 2, t, 2, &y, 1);
  free(ones.data);
  COV_RETURN_IF_ERROR(st);
  return graph_lower_adopt(x, n, &y, out[0]);
}

int graph_codelets_stft(const graph_node *n, const char **names, int max) {
  (void)n;
  return graph_lower_single("stft", names, max);
}
