/* runtime/crt_tune.c: `covenant-run TUNE_DIR --tune` (crt_tune.h).
 *
 * Kernel ABI (backends/gpu/gpu_plan.h): arguments (A, B, out f32, bias
 * f32); a channels-last convolution runs its NCHW -> NHWC transform first
 * (input, -, workspace, -) and then takes (workspace, weights as
 * [R][S][C][K], out, bias); a kernel on channels-last tensors as they are
 * ("out_layout": "nhwc": the depthwise kernel) takes (input, weights, out,
 * bias) with no transform. Outputs are f32, or f16 where the manifest says
 * "out_dtype": "f16". Outputs are NaN-filled before a checked run so that
 * an element a kernel does not write fails the check, except for the
 * atomic pooled epilogue of NCHW convolutions, which needs zeros. */
#include "runtime/crt_tune.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "common/fileio.h"
#include "covenant/tensor.h"
#include "runtime/crt_cuda.h"
#include "runtime/crt_json.h"

enum { TUNE_MAX_KERNELS = 65536, TUNE_MAX_CANDS = 256 };
#define TUNE_MAX_ELEMS ((int64_t)1 << 31)

typedef struct jdoc {
  char path[4096];
  char *text;
  crt_json_doc *doc;
} jdoc;

static cov_status jopen(const char *dir, const char *name, jdoc *d) {
  size_t n = 0;
  snprintf(d->path, sizeof d->path, "%s/%s", dir, name);
  COV_RETURN_IF_ERROR(common_read_file(d->path, (size_t)64 << 20, &d->text, &n));
  return crt_json_parse(d->text, n, d->path, &d->doc);
}

static void jclose(jdoc *d) {
  if (d->doc) crt_json_free(d->doc);
  free(d->text);
}

