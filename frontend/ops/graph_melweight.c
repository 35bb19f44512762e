/* frontend/ops/graph_melweight.c: MelWeightMatrix, lowered onto the
 * mel_weights codelet (codelets/signal.cdl).
 *
 * The five scalar inputs give the M + 2 mel band edges as spectrogram bin
 * numbers, computed here as ONNX's reference computes them (the mel range
 * and step in f32 from the f32 edges, the bins in f64, floored); the
 * codelet then builds the [dft_length / 2 + 1, M] triangle weights in f32,
 * converted to output_datatype when that is another float type. Every size
 * is bounded before anything is allocated. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "frontend/graph.h"
#include "frontend/ops/graph_lower.h"
#include "frontend/graph_opfns.h"
#include "frontend/onnx/onnx_internal.h"

#define MEL_MAX_BINS ((int64_t)1 << 16)
#define MEL_MAX_DFT ((int64_t)1 << 20)

typedef struct mel_params {
  cov_dtype dtype;
  bool known;
  int64_t bins, dft, rate;
  double lo, hi;
} mel_params;

static cov_status mel_int(const graph *g, const graph_node *n, const graph_value *v,
                          const char *what, int64_t max, int64_t *out) {
  if (v->dtype != COV_I32 && v->dtype != COV_I64)
    return graph_node_error(g, n, COV_INVALID_INPUT, "%s '%s' must be int32 or int64, not %s",
                            what, v->name, cov_dtype_name(v->dtype));
  if (!v->data) return NULL;
  if (graph_numel(v) != 1)
    return graph_node_error(g, n, COV_INVALID_INPUT, "%s '%s' must be a scalar", what, v->name);
  *out = graph_load_int(v->data, v->dtype, 0);
  if (*out < 1 || *out > max)
    return graph_node_error(g, n, COV_INVALID_INPUT, "%s %lld is outside 1..%lld", what,
                            (long long)*out, (long long)max);
  return NULL;
}

static cov_status mel_params_of(const graph *g, const graph_node *n, graph_value *const *in,
                                mel_params *p) {
  int64_t dt;
  COV_RETURN_IF_ERROR(graph_attr_int(g, n, "output_datatype", 1, &dt));
  p->dtype = dt >= 0 && dt <= INT32_MAX ? onnx_dtype((int32_t)dt) : COV_DTYPE_INVALID;
  if (!cov_dtype_is_float(p->dtype))
    return graph_node_error(g, n, COV_UNSUPPORTED,
                            "output_datatype %lld is not supported (FLOAT, FLOAT16, BFLOAT16 or "
                            "DOUBLE: the weights are fractions)",
                            (long long)dt);
  p->bins = p->dft = p->rate = -1;
  COV_RETURN_IF_ERROR(mel_int(g, n, in[0], "num_mel_bins", MEL_MAX_BINS, &p->bins));
  COV_RETURN_IF_ERROR(mel_int(g, n, in[1], "dft_length", MEL_MAX_DFT, &p->dft));
  COV_RETURN_IF_ERROR(mel_int(g, n, in[2], "sample_rate", INT32_MAX, &p->rate));
  for (int i = 3; i < 5; i++)
    if (!cov_dtype_is_float(in[i]->dtype))
      return graph_node_error(g, n, COV_INVALID_INPUT, "'%s' must be a float, not %s",
                              in[i]->name, cov_dtype_name(in[i]->dtype));
  p->known = in[3]->data && in[4]->data && p->bins > 0 && p->dft > 0 && p->rate > 0;
  if (!p->known) return NULL;
  COV_RETURN_IF_ERROR(graph_read_scalar(g, n, in[3], "lower_edge_hertz", &p->lo));
  COV_RETURN_IF_ERROR(graph_read_scalar(g, n, in[4], "upper_edge_hertz", &p->hi));
  if (!(p->lo >= 0 && p->hi > p->lo && p->hi <= (double)p->rate / 2))
    return graph_node_error(g, n, COV_INVALID_INPUT,
                            "the edges %g Hz and %g Hz must satisfy 0 <= lower < upper <= "
                            "sample_rate / 2 = %g",
                            p->lo, p->hi, (double)p->rate / 2);
  return NULL;
}

cov_status graph_infer_mel_weight(const graph *g, const graph_node *n, graph_value *const *in,
                                  graph_value *const *out) {
  mel_params p;
  COV_RETURN_IF_ERROR(mel_params_of(g, n, in, &p));
  int64_t d[2] = {p.dft > 0 ? p.dft / 2 + 1 : -1, p.bins};
  out[0]->dtype = p.dtype;
  graph_set_shape(out[0], 2, d);
  return NULL;
}

/* The M + 2 band edges as bin numbers, as ONNX's reference computes them. */
static void mel_edges(const mel_params *p, int64_t *edges) {
  float lo_mel = 2595.0f * log10f(1.0f + (float)p->lo / 700.0f);
  float hi_mel = 2595.0f * log10f(1.0f + (float)p->hi / 700.0f);
  float step = (hi_mel - lo_mel) / (float)(p->bins + 2);
  for (int64_t i = 0; i < p->bins + 2; i++) {
    double f = (double)i * (double)step + (double)lo_mel;
    f = 700.0 * (pow(10.0, f / 2595.0) - 1.0);
    edges[i] = (int64_t)floor((double)(p->dft + 1) * f / (double)p->rate);
  }
}

cov_status graph_exec_mel_weight(graph_exec *x, const graph_node *n, graph_value *const *in,
                                 graph_value *const *out) {
  mel_params p;
  COV_RETURN_IF_ERROR(mel_params_of(x->g, n, in, &p));
  graph_value e = {.name = out[0]->name, .dtype = COV_I64, .rank = 1, .dims = {p.bins + 2}};
  COV_RETURN_IF_ERROR(graph_alloc_data(x->g, n, &e));
  mel_edges(&p, e.data);
  cov_attr a = graph_lower_attr_i("spectrogram_bins", p.dft / 2 + 1);
  cov_tensor t = graph_view(&e), y;
  cov_status st = graph_call_codelet(x, n, "mel_weights", &a, 1, &t, 1, &y, 1);
  free(e.data);
  COV_RETURN_IF_ERROR(st);
  if (p.dtype == COV_F32) return graph_lower_adopt(x, n, &y, out[0]);
  graph_value yv = {.name = out[0]->name, .dtype = COV_F32, .rank = 2, .data = y.data,
                    .dims = {y.shape[0], y.shape[1]}};
  graph_value conv;
  st = graph_lower_cast_copy(x->g, n, &yv, p.dtype, &conv);
  cov_tensor_release(&y);
  COV_RETURN_IF_ERROR(st);
  out[0]->data = conv.data;
  return NULL;
}

int graph_codelets_mel_weight(const graph_node *n, const char **names, int max) {
  (void)n;
  return graph_lower_single("mel_weights", names, max);
}
