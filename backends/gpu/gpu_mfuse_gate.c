/* backends/gpu/gpu_mfuse_gate.c: a squeeze-excite gate applied by the
 * projection that reads the gated activation (gpu_ms_fuse_gate_a).
 *
 * After gpu_mfuse.c a squeeze-excite block's gate is one copy kernel:
 * x * sigmoid(gate) (scale_hw; EfficientNet) or x * gate (mul_c, the gate
 * after its hard_sigmoid in the head; MobileNet-V3), reading the f32 NCHW
 * activation x and writing the f16 operand of the projection's matrix
 * kernel: a launch and a pass over the block's largest activation (read
 * f32, written f16) whose only purpose is that operand. Where that matrix
 * kernel gathers its operand element by element from NCHW (the guarded
 * copies), it reads x itself and scales each element as it loads it
 * (gpu_problem.a_pro = GPU_APRO_GATE, gpu_lower_gate.c), and the copy
 * goes. The sigmoid moves into the head (its fc2 activation, GPU_FN_SIGMOID)
 * so the load multiplies by a finished per-(image, channel) factor. A
 * plain f16 copy that such a kernel alone reads (a model's image before
 * its stem) goes the same way, the load only rounding (GPU_APRO_CAST). */
#include <stdio.h>
#include <string.h>

#include "backends/gpu/gpu_msteps.h"

/* Whether copy e moves all n elements in order (no layout change). */
static int plain_copy(const gpu_ew *e, int64_t n) {
  return e->kind == GPU_EW_COPY && !e->run && !e->s0 && !e->d0 && e->n == n && e->in_dtype != COV_F16 &&
         e->out_dtype == COV_F16 && !e->bias && !e->also && e->post == GPU_FN_NONE && !gpu_ew_raw(e);
}

/* Whether matrix step s gathers operand z [N][C][H][W] of gate elements
 * through the guarded NCHW copies the prologue sits in. */
static int gathers(const gpu_model_plan *p, const gpu_mstep *s, int z) {
  const gpu_plan *pl = &s->plan;
  const gpu_problem *q = &pl->prob;
  return s->op == GPU_STEP_LAUNCH && s->kkind == GPU_KERNEL_MATRIX && !s->pre && s->args[0] == z &&
         q->kind == GPU_OP_CONV2D && q->a_pro == GPU_APRO_NONE && q->in_dtype == COV_F16 && !q->nhwc_io &&
         !pl->nhwc && !pl->vector_copy && !pl->wgmma && !pl->tma && !pl->dw && s->n_args <= GPU_APRO_ARG &&
         (s->n_args <= 6 || s->args[6] < 0) && q->cn * q->cc * q->ch * q->cw == p->bufs[z].numel;
}

/* The squeeze-excite head before step `reader` writing gate buffer b,
 * which step `reader` alone reads; -1 if none. */
static int head_of(const gpu_model_plan *p, const char *del, int b, int reader) {
  int w = -1;
  for (int j = 0; j < reader; j++)
    if (!del[j] && gpu_ms_writes(&p->steps[j], b)) w = j;
  const gpu_mstep *h = w >= 0 ? &p->steps[w] : NULL;
  int u = -1;
  if (!h || h->op != GPU_STEP_LAUNCH || h->kkind != GPU_KERNEL_EW || h->ew.kind != GPU_EW_SEHEAD ||
      h->args[2] != b || h->ew.mul_fn != GPU_FN_NONE || gpu_ms_users(p, del, b, w, &u) != 1 || u != reader)
    return -1;
  return w;
}

/* Whether a step in (from, to) writes buffer b. */
static int written_between(const gpu_model_plan *p, const char *del, int b, int from, int to) {
  for (int j = from + 1; j < to; j++)
    if (!del[j] && gpu_ms_writes(&p->steps[j], b)) return 1;
  return 0;
}

static void add_suffix(char *name, size_t size, const char *suffix) {
  size_t l = strlen(name), n = strlen(suffix);
  if (l + n < size) memcpy(name + l, suffix, n + 1);
}

