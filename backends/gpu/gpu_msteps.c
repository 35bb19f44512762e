/* backends/gpu/gpu_msteps.c: queries and edits of a compiled model's steps
 * shared by the plan-level passes (gpu_msteps.h). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backends/gpu/gpu_msteps.h"
#include "common/grow.h"

int gpu_ms_add_buf(gpu_model_plan *p, const char *name, gpu_buf_kind kind, cov_dtype dt, int rank, const int64_t *shape,
                   cov_status *st) {
  /* shape and name may point into p->bufs (another buffer's), which
   * common_grow may move: take both before growing */
  int64_t dims[COV_MAX_RANK];
  char nm[sizeof p->bufs[0].name];
  if (rank < 0 || rank > COV_MAX_RANK) {
    *st = cov_error(COV_INTERNAL, GPU_LOC(NULL, name), "buffer '%s' has rank %d", name, rank);
    return -1;
  }
  for (int d = 0; d < rank; d++) dims[d] = shape[d];
  snprintf(nm, sizeof nm, "%s", name);
  *st = common_grow((void **)&p->bufs, &p->cap_bufs, p->n_bufs + 1, sizeof *p->bufs, 32, "compiling the model");
  if (*st) return -1;
  gpu_mbuf *b = &p->bufs[p->n_bufs];
  memset(b, 0, sizeof *b);
  memcpy(b->name, nm, sizeof b->name);
  b->kind = kind, b->dtype = dt, b->rank = rank, b->numel = 1, b->io = -1;
  for (int d = 0; d < rank; d++) b->shape[d] = dims[d], b->numel *= dims[d];
  return p->n_bufs++;
}

gpu_mstep *gpu_ms_add_step(gpu_model_plan *p, int group, const char *label, cov_status *st) {
  char nm[sizeof p->steps->label]; /* copied first: label may point into the steps that grow moves */
  snprintf(nm, sizeof nm, "%s", label);
  *st = common_grow((void **)&p->steps, &p->cap_steps, p->n_steps + 1, sizeof *p->steps, 32, "compiling the model");
  if (*st) return NULL;
  gpu_mstep *s = &p->steps[p->n_steps++];
  memset(s, 0, sizeof *s);
  s->group = group, s->module = -1, s->fill_buf = -1, s->n_args = 4;
  memcpy(s->label, nm, sizeof s->label);
  for (int i = 0; i < GPU_CDL_MAX_ARGS; i++) s->args[i] = -1;
  for (int d = 0; d < 3; d++) s->grid[d] = s->block[d] = 1;
  return s;
}

int gpu_ms_users(const gpu_model_plan *p, const char *del, int b, int skip, int *who) {
  int n = 0;
  for (int j = 0; j < p->n_steps; j++) {
    const gpu_mstep *s = &p->steps[j];
    if (j == skip || j == -1 - skip || del[j] || (skip < 0 && s->op == GPU_STEP_FILL)) continue;
    int use = s->op == GPU_STEP_FILL && s->fill_buf == b;
    for (int k = 0; s->op == GPU_STEP_LAUNCH && k < s->n_args; k++) use |= s->args[k] == b;
    if (use) n++, *who = j;
  }
  return n;
}

int gpu_ms_writes(const gpu_mstep *s, int b) {
  if (s->op == GPU_STEP_FILL) return s->fill_buf == b;
  if (s->kkind == GPU_KERNEL_EW && s->ew.kind == GPU_EW_CODELET) {
    for (int k = s->ew.cdl.n_in; k < s->n_args; k++)
      if (s->args[k] == b) return 1;
    return 0;
  }
  /* the other kernels write argument 2; a copy's NHWC second store, 1 */
  return s->args[2] == b || (s->kkind == GPU_KERNEL_EW && s->ew.kind == GPU_EW_COPY && s->ew.also && s->args[1] == b);
}

int gpu_ms_is_codelet(const gpu_mstep *s, const char *name) {
  return s->op == GPU_STEP_LAUNCH && s->kkind == GPU_KERNEL_EW && s->ew.kind == GPU_EW_CODELET &&
         !strcmp(cov_codelet_name(s->ew.cdl.c), name);
}

