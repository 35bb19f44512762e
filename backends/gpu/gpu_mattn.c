/* backends/gpu/gpu_mattn.c: fused attention in compiled models.
 *
 * The exporters write attention as a chain of groups (the frontend fuses
 * some of them): batch_matmul(Q, Kᵀ), optionally a Mul (or Div) by a
 * scalar, optionally a mask, softmax over the last axis, then
 * batch_matmul(P, V) as a group of its own. TorchScript's GPT-2 masks
 * with Where(mask, -inf, scores), the dynamo exporter adds a constant
 * (0 on and below the diagonal, a very negative value above): both are
 * causal; BERT adds a padding mask computed at run time, which the
 * kernel reads as its additive mask. ViT and the encoder scale Q and K by
 * sqrt(scale) each in groups of their own before the product (their
 * results read by nothing else). The chain is found from the P V group
 * backwards: each group's result must be read only by the next, whole;
 * the head split and transposes around it are the element runs of Q, Kᵀ
 * and V (gpu_mcapture.h), whatever the exporter wrote.
 *
 * A match becomes: Q, K and V copied (strided copies, f32 -> f16) into
 * one buffer of three [heads][seq][dim] tensors, one copy where they are
 * the parts of one projection; then one fused attention launch planned
 * on them padded to its tiles (seq a multiple of the query tile, dim a
 * power of two from 16; the padding read as zeros, in_seq / in_dim) (gpu_lower_attn.c: keys
 * past the sequence and, for a causal mask, keys after the query score
 * -inf; the scale is the product of the chain's scalars) writing O's
 * valid rows and columns as f32 into the P V group's result, which its
 * readers take as before. Left unfused: a constant mask that is not
 * causal, a run-time mask that is not the whole of an S x S or
 * heads x S x S buffer, a non-positive scale, queries and keys of
 * different lengths, a head dim above 128 or not a multiple of 8, and
 * targets whose attention kernel gpu_attn_plan refuses (no warp shuffle or
 * asynchronous copies: AMDGPU). */
#include "backends/gpu/gpu_mattn.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "backends/gpu/gpu_driver.h"
#include "backends/gpu/gpu_msteps.h"
#include "mapper/map_gpu.h"

enum { MAX_CHAIN = 8 };
static const int64_t k_max_elems = 1ll << 24; /* operand elements expanded to runs */
static const double k_masked = -1e9;          /* a mask value at or below this removes the key */

/* ---- the chain ---------------------------------------------------------- */

typedef struct chain {
  int groups[MAX_CHAIN + 2]; /* absorbed: the score chain, then Q's and K's scale groups */
  int n;
  const gpu_cap_group *mm_group; /* the group of batch_matmul(Q, Kᵀ) */
  const gpu_cap_call *mm;
  double scale;
  int causal;
  int64_t keys; /* softmax columns */
  const gpu_cap_group *mask_group; /* a run-time additive mask: its group and input */
  int mask_input;
} chain;

/* Per capture buffer id: how many group inputs and model outputs read it,
 * and the group producing it (-1: none). */
static cov_status buffer_users(const gpu_capture *cap, int **uses, int **by_id) {
  *uses = calloc((size_t)cap->n_ids + 1, sizeof **uses);
  *by_id = malloc(((size_t)cap->n_ids + 1) * sizeof **by_id);
  if (!*uses || !*by_id) return cov_error(COV_OUT_OF_MEMORY, NULL, "out of memory");
  for (int i = 0; i < cap->n_ids; i++) (*by_id)[i] = -1;
  for (int k = 0; k < cap->n_groups; k++) {
    const gpu_cap_group *g = &cap->groups[k];
    if (g->buf_id >= 0 && g->buf_id < cap->n_ids) (*by_id)[g->buf_id] = k;
    for (size_t i = 0; i < g->n_in; i++)
      for (int r = 0; r < g->in[i].v.n_runs; r++) {
        int src = g->in[i].v.runs[r].src;
        if (src >= 0 && src < cap->n_ids && (r == 0 || g->in[i].v.runs[r - 1].src != src)) (*uses)[src]++;
      }
  }
  for (int o = 0; o < cap->n_outputs; o++)
    for (int r = 0; r < cap->outputs[o].n_runs; r++) {
      int src = cap->outputs[o].runs[r].src;
      if (src >= 0 && src < cap->n_ids) (*uses)[src] += 2; /* never absorbed */
    }
  return NULL;
}

/* The group whose whole result value v is, read by nothing else; -1 if none. */
static int whole_of(const gpu_capture *cap, const int *uses, const int *by_id, const gpu_cap_value *v) {
  if (!v->ok || v->n_runs != 1 || v->runs[0].s0 != 0 || v->runs[0].d0 != 0) return -1;
  int src = v->runs[0].src;
  if (src < 0 || src >= cap->n_ids || v->runs[0].n != cap->id_numel[src] || uses[src] != 1) return -1;
  int k = by_id[src];
  return k >= 0 && cap->groups[k].described && !cap->groups[k].constant ? k : -1;
}

/* The one f32 value of a scalar constant argument; 0: not one. */
static int scalar(const gpu_cap_arg *a, double *v) {
  if (a->kind != COV_MODEL_ARG_CONST || a->t.dtype != COV_F32 || !a->t.data || cov_tensor_numel(&a->t) != 1) return 0;
  *v = ((const float *)a->t.data)[0];
  return 1;
}

