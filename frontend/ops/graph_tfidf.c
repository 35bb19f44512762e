/* frontend/ops/graph_tfidf.c: TfIdfVectorizer (opset 9) over integer
 * tokens, a layout operator: counting n-grams is table lookups, not an
 * affine loop nest.
 *
 * The pool (pool_int64s) lists the n-grams the output counts, 1-grams
 * first: ngram_counts[k] is where the (k+1)-grams start, ngram_indexes[j]
 * the output column of the j-th n-gram in pool order. Each row of X ([C]
 * or [N, C], int32/int64) is scanned as onnxruntime does: for every skip
 * s in 0..max_skip_count, every start position and every length n in
 * min_gram_length..max_gram_length, the n tokens s + 1 apart are an n-gram
 * (1-grams once per position, with skip 0 only), looked up by binary
 * search in its length's n-grams, sorted once. mode TF gives the counts,
 * IDF 1 (or the n-gram's weight) where the count is not 0, TFIDF the
 * count times the weight (1 without weights). The output is f32 [W] or
 * [N, W], W = max(ngram_indexes) + 1. String pools (pool_strings) are
 * refused: covenant has no string tensors. Every attribute is checked
 * against the others before the run (n-grams up to GRAPH_TFIDF_MAX_GRAM
 * tokens, output columns below GRAPH_TFIDF_MAX_WIDTH), and the lookups a
 * run makes are bounded (GRAPH_TFIDF_MAX_LOOKUPS) before it starts. */
#include <stdlib.h>
#include <string.h>

#include "frontend/ops/graph_control.h"
#include "frontend/graph_opfns.h"

#define GRAPH_TFIDF_MAX_LOOKUPS ((int64_t)1 << 32)
#define GRAPH_TFIDF_MAX_WIDTH ((int64_t)1 << 28)
#define GRAPH_TFIDF_MAX_GRAM 64

enum { TF, IDF, TFIDF };

typedef struct tfidf {
  int64_t min_n, max_n, skip, mode, width;
  const int64_t *counts, *indexes, *pool;
  const float *weights;
  size_t n_counts, n_indexes, n_pool, n_weights;
} tfidf;

static cov_status read_mode(const graph *g, const graph_node *n, tfidf *t) {
  const char *mode;
  COV_RETURN_IF_ERROR(graph_attr_string(g, n, "mode", NULL, &mode));
  if (!mode) return graph_node_error(g, n, COV_INVALID_INPUT, "attribute 'mode' is required");
  static const char *const names[] = {"TF", "IDF", "TFIDF"};
  for (int k = 0; k < 3; k++)
    if (strcmp(mode, names[k]) == 0) t->mode = k;
  if (t->mode < 0)
    return graph_node_error(g, n, COV_INVALID_INPUT, "mode '%.32s' is not TF, IDF or TFIDF", mode);
  return NULL;
}

/* The pool's layout: ngram_counts starts the lengths' segments in order,
 * each a whole number of n-grams, as many in all as ngram_indexes. */
static cov_status check_pool(const graph *g, const graph_node *n, tfidf *t) {
  if (t->n_counts == 0 || (int64_t)t->n_counts < t->max_n)
    return graph_node_error(g, n, COV_INVALID_INPUT,
                            "ngram_counts has %zu entries; max_gram_length %lld needs one per "
                            "length",
                            t->n_counts, (long long)t->max_n);
  size_t grams = 0;
  for (size_t k = 0; k < t->n_counts; k++) {
    int64_t at = t->counts[k], end = k + 1 < t->n_counts ? t->counts[k + 1] : (int64_t)t->n_pool;
    if (at < 0 || at > end || end > (int64_t)t->n_pool || (end - at) % (int64_t)(k + 1))
      return graph_node_error(g, n, COV_INVALID_INPUT,
                              "ngram_counts[%zu] = %lld does not start a whole number of %zu-grams "
                              "within the pool of %zu tokens",
                              k, (long long)at, k + 1, t->n_pool);
    grams += (size_t)(end - at) / (k + 1);
  }
  if (grams != t->n_indexes)
    return graph_node_error(g, n, COV_INVALID_INPUT,
                            "the pool holds %zu n-grams but ngram_indexes has %zu entries", grams,
                            t->n_indexes);
  t->width = 0;
  for (size_t j = 0; j < t->n_indexes; j++) {
    if (t->indexes[j] < 0 || t->indexes[j] >= GRAPH_TFIDF_MAX_WIDTH)
      return graph_node_error(g, n, COV_INVALID_INPUT,
                              "ngram_indexes[%zu] is %lld; it must be in [0, %lld)", j,
                              (long long)t->indexes[j], (long long)GRAPH_TFIDF_MAX_WIDTH);
    if (t->indexes[j] + 1 > t->width) t->width = t->indexes[j] + 1;
  }
  if (t->weights && t->n_weights != t->n_indexes)
    return graph_node_error(g, n, COV_INVALID_INPUT,
                            "weights has %zu entries; there are %zu n-grams", t->n_weights,
                            t->n_indexes);
  return NULL;
}