void gpu_ms_drop_fills(const gpu_model_plan *p, char *del, int b) {
  for (int j = 0; j < p->n_steps; j++)
    if (p->steps[j].op == GPU_STEP_FILL && p->steps[j].fill_buf == b) del[j] = 1;
}

int gpu_ms_activation(const gpu_mstep *s, gpu_ew *e) {
  if (s->op != GPU_STEP_LAUNCH || s->kkind != GPU_KERNEL_EW || s->ew.kind != GPU_EW_CODELET || s->ew.cdl.n_in != 1 ||
      s->n_args != 2)
    return 0;
  const char *name = cov_codelet_name(s->ew.cdl.c);
  gpu_ew_fn f = gpu_unary_fn(name);
  if (f == GPU_FN_NONE) return 0;
  e->post = f, e->post0 = 0, e->post1 = 0;
  if (!strcmp(name, "relu6")) e->post1 = 6;
  else if (f == GPU_FN_CLIP) e->post0 = -INFINITY, e->post1 = INFINITY;
  else if (f == GPU_FN_HSIGMOID) e->post0 = 0.2f, e->post1 = 0.5f; /* ONNX's defaults */
  for (int a = 0; a < s->ew.cdl.n_attrs && (f == GPU_FN_CLIP || f == GPU_FN_HSIGMOID); a++) {
    const cov_attr *t = &s->ew.cdl.attrs[a];
    float v = t->is_float ? (float)t->f : (float)t->i;
    if (!strcmp(t->name, f == GPU_FN_CLIP ? "lo" : "alpha")) e->post0 = v;
    else if (!strcmp(t->name, f == GPU_FN_CLIP ? "hi" : "beta")) e->post1 = v;
  }
  return 1;
}

int gpu_ms_scalar(const gpu_model_plan *p, int b, double v) {
  const gpu_mbuf *c = &p->bufs[b];
  if (c->kind != GPU_BUF_WEIGHT || c->dtype != COV_F32 || c->numel != 1 || !c->data) return 0;
  float f;
  memcpy(&f, c->data, sizeof f);
  return fabs((double)f - v) <= 1e-6 * fabs(v);
}

int gpu_ms_f16_copy_from(const gpu_model_plan *p, const char *del, int b, int after) {
  for (int j = after + 1; j < p->n_steps; j++) {
    const gpu_mstep *s = &p->steps[j];
    const gpu_ew *e = &s->ew;
    if (del[j] || s->op != GPU_STEP_LAUNCH || s->kkind != GPU_KERNEL_EW || s->args[0] != b) continue;
    if (e->kind == GPU_EW_COPY && e->out_dtype == COV_F16 && e->in_dtype != COV_F16 && !e->run && !e->s0 && !e->d0 &&
        !e->bias && !e->also && !e->mul_c && !e->scale_hw && e->post == GPU_FN_NONE && e->n == p->bufs[b].numel)
      return j;
  }
  return -1;
}

/* Whether copy e's levels are exactly (rep, ss, ds): an NCHW <-> NHWC
 * transform of one buffer. */
static int copy_levels_are(const gpu_ew *e, const int64_t *rep, const int64_t *ss, const int64_t *ds) {
  for (int l = 0; l < GPU_COPY_LEVELS; l++)
    if (e->rep[l] != rep[l] || e->ss[l] != ss[l] || e->ds[l] != ds[l]) return 0;
  return 1;
}

int gpu_ms_reads_nhwc_as(const gpu_model_plan *p, const gpu_ew *e, int b) {
  const gpu_mbuf *y = &p->bufs[b];
  if (e->kind != GPU_EW_COPY || e->in_dtype != COV_F16 || y->rank != 4 || e->n != y->numel || e->run != 1 || e->s0 ||
      e->d0)
    return 0;
  int64_t c = y->shape[1], hw = y->shape[2] * y->shape[3];
  const int64_t rep[3] = {hw, c, y->shape[0]}, ss[3] = {c, 1, c * hw}, ds[3] = {1, hw, c * hw};
  return copy_levels_are(e, rep, ss, ds);
}