/* Whether a constant argument's values (a scalar, or one broadcast) all
 * remove a key. */
static int all_masked(const gpu_cap_arg *a) {
  if (a->kind != COV_MODEL_ARG_CONST || a->t.dtype != COV_F32 || !a->t.data) return 0;
  const float *v = a->t.data;
  int64_t n = cov_tensor_numel(&a->t);
  for (int64_t i = 0; i < n; i++)
    if (!(v[i] <= k_masked)) return 0;
  return n > 0;
}

/* Whether the n mask values (bool cond, or additive f32) remove exactly the
 * keys after the query row of [.., S, S] scores. */
static int causal_bool(const cov_tensor *t, int64_t S, int masked_when_true) {
  int64_t n = cov_tensor_numel(t);
  if (t->dtype != COV_BOOL || !t->data || n % (S * S)) return 0;
  const uint8_t *c = t->data;
  for (int64_t e = 0; e < n; e++) {
    int64_t i = e / S % S, j = e % S;
    if ((c[e] != 0) != ((j > i) == masked_when_true)) return 0;
  }
  return 1;
}
static int causal_add(const cov_tensor *t, int64_t S) {
  int64_t n = cov_tensor_numel(t);
  if (t->dtype != COV_F32 || !t->data || n % (S * S)) return 0;
  const float *m = t->data;
  for (int64_t e = 0; e < n; e++) {
    int64_t i = e / S % S, j = e % S;
    if (j > i ? !(m[e] <= k_masked) : m[e] != 0.0f) return 0;
  }
  return 1;
}

/* Call c of the chain, walked backwards from the softmax (stage 0): its
 * data argument (*data), after checking what it is; -1: not a chain.
 * Stages: 0 softmax, 1 mask, 2 scale, 3 the product (the chain's start). */
static int chain_call(const gpu_cap_call *c, int *stage, chain *ch) {
  const char *n = c->codelet;
  double v;
  if (*stage == 0) {
    if (strcmp(n, "softmax") || c->n_args != 1 || c->args[0].t.rank < 1) return -1;
    ch->keys = c->args[0].t.shape[c->args[0].t.rank - 1];
    if (ch->keys < 1 || ch->keys > (1 << 20)) return -1; /* masks are checked over S x S */
    *stage = 1;
    return 0;
  }
  if (*stage == 1 && !strcmp(n, "where") && c->n_args == 3) {
    int x = all_masked(&c->args[1]), y = !x && all_masked(&c->args[2]);
    if ((!x && !y) || !causal_bool(&c->args[0].t, ch->keys, x)) return -1;
    ch->causal = 1, *stage = 2;
    return x ? 2 : 1;
  }
  if (*stage == 1 && !strcmp(n, "add") && c->n_args == 2) {
    /* a constant causal mask, or a run-time one (the scores are the
     * argument whose shape is the result's) */
    int mask = c->args[0].kind == COV_MODEL_ARG_CONST ? 0 : 1;
    if (c->args[0].kind == COV_MODEL_ARG_EXTERNAL && c->args[1].kind != COV_MODEL_ARG_CONST) {
      int64_t n0 = cov_tensor_numel(&c->args[0].t), n1 = cov_tensor_numel(&c->args[1].t);
      if (n0 == n1 && c->args[1].kind == COV_MODEL_ARG_EXTERNAL) return -1; /* which is the mask? */
      mask = n0 < n1 ? 0 : 1;
    }
    const gpu_cap_arg *m = &c->args[mask];
    if (c->args[!mask].kind == COV_MODEL_ARG_CONST || m->kind == COV_MODEL_ARG_PREV) return -1;
    if (m->kind == COV_MODEL_ARG_CONST && !causal_add(&m->t, ch->keys)) return -1;
    if (m->kind == COV_MODEL_ARG_EXTERNAL) ch->mask_input = m->input, ch->mask_group = NULL; /* set by the caller */
    else ch->causal = 1;
    *stage = 2;
    return !mask;
  }
  if (*stage <= 2 && (!strcmp(n, "mul") || !strcmp(n, "div")) && c->n_args == 2) {
    int a = scalar(&c->args[0], &v) && n[0] == 'm' ? 1 : 0;
    if (!scalar(&c->args[!a], &v) || c->args[a].kind == COV_MODEL_ARG_CONST || v == 0.0) return -1;
    ch->scale *= n[0] == 'm' ? v : 1.0 / v;
    *stage = 3;
    return a;
  }
  if (!strcmp(n, "batch_matmul") && c->n_args == 2 && c->args[0].kind == COV_MODEL_ARG_EXTERNAL &&
      c->args[1].kind == COV_MODEL_ARG_EXTERNAL && c->args[0].t.rank == 3 && c->args[1].t.rank == 3) {
    *stage = 4;
    return 0;
  }
  return -1;
}

/* The score chain ending in group x's softmax, back to batch_matmul(Q, Kᵀ)
 * opening its group; 0: none. */