int gpu_ms_fuse_gate_a(gpu_model_plan *p, char *del, int i) {
  const gpu_mstep *s = &p->steps[i];
  const gpu_ew *e = &s->ew;
  int x = s->args[0], z = s->args[2], m = -1;
  if (s->op != GPU_STEP_LAUNCH || s->kkind != GPU_KERNEL_EW || x < 0 || z < 0 || p->bufs[x].dtype != COV_F32 ||
      p->bufs[z].kind != GPU_BUF_INTERMEDIATE || p->bufs[z].dtype != COV_F16 ||
      !plain_copy(e, p->bufs[x].numel) || p->bufs[z].numel != p->bufs[x].numel ||
      gpu_ms_users(p, del, z, i, &m) != 1 || m < i || !gathers(p, &p->steps[m], z))
    return 0;
  const gpu_problem *q = &p->steps[m].plan.prob;
  int64_t hw = q->ch * q->cw, nc = q->cn * q->cc;
  int gate = -1, head = -1;
  if (e->scale_hw > 0 && !e->mul_c && e->scale_hw == hw) {
    gate = s->args[3];
    if (gate < 0 || (head = head_of(p, del, gate, i)) < 0) return 0;
  } else if (e->mul_c > 0 && !e->scale_hw && e->mul_fn == GPU_FN_NONE && e->mul_hw == hw && e->mul_c == nc &&
             s->args[3] < 0) {
    gate = s->args[1];
  } else {
    return 0;
  }
  if (gate < 0 || p->bufs[gate].dtype != COV_F32 || p->bufs[gate].numel != nc ||
      written_between(p, del, x, i, m) || written_between(p, del, gate, i, m))
    return 0;
  if (head >= 0) {
    gpu_mstep *h = &p->steps[head];
    h->ew.mul_fn = GPU_FN_SIGMOID;
    add_suffix(h->kernel, sizeof h->kernel, "_sig");
  }
  gpu_mstep *t = &p->steps[m];
  t->plan.prob.a_pro = GPU_APRO_GATE;
  t->args[0] = x;
  for (int a = t->n_args; a < GPU_APRO_ARG; a++) t->args[a] = -1;
  t->args[GPU_APRO_ARG] = gate, t->n_args = GPU_APRO_ARG + 1;
  add_suffix(t->kernel, sizeof t->kernel, "_gate");
  del[i] = 1;
  return 1;
}

int gpu_ms_fuse_cast_a(gpu_model_plan *p, char *del, int i) {
  const gpu_mstep *s = &p->steps[i];
  const gpu_ew *e = &s->ew;
  int x = s->args[0], z = s->args[2], m = -1;
  if (s->op != GPU_STEP_LAUNCH || s->kkind != GPU_KERNEL_EW || x < 0 || z < 0 || p->bufs[x].dtype != COV_F32 ||
      p->bufs[z].kind != GPU_BUF_INTERMEDIATE || p->bufs[z].dtype != COV_F16 || !plain_copy(e, p->bufs[x].numel) ||
      e->scale_hw || e->mul_c || p->bufs[z].numel != p->bufs[x].numel || gpu_ms_users(p, del, z, i, &m) != 1 ||
      m < i || !gathers(p, &p->steps[m], z) || written_between(p, del, x, i, m))
    return 0;
  /* layout copies (a Concat's, a channel shuffle's) whose result only this
   * copy reads store the f16 operand themselves later (gpu_mfuse_cat.c):
   * two bytes an element read, not four */
  int layout_only = p->bufs[x].kind == GPU_BUF_INTERMEDIATE;
  for (int j = 0; j < p->n_steps && layout_only; j++) {
    const gpu_mstep *u = &p->steps[j];
    const gpu_ew *f = &u->ew;
    int use = u->op == GPU_STEP_FILL && u->fill_buf == x;
    for (int a = 0; u->op == GPU_STEP_LAUNCH && a < u->n_args; a++) use |= u->args[a] == x;
    if (j != i && !del[j] && use)
      layout_only = u->op == GPU_STEP_LAUNCH && u->kkind == GPU_KERNEL_EW && f->kind == GPU_EW_COPY && u->args[2] == x &&
                    u->args[0] != x && !f->bias && !f->also && !f->mul_c && !f->scale_hw && f->post == GPU_FN_NONE;
  }
  if (layout_only) return 0;
  gpu_mstep *t = &p->steps[m];
  t->plan.prob.a_pro = GPU_APRO_CAST;
  t->args[0] = x;
  for (int a = t->n_args; a <= GPU_APRO_ARG; a++) t->args[a] = -1;
  t->n_args = GPU_APRO_ARG + 1;
  add_suffix(t->kernel, sizeof t->kernel, "_cast");
  del[i] = 1;
  return 1;
}

