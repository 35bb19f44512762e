/* backends/gpu/gpu_mfuse_cat.c: a Concat along channels of channels-last
 * results, moved in their 16-bit forms (gpu_ms_fuse_concat, gpu_msteps.h).
 *
 * As lowered, a Concat is one f32 copy per input into its channel slice of
 * the f32 NCHW result; after gpu_mlayout.c an input a channels-last
 * convolution produced is first converted back to f32 NCHW (a launch),
 * and a result the next convolution reads is converted again (to NHWC f16
 * for a channels-last one, a whole-buffer f16 copy for the NCHW matrix
 * kernel). Here each input's copy reads the input's NHWC f16 form where
 * it has one (its conversion back goes when nothing else reads it) and
 * writes the form the result's one reader takes (that conversion goes);
 * a squeezenet fire module's expand convolutions then meet the next
 * squeeze convolution with two launches between them instead of five.
 * Every copy is checked element by element to be that channel slice.
 * Layout copies that alone write an f32 buffer read only by its f16
 * operand copy (a channel shuffle's) write that copy's buffer instead. */
#include <stdlib.h>
#include <string.h>

#include "backends/gpu/gpu_msteps.h"

/* A 4-d activation [N][C][H][W] in one of its forms: element (n, c, p) at
 * n * sn + c * sc + p * sp. */
typedef struct cat_form {
  int buf;
  int64_t sn, sc, sp;
} cat_form;

static cat_form nchw(int b, int64_t c, int64_t hw) { return (cat_form){b, c * hw, hw, 1}; }
static cat_form nhwc(int b, int64_t c, int64_t hw) { return (cat_form){b, c * hw, 1, c}; }

/* Whether copy step s moves the whole of its f32 source [n][ci][hw] into
 * channels [c0, c0 + ci) of z [n][ct][hw] (f32, as lowered); *c0 set. */
static int channel_slice(const gpu_model_plan *p, const gpu_mstep *s, int z, int64_t *c0) {
  const gpu_ew *e = &s->ew;
  const gpu_mbuf *y = &p->bufs[z], *x = s->args[0] >= 0 ? &p->bufs[s->args[0]] : NULL;
  if (s->op != GPU_STEP_LAUNCH || s->kkind != GPU_KERNEL_EW || e->kind != GPU_EW_COPY || s->args[2] != z || !x ||
      x->rank != 4 || y->rank != 4 || x->dtype != COV_F32 || e->in_dtype == COV_F16 || e->out_dtype != COV_F32 ||
      e->bias || e->also || e->mul_c || e->scale_hw || e->post != GPU_FN_NONE || gpu_ew_raw(e) ||
      x->shape[0] != y->shape[0] || x->shape[2] != y->shape[2] || x->shape[3] != y->shape[3] || e->n != x->numel)
    return 0;
  int64_t hw = y->shape[2] * y->shape[3], ci = x->shape[1], ct = y->shape[1];
  if (hw <= 0 || ci <= 0 || e->d0 % hw || e->d0 / hw + ci > ct) return 0;
  *c0 = e->d0 / hw;
  for (int64_t i = 0; i < e->n; i++) { /* bounded: the copy's own elements */
    int64_t src, dst, n = i / (ci * hw), c = i / hw % ci, px = i % hw;
    gpu_ew_copy_at(e, i, &src, &dst);
    if (src != i || dst != (n * ct + *c0 + c) * hw + px) return 0;
  }
  return 1;
}

/* The form the copies into z write: the NHWC f16 conversion or the f16
 * operand copy that is z's only reader (that step in *r), else z itself. */
static cat_form target(const gpu_model_plan *p, const char *del, int z, const int *is_cat, int *r) {
  const gpu_mbuf *y = &p->bufs[z];
  int64_t ct = y->shape[1], hw = y->shape[2] * y->shape[3];
  *r = -1;
  int reader = -1, n = 0;
  for (int j = 0; j < p->n_steps; j++) {
    const gpu_mstep *s = &p->steps[j];
    if (del[j] || is_cat[j]) continue;
    int use = s->op == GPU_STEP_FILL && s->fill_buf == z;
    for (int k = 0; s->op == GPU_STEP_LAUNCH && k < s->n_args; k++) use |= s->args[k] == z;
    if (use) n++, reader = j;
  }
  if (n != 1 || y->kind != GPU_BUF_INTERMEDIATE) return nchw(z, ct, hw);
  const gpu_mstep *s = &p->steps[reader];
  if (gpu_ms_to_nhwc(p, s, z)) return *r = reader, nhwc(s->args[2], ct, hw);
  if (gpu_ms_f16_copy_from(p, del, z, -1) == reader) return *r = reader, nchw(s->args[2], ct, hw);
  return nchw(z, ct, hw);
}