static int score_chain(const gpu_capture *cap, const int *uses, const int *by_id, int x, chain *ch) {
  memset(ch, 0, sizeof *ch);
  ch->scale = 1.0;
  int gi = x, stage = 0;
  const gpu_cap_group *g = &cap->groups[gi];
  ch->groups[ch->n++] = gi;
  for (size_t ci = g->n_calls; ci-- > 0;) {
    const gpu_cap_call *c = &g->calls[ci];
    int was = stage;
    int data = chain_call(c, &stage, ch);
    if (data < 0) return 0;
    if (was == 1 && stage == 2 && !ch->causal) ch->mask_group = g;
    if (stage == 4) {
      ch->mm = c, ch->mm_group = g;
      return ci == 0;
    }
    if (ci > 0) {
      if (c->args[data].kind != COV_MODEL_ARG_PREV) return 0;
      continue;
    }
    /* the chain goes on in the group producing this group's input (its
     * only one but for a run-time mask) */
    if (c->args[data].kind != COV_MODEL_ARG_EXTERNAL || ch->n == MAX_CHAIN) return 0;
    int in = c->args[data].input, masked = ch->mask_group == g;
    if (g->n_in != 1u + masked || (masked && in == ch->mask_input)) return 0;
    if ((gi = whole_of(cap, uses, by_id, &g->in[in].v)) < 0) return 0;
    g = &cap->groups[gi];
    ch->groups[ch->n++] = gi;
    ci = g->n_calls;
  }
  return 0;
}

/* Q or Kᵀ: the group input, or the input of the scalar Mul group whose
 * whole result it is (absorbed, its scalar into the scale). */
static const gpu_cap_value *operand(const gpu_capture *cap, const int *uses, const int *by_id, const gpu_cap_value *v,
                                    chain *ch) {
  int z = whole_of(cap, uses, by_id, v);
  if (z < 0) return v;
  const gpu_cap_group *g = &cap->groups[z];
  double s;
  if (g->n_calls != 1 || g->n_in != 1 || strcmp(g->calls[0].codelet, "mul") || g->calls[0].n_args != 2) return v;
  const gpu_cap_call *c = &g->calls[0];
  int a = c->args[0].kind == COV_MODEL_ARG_CONST ? 0 : 1; /* the scalar */
  if (!scalar(&c->args[a], &s) || c->args[!a].kind != COV_MODEL_ARG_EXTERNAL) return v;
  ch->scale *= s;
  ch->groups[ch->n++] = z;
  return &g->in[0].v;
}

/* A run-time additive mask read as it is by the kernel: the whole of an
 * f32 buffer of S x S values (one for every head) or heads x S x S. */
static int mask_buffer(const gpu_capture *cap, const gpu_cap_value *v, int64_t bh, int64_t S, gpu_mattn_match *m);

/* ---- operand copies ----------------------------------------------------- */

static int by_dst(const void *x, const void *y) {
  const gpu_cap_run *a = x, *b = y;
  return (a->d0 > b->d0) - (a->d0 < b->d0);
}

static cov_dtype src_dtype(const gpu_capture *cap, int id) {
  if (id < cap->n_inputs) return cap->in_shape[id].dtype;
  if (gpu_cap_const(cap, id)) return COV_F32;
  for (int k = 0; k < cap->n_groups; k++)
    if (cap->groups[k].buf_id == id && cap->groups[k].described) return cap->groups[k].out.dtype;
  return COV_DTYPE_INVALID;
}

/* The element runs of value v, seen as [bh][rows][cols] (trans: as the
 * transpose of the kernel's [bh][seq][dim] operand), into tensor `which`
 * of the padded [3][bh][spad][dpad] buffer, appended to e (destination
 * order, merged where both sides continue); 0: not f32, or not the size. */
static int operand_runs(const gpu_capture *cap, const gpu_cap_value *v, int trans, const gpu_mattn_match *m, int which,
                        gpu_cap_run *e, int64_t *ne) {
  int64_t S = m->seq, D = m->dim, rows = trans ? D : S, cols = trans ? S : D, n = v->numel;
  int64_t base = which * m->attn.heads * S * D, k = *ne;
  if (!v->ok || n != m->attn.heads * S * D) return 0;
  for (int r = 0; r < v->n_runs; r++) {
    if (src_dtype(cap, v->runs[r].src) != COV_F32) return 0;
    for (int64_t j = 0; j < v->runs[r].n && k - *ne < n; j++, k++) {
      int64_t x = v->runs[r].d0 + j, b = x / (rows * cols), i = x / cols % rows, c = x % cols;
      int64_t s = trans ? c : i, d = trans ? i : c;
      e[k] = (gpu_cap_run){.src = v->runs[r].src, .s0 = v->runs[r].s0 + j, .d0 = base + (b * S + s) * D + d, .n = 1};
    }
  }
  if (k - *ne != n) return 0;
  qsort(e + *ne, (size_t)n, sizeof *e, by_dst);
  int64_t nr = *ne;
  for (int64_t q = *ne; q < k; q++) {
    gpu_cap_run *t = nr > *ne ? &e[nr - 1] : NULL;
    if (t && t->src == e[q].src && t->s0 + t->n == e[q].s0 && t->d0 + t->n == e[q].d0) t->n++;
    else e[nr++] = e[q];
  }
  *ne = nr;
  return 1;
}

/* Q, K and V as at most GPU_MATTN_COPIES strided copies (one where they
 * are the three parts of one projection, however it is split); 0: more. */
