/* backends/gpu/gpu_mfuse_ln.c: a LayerNorm over the channels of an NCHW
 * activation as one kernel (gpu_ms_fuse_lnorm, called by gpu_model_fuse).
 *
 * ConvNeXt's LayerNorm over channels is exported as Transpose to NHWC,
 * LayerNormalization over the last axis, Transpose back: as lowered, a copy
 * to NHWC, a fill, the codelet's kernel (a thread per row of C), a copy
 * back (once per reader group: the stem's result is copied back twice),
 * and an f16 copy where a matrix kernel reads it. It becomes one
 * GPU_EW_LNORM launch reading the NCHW activation in place: a few lanes
 * per pixel split the channels, a workgroup's threads pixel-major so a
 * warp reads neighbouring pixels of a channel (coalesced), f32 statistics
 * in two passes as the codelet takes them, summed over the lanes in a
 * fixed order (gpu_lnorm.h). Its result is stored NCHW f32, or, where that is
 * read only by the next matrix kernel's f16 operand copy or by its
 * channels-last conversion (gpu_mlayout.c), as that copy's f16 NCHW or
 * NHWC buffer directly. Every copy is checked element by element to be
 * the transpose, so any other layout is left alone. */
#include <stdlib.h>
#include <string.h>

#include "backends/gpu/gpu_lnorm.h"
#include "backends/gpu/gpu_msteps.h"

/* Whether step s is a plain f32 copy moving [nb][c][hw] to [nb][hw][c]
 * (back: the reverse), every element once. */
static int permutes(const gpu_mstep *s, int64_t nb, int64_t c, int64_t hw, int back) {
  const gpu_ew *e = &s->ew;
  if (s->op != GPU_STEP_LAUNCH || s->kkind != GPU_KERNEL_EW || e->kind != GPU_EW_COPY || e->in_dtype == COV_F16 ||
      e->out_dtype != COV_F32 || e->bias || e->also || e->mul_c || e->scale_hw || e->post != GPU_FN_NONE ||
      e->n != nb * c * hw || gpu_ew_raw(e))
    return 0;
  char *seen = calloc((size_t)e->n, 1);
  int ok = seen != NULL;
  for (int64_t i = 0; i < e->n && ok; i++) {
    int64_t src, dst;
    gpu_ew_copy_at(e, i, &src, &dst);
    int64_t cl = back ? src : dst, cf = back ? dst : src; /* channels-last, channels-first */
    ok = cl >= 0 && cl < e->n && !seen[cl] && cf == (cl / c / hw * c + cl % c) * hw + cl / c % hw;
    if (ok) seen[cl] = 1;
  }
  free(seen);
  return ok;
}

/* Whether buffer b is written by a step not marked in mine (nor deleted). */
static int written_elsewhere(const gpu_model_plan *p, const char *del, const char *mine, int b) {
  for (int j = 0; j < p->n_steps; j++)
    if (!del[j] && !mine[j] && gpu_ms_writes(&p->steps[j], b)) return 1;
  return 0;
}

/* The readers of u other than step L, all copies back to NCHW f32
 * buffers: the first one's buffer y, the copies marked in del and the
 * readers of the others' buffers (intermediates nothing else writes: the
 * frontend copies the stem's LayerNorm back once per consumer group) made
 * to read y; -1, and nothing changed, if any reader is something else. */
static int copies_back(gpu_model_plan *p, char *del, int L, int u, int64_t nb, int64_t c, int64_t hw) {
  int y = -1, n = 0;
  char *mine = calloc((size_t)p->n_steps + 1, 1);
  if (!mine) return -1;
  for (int j = 0; j < p->n_steps && n >= 0; j++) {
    const gpu_mstep *s = &p->steps[j];
    int use = 0;
    for (int k = 0; s->op == GPU_STEP_LAUNCH && k < s->n_args; k++) use |= s->args[k] == u;
    if (j == L || del[j] || !use) continue;
    int d = s->args[2];
    if (s->args[0] != u || !permutes(s, nb, c, hw, 1) || p->bufs[d].dtype != COV_F32 ||
        (y >= 0 && d != y && p->bufs[d].kind != GPU_BUF_INTERMEDIATE))
      n = -1;
    else
      y = y < 0 ? d : y, mine[j] = 1, n++;
  }
  for (int j = 0; j < p->n_steps && n > 0; j++)
    if (mine[j] && written_elsewhere(p, del, mine, p->steps[j].args[2])) n = -1;
  for (int j = 0; j < p->n_steps && n > 0; j++) {
    if (!mine[j]) continue;
    int d = p->steps[j].args[2];
    del[j] = 1;
    if (d == y) continue;
    gpu_ms_drop_fills(p, del, d);
    for (int i = 0; i < p->n_steps; i++)
      for (int k = 0; p->steps[i].op == GPU_STEP_LAUNCH && k < p->steps[i].n_args; k++)
        if (p->steps[i].args[k] == d) p->steps[i].args[k] = y;
  }
  free(mine);
  return n > 0 ? y : -1;
}

