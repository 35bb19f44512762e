/* frontend/ops/graph_nms.c: NonMaxSuppression (opsets 10, 11), as onnxruntime
 * computes it: per batch and class, the boxes whose score passes
 * score_threshold (when given: score > threshold) in descending score order
 * (ties: the lower index first), each kept unless its IoU with a box kept
 * before in that class exceeds iou_threshold, until
 * max_output_boxes_per_class are kept (0 or absent: none). Boxes are
 * corners [y1, x1, y2, x2] in either order (center_point_box 0) or
 * [x_center, y_center, width, height] (1). The result, [kept, 3] rows of
 * (batch, class, box), is bounded by batches x classes x min(boxes, max
 * output); boxes per batch by GRAPH_MAX_NMS_BOXES, checked first. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "frontend/ops/graph_control.h"
#include "frontend/graph_opfns.h"

typedef struct nms_params {
  int64_t batches, classes, boxes, max_out;
  float iou, score;
  bool has_score, center;
} nms_params;

static cov_status nms_params_of(const graph *g, const graph_node *n, graph_value *const *in,
                                bool run, nms_params *p) {
  const graph_value *b = in[0], *s = in[1];
  memset(p, 0, sizeof *p);
  if (b->dtype != COV_F32 || s->dtype != COV_F32)
    return graph_node_error(g, n, COV_UNSUPPORTED, "boxes and scores must be f32");
  if ((b->rank >= 0 && b->rank != 3) || (s->rank >= 0 && s->rank != 3) ||
      (b->rank == 3 && b->dims[2] >= 0 && b->dims[2] != 4))
    return graph_node_error(g, n, COV_INVALID_INPUT,
                            "boxes must be [batches, boxes, 4] and scores [batches, classes, boxes]");
  int64_t center = 0;
  COV_RETURN_IF_ERROR(graph_attr_int(g, n, "center_point_box", 0, &center));
  if (center != 0 && center != 1)
    return graph_node_error(g, n, COV_INVALID_INPUT, "center_point_box is %lld, not 0 or 1",
                            (long long)center);
  p->center = center == 1;
  if (!run) return NULL;
  p->batches = b->dims[0], p->boxes = b->dims[1], p->classes = s->dims[1];
  if (s->dims[0] != p->batches || s->dims[2] != p->boxes)
    return graph_node_error(g, n, COV_INVALID_INPUT,
                            "scores are [%lld, %lld, %lld] for boxes [%lld, %lld, 4]",
                            (long long)s->dims[0], (long long)s->dims[1], (long long)s->dims[2],
                            (long long)p->batches, (long long)p->boxes);
  if (p->boxes > GRAPH_MAX_NMS_BOXES)
    return graph_node_error(g, n, COV_OUT_OF_RANGE, "%lld boxes per batch, more than the limit of %d",
                            (long long)p->boxes, GRAPH_MAX_NMS_BOXES);
  for (int k = 2; k < n->n_in && k < 5; k++) {
    const graph_value *v = in[k];
    if (!v) continue;
    if (graph_numel(v) != 1 || v->dtype != (k == 2 ? COV_I64 : COV_F32))
      return graph_node_error(g, n, COV_INVALID_INPUT, "input %d must be one %s", k,
                              k == 2 ? "int64" : "float");
  }
  if (n->n_in > 2 && in[2]) p->max_out = graph_load_int(in[2]->data, COV_I64, 0);
  if (n->n_in > 3 && in[3]) p->iou = ((const float *)in[3]->data)[0];
  if (n->n_in > 4 && in[4]) p->score = ((const float *)in[4]->data)[0], p->has_score = true;
  if (p->max_out < 0) p->max_out = 0;
  if (!(p->iou >= 0 && p->iou <= 1))
    return graph_node_error(g, n, COV_INVALID_INPUT, "iou_threshold %g is not within [0, 1]",
                            (double)p->iou);
  return NULL;
}

cov_status graph_infer_nms(const graph *g, const graph_node *n, graph_value *const *in,
                           graph_value *const *out) {
  nms_params p;
  COV_RETURN_IF_ERROR(nms_params_of(g, n, in, false, &p));
  int64_t dims[2] = {-1, 3};
  out[0]->dtype = COV_I64;
  graph_set_shape(out[0], 2, dims);
  return NULL;
}

/* Box i as y1 <= y2, x1 <= x2. */
static void corners(const float *b, bool center, float c[4]) {
  if (center) {
    float xc = b[0], yc = b[1], w = b[2] / 2, h = b[3] / 2;
    c[0] = yc - h, c[1] = xc - w, c[2] = yc + h, c[3] = xc + w;
    return;
  }
  c[0] = fminf(b[0], b[2]), c[1] = fminf(b[1], b[3]);
  c[2] = fmaxf(b[0], b[2]), c[3] = fmaxf(b[1], b[3]);
}

static bool suppresses(const float *a, const float *b, float iou) {
  float ih = fminf(a[2], b[2]) - fmaxf(a[0], b[0]), iw = fminf(a[3], b[3]) - fmaxf(a[1], b[1]);
  if (ih <= 0 || iw <= 0) return false;
  float inter = ih * iw, area_a = (a[2] - a[0]) * (a[3] - a[1]);
  float area_b = (b[2] - b[0]) * (b[3] - b[1]), uni = area_a + area_b - inter;
  if (area_a <= 0 || area_b <= 0 || uni <= 0) return false;
  return inter / uni > iou;
}

