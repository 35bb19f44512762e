/* backends/gpu/gpu_mcapdec.c: the capture's 32-bit patterns (what each
 * pass writes for an element; gpu_mcapture.c says why) and a captured
 * value decoded from its four passes into runs of copied
 * elements and constants, fed one pass at a time as the model's runs
 * produce them, so that no pass's words need be kept. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backends/gpu/gpu_mcapture.h"
#include "common/grow.h"

static const char k_oom[] = "capturing the model's groups";

/* Pass 3's pattern of element ix of buffer id: sign and mantissa from a
 * mix of both (lowest mantissa bit set), biased exponent 127..148, so
 * |value| is in [1, 2^22) with a nonzero fraction: never NaN, Inf or
 * denormal, never an integer, never exact in f16 or bf16. */
static uint32_t cap_hash(uint32_t id, uint32_t ix) {
  uint32_t h = id * 0x9E3779B1u ^ (ix + 0x7F4A7C15u);
  h ^= h >> 16, h *= 0x85EBCA6Bu, h ^= h >> 13, h *= 0xC2B2AE35u, h ^= h >> 16;
  uint32_t e = 127u + ((h >> 23) & 0xFFu) % 22u;
  return (h & 0x80000000u) | e << 23 | (h & 0x007FFFFFu) | 1u;
}

/* The high word an i64 element's pattern carries beside its 32-bit
 * pattern (low word): an element whose high word is not this was not
 * moved bit for bit (a narrowing, an arithmetic result, a constant). */
uint32_t gpu_cap_high(uint32_t lo) { return ~lo ^ 0x2545F491u; }

/* The 32-bit patterns of t's elements: f32 and i32 bits as they are, an
 * i64 element's low word when its high word matches (else GPU_CAP_BAD, which
 * decodes as no element). */
uint32_t gpu_cap_word64(uint64_t p) {
  uint32_t lo = (uint32_t)p, hi = (uint32_t)(p >> 32);
  return hi == gpu_cap_high(lo) ? lo : GPU_CAP_BAD;
}

void gpu_cap_words(const cov_tensor *t, uint32_t *w) {
  int64_t n = cov_tensor_numel(t);
  if (!t->data) return;
  if (t->dtype == COV_F32 || t->dtype == COV_I32) {
    memcpy(w, t->data, (size_t)n * 4);
  } else if (t->dtype == COV_I64) {
    const uint64_t *p = t->data;
    for (int64_t j = 0; j < n; j++) w[j] = gpu_cap_word64(p[j]);
  }
}

uint32_t gpu_cap_pattern(int pass, uint32_t id, uint32_t ix) {
  return pass == 0 ? id : pass == 1 ? ix : pass == 2 ? ix ^ GPU_CAP_FLIP : cap_hash(id, ix);
}

uint64_t gpu_cap_pattern64(int pass, uint32_t id, uint32_t ix) {
  uint32_t w = gpu_cap_pattern(pass, id, ix);
  return (uint64_t)gpu_cap_high(w) << 32 | w;
}

static void cap_fail(gpu_cap_value *v, const char *why) {
  if (why != v->why) snprintf(v->why, sizeof v->why, "%s", why);
  free(v->runs);
  v->runs = NULL, v->n_runs = 0;
}

/* A new buffer id for the n constant elements of a value (values owned). */
static int const_id(gpu_capture *c, float *vals, int64_t n) {
  cov_status st = common_grow((void **)&c->id_numel, &c->cap_ids, c->n_ids + 1, sizeof *c->id_numel, 16, k_oom);
  if (!st) st = common_grow((void **)&c->id_const, &c->cap_const, c->n_ids + 1, sizeof *c->id_const, 16, k_oom);
  if (st) { /* the caller says why: out of memory */
    cov_status_free(st);
    return -1;
  }
  c->id_numel[c->n_ids] = n;
  c->id_const[c->n_ids] = vals;
  return c->n_ids++;
}

/* The decoder of one value, fed its passes as they arrive, so that a
 * model's group inputs never hold their words (12 bytes an element for
 * every input at once: 8 GB for convnext_atto at batch 32) but only:
 * pass 0's words as runs of equal words (ids are constant along copies),
 * from pass 1 on the value's runs, where src >= 0 is a buffer id (a copy,
 * or a constant whose bits equal its index) and src -1 a constant
 * candidate whose bits s0 holds; pass 2 tells constants from copies
 * (their constant values gathered), pass 3 checks every hash. */
typedef struct cap_rle {
  uint32_t word, n;
} cap_rle;
struct gpu_cap_dec {
  int integer; /* i32 / i64 values: no constants */
  int64_t n;
  cap_rle *rle;
  int n_rle, cap_rle, cap_runs;
  float *consts; /* pass 2 on: the constants, in element order */
  int64_t n_const;
  int cap_consts;
};

/* A pass's words: an array, or the tensor's own elements (gpu_cap_words) */
typedef struct cap_src {
  const uint32_t *w;
  const cov_tensor *t;
} cap_src;