static cov_status bad(const jdoc *d, const crt_json *at, const char *what, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static cov_status bad(const jdoc *d, const crt_json *at, const char *what, const char *fmt, ...) {
  cov_loc loc = {d->path, at ? (unsigned)at->line : 0, at ? (unsigned)at->col : 0, what};
  va_list ap;
  va_start(ap, fmt);
  cov_status st = cov_status_makev_(COV_INVALID_INPUT, &loc, __FILE__, __LINE__, fmt, ap);
  va_end(ap);
  return st;
}

static cov_status get_int(const jdoc *d, const crt_json *o, const char *key, int64_t lo, int64_t hi, int64_t *out) {
  const crt_json *v = crt_json_get(o, key);
  if (!v || v->kind != CRT_JSON_NUMBER || !v->is_int || v->i < lo || v->i > hi)
    return bad(d, v ? v : o, key, "expected an integer in [%lld, %lld]", (long long)lo, (long long)hi);
  *out = v->i;
  return NULL;
}

static const char *get_str(const crt_json *o, const char *key) {
  const crt_json *v = crt_json_get(o, key);
  return v && v->kind == CRT_JSON_STRING ? v->str : NULL;
}

static int get_bool(const crt_json *o, const char *key) {
  const crt_json *v = crt_json_get(o, key);
  return v && v->kind == CRT_JSON_BOOL && v->boolean;
}

/* One kernel of manifest.json with its launch. */
typedef struct kdesc {
  const crt_json *j;
  const char *kernel, *file, *pre_kernel;
  unsigned grid[3], block[3], shared, pgrid[3], pblock[3], pshared;
  int nhwc;
  int io_nhwc; /* the tensors are channels-last as given: no transform */
  int out_es;  /* bytes per output element: 4 (f32) or 2 (f16) */
  uint64_t ws_bytes;
  /* the warp-specialised kernel: the manifest's "tma" sizes {rows, cols,
   * box_rows, box_cols} of A and B, and the device copy of their tensor
   * maps (arguments 0 and 1) */
  int tma;
  unsigned long long tm[2][4];
  crt_devptr maps;
} kdesc;

static cov_status get_dim3(const jdoc *d, const crt_json *o, const char *key, unsigned out[3]) {
  const crt_json *v = crt_json_get(o, key);
  if (!v || v->kind != CRT_JSON_ARRAY || v->n != 3) return bad(d, v ? v : o, key, "expected 3 integers");
  for (int i = 0; i < 3; i++) {
    const crt_json *x = v->items[i];
    if (x->kind != CRT_JSON_NUMBER || !x->is_int || x->i < 1 || x->i > INT32_MAX)
      return bad(d, x, key, "expected an integer in [1, 2147483647]");
    out[i] = (unsigned)x->i;
  }
  return NULL;
}

static cov_status find_kernel(const jdoc *man, const char *name, const crt_json *at, const jdoc *tune, const char *path,
                              kdesc *k) {
  const crt_json *ks = crt_json_get(crt_json_root(man->doc), "kernels");
  if (!ks || ks->kind != CRT_JSON_ARRAY) return bad(man, ks, "$.kernels", "expected an array of kernels");
  memset(k, 0, sizeof *k);
  for (size_t i = 0; i < ks->n && !k->j; i++) {
    const char *n = get_str(ks->items[i], "kernel");
    if (n && !strcmp(n, name)) k->j = ks->items[i];
  }
  if (!k->j) return bad(tune, at, path, "kernel '%s' is not in %s", name, man->path);
  k->kernel = name;
  k->file = get_str(k->j, "file");
  if (!k->file || strchr(k->file, '/')) return bad(man, k->j, "file", "kernel '%s': expected \"file\" in the directory", name);
  int64_t sh = 0;
  COV_RETURN_IF_ERROR(get_dim3(man, k->j, "grid", k->grid));
  COV_RETURN_IF_ERROR(get_dim3(man, k->j, "block", k->block));
  COV_RETURN_IF_ERROR(get_int(man, k->j, "shared_bytes", 0, 1 << 24, &sh));
  k->shared = (unsigned)sh;
  const char *layout = get_str(k->j, "layout");
  k->nhwc = layout && !strcmp(layout, "nhwc");
  const char *out_layout = get_str(k->j, "out_layout"), *out_dt = get_str(k->j, "out_dtype");
  k->io_nhwc = out_layout && !strcmp(out_layout, "nhwc");
  if (out_layout && !k->io_nhwc) return bad(man, k->j, "out_layout", "kernel '%s': expected \"out_layout\": \"nhwc\"", name);
  if (out_dt && strcmp(out_dt, "f16") && strcmp(out_dt, "f32"))
    return bad(man, k->j, "out_dtype", "kernel '%s': expected \"out_dtype\": \"f16\" or \"f32\"", name);
  k->out_es = out_dt && !strcmp(out_dt, "f16") ? 2 : 4;
  const crt_json *tma = crt_json_get(k->j, "tma");
  if (tma) {
    k->tma = 1;
    for (int i = 0; i < 2; i++) {
      const crt_json *v = tma->kind == CRT_JSON_OBJECT ? crt_json_get(tma, i ? "b" : "a") : NULL;
      if (!v || v->kind != CRT_JSON_ARRAY || v->n != 4)
        return bad(man, v ? v : tma, "tma", "kernel '%s': expected \"tma\": {\"a\": [4 integers], \"b\": [...]}", name);
      for (int d = 0; d < 4; d++) {
        const crt_json *x = v->items[d];
        if (x->kind != CRT_JSON_NUMBER || !x->is_int || x->i < 1 || x->i > (d < 2 ? 0xffffffffLL : 256))
          return bad(man, x, "tma", "kernel '%s': tensor map sizes are rows, cols in [1, 2^32), a box of 1..256", name);
        k->tm[i][d] = (unsigned long long)x->i;
      }
    }
  }
  if (k->nhwc && !k->io_nhwc) {
    const crt_json *pre = crt_json_get(k->j, "pre");
    int64_t ws = 0, ps = 0;
    if (!pre || !(k->pre_kernel = get_str(pre, "kernel"))) return bad(man, k->j, "pre", "expected the transform \"pre\"");
    COV_RETURN_IF_ERROR(get_dim3(man, pre, "grid", k->pgrid));
    COV_RETURN_IF_ERROR(get_dim3(man, pre, "block", k->pblock));
    COV_RETURN_IF_ERROR(get_int(man, pre, "shared_bytes", 0, 1 << 24, &ps));
    COV_RETURN_IF_ERROR(get_int(man, pre, "workspace_bytes", 1, (int64_t)1 << 34, &ws));
    k->pshared = (unsigned)ps, k->ws_bytes = (uint64_t)ws;
  }
  return NULL;
}

/* A group's problem: the operand sizes (elements) from the pick's entry. */
typedef struct tprob {
  int conv, esize, bf16, pool_zero, out_es;
  int64_t a, b, out, bias;
  int64_t n, c, h, w, k, r, s, g; /* conv: for the weights' [R][S][C][K] copy */
} tprob;

static cov_status problem(const jdoc *man, const kdesc *k, tprob *p) {
  const char *kind = get_str(k->j, "kind"), *dt = get_str(k->j, "dtype");
  memset(p, 0, sizeof *p);
  if (!dt || (strcmp(dt, "f16") && strcmp(dt, "bf16") && strcmp(dt, "f32")))
    return bad(man, k->j, "dtype", "kernel '%s': expected dtype f16, bf16 or f32", k->kernel);
  p->esize = strcmp(dt, "f32") ? 2 : 4;
  p->bf16 = !strcmp(dt, "bf16");
  p->out_es = k->out_es;
  const int64_t M = TUNE_MAX_ELEMS;
  if (kind && !strcmp(kind, "matmul")) {
    int64_t bt = 0, m = 0, n = 0, kk = 0;
    COV_RETURN_IF_ERROR(get_int(man, k->j, "batch", 1, M, &bt));
    COV_RETURN_IF_ERROR(get_int(man, k->j, "M", 1, M, &m));
    COV_RETURN_IF_ERROR(get_int(man, k->j, "N", 1, M, &n));
    COV_RETURN_IF_ERROR(get_int(man, k->j, "K", 1, M, &kk));
    p->a = bt * m * kk, p->b = bt * kk * n, p->out = bt * m * n, p->bias = n;
  } else if (kind && !strcmp(kind, "conv2d")) {
    int64_t oh = 0, ow = 0;
    const char *keys[] = {"N", "C", "H", "W", "K", "R", "S", "groups"};
    int64_t *vals[] = {&p->n, &p->c, &p->h, &p->w, &p->k, &p->r, &p->s, &p->g};
    for (int i = 0; i < 8; i++) COV_RETURN_IF_ERROR(get_int(man, k->j, keys[i], 1, 1 << 20, vals[i]));
    COV_RETURN_IF_ERROR(get_int(man, k->j, "OH", 1, 1 << 20, &oh));
    COV_RETURN_IF_ERROR(get_int(man, k->j, "OW", 1, 1 << 20, &ow));
    if (p->c % p->g || p->k % p->g) return bad(man, k->j, "groups", "groups must divide C and K");
    int pool = get_bool(k->j, "maxpool2x2");
    p->conv = 1, p->pool_zero = pool;
    p->a = p->n * p->c * p->h * p->w, p->b = p->k * (p->c / p->g) * p->r * p->s;
    p->out = p->n * p->k * (pool ? oh / 2 : oh) * (pool ? ow / 2 : ow), p->bias = p->k;
  } else {
    return bad(man, k->j, "kind", "kernel '%s': a tuning group is a matmul or conv2d", k->kernel);
  }
  if (p->a > M || p->b > M || p->out > M || p->a < 1 || p->b < 1 || p->out < 1)
    return bad(man, k->j, "kind", "kernel '%s': operands over %lld elements", k->kernel, (long long)M);
  return NULL;
}

/* splitmix64: uniform in [-1, 1) */
static float rnd(uint64_t *s) {
  uint64_t z = (*s += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  z ^= z >> 31;
  return (float)((double)(z >> 11) / 9007199254740992.0 * 2.0 - 1.0);
}

static void fill(void *dst, int64_t n, const tprob *p, int esize, uint64_t *seed) {
  for (int64_t i = 0; i < n; i++) {
    float v = rnd(seed);
    if (esize == 4) ((float *)dst)[i] = v;
    else ((uint16_t *)dst)[i] = p->bf16 ? cov_f32_to_bf16(v) : cov_f32_to_f16(v);
  }
}

/* The device side of one group. */
typedef struct tbufs {
  crt_devptr a, b, bt, bias, out, ws;
  uint64_t ws_bytes;
  float *host_out, *ref;
  unsigned char *init; /* the output's bytes before a run, and after it */
} tbufs;

typedef struct tctx {
  crt_cuda *cu;
  const char *dir;
  const crt_tune_options *o;
  tprob p;
  tbufs d;
} tctx;

static cov_status load_module(tctx *x, const kdesc *k, crt_cuda_module **m) {
  char path[4096], *ptx = NULL;
  size_t n = 0;
  snprintf(path, sizeof path, "%s/%s", x->dir, k->file);
  COV_RETURN_IF_ERROR(common_read_file(path, (size_t)1 << 26, &ptx, &n));
  cov_status st = crt_cuda_load(x->cu, ptx, m);
  free(ptx);
  return st ? cov_status_annotate(st, "%s: ", path) : NULL;
}

/* The launches of kernel k: the transform and the kernel, or the kernel. */
static int launches(tctx *x, const kdesc *k, crt_cuda_module *m, crt_devptr p0[4], crt_devptr p1[4], void *a0[4],
                    void *a1[4], crt_cuda_launch_desc seq[2]) {
  if (!k->nhwc || k->io_nhwc) {
    crt_devptr v[4] = {k->tma ? k->maps : x->d.a, k->tma ? k->maps + 128 : x->d.b, x->d.out, x->p.bias ? x->d.bias : 0};
    memcpy(p1, v, sizeof v);
    for (int i = 0; i < 4; i++) a1[i] = &p1[i];
    seq[0] = (crt_cuda_launch_desc){m, k->kernel, {k->grid[0], k->grid[1], k->grid[2]},
                                    {k->block[0], k->block[1], k->block[2]}, k->shared, a1};
    return 1;
  }
  crt_devptr v0[4] = {x->d.a, 0, x->d.ws, 0}, v1[4] = {x->d.ws, x->d.bt, x->d.out, x->p.bias ? x->d.bias : 0};
  memcpy(p0, v0, sizeof v0), memcpy(p1, v1, sizeof v1);
  for (int i = 0; i < 4; i++) a0[i] = &p0[i], a1[i] = &p1[i];
  seq[0] = (crt_cuda_launch_desc){m, k->pre_kernel, {k->pgrid[0], k->pgrid[1], k->pgrid[2]},
                                  {k->pblock[0], k->pblock[1], k->pblock[2]}, k->pshared, a0};
  seq[1] = (crt_cuda_launch_desc){m, k->kernel, {k->grid[0], k->grid[1], k->grid[2]},
                                  {k->block[0], k->block[1], k->block[2]}, k->shared, a1};
  return 2;
}

/* One checked run of k into x->d.host_out. */
static cov_status run_once(tctx *x, const kdesc *k, crt_cuda_module *m) {
  crt_devptr p0[4], p1[4];
  void *a0[4], *a1[4];
  crt_cuda_launch_desc seq[2];
  int n = launches(x, k, m, p0, p1, a0, a1, seq);
  /* NaN everywhere but where the atomic pooled epilogue needs zeros */
  float fillv = x->p.pool_zero && !k->nhwc ? 0.0f : NAN;
  size_t es = (size_t)x->p.out_es, bytes = (size_t)x->p.out * es;
  uint16_t fill16 = isnan(fillv) ? 0x7e00 : 0; /* an f16 NaN */
  for (int64_t i = 0; i < x->p.out; i++)
    memcpy(x->d.init + (size_t)i * es, es == 4 ? (const void *)&fillv : (const void *)&fill16, es);
  COV_RETURN_IF_ERROR(crt_cuda_upload(x->cu, x->d.out, x->d.init, bytes));
  for (int i = 0; i < n; i++)
    COV_RETURN_IF_ERROR(crt_cuda_launch(x->cu, seq[i].m, seq[i].kernel, seq[i].grid, seq[i].block,
                                        seq[i].shared_bytes, seq[i].args, NULL));
  COV_RETURN_IF_ERROR(crt_cuda_download(x->cu, x->d.init, x->d.out, bytes));
  for (int64_t i = 0; i < x->p.out; i++) {
    uint16_t h;
    if (es == 4) memcpy(&x->d.host_out[i], x->d.init + (size_t)i * 4, 4);
    else memcpy(&h, x->d.init + (size_t)i * 2, 2), x->d.host_out[i] = cov_f16_to_f32(h);
  }
  return NULL;
}

static cov_status time_once(tctx *x, const kdesc *k, crt_cuda_module *m, float *ms) {
  crt_devptr p0[4], p1[4];
  void *a0[4], *a1[4];
  crt_cuda_launch_desc seq[2];
  int n = launches(x, k, m, p0, p1, a0, a1, seq);
  return crt_cuda_time_seq(x->cu, seq, n, x->o->iters, ms);
}

/* A kernel of a group: its launch, module and what the device said. */
typedef struct tkern {
  kdesc k;
  const crt_json *cand; /* tune.json's candidate (NULL: the pick) */
  crt_cuda_module *m;
  int ran, ok;
  double err, ms;
  float *t; /* reps times */
  char error[512];
} tkern;

static void jstr(FILE *f, const char *s) {
  fputc('"', f);
  for (; *s; s++) {
    unsigned char c = (unsigned char)*s;
    if (c == '"' || c == '\\') fprintf(f, "\\%c", c);
    else if (c < 0x20) fprintf(f, "\\u%04x", c);
    else fputc(c, f);
  }
  fputc('"', f);
}

static int cmp_f(const void *a, const void *b) {
  float x = *(const float *)a, y = *(const float *)b;
  return (x > y) - (x < y);
}

static void note_error(tkern *k, cov_status st) {
  char *msg = NULL;
  size_t n = 0;
  FILE *m = open_memstream(&msg, &n);
  if (m) {
    cov_status_print(m, st, 0);
    fclose(m);
  }
  snprintf(k->error, sizeof k->error, "%s", msg ? msg : "error");
  for (char *c = k->error; *c; c++)
    if (*c == '\n') *c = ' ';
  free(msg);
  cov_status_free(st);
}

static cov_status group_buffers(tctx *x, const tkern *ks, int n, uint64_t *seed) {
  const tprob *p = &x->p;
  tbufs *d = &x->d;
  int nhwc = 0;
  for (int i = 0; i < n; i++) {
    const kdesc *k = &ks[i].k;
    cov_loc loc = {x->dir, 0, 0, k->kernel};
    /* every kernel of a group reads and writes the same tensors as the pick */
    if (k->io_nhwc != ks[0].k.io_nhwc || k->out_es != ks[0].k.out_es)
      return cov_error(COV_INVALID_INPUT, &loc, "manifest: the kernel's output layout or dtype is not the pick's");
    if (k->nhwc && !k->io_nhwc) nhwc = 1, d->ws_bytes = k->ws_bytes > d->ws_bytes ? k->ws_bytes : d->ws_bytes;
  }
  if (nhwc && (!p->conv || p->g != 1))
  {
    cov_loc loc = {x->dir, 0, 0, ks[0].k.kernel};
    return cov_error(COV_INVALID_INPUT, &loc, "a channels-last kernel of a grouped or non-conv problem");
  }
  size_t ab = (size_t)p->a * (size_t)p->esize, bb = (size_t)p->b * (size_t)p->esize;
  unsigned char *a = malloc(ab), *b = malloc(bb), *bt = nhwc ? malloc(bb) : NULL;
  float *bias = malloc((size_t)p->bias * 4);
  d->host_out = malloc((size_t)p->out * 4), d->ref = malloc((size_t)p->out * 4), d->init = malloc((size_t)p->out * 4);
  /* (init holds p->out_es <= 4 bytes per element) */
  cov_status st = !a || !b || (nhwc && !bt) || !bias || !d->host_out || !d->ref || !d->init
                      ? cov_error(COV_OUT_OF_MEMORY, NULL, "out of memory")
                      : NULL;
  if (!st) {
    fill(a, p->a, p, p->esize, seed), fill(b, p->b, p, p->esize, seed), fill(bias, p->bias, p, 4, seed);
    /* [K][C][R][S] -> [R][S][C][K] for channels-last kernels */
    for (int64_t k = 0; bt && k < p->k; k++)
      for (int64_t c = 0; c < p->c; c++)
        for (int64_t r = 0; r < p->r; r++)
          for (int64_t s = 0; s < p->s; s++)
            memcpy(bt + (size_t)(((r * p->s + s) * p->c + c) * p->k + k) * (size_t)p->esize,
                   b + (size_t)(((k * p->c + c) * p->r + r) * p->s + s) * (size_t)p->esize, (size_t)p->esize);
  }
  if (!st) st = crt_cuda_alloc(x->cu, ab, &d->a);
  if (!st) st = crt_cuda_alloc(x->cu, bb, &d->b);
  if (!st && bt) st = crt_cuda_alloc(x->cu, bb, &d->bt);
  if (!st) st = crt_cuda_alloc(x->cu, (size_t)p->bias * 4, &d->bias);
  if (!st) st = crt_cuda_alloc(x->cu, (size_t)p->out * (size_t)p->out_es, &d->out);
  if (!st && d->ws_bytes) st = crt_cuda_alloc(x->cu, d->ws_bytes, &d->ws);
  if (!st) st = crt_cuda_upload(x->cu, d->a, a, ab);
  if (!st) st = crt_cuda_upload(x->cu, d->b, b, bb);
  if (!st && bt) st = crt_cuda_upload(x->cu, d->bt, bt, bb);
  if (!st) st = crt_cuda_upload(x->cu, d->bias, bias, (size_t)p->bias * 4);
  free(a), free(b), free(bt), free(bias);
  return st;
}

static void group_free(tctx *x) {
  tbufs *d = &x->d;
  crt_devptr ps[] = {d->a, d->b, d->bt, d->bias, d->out, d->ws};
  for (int i = 0; i < 6; i++)
    if (ps[i]) cov_status_free(crt_cuda_free(x->cu, ps[i]));
  free(d->host_out), free(d->ref), free(d->init);
  memset(d, 0, sizeof *d);
}

/* max|out - ref| / max|ref|; NAN where an element is not finite */
static double rel_err(const float *out, const float *ref, int64_t n) {
  double num = 0, den = 0;
  for (int64_t i = 0; i < n; i++) {
    if (!isfinite(out[i])) return NAN;
    double e = fabs((double)out[i] - ref[i]);
    num = e > num ? e : num;
    den = fabs(ref[i]) > den ? fabs(ref[i]) : den;
  }
  return num / (den > 1e-30 ? den : 1e-30);
}

/* The tensor maps of a warp-specialised kernel over the group's A and B
 * (the sizes must fit the operands), uploaded once. */
static cov_status tune_maps(tctx *x, kdesc *k) {
  if (!k->tma) return NULL;
  unsigned char host[256];
  crt_devptr base[2] = {x->d.a, x->d.b};
  int64_t elems[2] = {x->p.a, x->p.b};
  for (int i = 0; i < 2; i++) {
    if (x->p.esize != 2 || x->p.conv || k->tm[i][0] * k->tm[i][1] != (unsigned long long)elems[i]) {
      cov_loc loc = {x->dir, 0, 0, k->kernel};
      return cov_error(COV_INVALID_INPUT, &loc, "manifest: the tensor map of %c (%llux%llu) is not the operand's %lld elements",
                       i ? 'B' : 'A', k->tm[i][0], k->tm[i][1], (long long)elems[i]);
    }
    COV_RETURN_IF_ERROR(crt_cuda_tensor_map_2d(x->cu, host + 128 * i, base[i], x->p.bf16, k->tm[i][0], k->tm[i][1],
                                               (unsigned)k->tm[i][2], (unsigned)k->tm[i][3]));
  }
  COV_RETURN_IF_ERROR(crt_cuda_alloc(x->cu, sizeof host, &k->maps));
  return crt_cuda_upload(x->cu, k->maps, host, sizeof host);
}

/* Checks and times the group's kernels (ks[0] is the pick). */
static cov_status measure(tctx *x, tkern *ks, int n) {
  for (int i = 0; i < n; i++) {
    cov_status st = load_module(x, &ks[i].k, &ks[i].m);
    if (!st) st = tune_maps(x, &ks[i].k);
    if (!st) st = run_once(x, &ks[i].k, ks[i].m);
    if (st) {
      if (!i) return st; /* no reference */
      note_error(&ks[i], st);
      continue;
    }
    ks[i].ran = 1;
    if (!i) {
      memcpy(x->d.ref, x->d.host_out, (size_t)x->p.out * 4);
      if (isnan(rel_err(x->d.ref, x->d.ref, x->p.out)))
      {
        cov_loc loc = {x->dir, 0, 0, ks[0].k.kernel};
        return cov_error(COV_DEVICE_ERROR, &loc, "the pick wrote non-finite values");
      }
      ks[0].ok = 1;
      continue;
    }
    ks[i].err = rel_err(x->d.host_out, x->d.ref, x->p.out);
    ks[i].ok = isfinite(ks[i].err) && ks[i].err <= x->o->tolerance;
    if (!ks[i].ok) snprintf(ks[i].error, sizeof ks[i].error, "output differs from the pick's (max rel err %g)", ks[i].err);
  }
  /* repetitions alternate between the kernels (clock and thermal drift
   * fall on all alike); the median of each */
  for (int r = 0; r < x->o->reps; r++)
    for (int i = 0; i < n; i++) {
      if (!ks[i].ran) continue;
      cov_status st = time_once(x, &ks[i].k, ks[i].m, &ks[i].t[r]);
      if (st) {
        if (!i) return st;
        note_error(&ks[i], st);
        ks[i].ran = ks[i].ok = 0;
      }
    }
  for (int i = 0; i < n; i++) {
    if (!ks[i].ran) continue;
    qsort(ks[i].t, (size_t)x->o->reps, sizeof *ks[i].t, cmp_f);
    ks[i].ms = ks[i].t[x->o->reps / 2];
  }
  return NULL;
}

/* The kernels of group g: the pick, then its candidates. */
static cov_status group_kernels(const jdoc *tune, const jdoc *man, const crt_json *g, size_t gi, tkern **out, int *n) {
  char at[96];
  snprintf(at, sizeof at, "$.groups[%zu]", gi);
  if (g->kind != CRT_JSON_OBJECT) return bad(tune, g, at, "a group is an object");
  const char *pick = get_str(g, "pick");
  const crt_json *cs = crt_json_get(g, "candidates");
  if (!get_str(g, "key") || !pick) return bad(tune, g, at, "a group has \"key\" and \"pick\" (strings)");
  if (!cs || cs->kind != CRT_JSON_ARRAY || cs->n > TUNE_MAX_CANDS)
    return bad(tune, cs ? cs : g, at, "expected \"candidates\": an array of at most %d", TUNE_MAX_CANDS);
  tkern *ks = calloc(cs->n + 1, sizeof *ks);
  if (!ks) return cov_error(COV_OUT_OF_MEMORY, NULL, "out of memory");
  char pat[128];
  snprintf(pat, sizeof pat, "%s.pick", at);
  cov_status st = find_kernel(man, pick, g, tune, pat, &ks[0].k);
  for (size_t i = 0; !st && i < cs->n; i++) {
    const crt_json *c = cs->items[i], *cy = crt_json_get(c, "cycles"), *rk = crt_json_get(c, "rank");
    const char *kn = get_str(c, "kernel");
    snprintf(pat, sizeof pat, "%s.candidates[%zu]", at, i);
    if (!kn || !get_str(c, "schedule") || !cy || cy->kind != CRT_JSON_NUMBER || !rk || !rk->is_int)
      st = bad(tune, c, pat, "a candidate has \"schedule\", \"kernel\" (strings), \"rank\" and \"cycles\" (numbers)");
    if (!st) st = find_kernel(man, kn, c, tune, pat, &ks[i + 1].k);
    ks[i + 1].cand = c;
  }
  if (st) {
    free(ks);
    return st;
  }
  *out = ks, *n = (int)cs->n + 1;
  return NULL;
}

static void write_group(FILE *f, const crt_json *g, const tkern *ks, int n, const char *error, int first) {
  fprintf(f, "%s  {\"key\": ", first ? "" : ",\n");
  jstr(f, get_str(g, "key"));
  if (get_str(g, "layer")) fprintf(f, ", \"layer\": "), jstr(f, get_str(g, "layer"));
  if (error) {
    fprintf(f, ", \"error\": "), jstr(f, error), fprintf(f, "}");
    return;
  }
  fprintf(f, ",\n   \"pick\": {\"kernel\": "), jstr(f, ks[0].k.kernel), fprintf(f, ", \"ms\": %.6g},\n   \"candidates\": [", ks[0].ms);
  for (int i = 1; i < n; i++) {
    const tkern *k = &ks[i];
    fprintf(f, "%s\n    {\"schedule\": ", i > 1 ? "," : ""), jstr(f, get_str(k->cand, "schedule"));
    fprintf(f, ", \"kernel\": "), jstr(f, k->k.kernel);
    fprintf(f, ", \"rank\": %lld, \"cycles\": %.17g", (long long)crt_json_get(k->cand, "rank")->i,
            crt_json_get(k->cand, "cycles")->d);
    if (k->ran) fprintf(f, ", \"ms\": %.6g", k->ms);
    if (k->ran && isfinite(k->err)) fprintf(f, ", \"err\": %.3g", k->err); /* JSON has no NaN */
    fprintf(f, ", \"ok\": %s", k->ok ? "true" : "false");
    if (k->error[0]) fprintf(f, ", \"error\": "), jstr(f, k->error);
    fprintf(f, "}");
  }
  fprintf(f, "]}");
}

/* One group: buffers, checks, times, its times.json entry. */
static void run_group(tctx *x, const jdoc *tune, const jdoc *man, const crt_json *g, size_t gi, uint64_t *seed, FILE *f,
                      FILE *log) {
  int first = gi == 0;
  tkern *ks = NULL;
  int n = 0;
  cov_status st = group_kernels(tune, man, g, gi, &ks, &n);
  float *times = st ? NULL : calloc((size_t)n * (size_t)x->o->reps, sizeof *times);
  if (!st && !times) st = cov_error(COV_OUT_OF_MEMORY, NULL, "out of memory");
  for (int i = 0; !st && i < n; i++) ks[i].t = times + (size_t)i * (size_t)x->o->reps;
  if (!st) st = problem(man, &ks[0].k, &x->p);
  if (!st) st = group_buffers(x, ks, n, seed);
  if (!st) st = measure(x, ks, n);
  tkern err = {0};
  if (st) note_error(&err, st);
  write_group(f, g, ks, n, st ? err.error : NULL, first);
  if (log) {
    if (st) fprintf(log, "%s: %s\n", get_str(g, "key"), err.error);
    for (int i = 0; !st && i < n; i++)
      fprintf(log, "%s %-60s %s %.4f ms%s%s\n", i ? " " : "*", ks[i].k.kernel, ks[i].ok ? "ok  " : "FAIL", ks[i].ms,
              ks[i].error[0] ? "  " : "", ks[i].error);
  }
  for (int i = 0; i < n; i++)
    if (ks[i].m) crt_cuda_unload(x->cu, ks[i].m);
  for (int i = 0; i < n; i++)
    if (ks[i].k.maps) cov_status_free(crt_cuda_free(x->cu, ks[i].k.maps));
  group_free(x);
  free(times);
  free(ks);
}

cov_status crt_tune_run(const char *dir, const crt_tune_options *o, const char *out_path, FILE *log) {
  jdoc tune = {0}, man = {0};
  cov_status st = jopen(dir, "tune.json", &tune);
  if (!st) st = jopen(dir, "manifest.json", &man);
  const crt_json *root = st ? NULL : crt_json_root(tune.doc), *groups = root ? crt_json_get(root, "groups") : NULL;
  const crt_json *ver = root ? crt_json_get(root, "covenant_tune") : NULL;
  if (!st && (!ver || !ver->is_int || ver->i != 1))
    st = bad(&tune, ver ? ver : root, "$.covenant_tune", "expected \"covenant_tune\": 1 (covenant tune's artifact)");
  if (!st && (!groups || groups->kind != CRT_JSON_ARRAY)) st = bad(&tune, root, "$.groups", "expected an array of groups");
  /* every group resolves before the device is opened: a bad artifact is
   * reported as such on any machine */
  for (size_t i = 0; !st && i < groups->n; i++) {
    tkern *ks = NULL;
    int n = 0;
    tprob p;
    st = group_kernels(&tune, &man, groups->items[i], i, &ks, &n);
    if (!st) st = problem(&man, &ks[0].k, &p);
    free(ks);
  }
  crt_cuda *cu = NULL;
  if (!st) st = crt_cuda_open(&cu);
  /* written atomically: a run cut short leaves the previous times.json, and
   * what it measured stays readable in the temporary beside it */
  common_out out = {0};
  if (!st) st = common_out_open(out_path, &out);
  FILE *f = out.f;
  if (!st) {
    if (log) fprintf(log, "device: %s\n", crt_cuda_device_name(cu));
    fprintf(f, "{\"covenant_tune_times\": 1, \"target\": ");
    jstr(f, get_str(root, "target") ? get_str(root, "target") : "");
    fprintf(f, ", \"device\": "), jstr(f, crt_cuda_device_name(cu));
    fprintf(f, ",\n \"iters\": %d, \"reps\": %d, \"tolerance\": %g, \"seed\": %llu,\n \"groups\": [\n", o->iters, o->reps,
            o->tolerance, (unsigned long long)o->seed);
    tctx x = {.cu = cu, .dir = dir, .o = o};
    uint64_t seed = o->seed;
    for (size_t i = 0; i < groups->n; i++) {
      run_group(&x, &tune, &man, groups->items[i], i, &seed, f, log);
      fflush(f), fflush(log);
    }
    fprintf(f, "]}\n");
    st = common_out_commit(&out);
  }
  if (cu) crt_cuda_close(cu);
  jclose(&tune), jclose(&man);
  return st;
}