static cov_status read_tfidf(const graph *g, const graph_node *n, tfidf *t) {
  memset(t, 0, sizeof *t);
  t->mode = -1;
  const char *const *strs;
  size_t n_strs;
  COV_RETURN_IF_ERROR(graph_attr_strings(g, n, "pool_strings", &strs, &n_strs));
  if (strs)
    return graph_node_error(g, n, COV_UNSUPPORTED,
                            "pool_strings (string n-grams) is not supported: covenant has no "
                            "string tensors");
  COV_RETURN_IF_ERROR(read_mode(g, n, t));
  COV_RETURN_IF_ERROR(graph_attr_int(g, n, "min_gram_length", -1, &t->min_n));
  COV_RETURN_IF_ERROR(graph_attr_int(g, n, "max_gram_length", -1, &t->max_n));
  COV_RETURN_IF_ERROR(graph_attr_int(g, n, "max_skip_count", -1, &t->skip));
  if (t->min_n < 1 || t->max_n < t->min_n || t->skip < 0)
    return graph_node_error(g, n, COV_INVALID_INPUT,
                            "min_gram_length %lld, max_gram_length %lld and max_skip_count %lld "
                            "must be given with 1 <= min <= max and skip >= 0",
                            (long long)t->min_n, (long long)t->max_n, (long long)t->skip);
  if (t->max_n > GRAPH_TFIDF_MAX_GRAM)
    return graph_node_error(g, n, COV_UNSUPPORTED, "max_gram_length %lld is more than %d",
                            (long long)t->max_n, GRAPH_TFIDF_MAX_GRAM);
  COV_RETURN_IF_ERROR(graph_attr_ints(g, n, "ngram_counts", &t->counts, &t->n_counts));
  COV_RETURN_IF_ERROR(graph_attr_ints(g, n, "ngram_indexes", &t->indexes, &t->n_indexes));
  COV_RETURN_IF_ERROR(graph_attr_ints(g, n, "pool_int64s", &t->pool, &t->n_pool));
  COV_RETURN_IF_ERROR(graph_attr_floats(g, n, "weights", &t->weights, &t->n_weights));
  if (!t->pool) return graph_node_error(g, n, COV_INVALID_INPUT, "attribute 'pool_int64s' is required");
  return check_pool(g, n, t);
}

cov_status graph_infer_tfidf(const graph *g, const graph_node *n, graph_value *const *in,
                             graph_value *const *out) {
  tfidf t;
  COV_RETURN_IF_ERROR(read_tfidf(g, n, &t));
  const graph_value *x = in[0];
  if (x->dtype != COV_I32 && x->dtype != COV_I64)
    return graph_node_error(g, n, COV_INVALID_INPUT, "X is %s; it must be int32 or int64 tokens",
                            cov_dtype_name(x->dtype));
  if (x->rank >= 0 && x->rank != 1 && x->rank != 2)
    return graph_node_error(g, n, COV_INVALID_INPUT, "X has rank %d; it must be [C] or [N, C]",
                            x->rank);
  out[0]->dtype = COV_F32;
  if (x->rank < 0) {
    graph_set_shape(out[0], -1, NULL);
    return NULL;
  }
  int64_t dims[2] = {x->rank == 2 ? x->dims[0] : t.width, t.width};
  graph_set_shape(out[0], x->rank, dims);
  return NULL;
}

/* ---- kernel -------------------------------------------------------------- */

typedef struct gram_table {
  const int64_t *pool; /* the n-grams of one length n, n tokens each */
  int64_t n, count, first; /* first: the pool-order id of the first */
  int64_t *order;          /* ids 0..count-1 sorted by their tokens */
} gram_table;

static int cmp_tokens(const int64_t *a, const int64_t *b, int64_t n) {
  for (int64_t k = 0; k < n; k++)
    if (a[k] != b[k]) return a[k] < b[k] ? -1 : 1;
  return 0;
}

/* Stable merge sort of t->order by the n-grams' tokens (tmp: count ids). */
static void sort_grams(gram_table *t, int64_t *tmp) {
  for (int64_t w = 1; w < t->count; w *= 2)
    for (int64_t lo = 0; lo < t->count; lo += 2 * w) {
      int64_t mid = lo + w < t->count ? lo + w : t->count;
      int64_t hi = lo + 2 * w < t->count ? lo + 2 * w : t->count, i = lo, j = mid, k = lo;
      while (i < mid || j < hi) {
        bool left = j >= hi || (i < mid && cmp_tokens(t->pool + t->order[i] * t->n,
                                                      t->pool + t->order[j] * t->n, t->n) <= 0);
        tmp[k++] = left ? t->order[i++] : t->order[j++];
      }
      memcpy(t->order + lo, tmp + lo, (size_t)(hi - lo) * sizeof *tmp);
    }
}