static float epsilon(const gpu_cdl_call *k) {
  for (int a = 0; a < k->n_attrs; a++)
    if (!strcmp(k->attrs[a].name, "epsilon")) return k->attrs[a].is_float ? (float)k->attrs[a].f : (float)k->attrs[a].i;
  return 1e-5f;
}

/* Whether step r is a copy moving whole rows of y that f normalises
 * (W == 1; a seq-first transformer's operand), to f16 or to an f32
 * buffer that only its f16 operand copy reads: f then stores its rows
 * there, f16; the buffer in *out, the f16 copy after r in *h (-1: none). */
static int rows_copy(const gpu_model_plan *p, const char *del, int r, int y, gpu_mstep *f, int *out, int *h) {
  const gpu_mstep *c = &p->steps[r];
  const gpu_ew *e = &c->ew;
  int64_t fit[3];
  int z = c->args[2], u = -1;
  if (f->ew.W != 1 || c->op != GPU_STEP_LAUNCH || c->kkind != GPU_KERNEL_EW || e->kind != GPU_EW_COPY ||
      c->args[0] != y || c->args[1] >= 0 || c->args[3] >= 0 || z < 0 || e->in_dtype == COV_F16 || e->bias ||
      e->also || e->mul_c || e->scale_hw || e->post != GPU_FN_NONE || p->bufs[z].numel != p->bufs[y].numel)
    return 0;
  *h = -1, *out = z;
  if (e->out_dtype != COV_F16) {
    if (e->out_dtype != COV_F32 || p->bufs[z].kind != GPU_BUF_INTERMEDIATE || gpu_ms_users(p, del, z, r, &u) != 1 ||
        gpu_ms_f16_copy_from(p, del, z, r) != u)
      return 0;
    *h = u, *out = p->steps[u].args[2];
  }
  if (!gpu_ms_fit_rows(e, f->ew.N, f->ew.C, fit)) return 0;
  f->ew.rq = fit[0], f->ew.r0 = fit[1], f->ew.r1 = fit[2];
  return 1;
}

/* Where f32 y has other readers besides one whole f16 operand copy (a
 * post-LN transformer: y is the residual too), f stores that copy's
 * buffer as well (ew.dual, argument 4) and the copy goes. */
static void dual_store(gpu_model_plan *p, char *del, int L, int y, gpu_mstep *f) {
  int r = gpu_ms_f16_copy_from(p, del, y, L);
  if (r < 0 || f->ew.also || f->ew.rq || f->ew.out_dtype != COV_F32) return;
  for (int j = 0; j < p->n_steps; j++)
    if (!del[j] && j != L && gpu_ms_writes(&p->steps[j], y)) return;
  int h = p->steps[r].args[2], w = -1;
  if (h < 0 || p->bufs[h].kind != GPU_BUF_INTERMEDIATE || p->bufs[h].numel != p->bufs[y].numel ||
      gpu_ms_users(p, del, h, r, &w) < 1 || w < r)
    return;
  for (int j = 0; j < p->n_steps; j++)
    if (!del[j] && j != r && gpu_ms_writes(&p->steps[j], h)) return;
  f->ew.dual = 1, f->args[4] = h, f->n_args = 5;
  del[r] = 1;
  /* the f16 copies of y for later matmuls (one per reader as lowered):
   * their readers read h */
  for (int c = gpu_ms_f16_copy_from(p, del, y, r); c >= 0; c = gpu_ms_f16_copy_from(p, del, y, c)) {
    int h2 = p->steps[c].args[2], writers = 0;
    if (h2 < 0 || p->bufs[h2].kind != GPU_BUF_INTERMEDIATE || p->bufs[h2].numel != p->bufs[h].numel) continue;
    for (int j = 0; j < p->n_steps; j++) writers += !del[j] && gpu_ms_writes(&p->steps[j], h2);
    if (writers != 1) continue;
    for (int j = c + 1; j < p->n_steps; j++)
      for (int a = 0; !del[j] && p->steps[j].op == GPU_STEP_LAUNCH && a < p->steps[j].n_args; a++)
        if (p->steps[j].args[a] == h2) p->steps[j].args[a] = h;
    del[c] = 1;
  }
}

/* Where y is read only by a whole f16 operand copy, a conversion to NHWC
 * f16 or a copy moving its rows into an f16 operand, f writes that buffer
 * instead. */
static void store_f16(gpu_model_plan *p, char *del, int L, int y, gpu_mstep *f) {
  int r = -1, out = -1, h = -1;
  if (p->bufs[y].kind != GPU_BUF_INTERMEDIATE) return;
  if (gpu_ms_users(p, del, y, L, &r) > 1) {
    dual_store(p, del, L, y, f);
    return;
  }
  if (r < L) return;
  int nhwc = gpu_ms_to_nhwc(p, &p->steps[r], y);
  if (!nhwc && gpu_ms_f16_copy_from(p, del, y, L) != r) {
    if (!rows_copy(p, del, r, y, f, &out, &h)) return;
    f->ew.out_dtype = COV_F16, f->args[2] = out;
    del[r] = 1;
    if (h >= 0) del[h] = 1;
    return;
  }
  f->ew.out_dtype = COV_F16, f->ew.also = nhwc, f->args[2] = p->steps[r].args[2];
  del[r] = 1;
}