static uint32_t src_word(const cap_src *s, int64_t j) {
  if (s->w) return s->w[j];
  if (!s->t->data) return 0;
  if (s->t->dtype == COV_I64) return gpu_cap_word64(((const uint64_t *)s->t->data)[j]);
  uint32_t w;
  memcpy(&w, (const char *)s->t->data + 4 * j, 4);
  return w;
}

void gpu_cap_dec_free(gpu_cap_dec *d) {
  if (!d) return;
  free(d->rle), free(d->consts), free(d);
}

static void not_a_copy(gpu_cap_value *v, int64_t j) {
  snprintf(v->why, sizeof v->why,
           "element %lld is not a bit-exact copy of an element computed on the GPU (a layout operation "
           "computes, or it reads a group that cannot be compiled)",
           (long long)j);
  cap_fail(v, v->why);
}

/* Appends run (src, j, ix, 1) to v, or extends the last one. Constant
 * candidates (src -1 in pass 1: s0 holds bits, not an index) never merge. */
static int add_run(gpu_cap_dec *d, gpu_cap_value *v, int src, int64_t j, int64_t ix, int merge) {
  gpu_cap_run *last = v->n_runs ? &v->runs[v->n_runs - 1] : NULL;
  if (merge && last && src == last->src && last->s0 + last->n == ix && last->d0 + last->n == j) {
    last->n++;
    return 0;
  }
  cov_status st = common_grow((void **)&v->runs, &d->cap_runs, v->n_runs + 1, sizeof *v->runs, 16, k_oom);
  if (st) {
    cov_status_free(st);
    cap_fail(v, "out of memory");
    return -1;
  }
  v->runs[v->n_runs++] = (gpu_cap_run){src, j, ix, 1};
  return 0;
}

static int pass0(gpu_cap_dec *d, const cap_src *s, gpu_cap_value *v) {
  for (int64_t j = 0; j < d->n; j++) {
    uint32_t w = src_word(s, j);
    cap_rle *last = d->n_rle ? &d->rle[d->n_rle - 1] : NULL;
    if (last && last->word == w && last->n < UINT32_MAX) {
      last->n++;
      continue;
    }
    cov_status st = common_grow((void **)&d->rle, &d->cap_rle, d->n_rle + 1, sizeof *d->rle, 16, k_oom);
    if (st) {
      cov_status_free(st);
      cap_fail(v, "out of memory");
      return -1;
    }
    d->rle[d->n_rle++] = (cap_rle){w, 1};
  }
  return 0;
}

/* pass 1: (id, index) pairs into runs; an element no buffer has is a
 * constant candidate if its id and index words agree, else no copy */
static int pass1(gpu_capture *c, gpu_cap_dec *d, const cap_src *s, gpu_cap_value *v) {
  int64_t j = 0;
  for (int r = 0; r < d->n_rle; r++) {
    uint32_t id = d->rle[r].word;
    int buf = id < (uint32_t)c->n_ids && !gpu_cap_const(c, (int)id);
    for (uint32_t k = 0; k < d->rle[r].n; k++, j++) {
      uint32_t ix = src_word(s, j);
      int copy = buf && (int64_t)ix < c->id_numel[id];
      if (!copy && (d->integer || id != ix)) {
        not_a_copy(v, j);
        return -1;
      }
      if (add_run(d, v, copy ? (int)id : -1, j, (int64_t)ix, copy) < 0) return -1;
    }
  }
  free(d->rle);
  d->rle = NULL, d->n_rle = d->cap_rle = 0;
  return 0;
}

/* pass 2: an element whose flipped index equals its index (and id) is a
 * constant, gathered; one with the flipped index a copy; else no copy */
static int pass2(gpu_cap_dec *d, const cap_src *s, gpu_cap_value *v) {
  gpu_cap_run *cand = v->runs;
  int n_cand = v->n_runs;
  v->runs = NULL, v->n_runs = 0, d->cap_runs = 0;
  int rc = 0;
  for (int r = 0; r < n_cand && !rc; r++) {
    const gpu_cap_run *u = &cand[r];
    for (int64_t k = 0; k < u->n && !rc; k++) {
      int64_t j = u->d0 + k;
      uint32_t ix = (uint32_t)(u->s0 + k), flip = src_word(s, j);
      if (!d->integer && flip == ix && (u->src < 0 || (uint32_t)u->src == ix)) {
        if (d->n_const == d->cap_consts) {
          cov_status st = common_grow((void **)&d->consts, &d->cap_consts, (int)d->n_const + 1, sizeof *d->consts,
                                      64, k_oom);
          if (st) {
            cov_status_free(st);
            cap_fail(v, "out of memory");
            rc = -1;
            break;
          }
        }
        memcpy(&d->consts[d->n_const], &ix, 4);
        rc = add_run(d, v, -1, j, d->n_const++, 1);
      } else if (u->src >= 0 && flip == gpu_cap_pattern(2, (uint32_t)u->src, ix)) {
        rc = add_run(d, v, u->src, j, (int64_t)ix, 1);
      } else {
        not_a_copy(v, j);
        rc = -1;
      }
    }
  }
  free(cand);
  return rc;
}

