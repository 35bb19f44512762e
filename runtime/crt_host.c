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
#else /* the standalone runtime runs no host steps (they are npu-sim's): no interpreter */
typedef struct cov_codelet cov_codelet;
typedef struct cov_codelet_lib cov_codelet_lib;
#endif

struct crt_host {
  cov_codelet_lib *lib;
  const cov_codelet **fns; /* per step (host steps) */
  int64_t *count, *trip;   /* per loop step: iterations done, the trip count (-1: none) */
  unsigned char *scratch;  /* a next step's carried values on their way */
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
  return cov_error(COV_UNSUPPORTED, COV_AT(a->file, "codelets"),
                   "host steps run codelets in the reference interpreter, which this standalone runtime does not have");
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
  cov_status st = !h || !h->fns || !h->count || !h->trip || !h->scratch
                      ? cov_error(COV_OUT_OF_MEMORY, COV_AT_FILE(a->file), "out of memory (%" PRIu64 " bytes of carried values)", carry)
                      : load_codelets(h, a);
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
#endif
  free(h->fns), free(h->count), free(h->trip), free(h->scratch);
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
    default: return step_error(a, s, COV_INTERNAL, "not a host step");
  }
}