/* The pool-order id of the n-gram `gram` in t, or -1. */
static int64_t find_gram(const gram_table *t, const int64_t *gram) {
  int64_t lo = 0, hi = t->count;
  while (lo < hi) {
    int64_t mid = lo + (hi - lo) / 2;
    int c = cmp_tokens(t->pool + t->order[mid] * t->n, gram, t->n);
    if (c == 0) return t->first + t->order[mid];
    if (c < 0)
      lo = mid + 1;
    else
      hi = mid;
  }
  return -1;
}

/* Counts the n-grams of one row (c tokens) into cnt (one per pool n-gram). */
static void count_row(const tfidf *t, const gram_table *tables, const graph_value *x, size_t base,
                      int64_t c, int64_t *cnt) {
  int64_t gram[GRAPH_TFIDF_MAX_GRAM];
  for (int64_t s = 0; s <= t->skip && s < (c > 0 ? c : 1); s++)
    for (int64_t i = 0; i < c; i++)
      for (int64_t len = 1; len <= t->max_n; len++) {
        int64_t at = i + (len - 1) * (s + 1);
        if (at >= c) break;
        gram[len - 1] = graph_load_int(x->data, x->dtype, base + (size_t)at);
        if (len < t->min_n || (len == 1 && s > 0)) continue;
        int64_t id = find_gram(&tables[len - 1], gram);
        if (id >= 0) cnt[id]++;
      }
}

static float gram_value(const tfidf *t, int64_t count, size_t id) {
  float w = t->weights ? t->weights[id] : 1.0f;
  if (t->mode == TF) return (float)count;
  if (t->mode == IDF) return count > 0 ? w : 0.0f;
  return (float)count * w;
}

static cov_status bound_work(const graph *g, const graph_node *n, const tfidf *t, int64_t rows,
                             int64_t c) {
  int64_t skips = t->skip + 1 < c ? t->skip + 1 : (c > 0 ? c : 1), work = 0;
  if (__builtin_mul_overflow(rows, c, &work) || __builtin_mul_overflow(work, skips, &work) ||
      __builtin_mul_overflow(work, t->max_n, &work) || work > GRAPH_TFIDF_MAX_LOOKUPS)
    return graph_node_error(g, n, COV_OUT_OF_RANGE,
                            "%lld rows of %lld tokens with max_skip_count %lld and n-grams up to "
                            "%lld would take more than %lld lookups",
                            (long long)rows, (long long)c, (long long)t->skip, (long long)t->max_n,
                            (long long)GRAPH_TFIDF_MAX_LOOKUPS);
  return NULL;
}

static cov_status make_tables(const graph *g, const graph_node *n, const tfidf *t,
                              gram_table *tables, int64_t **ids) {
  int64_t first = 0, total = (int64_t)t->n_indexes;
  *ids = malloc((size_t)(2 * total + 1) * sizeof **ids);
  if (!*ids) return graph_node_error(g, n, COV_OUT_OF_MEMORY, "out of memory");
  for (int64_t k = 0; k < t->max_n; k++) {
    int64_t at = t->counts[k], end = k + 1 < (int64_t)t->n_counts ? t->counts[k + 1] : (int64_t)t->n_pool;
    gram_table *tb = &tables[k];
    *tb = (gram_table){.pool = t->pool + at, .n = k + 1, .count = (end - at) / (k + 1),
                       .first = first, .order = *ids + first};
    for (int64_t j = 0; j < tb->count; j++) tb->order[j] = j;
    sort_grams(tb, *ids + total);
    first += tb->count;
  }
  return NULL;
}

cov_status graph_exec_tfidf(graph_exec *x, const graph_node *n, graph_value *const *in,
                            graph_value *const *out) {
  const graph *g = x->g;
  tfidf t;
  COV_RETURN_IF_ERROR(read_tfidf(g, n, &t));
  const graph_value *v = in[0];
  int64_t rows = v->rank == 2 ? v->dims[0] : 1, c = v->dims[v->rank - 1];
  COV_RETURN_IF_ERROR(bound_work(g, n, &t, rows, c));
  COV_RETURN_IF_ERROR(graph_alloc_data(g, n, out[0]));
  gram_table tables[GRAPH_TFIDF_MAX_GRAM];
  int64_t *ids = NULL, *cnt = calloc(t.n_indexes + 1, sizeof *cnt);
  cov_status st = cnt ? make_tables(g, n, &t, tables, &ids)
                      : graph_node_error(g, n, COV_OUT_OF_MEMORY, "out of memory");
  float *y = out[0]->data;
  for (int64_t r = 0; r < rows && !st; r++) {
    memset(cnt, 0, (t.n_indexes + 1) * sizeof *cnt);
    count_row(&t, tables, v, (size_t)(r * c), c, cnt);
    for (size_t j = 0; j < t.n_indexes; j++)
      y[r * t.width + t.indexes[j]] = gram_value(&t, cnt[j], j);
  }
  free(ids);
  free(cnt);
  return st;
}
