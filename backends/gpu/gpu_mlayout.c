/* backends/gpu/gpu_mlayout.c: channels-last f16 activations between the
 * convolutions of a compiled model (gpu_model_channels_last, gpu_mplan.h).
 *
 * As lowered group by group, a convolution reads an f16 copy of its f32
 * NCHW input (a conversion launch), the channels-last kernel transforms
 * that to NHWC first (a second launch), and writes f32 NCHW; a depthwise
 * convolution is the direct f32 kernel. This pass rewrites, over the whole
 * plan, every convolution the channels-last kernel takes with channels-last
 * tensors (prob.nhwc_io: NHWC f16 in and out, staged epilogue) and every
 * depthwise convolution the depthwise kernel takes (plan.dw) to read and
 * write NHWC f16 buffers. Where one such convolution feeds another the
 * activation passes as it is, with no launch between them; a conversion
 * copy (gpu_ew COPY, 3-level strides, dtype converted) is launched only at
 * the edges: once per f32 NCHW buffer such convolutions read (in place of
 * each reader's f16 copy and NHWC transform) and once per output some
 * other kernel or the caller reads (NHWC f16 back to f32 NCHW). Weights
 * are reordered once ([R][S][C][K] f16, depthwise [R][S][C] f16). Max
 * pools and global average pools become pooling kernels (gpu_pool.h): a
 * max pool is a node like a depthwise conv whose input needs no
 * conversion (it reads NCHW f32 as well), a global average pool reads a
 * rewritten conv's NHWC f16 result where there is one. Every
 * step keeps its group and order, so the launch sequence stays the
 * topological order it was. */
#include <stdlib.h>
#include <string.h>

#include "backends/gpu/gpu_driver.h"
#include "backends/gpu/gpu_mplan.h"
#include "backends/gpu/gpu_msteps.h"
#include "backends/gpu/gpu_pool.h"
#include "backends/gpu/gpu_tune.h"

typedef struct cl_step {
  int conv;       /* 1: this step becomes a channels-last convolution (or max pool: `pool`) */
  int pool;       /* CL_MAXPOOL, CL_GAVGPOOL: a pooling codelet step (below), else 0 */
  int del;        /* 1: dropped (an f16 copy or NHWC transform a rewritten conv no longer reads) */
  int x, y;       /* the conv's f32 NCHW input (before its f16 copy) and output */
  int copy, pre;  /* its f16 copy and NHWC transform steps (-1: none) */
  int owner;      /* of an f16 copy or transform: the conv reading it (-1: none) */
  int cpad;       /* > 0: a conv of fewer than 8 input channels planned with cpad (a stem, below) */
  int gain;       /* a stem's: the launches its NCHW gather path costs over the channels-last kernel */
  gpu_plan plan;  /* the rewritten conv's plan */
} cl_step;

/* Pools: a max pool is a node of the channels-last graph like a depthwise
 * conv (conv = 1: NHWC f16 out, its input read in whichever form exists,
 * so it needs no conversion in front); a global average pool reads its
 * input's NHWC f16 form where a rewritten conv writes one and keeps its
 * f32 [N, C] result. Both become the pooling kernels (gpu_pool.h) in place
 * of their codelet's loop nest. */
enum { CL_MAXPOOL = 1, CL_GAVGPOOL = 2 };

/* Stems: a conv of a model input of C < 8 channels (an image's 3) is
 * refused by the channels-last kernel's 16-byte channel loads, and its
 * NCHW gather path loads 2-byte elements one at a time: on an H100
 * resnet18's 7x7 conv1 at batch 32 takes 162 us for ~20 us of work. It
 * is planned with CL_CPAD channels instead: its input's own conversion to
 * NHWC f16 writes channels 0 .. C-1 of CL_CPAD per pixel, a second copy
 * writes zeros (an f32 zero constant read with stride 0) to channels
 * C .. CL_CPAD-1 every run (the arena reuses the memory), and its weights
 * are reordered to [R][S][CL_CPAD][K] with zero tails. The zero copy
 * writes 2 * (8 - C) bytes per pixel (10 at C = 3); a fill of the whole
 * buffer before the conversion would write 16. Only stems whose windows
 * overlap (a 7x7 or 3x3 window at stride 2): the gather path loads each
 * input pixel once per window holding it (12 times for resnet's 7x7
 * stride 2), while a patch embedding (kernel = stride: ViT's 16x16,
 * ConvNeXt's 4x4) loads each once and its K would grow 8 / C times with
 * the padding. prune counts such a conv as launches saved in proportion
 * to its outputs, one per CL_STEM_WORK: the 162 us above are 401408
 * pixels x 64 channels, about a small launch (~2.5 us) per 6144 x 64
 * outputs; a small stem (a 64x64 image at batch 1) is not worth its two
 * copies and stays on the gather path. */
