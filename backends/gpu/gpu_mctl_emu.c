/* backends/gpu/gpu_mctl_emu.c: the CPU meaning of a compiled plan's host
 * steps and control (gpu_mplan.h: copy, loop, next, if, jump), as the
 * runtime runs them (runtime/crt_host.c): a loop reads its trip count
 * (i64) and condition (bool), writes the iteration number and condition
 * into the body's inputs and stops with an error after
 * GPU_MCTL_MAX_ITERATIONS; a next moves the carried values (through a
 * scratch copy: a body may swap two) and each scan slice into its row.
 * The emulation holds every buffer in its own dtype's bytes (16-bit
 * floats widened to f32: emu_bytes). A part step runs the model's part in
 * the reference interpreter (gpu_mpart_emulate), as the runtime does, its
 * outputs checked against their buffers' capacities. */
#include <stdlib.h>
#include <string.h>

#include "backends/gpu/gpu_mplan.h"
#include "backends/gpu/gpu_plan.h"
#include "runtime/crt.h"

enum { GPU_MCTL_MAX_ITERATIONS = 100000 }; /* the runtime's CRT_MAX_LOOP_ITERATIONS */

static size_t emu_bytes(const gpu_mbuf *b) {
  size_t es = b->dtype == COV_F16 || b->dtype == COV_BF16 ? 4 : cov_dtype_size(b->dtype);
  return (size_t)b->numel * es;
}

static int rd_bool(float **v, int b, int dflt) { return b < 0 ? dflt : *(const unsigned char *)v[b] != 0; }

static cov_status loop_enter(const gpu_model_plan *p, int l, int cond, float **v, int64_t *count, int64_t *trip,
                             int *go) {
  const gpu_mstep *x = &p->steps[l];
  *go = cond && (trip[l] < 0 || count[l] < trip[l]);
  if (!*go) return NULL;
  if (count[l] >= GPU_MCTL_MAX_ITERATIONS)
    return cov_error(COV_OUT_OF_RANGE, GPU_LOC(NULL, x->label),
                     "loop '%s' ran %d iterations and would run another: the limit is %d", x->label,
                     GPU_MCTL_MAX_ITERATIONS, GPU_MCTL_MAX_ITERATIONS);
  if (x->args[2] >= 0) memcpy(v[x->args[2]], &count[l], sizeof count[l]);
  if (x->args[3] >= 0) *(unsigned char *)v[x->args[3]] = 1;
  return NULL;
}

static cov_status loop_next(const gpu_model_plan *p, int s, float **v, int64_t *count, int64_t *trip, int *next) {
  const gpu_mstep *x = &p->steps[s];
  int l = x->target, end = 1 + 2 * x->n_carry, go = 0;
  size_t total = 1, off = 0;
  for (int k = 1; k + 1 < end; k += 2) total += emu_bytes(&p->bufs[x->args[k]]);
  unsigned char *scratch = malloc(total);
  if (!scratch) return cov_error(COV_OUT_OF_MEMORY, NULL, "out of memory");
  for (int k = 1; k + 1 < end; k += 2) {
    size_t n = emu_bytes(&p->bufs[x->args[k]]);
    memcpy(scratch + off, v[x->args[k]], n), off += n;
  }
  off = 0;
  for (int k = 1; k + 1 < end; k += 2) {
    size_t n = emu_bytes(&p->bufs[x->args[k + 1]]);
    memcpy(v[x->args[k + 1]], scratch + off, n), off += n;
  }
  free(scratch);
  for (int k = end; k + 1 < x->n_args; k += 2) { /* this iteration's row of each scan output */
    size_t n = emu_bytes(&p->bufs[x->args[k]]), all = emu_bytes(&p->bufs[x->args[k + 1]]);
    if (!n || (uint64_t)count[l] >= all / n)
      return cov_error(COV_OUT_OF_RANGE, GPU_LOC(NULL, x->label), "scan output '%s' holds %zu rows; the loop runs more "
                       "iterations", p->bufs[x->args[k + 1]].name, n ? all / n : 0);
    memcpy((unsigned char *)v[x->args[k + 1]] + (size_t)count[l] * n, v[x->args[k]], n);
  }
  count[l]++;
  COV_RETURN_IF_ERROR(loop_enter(p, l, rd_bool(v, x->args[0], 1), v, count, trip, &go));
  *next = go ? l + 1 : s + 1;
  return NULL;
}