static int operand_copies(const gpu_capture *cap, const gpu_cap_value *const *v, gpu_mattn_match *m) {
  int64_t n = 3 * m->attn.heads * m->seq * m->dim, ne = 0;
  if (n > k_max_elems) return 0;
  gpu_cap_run *e = malloc((size_t)n * sizeof *e + 1);
  if (!e) return 0;
  int ok = 1;
  for (int w = 0; w < 3 && ok; w++) ok = operand_runs(cap, v[w], w == 1, m, w, e, &ne);
  m->n_cp = 0;
  for (int64_t q = 0; q < ne && ok; q++) {
    int seen = 0;
    for (int64_t w = 0; w < q && !seen; w++) seen = e[w].src == e[q].src;
    if (seen) continue;
    int c = gpu_runs_copies(e, (int)ne, e[q].src, m->cp + m->n_cp, GPU_MATTN_COPIES - m->n_cp);
    for (int w = 0; w < c; w++) m->src[m->n_cp + w] = e[q].src, m->cp[m->n_cp + w].out_dtype = COV_F16;
    ok = c >= 0, m->n_cp += ok ? c : 0;
  }
  free(e);
  return ok;
}

static int mask_buffer(const gpu_capture *cap, const gpu_cap_value *v, int64_t bh, int64_t S, gpu_mattn_match *m) {
  if (!v->ok || v->n_runs != 1 || v->runs[0].s0 != 0 || v->runs[0].d0 != 0) return 0;
  int src = v->runs[0].src;
  if (src < 0 || src >= cap->n_ids || cap->id_numel[src] != v->numel || src_dtype(cap, src) != COV_F32 ||
      (v->numel != S * S && v->numel != bh * S * S))
    return 0;
  m->mask_src = src;
  m->attn.mask = true, m->attn.mask_head = v->numel == S * S ? 0 : S * S;
  return 1;
}

/* ---- matching ----------------------------------------------------------- */

/* The kernel's plan for bh heads of seq x dim, both padded to its tiles;
 * 0 where the target or the shape is refused. */
static int plan_attn(const gpu_target *t, int64_t bh, int64_t S, int64_t D, const char *where, gpu_attn *a) {
  int64_t dpad = 16;
  while (dpad < D) dpad *= 2;
  if (dpad > 128 || bh > 65535 || S > (1 << 20) || D % 8) return 0;
  int64_t spad = (S + 63) / 64 * 64;
  const gpu_target_ops *o = t->ops;
  map_gpu_attn_problem mp = {.batch = 1, .heads = bh, .seq = spad, .dim = dpad};
  map_gpu_attn_sched ms;
  cov_status st = map_gpu_attn_plan(t->acg, &mp, o->wg_mma_bt && o->wg_mma_ra && o->async_proxy_fence, where, &ms);
  if (!st) {
    int64_t step = ms.bm > ms.bn ? ms.bm : ms.bn;
    spad = (S + step - 1) / step * step;
    st = gpu_attn_plan(1, bh, spad, dpad, COV_F16, ms.bm, ms.wm, ms.bn, ms.pipe, ms.chain, o, where, a);
  }
  /* Q, K and V unpadded in one buffer, the padding read as zeros */
  int ok = !st && 3 * bh * S * D < (1ll << 31) && o->async_copy16_zfill;
  cov_status_free(st);
  if (!ok) return 0;
  a->in_seq = S, a->in_dim = D;
  a->k_off = bh * S * D, a->v_off = 2 * a->k_off;
  a->out_f32 = true, a->out_seq = S, a->out_dim = D;
  gpu_attn_out_dense(a);
  return 1;
}

/* Group k as the P V product of an attention chain the kernel takes. */
static int match_at(const gpu_capture *cap, const gpu_target *t, const int *uses, const int *by_id, int k,
                    gpu_mattn_match *m, chain *ch) {
  const gpu_cap_group *g = &cap->groups[k];
  if (!g->described || g->constant || g->n_calls != 1 || g->n_in != 2) return 0;
  const gpu_cap_call *pv = &g->calls[0];
  if (strcmp(pv->codelet, "batch_matmul") || pv->n_args != 2 || pv->args[0].kind != COV_MODEL_ARG_EXTERNAL ||
      pv->args[1].kind != COV_MODEL_ARG_EXTERNAL || pv->args[0].t.rank != 3 || pv->args[1].t.rank != 3)
    return 0;
  int x = whole_of(cap, uses, by_id, &g->in[pv->args[0].input].v);
  if (x < 0 || !score_chain(cap, uses, by_id, x, ch)) return 0;
  const cov_tensor *q = &ch->mm->args[0].t, *kt = &ch->mm->args[1].t, *p = &pv->args[0].t, *v = &pv->args[1].t;
  int64_t bh = q->shape[0], S = q->shape[1], D = q->shape[2];
  if (kt->shape[0] != bh || kt->shape[1] != D || kt->shape[2] != S || p->shape[0] != bh || p->shape[1] != S ||
      p->shape[2] != S || v->shape[0] != bh || v->shape[1] != S || v->shape[2] != D || ch->keys != S)
    return 0;
  const gpu_cap_group *sg = ch->mm_group;
  const gpu_cap_value *qv = operand(cap, uses, by_id, &sg->in[ch->mm->args[0].input].v, ch);
  const gpu_cap_value *kv = operand(cap, uses, by_id, &sg->in[ch->mm->args[1].input].v, ch);
  if (!(ch->scale > 0.0) || !isfinite(ch->scale)) return 0;
  memset(m, 0, sizeof *m);
  m->pv = k, m->seq = S, m->dim = D;
  if (!plan_attn(t, bh, S, D, g->node, &m->attn)) return 0;
  m->attn.scale = (float)ch->scale, m->attn.keys = S, m->attn.causal = ch->causal;
  m->mask_src = -1;
  if (ch->mask_group && !mask_buffer(cap, &ch->mask_group->in[ch->mask_input].v, bh, S, m)) return 0;
  const gpu_cap_value *ops[3] = {qv, kv, &g->in[pv->args[1].input].v};
  return operand_copies(cap, ops, m);
}