/* The NHWC f16 form of copy source x: the channels-last result that a
 * plain conversion back (step *v, x's only other user) writes x from. */
static int nhwc_source(const gpu_model_plan *p, const char *del, int x, int cat, int *v) {
  int w = -1;
  *v = -1;
  if (p->bufs[x].kind != GPU_BUF_INTERMEDIATE || gpu_ms_users(p, del, x, cat, &w) != 1) return -1;
  const gpu_mstep *s = &p->steps[w];
  const gpu_ew *e = &s->ew;
  const gpu_mbuf *b = &p->bufs[x];
  if (s->op != GPU_STEP_LAUNCH || s->kkind != GPU_KERNEL_EW || e->kind != GPU_EW_COPY || s->args[2] != x ||
      e->in_dtype != COV_F16 || e->out_dtype != COV_F32 || e->bias || e->also || e->mul_c || e->scale_hw ||
      e->post != GPU_FN_NONE || e->run != 1 || e->s0 || e->d0 || e->n != b->numel || w > cat)
    return -1;
  int64_t c = b->shape[1], hw = b->shape[2] * b->shape[3];
  const int64_t rep[3] = {hw, c, b->shape[0]}, ss[3] = {c, 1, c * hw}, ds[3] = {1, hw, c * hw};
  for (int l = 0; l < GPU_COPY_LEVELS; l++)
    if (e->rep[l] != rep[l] || e->ss[l] != ss[l] || e->ds[l] != ds[l]) return -1;
  return *v = w, s->args[0];
}

/* Copy step s rewritten to move its source's form `from` into channels
 * [c0, c0 + ci) of form `to`, destination-contiguous axis innermost. */
static void recast(gpu_mstep *s, const gpu_model_plan *p, cat_form from, cat_form to, int64_t c0, int to_f16,
                   int from_f16) {
  const gpu_mbuf *x = &p->bufs[s->args[0]];
  int64_t n = x->shape[0], ci = x->shape[1], hw = x->shape[2] * x->shape[3];
  gpu_ew *e = &s->ew;
  e->run = 1, e->s0 = 0, e->d0 = c0 * to.sc;
  int c_in = to.sc == 1; /* channels innermost where they are contiguous in the destination */
  e->rep[0] = c_in ? ci : hw, e->ss[0] = c_in ? from.sc : from.sp, e->ds[0] = c_in ? to.sc : to.sp;
  e->rep[1] = c_in ? hw : ci, e->ss[1] = c_in ? from.sp : from.sc, e->ds[1] = c_in ? to.sp : to.sc;
  e->rep[2] = n, e->ss[2] = from.sn, e->ds[2] = to.sn;
  e->in_dtype = from_f16 ? COV_F16 : COV_DTYPE_INVALID;
  e->out_dtype = to_f16 ? COV_F16 : COV_F32;
  s->args[0] = from.buf, s->args[2] = to.buf;
}

/* The Concat writing f32 NCHW buffer z with copies (is_cat: the steps);
 * returns whether it changed anything. */
static int fuse_cat(gpu_model_plan *p, char *del, int z, const int *is_cat) {
  int r;
  cat_form to = target(p, del, z, is_cat, &r);
  int changed = r >= 0;
  for (int j = 0; j < p->n_steps; j++) {
    if (!is_cat[j]) continue;
    gpu_mstep *s = &p->steps[j];
    int64_t c0 = s->ew.d0 / (p->bufs[z].shape[2] * p->bufs[z].shape[3]);
    int x = s->args[0], v, h = nhwc_source(p, del, x, j, &v);
    int64_t ci = p->bufs[x].shape[1], hw = p->bufs[x].shape[2] * p->bufs[x].shape[3];
    cat_form from = h >= 0 ? nhwc(h, ci, hw) : nchw(x, ci, hw);
    if (h < 0 && r < 0) continue; /* as it was */
    recast(s, p, from, to, c0, r >= 0, h >= 0);
    if (v >= 0) del[v] = 1;
    changed = 1;
  }
  if (r >= 0) del[r] = 1, gpu_ms_drop_fills(p, del, z);
  return changed;
}

/* Whether the copies writing z cover its channels exactly, each a whole
 * source's channel slice; marks them in is_cat. */