typedef struct nms_work {
  const nms_params *p;
  float *box;        /* [boxes, 4] corners of the current batch */
  const float *score; /* the current class's scores */
  int64_t *cand, *tmp, *kept;
  bool bound; /* bound mode (graph_run_io.bound): no threshold, nothing suppressed */
} nms_work;

/* Candidates by descending score, lower index first among ties. */
static void sort_cands(const float *score, int64_t *c, int64_t *tmp, int64_t n) {
  for (int64_t w = 1; w < n; w *= 2) {
    for (int64_t lo = 0; lo < n; lo += 2 * w) {
      int64_t mid = lo + w < n ? lo + w : n, hi = lo + 2 * w < n ? lo + 2 * w : n;
      int64_t i = lo, j = mid, k = lo;
      while (i < mid && j < hi) tmp[k++] = score[c[j]] > score[c[i]] ? c[j++] : c[i++];
      while (i < mid) tmp[k++] = c[i++];
      while (j < hi) tmp[k++] = c[j++];
    }
    memcpy(c, tmp, (size_t)n * sizeof *c);
  }
}

/* The boxes kept for one class into w->kept; returns their count. */
static int64_t one_class(nms_work *w) {
  const nms_params *p = w->p;
  int64_t nc = 0, nk = 0;
  for (int64_t i = 0; i < p->boxes; i++)
    if (w->bound || !p->has_score || w->score[i] > p->score) w->cand[nc++] = i;
  sort_cands(w->score, w->cand, w->tmp, nc);
  for (int64_t c = 0; c < nc && nk < p->max_out; c++) {
    bool keep = true;
    for (int64_t k = 0; k < nk && keep && !w->bound; k++)
      keep = !suppresses(&w->box[4 * w->cand[c]], &w->box[4 * w->kept[k]], p->iou);
    if (keep) w->kept[nk++] = w->cand[c];
  }
  return nk;
}

/* Appends one (batch, class, box) row, within GRAPH_MAX_DYNAMIC_ELEMS. */
static cov_status add_row(const graph *g, const graph_node *n, int64_t **rows, int64_t *nr,
                          int64_t *cap, const int64_t r[3]) {
  if ((*nr + 1) * 3 > GRAPH_MAX_DYNAMIC_ELEMS)
    return graph_node_error(g, n, COV_OUT_OF_RANGE,
                            "keeps more than %lld boxes, the limit for an output whose size "
                            "depends on the data",
                            (long long)(GRAPH_MAX_DYNAMIC_ELEMS / 3));
  if (*nr == *cap) {
    int64_t c = *cap ? *cap * 2 : 64;
    int64_t *p = realloc(*rows, (size_t)c * 3 * sizeof *p);
    if (!p) return graph_node_error(g, n, COV_OUT_OF_MEMORY, "out of memory");
    *rows = p, *cap = c;
  }
  memcpy(*rows + 3 * *nr, r, 3 * sizeof *r);
  (*nr)++;
  return NULL;
}

static cov_status check_work(const graph *g, const graph_node *n, const nms_params *p) {
  int64_t per = p->max_out < p->boxes ? p->max_out : p->boxes, pairs;
  if (__builtin_mul_overflow(p->batches * p->classes, p->boxes, &pairs) ||
      __builtin_mul_overflow(pairs, per, &pairs) || pairs > GRAPH_MAX_NMS_PAIRS)
    return graph_node_error(g, n, COV_OUT_OF_RANGE,
                            "%lld batches x %lld classes x %lld boxes, keeping up to %lld per "
                            "class, may compare more than %lld box pairs",
                            (long long)p->batches, (long long)p->classes, (long long)p->boxes,
                            (long long)per, (long long)GRAPH_MAX_NMS_PAIRS);
  return NULL;
}

cov_status graph_exec_nms(graph_exec *x, const graph_node *n, graph_value *const *in,
                          graph_value *const *out) {
  nms_params p;
  COV_RETURN_IF_ERROR(nms_params_of(x->g, n, in, true, &p));
  COV_RETURN_IF_ERROR(check_work(x->g, n, &p));
  size_t nb = (size_t)p.boxes + 1;
  int64_t *rows = NULL, nr = 0, cap = 0;
  float *box = malloc(nb * 4 * sizeof *box);
  int64_t *ibuf = malloc(3 * nb * sizeof *ibuf);
  cov_status st = box && ibuf ? NULL : graph_node_error(x->g, n, COV_OUT_OF_MEMORY, "out of memory");
  nms_work w = {.p = &p, .box = box, .cand = ibuf, .tmp = ibuf + nb, .kept = ibuf + 2 * nb, .bound = x->bound};
  const float *bx = in[0]->data, *sc = in[1]->data;
  for (int64_t b = 0; b < p.batches && !st && p.max_out > 0; b++) {
    for (int64_t i = 0; i < p.boxes; i++) corners(&bx[(b * p.boxes + i) * 4], p.center, &box[4 * i]);
    for (int64_t c = 0; c < p.classes && !st; c++) {
      w.score = &sc[(b * p.classes + c) * p.boxes];
      int64_t k = one_class(&w);
      for (int64_t i = 0; i < k && !st; i++) {
        int64_t r[3] = {b, c, w.kept[i]};
        st = add_row(x->g, n, &rows, &nr, &cap, r);
      }
    }
  }
  int64_t dims[2] = {nr, 3};
  if (!st) st = graph_dynamic_alloc(x->g, n, out[0], 2, dims);
  if (!st && nr) memcpy(out[0]->data, rows, (size_t)nr * 3 * sizeof *rows);
  free(rows);
  free(box);
  free(ibuf);
  return st;
}