void gpu_mattn_free(gpu_mattn_set *s) {
  free(s->role), free(s->m);
  memset(s, 0, sizeof *s);
}

cov_status gpu_mattn_find(const gpu_capture *cap, const gpu_target *t, gpu_mattn_set *out) {
  memset(out, 0, sizeof *out);
  int *uses = NULL, *by_id = NULL;
  cov_status st = buffer_users(cap, &uses, &by_id);
  out->role = st ? NULL : malloc(((size_t)cap->n_groups + 1) * sizeof *out->role);
  out->m = st ? NULL : malloc(((size_t)cap->n_groups + 1) * sizeof *out->m);
  if (!st && (!out->role || !out->m)) st = cov_error(COV_OUT_OF_MEMORY, NULL, "out of memory");
  for (int k = 0; k < cap->n_groups && !st; k++) out->role[k] = GPU_MATTN_LOWERED;
  for (int k = 0; k < cap->n_groups && !st; k++) {
    chain ch;
    if (!match_at(cap, t, uses, by_id, k, &out->m[out->n], &ch)) continue;
    for (int i = 0; i < ch.n; i++) out->role[ch.groups[i]] = GPU_MATTN_ABSORBED;
    out->role[k] = out->n++;
  }
  free(uses), free(by_id);
  if (st) gpu_mattn_free(out);
  return st;
}

/* ---- lowering ----------------------------------------------------------- */

static cov_status oom(void) { return cov_error(COV_OUT_OF_MEMORY, NULL, "out of memory"); }

/* A launch of group g's, appended to the plan (gpu_ms_add_step). */
static gpu_mstep *add_launch(gpu_model_plan *p, const gpu_cap_group *g, cov_status *st) {
  gpu_mstep *s = gpu_ms_add_step(p, g->group, g->node, st);
  if (s) s->op = GPU_STEP_LAUNCH;
  return s;
}

static cov_status copy_step(gpu_model_plan *p, const gpu_cap_group *g, const gpu_ew *e, const char *what, int from,
                            int to) {
  cov_status st = NULL;
  gpu_mstep *s = add_launch(p, g, &st);
  if (!s) return st;
  s->kkind = GPU_KERNEL_EW, s->ew = *e;
  snprintf(s->kernel, sizeof s->kernel, "covenant_g%d_attn_%s", g->group, what);
  gpu_ew_grid(e, s->grid);
  s->block[0] = GPU_EW_THREADS;
  s->args[0] = from, s->args[2] = to;
  return NULL;
}

cov_status gpu_mattn_lower(gpu_model_plan *p, const gpu_cap_group *g, const int *id_buf, const gpu_mattn_match *m) {
  const gpu_attn *a = &m->attn;
  int64_t shape[4] = {3, a->heads, m->seq, m->dim};
  char nm[sizeof p->bufs[0].name];
  snprintf(nm, sizeof nm, "%.110s.attn_qkv", g->node);
  cov_status st = NULL;
  int qkv = gpu_ms_add_buf(p, nm, GPU_BUF_INTERMEDIATE, COV_F16, 4, shape, &st);
  if (qkv < 0) return st;
  for (int c = 0; c < m->n_cp; c++) {
    char what[16];
    snprintf(what, sizeof what, "qkv%d", c);
    COV_RETURN_IF_ERROR(copy_step(p, g, &m->cp[c], what, id_buf[m->src[c]], qkv));
  }
  gpu_mstep *s = add_launch(p, g, &st);
  if (!s) return st;
  s->kkind = GPU_KERNEL_ATTN, s->attn = *a;
  snprintf(s->kernel, sizeof s->kernel, "covenant_g%d_attn", g->group);
  memcpy(s->grid, a->grid, sizeof s->grid);
  s->block[0] = (unsigned)a->threads, s->shared_bytes = a->shared_bytes;
  s->args[0] = s->args[1] = s->args[2] = qkv, s->args[3] = id_buf[g->buf_id];
  if (a->mask) s->args[4] = id_buf[m->mask_src], s->n_args = 5;
  return NULL;
}

/* ---- the result stored as its reader's operand ---------------------------- */

/* Where copy e sends O's element (h, i, d) of a [bh][S][D] result, fitted
 * as a's output layout (o_off, o_hn, o_s0, o_s1, o_row; columns
 * contiguous) and checked for every element, each read exactly once; 0
 * where the copy is not of that form. hd: bh scratch values. */