static int concat_copies(const gpu_model_plan *p, const char *del, int z, int *is_cat) {
  int64_t covered = 0, c0;
  int n = 0;
  for (int j = 0; j < p->n_steps; j++) is_cat[j] = 0;
  for (int j = 0; j < p->n_steps; j++) {
    const gpu_mstep *s = &p->steps[j];
    if (del[j] || s->op != GPU_STEP_LAUNCH || !gpu_ms_writes(s, z)) continue;
    if (!channel_slice(p, s, z, &c0)) return 0;
    is_cat[j] = 1, n++, covered += p->bufs[s->args[0]].shape[1];
  }
  /* slices checked in range; equal total and no overlap: exact cover */
  for (int j = 0; j < p->n_steps; j++)
    for (int k = j + 1; k < p->n_steps && is_cat[j]; k++) {
      if (!is_cat[k]) continue;
      int64_t hw = p->bufs[z].shape[2] * p->bufs[z].shape[3], a = p->steps[j].ew.d0 / hw, b = p->steps[k].ew.d0 / hw;
      if (a < b + p->bufs[p->steps[k].args[0]].shape[1] && b < a + p->bufs[p->steps[j].args[0]].shape[1]) return 0;
    }
  return n >= 2 && covered == p->bufs[z].shape[1];
}

/* Whether step s is a plain f32 copy (a layout copy as lowered) writing z. */
static int plain_copy_into(const gpu_model_plan *p, const gpu_mstep *s, int z) {
  const gpu_ew *e = &s->ew;
  return s->op == GPU_STEP_LAUNCH && s->kkind == GPU_KERNEL_EW && e->kind == GPU_EW_COPY && s->args[2] == z &&
         s->args[0] >= 0 && s->args[0] != z && p->bufs[s->args[0]].dtype == COV_F32 && e->in_dtype != COV_F16 &&
         e->out_dtype == COV_F32 && !e->bias && !e->also && !e->mul_c && !e->scale_hw && e->post == GPU_FN_NONE &&
         !gpu_ew_raw(e);
}

/* f32 buffer z written by layout copies alone (a Concat, a channel
 * shuffle: each element exactly once, checked on a map of z's elements)
 * and read only by its whole-buffer f16 copy: the copies write that
 * buffer (same runs, f16 out) and the f16 copy goes. */
static int retarget(gpu_model_plan *p, char *del, int z, char *seen) {
  int r = gpu_ms_f16_copy_from(p, del, z, -1), w = -1;
  if (r < 0) return 0;
  int64_t n = p->bufs[z].numel, moved = 0;
  for (int j = 0; j < p->n_steps; j++) {
    const gpu_mstep *s = &p->steps[j];
    if (del[j] || j == r) continue;
    int use = s->op == GPU_STEP_FILL && s->fill_buf == z;
    for (int k = 0; s->op == GPU_STEP_LAUNCH && k < s->n_args; k++) use |= s->args[k] == z;
    if (!use) continue;
    if (!plain_copy_into(p, s, z) || j > r) return 0;
    moved += s->ew.n, w = j;
  }
  if (w < 0 || moved != n) return 0;
  memset(seen, 0, (size_t)n);
  for (int j = 0; j < p->n_steps; j++) {
    const gpu_mstep *s = &p->steps[j];
    if (del[j] || j == r || !plain_copy_into(p, s, z)) continue;
    for (int64_t i = 0; i < s->ew.n; i++) {
      int64_t src, dst;
      gpu_ew_copy_at(&s->ew, i, &src, &dst);
      if (dst < 0 || dst >= n || seen[dst]) return 0;
      seen[dst] = 1;
    }
  }
  for (int j = 0; j < p->n_steps; j++)
    if (!del[j] && j != r && plain_copy_into(p, &p->steps[j], z))
      p->steps[j].ew.out_dtype = COV_F16, p->steps[j].args[2] = p->steps[r].args[2];
  del[r] = 1;
  return 1;
}

int gpu_ms_fuse_concat(gpu_model_plan *p, char *del, int *scratch) {
  int any = 0;
  int64_t most = 0;
  for (int z = 0; z < p->n_bufs; z++) {
    const gpu_mbuf *b = &p->bufs[z];
    if (b->kind != GPU_BUF_INTERMEDIATE || b->dtype != COV_F32) continue;
    if (b->rank == 4 && concat_copies(p, del, z, scratch)) any |= fuse_cat(p, del, z, scratch);
    most = b->numel > most ? b->numel : most;
  }
  char *seen = malloc((size_t)most + 1);
  if (!seen) return -1;
  for (int z = 0; z < p->n_bufs; z++)
    if (p->bufs[z].kind == GPU_BUF_INTERMEDIATE && p->bufs[z].dtype == COV_F32) any |= retarget(p, del, z, seen);
  free(seen);
  return any;
}