/* pass 3: every element must reproduce its hash (a constant its bits);
 * the constants become a buffer of their own */
static int pass3(gpu_capture *c, gpu_cap_dec *d, const cap_src *s, gpu_cap_value *v) {
  for (int r = 0; r < v->n_runs; r++) {
    const gpu_cap_run *u = &v->runs[r];
    for (int64_t k = 0; k < u->n; k++) {
      uint32_t want;
      if (u->src < 0) memcpy(&want, &d->consts[u->s0 + k], 4);
      else want = gpu_cap_pattern(3, (uint32_t)u->src, (uint32_t)(u->s0 + k));
      if (src_word(s, u->d0 + k) != want) {
        not_a_copy(v, u->d0 + k);
        return -1;
      }
    }
  }
  if (d->n_const) {
    int cid = const_id(c, d->consts, d->n_const);
    if (cid < 0) {
      cap_fail(v, "out of memory");
      return -1;
    }
    d->consts = NULL; /* the capture's now */
    for (int r = 0; r < v->n_runs; r++)
      if (v->runs[r].src < 0) v->runs[r].src = cid;
  }
  v->numel = d->n;
  v->ok = 1;
  return 0;
}

/* Feeds pass `pass` of a value of n elements to its decoder *dp (made in
 * pass 0, freed after pass 3 or a failure, which v->why then says). */
static void dec_pass(gpu_capture *c, gpu_cap_dec **dp, int pass, int64_t n, int integer, cap_src s,
                     gpu_cap_value *v) {
  if (pass == 0) {
    v->n_runs = 0, v->ok = 0, v->why[0] = 0;
    gpu_cap_dec_free(*dp);
    if (!(*dp = calloc(1, sizeof **dp))) {
      cap_fail(v, "out of memory");
      return;
    }
    (*dp)->n = n, (*dp)->integer = integer;
  }
  gpu_cap_dec *d = *dp;
  if (!d) return; /* an earlier pass failed */
  if (n != d->n) { /* data-dependent: the patterns of each pass are different values */
    snprintf(v->why, sizeof v->why, "its size depends on run-time values (%lld elements in pass %d, %lld before)",
             (long long)n, pass, (long long)d->n);
    cap_fail(v, v->why);
    gpu_cap_dec_free(d);
    *dp = NULL;
    return;
  }
  int rc = pass == 0 ? pass0(d, &s, v) : pass == 1 ? pass1(c, d, &s, v) : pass == 2 ? pass2(d, &s, v) : pass3(c, d, &s, v);
  if (rc < 0 || pass == GPU_CAP_PASSES - 1) {
    gpu_cap_dec_free(d);
    *dp = NULL;
  }
}

void gpu_cap_decode_words(gpu_capture *c, int64_t n, const uint32_t *ids, const uint32_t *idx, const uint32_t *flip,
                          const uint32_t *hash, gpu_cap_value *v) {
  const uint32_t *w[GPU_CAP_PASSES] = {ids, idx, flip, hash};
  gpu_cap_dec *d = NULL;
  for (int pass = 0; pass < GPU_CAP_PASSES; pass++) dec_pass(c, &d, pass, n, 1, (cap_src){w[pass], NULL}, v);
}

static int decodable(const cov_tensor *t, gpu_cap_value *v) {
  if (t->dtype == COV_F32 || t->dtype == COV_I64 || t->dtype == COV_I32) return 1;
  v->n_runs = 0, v->ok = 0;
  snprintf(v->why, sizeof v->why, "it is %s (the GPU model path takes f32, i32 and i64 values)",
           cov_dtype_name(t->dtype));
  return 0;
}

void gpu_cap_dec_pass(gpu_capture *c, gpu_cap_dec **dp, int pass, const cov_tensor *t, gpu_cap_value *v) {
  if (pass == 0 && !decodable(t, v)) return;
  dec_pass(c, dp, pass, cov_tensor_numel(t), t->dtype != COV_F32, (cap_src){NULL, t}, v);
}

void gpu_cap_decode(gpu_capture *c, const cov_tensor *t, const uint32_t *ids, const uint32_t *idx, const uint32_t *flip,
                    gpu_cap_value *v) {
  if (!decodable(t, v)) return;
  int integer = t->dtype != COV_F32;
  const uint32_t *w[GPU_CAP_PASSES - 1] = {ids, idx, flip};
  gpu_cap_dec *d = NULL;
  for (int pass = 0; pass < GPU_CAP_PASSES; pass++)
    dec_pass(c, &d, pass, cov_tensor_numel(t), integer,
             pass < GPU_CAP_PASSES - 1 ? (cap_src){w[pass], NULL} : (cap_src){NULL, t}, v);
}