static int fit_out_layout(const gpu_ew *e, int64_t bh, int64_t S, int64_t D, int64_t out_numel, gpu_attn *a,
                          int64_t *hd) {
  int64_t n = bh * S * D, r1 = -1, c1 = -1;
  if (e->n != n || n > k_max_elems) return 0;
  for (int64_t j = 0; j < n; j++) {
    int64_t src, dst;
    gpu_ew_copy_at(e, j, &src, &dst);
    if (src < 0 || src >= n) return 0;
    if (src % (S * D) == 0) hd[src / (S * D)] = dst;
    if (src == D) r1 = dst;
    if (src == 1) c1 = dst;
  }
  int64_t off = hd[0], s0 = bh > 1 ? hd[1] - off : 0, hn = 1, s1 = 0, row = S > 1 ? r1 - off : 0;
  while (hn < bh && hd[hn] == off + hn * s0) hn++;
  if (bh % hn || (D > 1 && c1 != off + 1)) return 0;
  if (hn < bh) s1 = hd[hn] - off;
  if (off < 0 || off % 2 || s0 < 0 || s0 % 2 || s1 < 0 || s1 % 2 || row < 0 || row % 2 || out_numel >= (1ll << 31))
    return 0;
  a->o_off = off, a->o_hn = hn, a->o_s0 = s0, a->o_s1 = s1, a->o_row = row;
  char *seen = calloc((size_t)n + 1, 1);
  if (!seen) return 0;
  int ok = 1;
  for (int64_t j = 0; j < n && ok; j++) {
    int64_t src, dst, h, i, d;
    gpu_ew_copy_at(e, j, &src, &dst);
    h = src / (S * D), i = src / D % S, d = src % D;
    ok = !seen[src] && dst == off + h / hn * s1 + h % hn * s0 + i * row + d && dst < out_numel;
    seen[src] = 1;
  }
  free(seen);
  return ok;
}

/* Step i, a fused attention, storing the f16 copy that alone reads its
 * result; returns 1 if it did, -1 when out of memory. */
static int fuse_out_at(gpu_model_plan *p, char *del, int i) {
  gpu_mstep *s = &p->steps[i];
  gpu_attn *a = &s->attn;
  int y = s->args[3], c = -1;
  if (s->op != GPU_STEP_LAUNCH || s->kkind != GPU_KERNEL_ATTN || !a->out_f32 || a->out_f16 || y < 0 ||
      p->bufs[y].kind != GPU_BUF_INTERMEDIATE || p->bufs[y].dtype != COV_F32 || gpu_ms_users(p, del, y, i, &c) != 1 ||
      c < i)
    return 0;
  const gpu_mstep *t = &p->steps[c];
  const gpu_ew *e = &t->ew;
  int h = t->args[2];
  if (t->op != GPU_STEP_LAUNCH || t->kkind != GPU_KERNEL_EW || e->kind != GPU_EW_COPY || t->args[0] != y || h < 0 ||
      p->bufs[h].kind != GPU_BUF_INTERMEDIATE || p->bufs[h].dtype != COV_F16 || e->out_dtype != COV_F16 ||
      e->in_dtype == COV_F16 || e->bias || e->also || e->mul_c || e->scale_hw || e->post != GPU_FN_NONE ||
      gpu_ew_raw(e))
    return 0;
  for (int j = i + 1; j < c; j++) /* nothing between touches the copy's result */
    for (int k = 0; !del[j] && p->steps[j].op == GPU_STEP_LAUNCH && k < p->steps[j].n_args; k++)
      if (p->steps[j].args[k] == h) return 0;
  int64_t bh = a->batch * a->heads;
  int64_t *hd = malloc((size_t)bh * sizeof *hd + 8);
  if (!hd) return -1;
  gpu_attn f = *a;
  int ok = fit_out_layout(e, bh, a->out_seq, a->out_dim, p->bufs[h].numel, &f, hd);
  free(hd);
  if (!ok) return 0;
  f.out_f16 = true;
  *a = f;
  s->args[3] = h;
  del[c] = 1;
  return 1;
}

/* The copies (at most GPU_MATTN_COPIES) that alone write qkv, the
 * attention's operand buffer, before step i, each a plain f16 copy: how
 * many (0: not so), their steps in c[]. */
static int qkv_copies(const gpu_model_plan *p, const char *del, int i, int qkv, int c[GPU_MATTN_COPIES]) {
  int n = 0;
  for (int j = 0; j < p->n_steps; j++) {
    const gpu_mstep *t = &p->steps[j];
    int use = 0;
    for (int k = 0; !del[j] && t->op == GPU_STEP_LAUNCH && k < t->n_args; k++) use |= t->args[k] == qkv;
    if (del[j] || j == i || !use) continue;
    const gpu_ew *e = &t->ew;
    if (j > i || n == GPU_MATTN_COPIES || t->kkind != GPU_KERNEL_EW || e->kind != GPU_EW_COPY || t->args[2] != qkv ||
        t->args[0] < 0 || t->args[1] >= 0 || t->args[3] >= 0 || e->out_dtype != COV_F16 || e->in_dtype == COV_F16 ||
        e->bias || e->also || e->mul_c || e->scale_hw || e->post != GPU_FN_NONE || gpu_ew_raw(e))
      return 0;
    c[n++] = j;
  }
  return n;
}