/* The conversion before step `before` writing f32 NCHW buffer x from an
 * NHWC f16 activation (gpu_mlayout.c's, nothing else applied), -1 if
 * none; that activation's buffer in *h. */
static int nhwc_source(const gpu_model_plan *p, const char *del, int x, int before, int *h) {
  for (int j = before - 1; j >= 0; j--) {
    const gpu_mstep *t = &p->steps[j];
    if (del[j] || !gpu_ms_writes(t, x)) continue;
    const gpu_ew *e = &t->ew;
    int plain = t->op == GPU_STEP_LAUNCH && t->kkind == GPU_KERNEL_EW && e->kind == GPU_EW_COPY &&
                t->args[2] == x && e->out_dtype == COV_F32 && !e->bias && !e->also && !e->mul_c && !e->scale_hw &&
                e->post == GPU_FN_NONE && gpu_ms_reads_nhwc_as(p, e, x);
    return plain ? (*h = t->args[0], j) : -1;
  }
  return -1;
}

int gpu_ms_fuse_gate_nhwc(gpu_model_plan *p, char *del, int i) {
  const gpu_mstep *s = &p->steps[i];
  const gpu_ew *e = &s->ew;
  int x = s->args[0], z = s->args[2], r = -1, h = -1, a = -1;
  if (s->op != GPU_STEP_LAUNCH || s->kkind != GPU_KERNEL_EW || e->kind != GPU_EW_COPY || x < 0 || z < 0 ||
      e->in_dtype == COV_F16 || e->out_dtype != COV_F32 || e->run || e->s0 || e->d0 || e->bias || e->also ||
      gpu_ew_raw(e) || p->bufs[x].rank != 4 || p->bufs[x].dtype != COV_F32 || e->n != p->bufs[x].numel ||
      p->bufs[z].kind != GPU_BUF_INTERMEDIATE || p->bufs[z].numel != e->n ||
      gpu_ms_users(p, del, z, i, &r) != 1 || r < i || !gpu_ms_to_nhwc(p, &p->steps[r], z) ||
      (a = nhwc_source(p, del, x, i, &h)) < 0)
    return 0;
  int zh = p->steps[r].args[2];
  const int64_t *d = p->bufs[x].shape;
  int64_t hw = d[2] * d[3], nc = d[0] * d[1];
  gpu_ew g;
  memset(&g, 0, sizeof g); /* kernels compare bytewise */
  int gate;
  if (e->scale_hw == hw && !e->mul_c) { /* x * sigmoid(gate) */
    gate = s->args[3], g.mul_fn = GPU_FN_SIGMOID;
  } else if (e->mul_c == nc && e->mul_hw == hw && !e->mul_img && !e->scale_hw) {
    gate = s->args[1], g.mul_fn = e->mul_fn, g.mul0 = e->mul0, g.mul1 = e->mul1;
  } else {
    return 0;
  }
  /* the NHWC source is now read at step i, not at the conversion a; the
   * NHWC result written at i, not at the conversion r */
  if (gate < 0 || p->bufs[gate].dtype != COV_F32 || p->bufs[gate].numel != nc || written_between(p, del, h, a, i) ||
      written_between(p, del, zh, i, r))
    return 0;
  g.kind = GPU_EW_COPY, g.in_dtype = COV_F16, g.out_dtype = COV_F16, g.n = e->n;
  for (int l = 0; l < GPU_COPY_LEVELS; l++) g.rep[l] = 1;
  g.mul_c = d[1], g.mul_hw = 1, g.mul_img = hw * d[1];
  g.post = e->post, g.post0 = e->post0, g.post1 = e->post1;
  gpu_mstep f = p->steps[i];
  f.ew = g;
  for (int k = 0; k < GPU_CDL_MAX_ARGS; k++) f.args[k] = -1;
  f.n_args = 4, f.args[0] = h, f.args[1] = gate, f.args[2] = zh;
  add_suffix(f.kernel, sizeof f.kernel, "_nhwc");
  gpu_ew_grid(&f.ew, f.grid);
  p->steps[i] = f;
  /* this copy writes the conversion r's NHWC result; the conversion a back
   * to NCHW goes later where nothing else reads it (nhwc_shortcuts) */
  del[r] = 1;
  return 1;
}