enum { CL_CPAD = 8, CL_STEM_WORK = 6144 * 64 };

static cov_status oom(void) { return cov_error(COV_OUT_OF_MEMORY, NULL, "out of memory"); }

/* name and shape may point into p->bufs, which growing moves: both are
 * copied before it grows */
static int add_buffer(gpu_model_plan *p, const char *name, cov_dtype dt, int rank, const int64_t *shape) {
  char nm[sizeof p->bufs[0].name];
  snprintf(nm, sizeof nm, "%.120s.nhwc", name);
  cov_status st = NULL;
  int b = gpu_ms_add_buf(p, nm, GPU_BUF_INTERMEDIATE, dt, rank, shape, &st);
  cov_status_free(st); /* the caller reports -1 as out of memory */
  return b;
}

/* The step writing buffer b as the whole-buffer f16 copy of an f32 buffer
 * (an operand copy of the matrix kernels), -1 if none. */
static int f16_copy_of(const gpu_model_plan *p, int b, int before) {
  for (int j = before - 1; j >= 0; j--) {
    const gpu_mstep *s = &p->steps[j];
    if (s->op != GPU_STEP_LAUNCH || s->kkind != GPU_KERNEL_EW || s->args[2] != b) continue;
    const gpu_ew *e = &s->ew;
    int whole = e->kind == GPU_EW_COPY && e->out_dtype == COV_F16 && !e->run && !e->s0 && !e->d0 &&
                e->n == p->bufs[b].numel && s->args[0] >= 0 && p->bufs[s->args[0]].dtype == COV_F32 &&
                p->bufs[s->args[0]].numel == e->n;
    return whole ? j : -1;
  }
  return -1;
}

/* Whether step j reads buffer b as something other than a rewritten
 * conv's NCHW input (that conv, or its dropped f16 copy, reads the NHWC
 * form instead). */
static int reads_nchw(const gpu_model_plan *p, const cl_step *cs, int j, int b) {
  const gpu_mstep *s = &p->steps[j];
  int refs = s->op == GPU_STEP_FILL && s->fill_buf == b;
  for (int k = 0; s->op == GPU_STEP_LAUNCH && k < s->n_args; k++) refs |= s->args[k] == b;
  if (!refs) return 0;
  if ((cs[j].conv || cs[j].pool == CL_GAVGPOOL) && cs[j].x == b && !cs[j].cpad) return 0;
  int o = cs[j].owner; /* a padded stem converts its own input from f32 NCHW */
  return !(o >= 0 && cs[o].conv && cs[o].x == b && !cs[o].cpad);
}

/* Whether rewritten conv i's output is read as f32 NCHW (by the caller or
 * another kernel): then it is converted back once. */
static int needs_back(const gpu_model_plan *p, const cl_step *cs, int i) {
  int y = cs[i].y;
  if (p->bufs[y].kind == GPU_BUF_OUTPUT) return 1;
  for (int j = 0; j < p->n_steps; j++)
    if (j != i && reads_nchw(p, cs, j, y)) return 1;
  return 0;
}

/* Launches the rewrite saves with the convs marked now (negative: adds):
 * each rewritten conv's f16 copy and NHWC transform, less one conversion
 * per NCHW input no rewritten conv produces and one per output read as
 * NCHW. prod (per buffer: the rewritten conv writing it, else -1) and
 * mark are scratch of n_bufs each: one pass over the steps. */