/* The matmul writing y, an f32 buffer that only the copies c[0 .. n) read
 * besides it, through its direct epilogue, before them: its step, -1 if
 * none or y is read otherwise. */
static int source_matmul(const gpu_model_plan *p, const char *del, int y, const int *c, int n) {
  if (y < 0 || p->bufs[y].kind != GPU_BUF_INTERMEDIATE || p->bufs[y].dtype != COV_F32 ||
      p->bufs[y].numel >= (1ll << 31))
    return -1;
  int w = -1;
  for (int j = 0; j < p->n_steps; j++) {
    const gpu_mstep *t = &p->steps[j];
    int use = 0, mine = 0;
    for (int k = 0; !del[j] && t->op == GPU_STEP_LAUNCH && k < t->n_args; k++) use |= t->args[k] == y;
    for (int k = 0; k < n; k++) mine |= c[k] == j;
    if (!use || mine) continue;
    const gpu_problem *q = &t->plan.prob;
    if (w >= 0 || t->kkind != GPU_KERNEL_MATRIX || t->pre || t->args[2] != y || j > c[0] ||
        q->kind != GPU_OP_MATMUL || t->plan.staged || q->epi.softmax || t->plan.out_f16)
      return -1;
    w = j;
  }
  return w;
}

/* Fits the copies' element map (qkv [3][bh][S][D] from their sources) as
 * the attention's strided input layout, operand w read from src[w]; 0
 * where it is not of that form or not 16-byte aligned. */
static int fit_in_layout(const gpu_model_plan *p, const int *c, int n, gpu_attn *a, int src[3]) {
  int64_t bh = a->batch * a->heads, S = a->in_seq, D = a->in_dim, hsd = bh * S * D, tot = 3 * hsd;
  if (tot > k_max_elems) return 0;
  int64_t *hd = malloc((size_t)bh * sizeof *hd + 8), off[3] = {-1, -1, -1}, r1 = -1, c1 = -1;
  unsigned char *seen = calloc((size_t)tot + 1, 1);
  int ok = hd && seen;
  src[0] = src[1] = src[2] = -1;
  for (int k = 0; k < n && ok; k++) /* the probes */
    for (int64_t j = 0; j < p->steps[c[k]].ew.n; j++) {
      int64_t from, dst;
      gpu_ew_copy_at(&p->steps[c[k]].ew, j, &from, &dst);
      if (dst < 0 || dst >= tot) ok = 0;
      else if (dst % (S * D) == 0 && dst < hsd) hd[dst / (S * D)] = from;
      if (ok && dst % hsd == 0) off[dst / hsd] = from, src[dst / hsd] = p->steps[c[k]].args[0];
      if (dst == D) r1 = from;
      if (dst == 1) c1 = from;
    }
  int64_t hn = 1, s0 = bh > 1 ? hd[1] - off[0] : 0, s1 = 0, row = S > 1 ? r1 - off[0] : 0;
  while (ok && hn < bh && hd[hn] == off[0] + hn * s0) hn++;
  if (ok && hn < bh) s1 = hd[hn] - off[0];
  for (int w = 0; w < 3; w++) ok = ok && off[w] >= 0 && off[w] % 8 == 0;
  ok = ok && bh % hn == 0 && (D == 1 || c1 == off[0] + 1) && s0 >= 0 && s0 % 8 == 0 && s1 >= 0 && s1 % 8 == 0 &&
       row >= 0 && row % 8 == 0;
  for (int k = 0; k < n && ok; k++) /* every element at the fitted place, each once */
    for (int64_t j = 0; j < p->steps[c[k]].ew.n && ok; j++) {
      int64_t from, dst;
      gpu_ew_copy_at(&p->steps[c[k]].ew, j, &from, &dst);
      int64_t w = dst / hsd, h = dst / (S * D) % bh, r = dst / D % S, d = dst % D;
      ok = !seen[dst] && p->steps[c[k]].args[0] == src[w] && from == off[w] + h / hn * s1 + h % hn * s0 + r * row + d;
      seen[dst] = 1;
    }
  for (int64_t j = 0; j < tot && ok; j++) ok = seen[j];
  free(hd), free(seen);
  if (!ok) return 0;
  a->in_strided = true, a->q_off = off[0], a->k_off = off[1], a->v_off = off[2];
  a->i_hn = hn, a->i_s0 = s0, a->i_s1 = s1, a->i_row = row;
  return 1;
}

/* Matmul step w (writing f32 y) stores f16 instead: the new buffer, -1
 * when out of memory. */
static int matmul_to_f16(gpu_model_plan *p, int w, int y) {
  cov_status st = NULL;
  char nm[sizeof p->bufs[0].name];
  snprintf(nm, sizeof nm, "%.120s.f16", p->bufs[y].name);
  gpu_mbuf yb = p->bufs[y];
  int h = gpu_ms_add_buf(p, nm, GPU_BUF_INTERMEDIATE, COV_F16, yb.rank, yb.shape, &st);
  cov_status_free(st);
  if (h < 0) return -1;
  gpu_mstep *m = &p->steps[w];
  m->plan.out_f16 = true, m->args[2] = h;
  size_t k = strlen(m->kernel);
  if (k + 4 < sizeof m->kernel) memcpy(m->kernel + k, "_f16", 5);
  return h;
}

