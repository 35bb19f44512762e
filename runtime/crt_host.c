/* runtime/crt_host.c: an artifact's host steps and control (crt_host.h;
 * runtime/README.md, "Host steps and control"): copies, codelet calls run
 * by the reference interpreter on the codelets the artifact carries, loops
 * iterated and branches chosen from values in buffers. Buffers are in host
 * memory: the npu-sim device's, or a GPU buffer's host copy (crt_run.c). */
#include "runtime/crt_host.h"

#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/loc.h"
#include "common/text.h"
#ifdef CRT_WITH_NPU
#include "covenant/codelet.h"
#include "covenant/model.h"
#else /* the standalone runtime has no reference interpreter: no codelet calls, no part steps (crt_host_check) */
typedef struct cov_codelet cov_codelet;
typedef struct cov_codelet_lib cov_codelet_lib;
typedef struct cov_model cov_model;
#endif

struct crt_host {
  cov_codelet_lib *lib;
  const cov_codelet **fns; /* per step (host steps) */
  int64_t *count, *trip;   /* per loop step: iterations done, the trip count (-1: none) */
  unsigned char *scratch;  /* a next step's carried values on their way */
  cov_model *model;        /* the model part steps run (the artifact's "onnx") */
  int *rank;               /* per buffer: the shape it holds now (crt_host_shape) */
  int64_t (*shape)[COV_MAX_RANK];
  uint64_t max_dynamic;    /* the user's cap on a part output's elements (0: none) */
};