static int saved(const gpu_model_plan *p, const cl_step *cs, int *prod, char *mark) {
  enum { BACK = 1, CONVERTED = 2 };
  int n = 0;
  for (int b = 0; b < p->n_bufs; b++) prod[b] = -1, mark[b] = 0;
  for (int i = 0; i < p->n_steps; i++)
    if (cs[i].conv) prod[cs[i].y] = i;
  for (int j = 0; j < p->n_steps; j++) {
    const gpu_mstep *s = &p->steps[j];
    int nb = s->op == GPU_STEP_FILL ? 1 : s->op == GPU_STEP_LAUNCH ? s->n_args : 0;
    for (int k = 0; k < nb; k++) {
      int b = s->op == GPU_STEP_FILL ? s->fill_buf : s->args[k];
      if (b >= 0 && prod[b] >= 0 && prod[b] != j && !(mark[b] & BACK) && reads_nchw(p, cs, j, b)) mark[b] |= BACK;
    }
  }
  for (int i = 0; i < p->n_steps; i++) {
    if (!cs[i].conv) continue;
    int y = cs[i].y, x = cs[i].x;
    n += (cs[i].copy >= 0) + (cs[i].pre >= 0) - ((mark[y] & BACK) || p->bufs[y].kind == GPU_BUF_OUTPUT);
    if (cs[i].cpad) n += cs[i].gain - 2; /* its conversion and zero copy */
    else if (prod[x] < 0 && !cs[i].pool && !(mark[x] & CONVERTED)) n--, mark[x] |= CONVERTED;
  }
  return n;
}

/* Drops rewritten convs, one at a time in step order, while that saves
 * launches (a depthwise conv between two kernels that read and write NCHW
 * would add two conversions); a tie keeps the channels-last kernel. At
 * most PRUNE_ROUNDS passes over the convs: bounded work on any model. */
enum { PRUNE_ROUNDS = 4 };
static cov_status prune(const gpu_model_plan *p, cl_step *cs) {
  int *prod = malloc(((size_t)p->n_bufs + 1) * sizeof *prod);
  char *mark = malloc((size_t)p->n_bufs + 1);
  if (!prod || !mark) {
    free(prod), free(mark);
    return cov_error(COV_OUT_OF_MEMORY, NULL, "out of memory");
  }
  int best = saved(p, cs, prod, mark);
  for (int changed = 1, round = 0; changed && round < PRUNE_ROUNDS; round++) {
    changed = 0;
    for (int i = 0; i < p->n_steps; i++) {
      if (!cs[i].conv) continue;
      cs[i].conv = 0;
      int n = saved(p, cs, prod, mark);
      if (n > best) best = n, changed = 1;
      else cs[i].conv = 1;
    }
  }
  free(prod), free(mark);
  return NULL;
}

/* Attribute `name` of a codelet call, def where the call leaves it. */
static int64_t call_attr(const gpu_cdl_call *k, const char *name, int64_t def) {
  for (int a = 0; a < k->n_attrs; a++)
    if (!strcmp(k->attrs[a].name, name) && !k->attrs[a].is_float) return k->attrs[a].i;
  return def;
}

/* Whether codelet step s is a max pool (undilated, windows up to 256
 * taps) or a global average pool of an f32 [N, C, H, W] value; fills *pe,
 * NCHW f32 on both sides, with its kernel. */