cov_status gpu_mctl_emulate(const gpu_model_plan *p, int s, float **v, int64_t *count, int64_t *trip, int *next) {
  const gpu_mstep *x = &p->steps[s];
  *next = s + 1;
  int go = 0;
  switch (x->op) {
    case GPU_STEP_COPY: memmove(v[x->args[1]], v[x->args[0]], emu_bytes(&p->bufs[x->args[0]])); return NULL;
    case GPU_STEP_LOOP:
      count[s] = 0, trip[s] = -1; /* none: the condition alone ends it */
      if (x->args[0] >= 0) {
        int64_t n;
        memcpy(&n, v[x->args[0]], sizeof n);
        trip[s] = n < 0 ? 0 : n;
      }
      COV_RETURN_IF_ERROR(loop_enter(p, s, rd_bool(v, x->args[1], 1), v, count, trip, &go));
      if (!go) *next = x->target + 1;
      return NULL;
    case GPU_STEP_NEXT: return loop_next(p, s, v, count, trip, next);
    case GPU_STEP_IF:
      if (!rd_bool(v, x->args[0], 0)) *next = x->target;
      return NULL;
    case GPU_STEP_JUMP: *next = x->target; return NULL;
    default: return cov_error(COV_INTERNAL, GPU_LOC(NULL, x->label), "step %d is not a host step", s);
  }
}

/* Buffer b's value at shape (rank, shape) as a tensor in the buffer's
 * dtype: the emulation's bytes, or a 16-bit copy of its widened f32 in *own. */
static cov_status part_input(const gpu_mbuf *b, float *v, int rank, const int64_t *shape, cov_tensor *t, void **own) {
  memset(t, 0, sizeof *t);
  t->dtype = b->dtype, t->rank = rank;
  memcpy(t->shape, shape, sizeof t->shape);
  t->data = v;
  *own = NULL;
  if (b->dtype != COV_F16 && b->dtype != COV_BF16) return NULL;
  int64_t n = cov_tensor_numel(t);
  uint16_t *h = malloc((size_t)(n > 0 ? n : 0) * 2 + 1);
  if (!h) return cov_error(COV_OUT_OF_MEMORY, GPU_LOC(NULL, b->name), "out of memory");
  for (int64_t i = 0; i < n; i++) h[i] = b->dtype == COV_F16 ? cov_f32_to_f16(v[i]) : cov_f32_to_bf16(v[i]);
  t->data = *own = h;
  return NULL;
}

/* What the part made for buffer b, checked as the runtime checks it
 * (crt_part_fits); into v, 16-bit values widened. */
static cov_status part_output(const gpu_mstep *x, const gpu_mbuf *b, const cov_tensor *t, float *v) {
  if (!crt_part_fits(b->dtype, b->rank, b->shape, b->dynamic, t))
    return cov_error(COV_OUT_OF_RANGE, GPU_LOC(NULL, x->label),
                     "part step '%s': value '%s' is %s of rank %d with %lld elements in this run; its buffer holds "
                     "%s of rank %d, %lld elements at most (the capacity the compiler derived)",
                     x->label, b->name, cov_dtype_name(t->dtype), t->rank, (long long)cov_tensor_numel(t),
                     cov_dtype_name(b->dtype), b->rank, (long long)b->numel);
  int64_t n = cov_tensor_numel(t);
  for (int64_t i = 0; i < n && (b->dtype == COV_F16 || b->dtype == COV_BF16); i++) {
    uint16_t h = ((const uint16_t *)t->data)[i];
    v[i] = b->dtype == COV_F16 ? cov_f16_to_f32(h) : cov_bf16_to_f32(h);
  }
  if (b->dtype != COV_F16 && b->dtype != COV_BF16 && n > 0) memcpy(v, t->data, (size_t)n * cov_dtype_size(t->dtype));
  return NULL;
}

cov_status gpu_mpart_emulate(const gpu_model_plan *p, int s, float **v, int *rank, int64_t (*shape)[COV_MAX_RANK]) {
  const gpu_mstep *x = &p->steps[s];
  if (x->part < 0 || x->part >= p->n_parts || !p->model)
    return cov_error(COV_INTERNAL, GPU_LOC(NULL, x->label), "step %d is a part step without its part", s);
  const gpu_mpart *pt = &p->parts[x->part];
  cov_tensor *t = calloc((size_t)pt->n + 1, sizeof *t);
  void **own = calloc((size_t)pt->n + 1, sizeof *own);
  cov_status st = !t || !own ? cov_error(COV_OUT_OF_MEMORY, GPU_LOC(NULL, x->label), "out of memory") : NULL;
  for (int k = 0; k < pt->n_in && !st; k++) {
    int b = pt->bufs[k];
    st = part_input(&p->bufs[b], v[b], rank[b], shape[b], &t[k], &own[k]);
  }
  if (!st) {
    cov_model_part run = {(const char *const *)pt->values, t, (size_t)pt->n_in,
                          (const char *const *)pt->values + pt->n_in, t + pt->n_in, (size_t)(pt->n - pt->n_in)};
    st = cov_model_run_part(p->model, &run);
  }
  for (int k = pt->n_in; k < pt->n && !st; k++) {
    int b = pt->bufs[k];
    st = part_output(x, &p->bufs[b], &t[k], v[b]);
    if (!st) rank[b] = t[k].rank, memcpy(shape[b], t[k].shape, sizeof shape[b]);
  }
  for (int k = pt->n_in; t && k < pt->n; k++) cov_tensor_release(&t[k]);
  for (int k = 0; own && k < pt->n; k++) free(own[k]);
  free(t), free(own);
  return st;
}
