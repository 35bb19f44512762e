/* frontend/ops/graph_taps.c: gathering the taps of GridSample and RoiAlign
 * (graph_taps.h) and summing them through the tap_sum codelet. */
#include <stdlib.h>
#include <string.h>

#include "frontend/ops/graph_lower.h"
#include "frontend/ops/graph_taps.h"

static cov_status taps_bytes(const graph *g, const graph_node *n, int64_t nb, int64_t np,
                             int64_t k, size_t esize, int64_t extra, uint64_t *bytes) {
  uint64_t cnt;
  if (nb < 0 || np < 0 || k < 1 || __builtin_mul_overflow((uint64_t)nb, (uint64_t)np, &cnt) ||
      __builtin_mul_overflow(cnt, (uint64_t)k, &cnt) ||
      __builtin_mul_overflow(cnt, (uint64_t)extra, &cnt) ||
      __builtin_mul_overflow(cnt, (uint64_t)esize, bytes) || *bytes > graph_memory_limit(g))
    return graph_node_error(g, n, COV_OUT_OF_RANGE,
                            "%lld x %lld sampling points of %lld taps need more than the memory "
                            "limit of %llu bytes (--max-memory; nothing was allocated)",
                            (long long)nb, (long long)np, (long long)k,
                            (unsigned long long)graph_memory_limit(g));
  return NULL;
}

cov_status graph_taps_alloc(const graph *g, const graph_node *n, graph_taps *t, int64_t nb,
                            int64_t np, int64_t k) {
  memset(t, 0, sizeof *t);
  uint64_t bytes;
  COV_RETURN_IF_ERROR(taps_bytes(g, n, nb, np, k, sizeof(double), 1, &bytes));
  t->nb = nb, t->np = np, t->k = k;
  size_t cnt = (size_t)(nb * np * k);
  t->off = calloc(cnt ? cnt : 1, sizeof *t->off);
  t->w = calloc(cnt ? cnt : 1, sizeof *t->w);
  t->src = calloc(nb ? (size_t)nb : 1, sizeof *t->src);
  if (!t->off || !t->w || !t->src) {
    graph_taps_free(t);
    return graph_node_error(g, n, COV_OUT_OF_MEMORY, "out of memory for %zu taps", cnt);
  }
  for (int64_t b = 0; b < nb; b++) t->src[b] = b;
  return NULL;
}

void graph_taps_free(graph_taps *t) {
  free(t->off);
  free(t->w);
  free(t->src);
  memset(t, 0, sizeof *t);
}

cov_status graph_taps_run(graph_exec *x, const graph_node *n, const char *codelet,
                          const graph_value *src, const graph_taps *t, graph_value *out) {
  int64_t c = src->dims[1], plane = src->dims[2] * src->dims[3];
  size_t es = cov_dtype_size(src->dtype);
  uint64_t bytes;
  COV_RETURN_IF_ERROR(taps_bytes(x->g, n, t->nb, t->np, t->k, es, c, &bytes));
  graph_value v = {.name = out->name, .dtype = src->dtype, .rank = 4,
                   .dims = {t->nb, c, t->np, t->k}};
  graph_value w = {.name = out->name, .dtype = src->dtype, .rank = 3,
                   .dims = {t->nb, t->np, t->k}};
  COV_RETURN_IF_ERROR(graph_alloc_data(x->g, n, &v));
  cov_status st = graph_alloc_data(x->g, n, &w);
  if (st) {
    free(v.data);
    return st;
  }
  const unsigned char *s = src->data;
  unsigned char *d = v.data;
  int64_t pk = t->np * t->k;
  for (int64_t b = 0; b < t->nb; b++) {
    for (int64_t i = 0; i < pk; i++)
      graph_store_elem(w.data, w.dtype, (size_t)(b * pk + i), t->w[b * pk + i]);
    for (int64_t ch = 0; ch < c; ch++) {
      const unsigned char *img = s + (size_t)((t->src[b] * c + ch) * plane) * es;
      unsigned char *row = d + (size_t)((b * c + ch) * pk) * es;
      for (int64_t i = 0; i < pk; i++) {
        int64_t o = t->off[b * pk + i];
        if (o >= 0) memcpy(row + (size_t)i * es, img + (size_t)o * es, es);
      }
    }
  }
  cov_tensor in[2] = {graph_view(&v), graph_view(&w)}, y;
  st = graph_call_codelet(x, n, codelet, NULL, 0, in, 2, &y, 1);
  free(v.data);
  free(w.data);
  COV_RETURN_IF_ERROR(st);
  return graph_lower_adopt(x, n, &y, out);
}