static int pool_kernel(const gpu_model_plan *p, const gpu_mstep *s, gpu_ew *pe) {
  gpu_ew e;
  memset(&e, 0, sizeof e); /* kernels compare bytewise */
  if (s->op != GPU_STEP_LAUNCH || s->kkind != GPU_KERNEL_EW || s->ew.kind != GPU_EW_CODELET) return 0;
  const gpu_cdl_call *k = &s->ew.cdl;
  const char *nm = cov_codelet_name(k->c);
  int max = !strcmp(nm, "maxpool"), gavg = !strcmp(nm, "global_avgpool");
  if ((!max && !gavg) || k->n_in != 1 || k->in_dtype[0] != COV_F32 || k->in_rank[0] != 4 || s->n_args != 2) return 0;
  int x = s->args[0], y = s->args[1];
  if (x < 0 || y < 0 || p->bufs[x].dtype != COV_F32 || p->bufs[y].dtype != COV_F32 || (max && p->bufs[y].rank != 4))
    return 0;
  const int64_t *d = k->in_shape[0], *o = p->bufs[y].shape; /* x's buffer may be flat, a global pool's y [N, C] */
  /* A 4-D buffer seen by the call as other images or channels (a
   * ReduceMean of [N, C, H, W] bound as [1, N * C, H * W, 1]) is the same
   * NCHW memory but not the same NHWC form: left to the codelet. A global
   * pool's call may fold H x W into one dim; a max pool's window needs both. */
  const int64_t *b = p->bufs[x].shape;
  if (p->bufs[x].rank == 4 && (b[0] != d[0] || b[1] != d[1] || b[2] * b[3] != d[2] * d[3] || (max && b[2] != d[2])))
    return 0;
  e.N = d[0], e.C = d[1], e.H = d[2], e.W = d[3], e.P = max ? o[2] : 1, e.Q = max ? o[3] : 1;
  if (max) {
    e.R = call_attr(k, "kernel_h", 0), e.S = call_attr(k, "kernel_w", 0);
    e.sh = call_attr(k, "stride_h", 1), e.sw = call_attr(k, "stride_w", 1);
    e.pt = call_attr(k, "pad_top", 0), e.pl = call_attr(k, "pad_left", 0);
    int plain = call_attr(k, "dilation_h", 1) == 1 && call_attr(k, "dilation_w", 1) == 1;
    if (!plain || e.R < 1 || e.S < 1 || e.R * e.S > 256 || e.sh < 1 || e.sw < 1) return 0;
  }
  e.kind = max ? GPU_EW_MAXPOOL : GPU_EW_GAVGPOOL, e.in_dtype = e.out_dtype = COV_F32;
  if (p->bufs[x].numel > INT32_MAX || p->bufs[x].numel != e.N * e.C * e.H * e.W ||
      p->bufs[y].numel != e.N * e.C * e.P * e.Q || (max && (o[0] != e.N || o[1] != e.C)))
    return 0;
  *pe = e;
  return 1;
}

/* Whether step i is a convolution the channels-last kernels take; fills
 * cs[i] and marks its f16 copy and NHWC transform dropped. */