int gpu_ms_to_nhwc(const gpu_model_plan *p, const gpu_mstep *s, int b) {
  const gpu_mbuf *x = &p->bufs[b];
  const gpu_ew *e = &s->ew;
  if (s->op != GPU_STEP_LAUNCH || s->kkind != GPU_KERNEL_EW || e->kind != GPU_EW_COPY || s->args[0] != b ||
      e->in_dtype == COV_F16 || e->out_dtype != COV_F16 || e->bias || e->also || e->mul_c || e->scale_hw || e->post != GPU_FN_NONE || x->rank != 4 ||
      e->n != x->numel || e->run != 1 || e->s0 || e->d0)
    return 0;
  int64_t c = x->shape[1], hw = x->shape[2] * x->shape[3];
  const int64_t rep[3] = {c, hw, x->shape[0]}, ss[3] = {hw, 1, c * hw}, ds[3] = {1, c, c * hw};
  return copy_levels_are(e, rep, ss, ds);
}

gpu_mstep gpu_ms_fused_copy(const gpu_model_plan *p, const gpu_mstep *at, int x, int z, const char *suffix) {
  gpu_mstep f = *at;
  memset(&f.ew, 0, sizeof f.ew); /* kernels compare bytewise */
  f.kkind = GPU_KERNEL_EW;
  f.ew.kind = GPU_EW_COPY, f.ew.out_dtype = COV_F32, f.ew.n = p->bufs[x].numel;
  for (int l = 0; l < GPU_COPY_LEVELS; l++) f.ew.rep[l] = 1;
  snprintf(f.kernel, sizeof f.kernel, "%.150s%s", at->kernel, suffix);
  for (int a = 0; a < GPU_CDL_MAX_ARGS; a++) f.args[a] = -1;
  f.n_args = 4, f.args[0] = x, f.args[2] = z;
  gpu_ew_grid(&f.ew, f.grid);
  f.block[0] = GPU_EW_THREADS, f.block[1] = f.block[2] = 1, f.shared_bytes = 0;
  return f;
}

void gpu_ms_replace(gpu_model_plan *p, char *del, int i, int m, gpu_mstep *f) {
  int z = f->args[2];
  gpu_ms_drop_fills(p, del, z);
  int c = -1, h = p->bufs[z].kind == GPU_BUF_INTERMEDIATE ? gpu_ms_f16_copy_from(p, del, z, m) : -1;
  if (h >= 0 && gpu_ms_users(p, del, z, m, &c) == 1 && c == h) {
    f->ew.out_dtype = COV_F16, f->args[2] = p->steps[h].args[2];
    del[h] = 1;
  }
  if (i != m) del[i] = 1;
  p->steps[m] = *f;
}

void gpu_ms_compact(gpu_model_plan *p, const char *del) {
  int n = 0;
  for (int i = 0; i < p->n_steps; i++)
    if (!del[i]) p->steps[n++] = p->steps[i];
  p->n_steps = n;
}

/* Whether weight b is read by codelet kernels alone, one at least (no
 * later pass rewrites their weights, as the channels-last pass reorders a
 * convolution's). */
static int codelet_weight(const gpu_model_plan *p, int b) {
  int users = 0;
  for (int i = 0; i < p->n_steps; i++) {
    const gpu_mstep *s = &p->steps[i];
    for (int a = 0; s->op == GPU_STEP_LAUNCH && a < s->n_args; a++) {
      if (s->args[a] != b) continue;
      if (s->kkind != GPU_KERNEL_EW || s->ew.kind != GPU_EW_CODELET) return 0;
      users++;
    }
  }
  return users > 0;
}

/* A codelet kernel's weight made earlier for the same model constant (its
 * name, dtype and elements: the recurrent weights every step of a layer
 * reads), or -1. */
int gpu_ms_same_weight(const gpu_model_plan *p, const char *name, const cov_tensor *t) {
  int64_t n = cov_tensor_numel(t);
  for (int b = 0; b < p->n_bufs; b++) {
    const gpu_mbuf *w = &p->bufs[b];
    if (w->kind == GPU_BUF_WEIGHT && w->dtype == t->dtype && w->numel == n && w->data && t->data &&
        !strcmp(w->name, name) && !memcmp(w->data, t->data, (size_t)n * cov_dtype_size(t->dtype)) &&
        codelet_weight(p, b))
      return b;
  }
  return -1;
}