/* The LNORM launch replacing LayerNorm step s: x [nb][c][w] normalised
 * over c into y, its lanes per (n, w) pair from gpu_ln_lanes; 0 where c
 * is too wide for it. */
static int lnorm_step(const gpu_mstep *s, int x, int y, int64_t nb, int64_t c, int64_t w, gpu_mstep *out) {
  gpu_mstep f = *s;
  memset(&f.ew, 0, sizeof f.ew); /* kernels compare bytewise */
  f.ew.kind = GPU_EW_LNORM, f.ew.out_dtype = COV_F32, f.ew.N = nb, f.ew.C = c, f.ew.W = w;
  f.ew.D = gpu_ln_lanes(c, w), f.ew.post0 = epsilon(&s->ew.cdl);
  if (!f.ew.D) return 0;
  f.ew.n = gpu_ln_items(&f.ew);
  snprintf(f.kernel, sizeof f.kernel, "%.150s_%s", s->kernel, w > 1 ? "cl" : "rows");
  for (int k = 0; k < GPU_CDL_MAX_ARGS; k++) f.args[k] = -1;
  f.n_args = 4, f.args[0] = x, f.args[1] = s->args[1], f.args[2] = y, f.args[3] = s->args[2];
  gpu_ew_grid(&f.ew, f.grid);
  f.block[0] = GPU_EW_THREADS, f.block[1] = f.block[2] = 1, f.shared_bytes = gpu_ln_shared_bytes(&f.ew);
  *out = f;
  return 1;
}

/* Step L, a LayerNorm over the last axis of a row-major [M][C] value (a
 * transformer's), as a warp or more per row (the lanes of a row neighbouring
 * threads, so a warp reads neighbouring channels), its f16 operand copy
 * folded in. */
static int fuse_rows(gpu_model_plan *p, char *del, int L) {
  const gpu_mstep *s = &p->steps[L];
  int t = s->args[0], u = s->args[3];
  int64_t m = s->ew.cdl.in_shape[0][0], c = s->ew.cdl.in_shape[0][1];
  if (p->bufs[t].dtype != COV_F32 || p->bufs[t].numel != m * c || p->bufs[u].dtype != COV_F32 ||
      p->bufs[u].numel != m * c)
    return 0;
  gpu_mstep f;
  if (!lnorm_step(s, t, u, m, c, 1, &f)) return 0;
  gpu_ms_drop_fills(p, del, u);
  store_f16(p, del, L, u, &f);
  p->steps[L] = f;
  return 1;
}

int gpu_ms_fuse_lnorm(gpu_model_plan *p, char *del, int L) {
  const gpu_mstep *s = &p->steps[L];
  if (!gpu_ms_is_codelet(s, "layernorm") || s->ew.cdl.n_in != 3 || s->n_args != 4 || s->ew.cdl.in_rank[0] != 2)
    return 0;
  int t = s->args[0], sc = s->args[1], bi = s->args[2], u = s->args[3], a = -1;
  int64_t c = s->ew.cdl.in_shape[0][1];
  if (p->bufs[sc].dtype != COV_F32 || p->bufs[sc].numel != c || p->bufs[bi].dtype != COV_F32 ||
      p->bufs[bi].numel != c)
    return 0;
  if (p->bufs[t].kind != GPU_BUF_INTERMEDIATE || p->bufs[u].kind != GPU_BUF_INTERMEDIATE ||
      gpu_ms_users(p, del, t, -1 - L, &a) != 1 || a > L || p->steps[a].args[2] != t)
    return fuse_rows(p, del, L);
  int x = p->steps[a].args[0];
  const gpu_mbuf *xb = &p->bufs[x];
  if (xb->rank != 4 || xb->dtype != COV_F32 || xb->shape[1] != c || xb->numel != p->bufs[t].numel)
    return fuse_rows(p, del, L);
  int64_t nb = xb->shape[0], hw = xb->shape[2] * xb->shape[3];
  gpu_mstep f;
  if (!lnorm_step(s, x, -1, nb, c, hw, &f)) return 0;
  int y = permutes(&p->steps[a], nb, c, hw, 0) ? copies_back(p, del, L, u, nb, c, hw) : -1;
  if (y < 0) return fuse_rows(p, del, L);
  f.args[2] = y;
  del[a] = 1;
  gpu_ms_drop_fills(p, del, t), gpu_ms_drop_fills(p, del, u), gpu_ms_drop_fills(p, del, y);
  store_f16(p, del, L, y, &f);
  p->steps[L] = f;
  return 1;
}