static void consider(const gpu_target *t, gpu_model_plan *p, cl_step *cs, int i) {
  const gpu_mstep *s = &p->steps[i];
  if (s->op != GPU_STEP_LAUNCH || s->pre) return;
  gpu_ew pe;
  if (pool_kernel(p, s, &pe)) { /* a max pool: a node with no copy or transform of its own */
    cs[i].pool = pe.kind == GPU_EW_MAXPOOL ? CL_MAXPOOL : CL_GAVGPOOL, cs[i].x = s->args[0], cs[i].y = s->args[1];
    cs[i].conv = pe.kind == GPU_EW_MAXPOOL;
    return;
  }
  gpu_problem q = s->plan.prob;
  int dw = s->kkind == GPU_KERNEL_EW && s->ew.kind == GPU_EW_CONV && s->ew.groups > 1 && s->ew.groups == s->ew.C &&
           s->ew.groups == s->ew.K && q.kind == GPU_OP_CONV2D && q.groups == s->ew.groups;
  int conv = s->kkind == GPU_KERNEL_MATRIX && q.kind == GPU_OP_CONV2D && q.groups == 1 && !q.nhwc_io &&
             !q.epi.maxpool2x2 && q.in_dtype == COV_F16;
  /* Stems (above) stay on the gather path: timed on the H100 at batch 32
   * the padded channels-last stem lost at every size tried (resnet18's
   * 7x7: 286 us against 162; mobilenet_v2's 3x3 with its two copies: 107
   * against 47; efficientnet_b0's: 132 against 60), so no conv is planned
   * with CL_CPAD channels until its kernel beats the gather path. */
  int cpad = 0;
  if ((!dw && !conv) || s->args[1] < 0 || p->bufs[s->args[1]].kind != GPU_BUF_WEIGHT || (q.cc % 8 && !cpad) ||
      q.ck % 8)
    return;
  int y = s->args[2], pre = conv && i > 0 && s[-1].pre ? i - 1 : -1, copy = -1, x = s->args[0];
  if (conv) {
    int h = pre >= 0 ? p->steps[pre].args[0] : s->args[0];
    copy = f16_copy_of(p, h, pre >= 0 ? pre : i);
    if (copy < 0 || cs[copy].owner >= 0) return;
    for (int j = 0; j < p->n_steps; j++) /* the copy is this conv's alone */
      for (int k = 0; j != copy && j != pre && j != i && p->steps[j].op == GPU_STEP_LAUNCH && k < p->steps[j].n_args; k++)
        if (p->steps[j].args[k] == h) return;
    x = p->steps[copy].args[0];
  }
  if (x < 0 || p->bufs[x].dtype != COV_F32 || p->bufs[x].rank != 4 || p->bufs[y].dtype != COV_F32) return;
  gpu_mbuf *yb = &p->bufs[y]; /* a group's inner result may be flat: its NCHW sizes */
  if (yb->rank != 4 && yb->numel == q.cn * q.ck * s->plan.oh * s->plan.ow) {
    int64_t sh[4] = {q.cn, q.ck, s->plan.oh, s->plan.ow};
    yb->rank = 4, memcpy(yb->shape, sh, sizeof sh);
  }
  if (yb->rank != 4) return;
  const int64_t *xs = p->bufs[x].shape; /* a stem's conversion reads x as the conv sees it */
  if (cpad && (p->bufs[x].kind != GPU_BUF_INPUT || xs[0] != q.cn || xs[1] != q.cc || xs[2] != q.ch || xs[3] != q.cw)) return;
  q.nhwc_io = true, q.in_dtype = COV_F16;
  if (cpad) q.cc = cpad;
  /* a stem's K tiles run past its CL_CPAD channels (zero-filled chunks) */
  q.exact_channels = !cpad && (dw || !(gpu_model_pad_link(p, i) || gpu_model_pad_wide(p, i)));
  const gpu_tune_entry *e;
  cov_status st = gpu_plan_pick(t, &q, &cs[i].plan, &e);
  if (st || (dw && !cs[i].plan.dw) || (conv && (!cs[i].plan.nhwc || !cs[i].plan.prob.nhwc_io))) {
    cov_status_free(st);
    return;
  }
  cs[i].conv = 1, cs[i].x = x, cs[i].y = y, cs[i].copy = copy, cs[i].pre = pre, cs[i].cpad = cpad;
  int64_t work = p->bufs[y].numel / CL_STEM_WORK; /* y's outputs */
  if (cpad) cs[i].gain = (int)(work < 1 << 20 ? work : 1 << 20);
  if (copy >= 0) cs[copy].owner = i;
  if (pre >= 0) cs[pre].owner = i;
}

/* The conversion copy between NCHW f32 buffer `nchw` [N][C][H][W] and its
 * NHWC f16 form `nhwc`: to_nhwc, consecutive work items on consecutive
 * destination channels, cp >= C of them per pixel (channels C .. cp-1 left
 * to the zero copy below); back, on consecutive destination pixels. */
static gpu_ew convert(const gpu_model_plan *p, int nchw, int to_nhwc, int64_t cp) {
  const int64_t *d = p->bufs[nchw].shape;
  int64_t c = d[1], hw = d[2] * d[3];
  if (!to_nhwc || cp < c) cp = c;
  gpu_ew e;
  memset(&e, 0, sizeof e); /* kernels compare bytewise */
  e.kind = GPU_EW_COPY, e.n = p->bufs[nchw].numel, e.run = 1;
  e.out_dtype = to_nhwc ? COV_F16 : COV_F32, e.in_dtype = to_nhwc ? COV_DTYPE_INVALID : COV_F16; /* f32, f16 */
  int64_t rep[3] = {c, hw, d[0]}, ss[3] = {hw, 1, c * hw}, ds[3] = {1, cp, cp * hw};
  if (!to_nhwc) rep[0] = hw, rep[1] = c, ss[0] = c, ss[1] = 1, ds[0] = 1, ds[1] = hw;
  for (int l = 0; l < GPU_COPY_LEVELS; l++) e.rep[l] = rep[l], e.ss[l] = ss[l], e.ds[l] = ds[l];
  return e;
}