static cov_status step_error(const crt_artifact *a, int s, cov_code code, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static cov_status step_error(const crt_artifact *a, int s, cov_code code, const char *fmt, ...) {
  char path[64], msg[512];
  snprintf(path, sizeof path, "steps[%d]", s);
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  return cov_error(code, COV_AT(a->file, path), "%s", msg);
}

/* The codelets (parsed and verified as any codelet file) and each host
 * step's codelet with its operand count. */
static cov_status load_codelets(crt_host *h, const crt_artifact *a) {
  if (a->codelets_blob < 0) return NULL;
#ifndef CRT_WITH_NPU
  (void)h;
  return crt_host_check(a);
#else
  char name[600], e1[256];
  snprintf(name, sizeof name, "%s: blob '%s'", a->file, common_escape(a->blobs[a->codelets_blob].name, e1, sizeof e1));
  COV_RETURN_IF_ERROR(cov_codelet_lib_load_buffer((const char *)crt_blob_data(a, a->codelets_blob),
                                                  (size_t)a->blobs[a->codelets_blob].bytes, name, &h->lib));
  for (int s = 0; s < a->n_steps; s++) {
    const crt_step *x = &a->steps[s];
    if (x->op != CRT_STEP_HOST) continue;
    const cov_codelet *c = cov_codelet_lib_find(h->lib, x->codelet);
    if (!c)
      return step_error(a, s, COV_INVALID_INPUT, "codelet '%s' is not in the artifact's codelets",
                        common_escape(x->codelet, e1, sizeof e1));
    if (cov_codelet_num_outputs(c) != 1 || cov_codelet_num_inputs(c) + 1 != (size_t)x->n_views)
      return step_error(a, s, COV_INVALID_INPUT, "codelet '%s' takes %zu inputs and makes %zu results; the step has %d operands",
                        common_escape(x->codelet, e1, sizeof e1), cov_codelet_num_inputs(c),
                        cov_codelet_num_outputs(c), x->n_views);
    h->fns[s] = c;
  }
  return NULL;
#endif
}

/* The model part steps run, loaded from the artifact at the shapes of its
 * inputs (those it was compiled at), so its values are the compiler's. */
static cov_status load_model(crt_host *h, const crt_artifact *a) {
  if (a->onnx_blob < 0) return NULL;
#ifndef CRT_WITH_NPU
  (void)h;
  return crt_host_check(a);
#else
  cov_model_shape *shapes = calloc((size_t)a->n_inputs + 1, sizeof *shapes);
  if (!shapes) return cov_error(COV_OUT_OF_MEMORY, COV_AT_FILE(a->file), "out of memory");
  for (int i = 0; i < a->n_inputs; i++) {
    shapes[i].name = a->inputs[i].name, shapes[i].rank = a->inputs[i].rank;
    memcpy(shapes[i].dims, a->inputs[i].shape, sizeof shapes[i].dims);
  }
  cov_model_options mo = {.shapes = shapes, .n_shapes = (size_t)a->n_inputs};
  char name[600], e1[256];
  snprintf(name, sizeof name, "%s: blob '%s'", a->file, common_escape(a->blobs[a->onnx_blob].name, e1, sizeof e1));
  cov_status st = cov_model_load_buffer(crt_blob_data(a, a->onnx_blob), (size_t)a->blobs[a->onnx_blob].bytes, name,
                                        NULL, &mo, &h->model);
  free(shapes);
  return st;
#endif
}

static void put_buf(int *out, int max, int *n, int b) {
  if (b < 0) return;
  if (*n < max) out[*n] = b;
  (*n)++;
}

int crt_host_step_buffers(const crt_artifact *a, int s, int *out, int max, int *n_read) {
  const crt_step *x = &a->steps[s];
  int n = 0, lo = 0, hi = 0, mid = 0; /* refs[lo..mid) read, refs[mid..hi) written */
  if (x->op == CRT_STEP_HOST) {
    for (int k = 0; k + 1 < x->n_views; k++) put_buf(out, max, &n, x->views[k].buffer);
    *n_read = n;
    put_buf(out, max, &n, x->views[x->n_views - 1].buffer);
    return n;
  }
  hi = x->n_refs;
  if (x->op == CRT_STEP_COPY || x->op == CRT_STEP_IF) mid = 1;
  if (x->op == CRT_STEP_LOOP) mid = 2;
  if (x->op == CRT_STEP_PART) mid = x->n_in;
  if (x->op == CRT_STEP_NEXT) mid = hi; /* reads every pair, then writes them (below) */
  for (int k = lo; k < mid; k++) put_buf(out, max, &n, x->refs[k]);
  *n_read = n;
  for (int k = x->op == CRT_STEP_NEXT ? 1 : mid; k < hi; k++) put_buf(out, max, &n, x->refs[k]);
  return n;
}

cov_status crt_host_check(const crt_artifact *a) {
#ifndef CRT_WITH_NPU
  if (a->codelets_blob >= 0)
    return cov_error(COV_UNSUPPORTED, COV_AT(a->file, "codelets"), "host steps run codelets in the reference "
                     "interpreter, which this standalone runtime does not have (build the full tree's covenant-run)");
  if (a->onnx_blob >= 0)
    return cov_error(COV_UNSUPPORTED, COV_AT(a->file, "onnx"), "part steps run the model in the reference "
                     "interpreter, which this standalone runtime does not have (build the full tree's covenant-run)");
#else
  (void)a;
#endif
  return NULL;
}

int crt_part_fits(cov_dtype dt, int rank, const int64_t *shape, unsigned dynamic, const cov_tensor *t) {
  int fits = t->dtype == dt && t->rank == rank;
  for (int d = 0; fits && d < t->rank; d++)
    fits = dynamic >> d & 1u ? t->shape[d] <= shape[d] : t->shape[d] == shape[d];
  return fits;
}

void crt_host_set_max_dynamic(crt_host *h, uint64_t n) { h->max_dynamic = n; }

void crt_host_shape(const crt_host *h, const crt_artifact *a, int b, int *rank, int64_t *shape) {
  *rank = h ? h->rank[b] : a->buffers[b].rank;
  memcpy(shape, h ? h->shape[b] : a->buffers[b].shape, sizeof(int64_t) * COV_MAX_RANK);
}

cov_status crt_host_open(const crt_artifact *a, crt_host **out) {
  *out = NULL;
  crt_host *h = calloc(1, sizeof *h);
  size_t n = (size_t)a->n_steps + 1;
  uint64_t carry = 1;
  for (int s = 0; s < a->n_steps; s++)
    if (a->steps[s].op == CRT_STEP_NEXT) {
      uint64_t sum = 0;
          for (int k = 1; k + 1 < 1 + 2 * a->steps[s].n_carry; k += 2) sum += a->buffers[a->steps[s].refs[k]].bytes;
      if (sum > carry) carry = sum; /* at most CRT_MAX_ITEMS buffers of 2^40 bytes each: no wrap */
    }
  if (h) h->fns = calloc(n, sizeof *h->fns), h->count = calloc(n, sizeof *h->count), h->trip = calloc(n, sizeof *h->trip);
  if (h && carry <= CRT_MAX_BYTES) h->scratch = malloc((size_t)carry);
  size_t nb = (size_t)a->n_buffers + 1;
  if (h) h->rank = calloc(nb, sizeof *h->rank), h->shape = calloc(nb, sizeof *h->shape);
  for (int b = 0; h && h->rank && h->shape && b < a->n_buffers; b++)
    h->rank[b] = a->buffers[b].rank, memcpy(h->shape[b], a->buffers[b].shape, sizeof h->shape[b]);
  cov_status st = !h || !h->fns || !h->count || !h->trip || !h->scratch || !h->rank || !h->shape
                      ? cov_error(COV_OUT_OF_MEMORY, COV_AT_FILE(a->file), "out of memory (%" PRIu64 " bytes of carried values)", carry)
                      : load_codelets(h, a);
  if (!st) st = load_model(h, a);
  if (st) {
    crt_host_close(h);
    return st;
  }
  *out = h;
  return NULL;
}

void crt_host_close(crt_host *h) {
  if (!h) return;
#ifdef CRT_WITH_NPU
  cov_codelet_lib_free(h->lib);
  cov_model_free(h->model);
#endif
  free(h->fns), free(h->count), free(h->trip), free(h->scratch), free(h->rank), free(h->shape);
  free(h);
}

static void *at(const uint64_t *addr, int buffer) { return (void *)(uintptr_t)addr[buffer]; }

static cov_status run_host(crt_host *h, const crt_artifact *a, int s, const uint64_t *addr) {
#ifndef CRT_WITH_NPU
  (void)h, (void)addr;
  return step_error(a, s, COV_UNSUPPORTED, "no codelet interpreter in this runtime");
#else
  const crt_step *x = &a->steps[s];
  cov_tensor in[64], res = {0};
  cov_attr attrs[64];
  int n_in = x->n_views - 1;
  for (int k = 0; k < x->n_views; k++) {
    cov_tensor *t = k < n_in ? &in[k] : &res;
    memset(t, 0, sizeof *t);
    t->dtype = x->views[k].dtype, t->rank = x->views[k].rank;
    memcpy(t->shape, x->views[k].shape, sizeof t->shape);
    t->data = at(addr, x->views[k].buffer);
  }
  for (int k = 0; k < x->n_attrs; k++)
    attrs[k] = (cov_attr){x->attrs[k].name, x->attrs[k].is_float, x->attrs[k].i, x->attrs[k].f};
  cov_tensor got = {0};
  COV_RETURN_IF_ERROR(cov_codelet_run(h->fns[s], attrs, (size_t)x->n_attrs, in, (size_t)n_in, &got, 1));
  uint64_t bytes = a->buffers[x->views[n_in].buffer].bytes;
  int64_t numel = cov_tensor_numel(&got);
  cov_status st = NULL;
  if (got.dtype != res.dtype || numel < 0 || (uint64_t)numel * cov_dtype_size(got.dtype) != bytes)
    st = step_error(a, s, COV_INVALID_INPUT, "codelet '%s' made %s[%" PRId64 " elements]; its result buffer holds %" PRIu64
                    " bytes of %s", x->codelet, cov_dtype_name(got.dtype), numel, bytes, cov_dtype_name(res.dtype));
  else if (bytes)
    memcpy(res.data, got.data, (size_t)bytes);
  cov_tensor_release(&got);
  return st;
#endif
}

#ifdef CRT_WITH_NPU
/* Output k of part step s into its buffer: its dtype and rank, each dim
 * the buffer's, or at most its capacity where set at run time. */
static cov_status part_result(crt_host *h, const crt_artifact *a, int s, int k, const cov_tensor *t, void *dst) {
  const crt_step *x = &a->steps[s];
  int b = x->refs[k];
  const crt_buffer *buf = &a->buffers[b];
  if (!crt_part_fits(buf->dtype, buf->rank, buf->shape, buf->dynamic, t)) {
    char path[64], e1[256], got[160] = "", cap[160] = "";
    for (int d = 0, n = 0; d < t->rank && d < COV_MAX_RANK; d++)
      n += snprintf(got + n, sizeof got - (size_t)n, "%s%" PRId64, d ? ", " : "", t->shape[d]);
    for (int d = 0, n = 0; d < buf->rank; d++)
      n += snprintf(cap + n, sizeof cap - (size_t)n, "%s%" PRId64 "%s", d ? ", " : "", buf->shape[d],
                    buf->dynamic >> d & 1u ? " at most" : "");
    snprintf(path, sizeof path, "steps[%d].out[%d]", s, k - x->n_in);
    return cov_error(COV_OUT_OF_RANGE, COV_AT(a->file, path),
                     "value '%s' is %s[%s] in this run; its buffer %d holds %s[%s] (the capacity the compiler "
                     "derived): larger than its capacity",
                     common_escape(x->values[k], e1, sizeof e1), cov_dtype_name(t->dtype), got, b,
                     cov_dtype_name(buf->dtype), cap);
  }
  int64_t n = cov_tensor_numel(t);
  if (buf->dynamic && h->max_dynamic && (uint64_t)n > h->max_dynamic) {
    char path[64], e1[256];
    snprintf(path, sizeof path, "steps[%d].out[%d]", s, k - x->n_in);
    return cov_error(COV_OUT_OF_RANGE, COV_AT(a->file, path),
                     "value '%s' holds %" PRId64 " elements in this run, more than --max-dynamic %" PRIu64,
                     common_escape(x->values[k], e1, sizeof e1), n, h->max_dynamic);
  }
  if (n > 0) memcpy(dst, t->data, (size_t)n * cov_dtype_size(t->dtype));
  h->rank[b] = t->rank;
  memcpy(h->shape[b], t->shape, sizeof h->shape[b]);
  return NULL;
}
#endif

/* A part step: the model's values in its input buffers (at the shapes
 * they hold) make its outputs in the reference interpreter. */
static cov_status run_part(crt_host *h, const crt_artifact *a, int s, const uint64_t *addr) {
#ifndef CRT_WITH_NPU
  (void)h, (void)addr;
  return step_error(a, s, COV_UNSUPPORTED, "no reference interpreter in this runtime");
#else
  const crt_step *x = &a->steps[s];
  int n_out = x->n_refs - x->n_in;
  cov_tensor *t = calloc((size_t)x->n_refs + 1, sizeof *t);
  if (!t) return step_error(a, s, COV_OUT_OF_MEMORY, "out of memory");
  for (int k = 0; k < x->n_in; k++) {
    int b = x->refs[k];
    t[k].dtype = a->buffers[b].dtype, t[k].rank = h->rank[b], t[k].data = at(addr, b);
    memcpy(t[k].shape, h->shape[b], sizeof t[k].shape);
  }
  cov_model_part pt = {x->values, t, (size_t)x->n_in, x->values + x->n_in, t + x->n_in, (size_t)n_out};
  cov_status st = cov_model_run_part(h->model, &pt);
  if (st) {
    char path[64];
    snprintf(path, sizeof path, "steps[%d]", s);
    st = cov_status_annotate(st, "%s: %s: part step '%s': ", a->file, path, x->label);
  }
  for (int k = 0; k < n_out; k++) {
    if (!st) st = part_result(h, a, s, x->n_in + k, &t[x->n_in + k], at(addr, x->refs[x->n_in + k]));
    cov_tensor_release(&t[x->n_in + k]);
  }
  free(t);
  return st;
#endif
}

static int64_t rd_i64(const uint64_t *addr, int b) {
  int64_t v;
  memcpy(&v, at(addr, b), sizeof v);
  return v;
}

static int rd_bool(const uint64_t *addr, int b, int dflt) {
  return b < 0 ? dflt : *(const unsigned char *)at(addr, b) != 0;
}

/* Whether loop step l runs another iteration; if so its iteration number
 * and condition go into the body's inputs. */
static cov_status loop_enter(crt_host *h, const crt_artifact *a, int l, int cond, const uint64_t *addr, int *go) {
  const crt_step *x = &a->steps[l];
  *go = cond && (h->trip[l] < 0 || h->count[l] < h->trip[l]);
  if (!*go) return NULL;
  if (h->count[l] >= CRT_MAX_LOOP_ITERATIONS)
    return step_error(a, l, COV_OUT_OF_RANGE, "loop '%s' ran %d iterations and would run another: the limit is %d",
                      x->label, CRT_MAX_LOOP_ITERATIONS, CRT_MAX_LOOP_ITERATIONS);
  if (x->refs[2] >= 0) memcpy(at(addr, x->refs[2]), &h->count[l], sizeof h->count[l]);
  if (x->refs[3] >= 0) *(unsigned char *)at(addr, x->refs[3]) = 1;
  return NULL;
}

/* A next step: the carried values move (through scratch: a body may swap
 * two), then the loop goes round or ends. */
static cov_status loop_next(crt_host *h, const crt_artifact *a, int s, const uint64_t *addr, int *next) {
  const crt_step *x = &a->steps[s];
  int l = x->target, go = 0;
  uint64_t off = 0;
  int end = 1 + 2 * x->n_carry;
  for (int k = 1; k + 1 < end; k += 2) {
    uint64_t n = a->buffers[x->refs[k]].bytes;
    memcpy(h->scratch + off, at(addr, x->refs[k]), (size_t)n), off += n;
  }
  off = 0;
  for (int k = 1; k + 1 < end; k += 2) {
    uint64_t n = a->buffers[x->refs[k + 1]].bytes;
    memcpy(at(addr, x->refs[k + 1]), h->scratch + off, (size_t)n), off += n;
  }
  for (int k = end; k + 1 < x->n_refs; k += 2) { /* this iteration's row of each scan output */
    uint64_t n = a->buffers[x->refs[k]].bytes, all = a->buffers[x->refs[k + 1]].bytes;
    if ((uint64_t)h->count[l] >= all / n)
      return step_error(a, s, COV_OUT_OF_RANGE, "scan output '%s' holds %" PRIu64 " rows; the loop runs more iterations",
                        a->buffers[x->refs[k + 1]].name, all / n);
    memcpy((unsigned char *)at(addr, x->refs[k + 1]) + (size_t)h->count[l] * n, at(addr, x->refs[k]), (size_t)n);
  }
  h->count[l]++;
  COV_RETURN_IF_ERROR(loop_enter(h, a, l, rd_bool(addr, x->refs[0], 1), addr, &go));
  *next = go ? l + 1 : s + 1;
  return NULL;
}

cov_status crt_host_step(crt_host *h, const crt_artifact *a, int s, const uint64_t *addr, int *next) {
  const crt_step *x = &a->steps[s];
  *next = s + 1;
  switch (x->op) {
    case CRT_STEP_COPY:
      memmove(at(addr, x->refs[1]), at(addr, x->refs[0]), (size_t)a->buffers[x->refs[0]].bytes);
      return NULL;
    case CRT_STEP_HOST: return run_host(h, a, s, addr);
    case CRT_STEP_LOOP: {
      int go = 0;
      h->count[s] = 0;
      h->trip[s] = -1; /* none: the condition alone ends it */
      if (x->refs[0] >= 0) h->trip[s] = rd_i64(addr, x->refs[0]) < 0 ? 0 : rd_i64(addr, x->refs[0]);
      COV_RETURN_IF_ERROR(loop_enter(h, a, s, rd_bool(addr, x->refs[1], 1), addr, &go));
      if (!go) *next = x->target + 1;
      return NULL;
    }
    case CRT_STEP_NEXT: return loop_next(h, a, s, addr, next);
    case CRT_STEP_IF:
      if (!rd_bool(addr, x->refs[0], 0)) *next = x->target;
      return NULL;
    case CRT_STEP_JUMP: *next = x->target; return NULL;
    case CRT_STEP_PART: return run_part(h, a, s, addr);
    default: return step_error(a, s, COV_INTERNAL, "not a host step");
  }
}