/* Step i, a fused attention whose Q, K and V are copies of matmul results
 * (the head split of a QKV projection, or of three projections): each
 * matmul stores its result as f16 and the kernel reads Q, K and V there
 * in place (in the layout fitted to the copies), and the copies go. 1 if
 * it did, -1 when out of memory. */
static int fuse_in_at(gpu_model_plan *p, char *del, int i) {
  const gpu_mstep *s = &p->steps[i];
  int qkv = s->args[0], c[GPU_MATTN_COPIES], src[3], mm[3], n;
  if (s->op != GPU_STEP_LAUNCH || s->kkind != GPU_KERNEL_ATTN || s->attn.in_strided || s->args[1] != qkv ||
      s->args[2] != qkv || qkv < 0 || p->bufs[qkv].dtype != COV_F16 ||
      p->bufs[qkv].numel != 3 * s->attn.batch * s->attn.heads * s->attn.in_seq * s->attn.in_dim ||
      !(n = qkv_copies(p, del, i, qkv, c)))
    return 0;
  gpu_attn a = s->attn;
  if (!fit_in_layout(p, c, n, &a, src)) return 0;
  for (int w = 0; w < 3; w++)
    if ((mm[w] = source_matmul(p, del, src[w], c, n)) < 0) return 0;
  int h[3];
  for (int w = 0; w < 3; w++) {
    h[w] = w && src[w] == src[0] ? h[0] : w == 2 && src[2] == src[1] ? h[1] : matmul_to_f16(p, mm[w], src[w]);
    if (h[w] < 0) return -1;
  }
  gpu_mstep *t = &p->steps[i];
  t->attn = a;
  for (int w = 0; w < 3; w++) t->args[w] = h[w];
  for (int j = 0; j < n; j++) del[c[j]] = 1;
  return 1;
}

cov_status gpu_mattn_fuse_out(gpu_model_plan *p) {
  char *del = calloc((size_t)p->n_steps + 1, 1);
  if (!del) return oom();
  int any = 0;
  for (int i = 0; i < p->n_steps; i++) {
    int r = del[i] ? 0 : fuse_out_at(p, del, i);
    int r2 = del[i] || r < 0 ? 0 : fuse_in_at(p, del, i);
    if (r < 0 || r2 < 0) {
      free(del);
      return oom();
    }
    any |= r | r2;
  }
  if (any) gpu_ms_compact(p, del);
  free(del);
  return NULL;
}

/* ---- the CPU meaning ---------------------------------------------------- */

static float round16(float v) { return cov_f16_to_f32(cov_f32_to_f16(v)); }

/* Element (h, r, d) of a [heads][in_seq][in_dim] operand, zero in the
 * padding the kernel reads as zeros. */
static float in_at(const gpu_attn *a, const float *x, int64_t h, int64_t r, int64_t d) {
  if (r >= a->in_seq || d >= a->in_dim) return 0.0f;
  if (a->in_strided) return x[h / a->i_hn * a->i_s1 + h % a->i_hn * a->i_s0 + r * a->i_row + d];
  return x[(h * a->in_seq + r) * a->in_dim + d];
}

cov_status gpu_attn_emulate(const gpu_attn *a, const float *q, const float *k, const float *v, float *o,
                            const float *mask) {
  int64_t S = a->seq, D = a->dim;
  float *p = malloc((size_t)S * sizeof *p + 4);
  if (!p) return oom();
  q += a->q_off, k += a->k_off, v += a->v_off;
  for (int64_t h = 0; h < a->batch * a->heads; h++)
    for (int64_t i = 0; i < (a->out_f32 ? a->out_seq : S); i++) {
      float mx = -INFINITY, sum = 0.0f;
      for (int64_t j = 0; j < S; j++) {
        float dot = 0.0f;
        for (int64_t d = 0; d < D; d++) dot += in_at(a, q, h, i, d) * in_at(a, k, h, j, d);
        if (a->mask && j < a->keys) { /* clamped as the kernel clamps it; a padded row reads the last */
          float mv = mask[h * a->mask_head + (i < a->keys ? i : a->keys - 1) * a->keys + j];
          dot = fmaxf(dot + mv * (float)(1.0 / a->scale), (float)gpu_attn_mask_floor(a));
        }
        p[j] = j < a->keys && (!a->causal || j <= i) ? dot * a->scale : -INFINITY;
        if (p[j] > mx) mx = p[j];
      }
      for (int64_t j = 0; j < S; j++) p[j] = p[j] == -INFINITY ? 0.0f : expf(p[j] - mx), sum += p[j];
      for (int64_t d = 0; d < (a->out_f32 ? a->out_dim : D); d++) {
        float acc = 0.0f;
        for (int64_t j = 0; j < S; j++) acc += round16(p[j]) * in_at(a, v, h, j, d);
        if (a->out_f32)
          o[a->o_off + h / a->o_hn * a->o_s1 + h % a->o_hn * a->o_s0 + i * a->o_row + d] =
              a->out_f16 ? round16(acc / sum) : acc / sum;
        else
          o[(h * S + i) * D + d] = round16(acc / sum);
      }
    }
  free(p);
  return NULL;
}