/* The copy of f32 zeros (buffer of cp - C, read with stride 0) into
 * channels C .. cp-1 of every pixel of a padded NHWC f16 form of NCHW
 * buffer `nchw`. */
static gpu_ew zero_tail(const gpu_model_plan *p, int nchw, int64_t cp) {
  const int64_t *d = p->bufs[nchw].shape;
  int64_t c = d[1], hw = d[2] * d[3];
  gpu_ew e;
  memset(&e, 0, sizeof e); /* kernels compare bytewise */
  e.kind = GPU_EW_COPY, e.run = cp - c, e.n = (cp - c) * hw * d[0], e.d0 = c;
  e.out_dtype = COV_F16, e.in_dtype = COV_DTYPE_INVALID; /* f32 */
  int64_t rep[3] = {hw, d[0], 1}, ds[3] = {cp, cp * hw, cp * hw * d[0]};
  for (int l = 0; l < GPU_COPY_LEVELS; l++) e.rep[l] = rep[l], e.ss[l] = 0, e.ds[l] = ds[l];
  return e;
}

static gpu_mstep convert_step(const gpu_mstep *at, int from, int to, gpu_ew ew, const char *sfx) {
  gpu_mstep s;
  memset(&s, 0, sizeof s);
  s.op = GPU_STEP_LAUNCH, s.kkind = GPU_KERNEL_EW, s.group = at->group, s.module = -1, s.fill_buf = -1;
  memcpy(s.label, at->label, sizeof s.label);
  s.ew = ew;
  /* unique: named after the step it serves, which has a unique name */
  snprintf(s.kernel, sizeof s.kernel, "%.140s_%s", at->kernel, sfx);
  gpu_ew_grid(&s.ew, s.grid);
  s.block[0] = GPU_EW_THREADS, s.block[1] = s.block[2] = 1;
  for (int k = 0; k < GPU_CDL_MAX_ARGS; k++) s.args[k] = -1;
  s.n_args = 4, s.args[0] = from, s.args[2] = to;
  return s;
}

/* The weights of a rewritten conv in its kernel's layout, f16: [R][S][C][K]
 * from OIHW (unless the plan read them so already), depthwise [R][S][C];
 * a padded stem's (cin < the plan's C) [R][S][C][K] with zero tails. */
static cov_status reorder_weights(gpu_model_plan *p, const gpu_mstep *s, const gpu_plan *np, int64_t cin) {
  gpu_mbuf *w = &p->bufs[s->args[1]];
  const gpu_problem *q = &np->prob;
  if (s->kkind == GPU_KERNEL_MATRIX && s->plan.nhwc) return NULL; /* [R][S][C][K] already */
  int64_t rs = q->cr * q->cs, cg = q->cc / q->groups, n = w->numel, m = q->ck * cg * rs;
  if (cin > cg || n != q->ck * cin * rs)
    return cov_error(COV_INTERNAL, GPU_LOC(NULL, w->name), "weight '%s': %lld values", w->name, (long long)n);
  uint16_t *v = calloc((size_t)m + 1, 2); /* f16 zeros in the padded channels */
  if (!v) return oom();
  for (int64_t o = 0; o < q->ck; o++)
    for (int64_t c = 0; c < cin; c++)
      for (int64_t r = 0; r < rs; r++) {
        int64_t from = (o * cin + c) * rs + r, to = np->dw ? r * q->ck + o : (r * q->cc + c) * q->ck + o;
        float f;
        uint16_t h;
        if (w->dtype == COV_F32) memcpy(&f, (const char *)w->data + 4 * from, 4), h = cov_f32_to_f16(f);
        else memcpy(&h, (const char *)w->data + 2 * from, 2);
        v[to] = h;
      }
  free(w->data);
  w->data = v, w->dtype = COV_F16, w->numel = m;
  if (m != n && w->rank == 4) w->shape[1] = cg; /* OIHW sizes of the padded values */
  else if (m != n) w->rank = 1, w->shape[0] = m;
  return NULL;
}

/* Pool step i as its pooling kernel: reading the NHWC f16 form of its
 * input where one exists by now, else the f32 NCHW one; a max pool kept
 * as a node writes NHWC f16 (converted back where something reads it as
 * f32), any other writes its f32 NCHW result. */
static cov_status rewrite_pool(gpu_model_plan *p, const cl_step *cs, int i, int *nhwc, gpu_mstep *out, int *n) {
  gpu_mstep s = p->steps[i];
  gpu_ew e;
  if (!pool_kernel(p, &s, &e)) return cov_error(COV_INTERNAL, GPU_LOC(NULL, s.label), "step %d: not a pool", i);
  int x = cs[i].x, y = cs[i].y;
  if (nhwc[x] >= 0) s.args[0] = nhwc[x], e.in_dtype = COV_F16;
  if (cs[i].conv) {
    int64_t sh[4] = {e.N, e.P, e.Q, e.C};
    if ((nhwc[y] = add_buffer(p, p->bufs[y].name, COV_F16, 4, sh)) < 0) return oom();
    e.out_dtype = COV_F16;
  }
  e.n = gpu_pool_items(&e);
  s.ew = e, s.n_args = 4;
  s.args[1] = -1, s.args[2] = cs[i].conv ? nhwc[y] : y, s.args[3] = -1;
  gpu_ew_grid(&s.ew, s.grid);
  s.block[0] = GPU_EW_THREADS, s.block[1] = s.block[2] = 1;
  s.shared_bytes = gpu_ew_shared_bytes(&s.ew);
  out[(*n)++] = s;
  if (cs[i].conv && needs_back(p, cs, i)) out[(*n)++] = convert_step(&s, nhwc[y], y, convert(p, y, 0, 0), "to_nchw");
  return NULL;
}

/* A padded stem's input (*in): NHWC f16 [N][H][W][cp] from f32 NCHW x by
 * a conversion and a copy of zeros into the tail channels. */
static cov_status stem_input(gpu_model_plan *p, const gpu_mstep *at, int x, int64_t cp, int *in, gpu_mstep *out, int *n) {
  cov_status st = NULL;
  char nm[sizeof p->bufs[0].name];
  int64_t d[4], tail;
  memcpy(d, p->bufs[x].shape, sizeof d); /* a copy: adding buffers moves p->bufs */
  tail = cp - d[1];
  snprintf(nm, sizeof nm, "%.110s.nhwc_pad", p->bufs[x].name);
  int64_t sh[4] = {d[0], d[2], d[3], cp};
  int b = gpu_ms_add_buf(p, nm, GPU_BUF_INTERMEDIATE, COV_F16, 4, sh, &st);
  if (b < 0) return st ? st : oom();
  snprintf(nm, sizeof nm, "%.110s.pad_zeros", p->bufs[x].name);
  int z = gpu_ms_add_buf(p, nm, GPU_BUF_WEIGHT, COV_F32, 1, &tail, &st);
  if (z < 0) return st ? st : oom();
  if (!(p->bufs[z].data = calloc((size_t)tail, sizeof(float)))) return oom();
  out[(*n)++] = convert_step(at, x, b, convert(p, x, 1, cp), "to_nhwc");
  out[(*n)++] = convert_step(at, z, b, zero_tail(p, x, cp), "pad_zero");
  *in = b;
  return NULL;
}

/* The rewritten step list: conversions at the edges, the convs on NHWC f16
 * buffers (nhwc[b]: buffer b's NHWC f16 form, -1 none yet). */
static cov_status rewrite(gpu_model_plan *p, cl_step *cs, int *nhwc, gpu_mstep *out, int *n_out) {
  int n = 0;
  for (int i = 0; i < p->n_steps; i++) {
    gpu_mstep s = p->steps[i];
    if (cs[i].del) continue;
    if (cs[i].pool) {
      COV_RETURN_IF_ERROR(rewrite_pool(p, cs, i, nhwc, out, &n));
      continue;
    }
    if (!cs[i].conv) {
      out[n++] = s;
      continue;
    }
    int x = cs[i].x, y = cs[i].y;
    int64_t d[4], e[4]; /* copies: add_buffer moves p->bufs */
    memcpy(d, p->bufs[x].shape, sizeof d), memcpy(e, p->bufs[y].shape, sizeof e);
    int in = nhwc[x];
    if (cs[i].cpad) { /* a stem: its own padded form */
      COV_RETURN_IF_ERROR(stem_input(p, &s, x, cs[i].cpad, &in, out, &n));
    } else if (nhwc[x] < 0) { /* an f32 NCHW activation: converted once, before its first such reader */
      int64_t sh[4] = {d[0], d[2], d[3], d[1]};
      if ((nhwc[x] = add_buffer(p, p->bufs[x].name, COV_F16, 4, sh)) < 0) return oom();
      out[n++] = convert_step(&s, x, nhwc[x], convert(p, x, 1, d[1]), "to_nhwc");
      in = nhwc[x];
    }
    int64_t sh[4] = {e[0], e[2], e[3], e[1]};
    if ((nhwc[y] = add_buffer(p, p->bufs[y].name, COV_F16, 4, sh)) < 0) return oom();
    int64_t cin = cs[i].cpad ? d[1] : cs[i].plan.prob.cc / cs[i].plan.prob.groups;
    COV_RETURN_IF_ERROR(reorder_weights(p, &s, &cs[i].plan, cin));
    s.kkind = GPU_KERNEL_MATRIX, s.plan = cs[i].plan;
    memcpy(s.grid, s.plan.grid, sizeof s.grid);
    s.block[0] = (unsigned)s.plan.threads, s.block[1] = s.block[2] = 1;
    s.shared_bytes = s.plan.shared_bytes;
    s.args[0] = in, s.args[2] = nhwc[y];
    out[n++] = s;
    /* read as f32 NCHW by anything else (a kernel other than a rewritten
     * conv's dropped copy, the caller): converted back once */
    if (needs_back(p, cs, i))
      out[n++] = convert_step(&s, nhwc[y], y, convert(p, y, 0, 0), "to_nchw");
  }
  *n_out = n;
  return NULL;
}

cov_status gpu_model_channels_last(gpu_model_plan *p, const gpu_target *t) {
  if (!t || !t->caps.has_async_copy || p->n_steps == 0) return NULL; /* no channels-last kernel without async copies */
  int n0 = p->n_steps;
  cl_step *cs = calloc((size_t)n0, sizeof *cs);
  int *nhwc = malloc(((size_t)p->n_bufs + (size_t)2 * n0 + 1) * sizeof *nhwc);
  gpu_mstep *out = malloc((size_t)3 * n0 * sizeof *out);
  if (!cs || !nhwc || !out) {
    free(cs), free(nhwc), free(out);
    return oom();
  }
  for (int b = 0; b < p->n_bufs + 2 * n0 + 1; b++) nhwc[b] = -1;
  int any = 0;
  for (int i = 0; i < n0; i++) cs[i].copy = cs[i].pre = cs[i].owner = -1;
  for (int i = 0; i < n0; i++) consider(t, p, cs, i);
  cov_status st = prune(p, cs);
  for (int i = 0; i < n0 && !st; i++) {
    any |= cs[i].conv || cs[i].pool;
    cs[i].del = cs[i].owner >= 0 && cs[cs[i].owner].conv;
  }
  int n = 0;
  if (!st && any) st = rewrite(p, cs, nhwc, out, &n);
  if (!st && any) {
    free(p->steps);
    p->steps = out, p->n_steps = n, p->cap_steps = 3 * n0;
    out = NULL;
  }
  free(cs), free(nhwc), free(out);
  return st;
}
