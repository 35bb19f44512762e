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
 * are reordered once ([R][S][C][K] f16, depthwise [R][S][C] f16). A conv
 * the channels-last kernel cannot take for its input channels (a stem's
 * 3) keeps its NCHW gather and f16 operand copy but writes NHWC f16 for
 * channels-last consumers (prob.nhwc_out: a gather node). Max
 * pools and global average pools become pooling kernels (gpu_pool.h): a
 * max pool is a node like a depthwise conv whose input needs no
 * conversion (it reads NCHW f32 as well), a global average pool reads a
 * rewritten conv's NHWC f16 result where there is one. Which candidates
 * stay is chosen by estimated time (prune): bytes moved at the target's
 * DRAM bandwidth plus a cost per launch. Every step keeps its group and
 * order, so the launch sequence stays the topological order it was. */
#include <stdlib.h>
#include <string.h>

#include "acg/acg_ir.h"
#include "backends/gpu/gpu_driver.h"
#include "backends/gpu/gpu_mplan.h"
#include "backends/gpu/gpu_msteps.h"
#include "backends/gpu/gpu_pool.h"
#include "backends/gpu/gpu_tune.h"

typedef struct cl_step {
  int conv;       /* 1: this step becomes a channels-last convolution (or max pool: `pool`) */
  int gather;     /* of a conv: it keeps its NCHW gather and f16 copy, only its output is NHWC f16 */
  int pool;       /* CL_MAXPOOL, CL_GAVGPOOL: a pooling codelet step (below), else 0 */
  int del;        /* 1: dropped (an f16 copy or NHWC transform a rewritten conv no longer reads) */
  int x, y;       /* the conv's f32 NCHW input (before its f16 copy) and output */
  int copy, pre;  /* its f16 copy and NHWC transform steps (-1: none) */
  int owner;      /* of an f16 copy or transform: the conv reading it (-1: none) */
  gpu_plan plan;  /* the rewritten conv's plan */
} cl_step;

/* Pools: a max pool is a node of the channels-last graph like a depthwise
 * conv (conv = 1: NHWC f16 out, its input read in whichever form exists,
 * so it needs no conversion in front); a global average pool reads its
 * input's NHWC f16 form where a rewritten conv writes one and keeps its
 * f32 [N, C] result. Both become the pooling kernels (gpu_pool.h) in place
 * of their codelet's loop nest. */
enum { CL_MAXPOOL = 1, CL_GAVGPOOL = 2 };

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

/* Whether step j reads buffer b as f32 NCHW: not as a rewritten conv's
 * or pool's input (read in NHWC f16 form), nor as a step a kept conv
 * absorbs (its dropped f16 copy or transform). */
static int reads_nchw(const gpu_model_plan *p, const cl_step *cs, int j, int b) {
  const gpu_mstep *s = &p->steps[j];
  int refs = s->op == GPU_STEP_FILL && s->fill_buf == b;
  for (int k = 0; s->op == GPU_STEP_LAUNCH && k < s->n_args; k++) refs |= s->args[k] == b;
  if (!refs) return 0;
  if ((cs[j].conv || cs[j].pool == CL_GAVGPOOL) && cs[j].x == b) return 0;
  return !(cs[j].owner >= 0 && cs[cs[j].owner].conv);
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

/* What prune weighs: microseconds per byte moved (the target's DRAM
 * bandwidth) and per launch. No ACG field gives a launch's cost: 2.5 us
 * is a small kernel's launch-to-launch time in a CUDA graph on the H100
 * (resnet18's stem, 162 us for 401408 pixels x 64 channels, is about one
 * such launch per 6144 x 64 outputs). */
typedef struct cl_cost {
  double us_byte, us_launch;
} cl_cost;
#define CL_LAUNCH_US 2.5

static cl_cost cost_of(const gpu_target *t) {
  double bw = acg_dram_bandwidth(t->acg), mhz = t->acg->clock_mhz; /* bytes per cycle, cycles per us */
  cl_cost c = {bw > 0 && mhz > 0 ? 1.0 / (bw * mhz) : 0, CL_LAUNCH_US};
  return c;
}

/* A launch moving `bytes`, in microseconds. */
static double launch_us(const cl_cost *k, double bytes) { return k->us_launch + bytes * k->us_byte; }

/* The estimated time of the work the rewrite changes with the convs marked
 * now, relative to none marked (lower is better): each one's f16 copy
 * and NHWC transform gone (a copy reads 4 and writes 2 bytes an element,
 * a transform 2 and 2), its output stored as f16 (2 bytes an element
 * less than f32; a conv reads an f16 copy either way), plus one conversion
 * (6 bytes an element) per f32 NCHW input none produces and one per
 * output read as NCHW. prod (per buffer: the conv writing it, else -1)
 * and mark are scratch of n_bufs each: one pass over the steps. */
static double cost(const gpu_model_plan *p, const cl_step *cs, const cl_cost *k, int *prod, char *mark) {
  enum { BACK = 1, CONVERTED = 2 };
  double us = 0;
  for (int b = 0; b < p->n_bufs; b++) prod[b] = -1, mark[b] = 0;
  for (int i = 0; i < p->n_steps; i++)
    if (cs[i].conv) prod[cs[i].y] = i;
  for (int j = 0; j < p->n_steps; j++) {
    const gpu_mstep *s = &p->steps[j];
    int nb = s->op == GPU_STEP_FILL ? 1 : s->op == GPU_STEP_LAUNCH ? s->n_args : 0;
    for (int a = 0; a < nb; a++) {
      int b = s->op == GPU_STEP_FILL ? s->fill_buf : s->args[a];
      if (b >= 0 && prod[b] >= 0 && prod[b] != j && !(mark[b] & BACK) && reads_nchw(p, cs, j, b)) mark[b] |= BACK;
    }
  }
  for (int i = 0; i < p->n_steps; i++) {
    if (!cs[i].conv) continue;
    int y = cs[i].y, x = cs[i].x;
    double ny = (double)p->bufs[y].numel, nx = (double)p->bufs[x].numel;
    if (cs[i].copy >= 0) us -= launch_us(k, 6 * nx);
    if (cs[i].pre >= 0) us -= launch_us(k, 4 * nx);
    us -= 2 * ny * k->us_byte;
    if ((mark[y] & BACK) || p->bufs[y].kind == GPU_BUF_OUTPUT) us += launch_us(k, 6 * ny);
    if (!cs[i].pool && !cs[i].gather && prod[x] < 0 && !(mark[x] & CONVERTED))
      us += launch_us(k, 6 * nx), mark[x] |= CONVERTED;
  }
  return us;
}

/* The kept gather conv (cl_step.gather) writing buffer b before step
 * `before`, -1 if none. */
static int gather_producer(const cl_step *cs, int b, int before) {
  for (int j = before - 1; j >= 0; j--)
    if (cs[j].conv && cs[j].y == b) return cs[j].gather ? j : -1;
  return -1;
}

/* Drops rewritten convs, one at a time in step order, while that lowers
 * the estimated time (a depthwise conv between two kernels that read and
 * write NCHW would add two conversions), then a conv with the gather
 * conv producing its input (a stem and the depthwise conv after it
 * between NCHW readers and writers: either alone dropped adds the
 * conversion the other saves); a tie keeps the channels-last kernels.
 * (Other pairs are left to the single drops: the estimate does not see
 * the residual adds gpu_model_fuse later moves to NHWC, so dropping a
 * projection with the expansion after it looked cheaper than it is.) At
 * most PRUNE_ROUNDS passes over the convs: bounded work on any model. */
enum { PRUNE_ROUNDS = 4 };
static cov_status prune(const gpu_model_plan *p, const gpu_target *t, cl_step *cs) {
  int *prod = malloc(((size_t)p->n_bufs + 1) * sizeof *prod);
  char *mark = malloc((size_t)p->n_bufs + 1);
  if (!prod || !mark) {
    free(prod), free(mark);
    return oom();
  }
  cl_cost k = cost_of(t);
  double best = cost(p, cs, &k, prod, mark);
  for (int changed = 1, round = 0; changed && round < PRUNE_ROUNDS; round++) {
    changed = 0;
    for (int i = 0; i < p->n_steps; i++) {
      if (!cs[i].conv) continue;
      cs[i].conv = 0;
      double us = cost(p, cs, &k, prod, mark);
      if (us < best - 1e-9) best = us, changed = 1;
      else cs[i].conv = 1;
    }
    for (int i = 0; i < p->n_steps; i++) {
      int j = cs[i].conv ? gather_producer(cs, cs[i].x, i) : -1;
      if (j < 0) continue;
      cs[i].conv = cs[j].conv = 0;
      double us = cost(p, cs, &k, prod, mark);
      if (us < best - 1e-9) best = us, changed = 1;
      else cs[i].conv = cs[j].conv = 1;
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

/* The 4-d NCHW sizes of conv step s's output buffer y (a group's inner
 * result may be flat); 0 if it has none. */
static int conv_out_4d(gpu_model_plan *p, const gpu_mstep *s, int y) {
  const gpu_problem *q = &s->plan.prob;
  gpu_mbuf *yb = &p->bufs[y];
  if (yb->dtype != COV_F32) return 0;
  if (yb->rank != 4 && yb->numel == q->cn * q->ck * s->plan.oh * s->plan.ow) {
    int64_t sh[4] = {q->cn, q->ck, s->plan.oh, s->plan.ow};
    yb->rank = 4, memcpy(yb->shape, sh, sizeof sh);
  }
  return yb->rank == 4;
}

/* Whether matrix step i, an ungrouped 16-bit conv on the NCHW gather
 * (consider's `conv`, its weights a model constant) the channels-last
 * kernel cannot take (input channels not whole 16-byte rows: a stem's
 * 3), can write its output NHWC f16 from the registers (prob.nhwc_out)
 * for channels-last consumers; fills cs[i]. Its input and f16 operand
 * copy stay as they are. */
static void consider_gather(const gpu_target *t, gpu_model_plan *p, cl_step *cs, int i) {
  const gpu_mstep *s = &p->steps[i];
  gpu_problem q = s->plan.prob;
  if (q.nhwc_out || q.epi.residual || s->plan.nhwc || s->args[0] < 0 || !conv_out_4d(p, s, s->args[2])) return;
  q.nhwc_out = true;
  const gpu_tune_entry *e;
  cov_status st = gpu_plan_pick(t, &q, &cs[i].plan, &e);
  if (st || cs[i].plan.nhwc || !cs[i].plan.out_f16) {
    cov_status_free(st);
    return;
  }
  cs[i].conv = cs[i].gather = 1, cs[i].x = s->args[0], cs[i].y = s->args[2];
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
  /* Stems of < 8 channels keep the NCHW gather (padded to 8 for the
   * channels-last kernel they were slower on the H100 at batch 32:
   * resnet18 286 us against 162, mobilenet_v2 107 against 47,
   * efficientnet_b0 132 against 60); only their output goes NHWC. */
  if ((!dw && !conv) || s->args[1] < 0 || p->bufs[s->args[1]].kind != GPU_BUF_WEIGHT) return;
  if (conv && q.cc % 8 && q.ck % 8 == 0) {
    consider_gather(t, p, cs, i);
    return;
  }
  if (q.cc % 8 || q.ck % 8) return;
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
  if (x < 0 || p->bufs[x].dtype != COV_F32 || p->bufs[x].rank != 4 || !conv_out_4d(p, s, y)) return;
  q.nhwc_io = true, q.in_dtype = COV_F16;
  q.exact_channels = dw || !(gpu_model_pad_link(p, i) || gpu_model_pad_wide(p, i));
  const gpu_tune_entry *e;
  cov_status st = gpu_plan_pick(t, &q, &cs[i].plan, &e);
  if (st || (dw && !cs[i].plan.dw) || (conv && (!cs[i].plan.nhwc || !cs[i].plan.prob.nhwc_io))) {
    cov_status_free(st);
    return;
  }
  cs[i].conv = 1, cs[i].x = x, cs[i].y = y, cs[i].copy = copy, cs[i].pre = pre;
  if (copy >= 0) cs[copy].owner = i;
  if (pre >= 0) cs[pre].owner = i;
}

/* The conversion copy between NCHW f32 buffer `nchw` [N][C][H][W] and its
 * NHWC f16 form: to_nhwc, consecutive work items on consecutive
 * destination channels; back, on consecutive destination pixels. */
static gpu_ew convert(const gpu_model_plan *p, int nchw, int to_nhwc) {
  const int64_t *d = p->bufs[nchw].shape;
  int64_t c = d[1], hw = d[2] * d[3];
  gpu_ew e;
  memset(&e, 0, sizeof e); /* kernels compare bytewise */
  e.kind = GPU_EW_COPY, e.n = p->bufs[nchw].numel, e.run = 1;
  e.out_dtype = to_nhwc ? COV_F16 : COV_F32, e.in_dtype = to_nhwc ? COV_DTYPE_INVALID : COV_F16; /* f32, f16 */
  int64_t rep[3] = {c, hw, d[0]}, ss[3] = {hw, 1, c * hw}, ds[3] = {1, c, c * hw};
  if (!to_nhwc) rep[0] = hw, rep[1] = c, ss[0] = c, ss[1] = 1, ds[0] = 1, ds[1] = hw;
  for (int l = 0; l < GPU_COPY_LEVELS; l++) e.rep[l] = rep[l], e.ss[l] = ss[l], e.ds[l] = ds[l];
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
 * from OIHW (unless the plan read them so already), depthwise [R][S][C]. */
static cov_status reorder_weights(gpu_model_plan *p, const gpu_mstep *s, const gpu_plan *np) {
  gpu_mbuf *w = &p->bufs[s->args[1]];
  const gpu_problem *q = &np->prob;
  if (s->kkind == GPU_KERNEL_MATRIX && s->plan.nhwc) return NULL; /* [R][S][C][K] already */
  int64_t rs = q->cr * q->cs, cin = q->cc / q->groups, n = w->numel;
  if (n != q->ck * cin * rs)
    return cov_error(COV_INTERNAL, GPU_LOC(NULL, w->name), "weight '%s': %lld values", w->name, (long long)n);
  uint16_t *v = calloc((size_t)n + 1, 2);
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
  w->data = v, w->dtype = COV_F16;
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
  if (cs[i].conv && needs_back(p, cs, i)) out[(*n)++] = convert_step(&s, nhwc[y], y, convert(p, y, 0), "to_nchw");
  return NULL;
}

/* x's NHWC f16 form: where no node has written it yet (an f32 NCHW
 * activation), converted once, before its first such reader (at). */
static cov_status to_nhwc(gpu_model_plan *p, const gpu_mstep *at, int x, int *nhwc, gpu_mstep *out, int *n) {
  if (nhwc[x] >= 0) return NULL;
  const int64_t *d = p->bufs[x].shape;
  int64_t sh[4] = {d[0], d[2], d[3], d[1]};
  if ((nhwc[x] = add_buffer(p, p->bufs[x].name, COV_F16, 4, sh)) < 0) return oom();
  out[(*n)++] = convert_step(at, x, nhwc[x], convert(p, x, 1), "to_nhwc");
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
    int64_t e[4]; /* a copy: add_buffer moves p->bufs */
    memcpy(e, p->bufs[y].shape, sizeof e);
    if (!cs[i].gather) COV_RETURN_IF_ERROR(to_nhwc(p, &s, x, nhwc, out, &n));
    int64_t sh[4] = {e[0], e[2], e[3], e[1]};
    if ((nhwc[y] = add_buffer(p, p->bufs[y].name, COV_F16, 4, sh)) < 0) return oom();
    if (!cs[i].gather) COV_RETURN_IF_ERROR(reorder_weights(p, &s, &cs[i].plan));
    s.kkind = GPU_KERNEL_MATRIX, s.plan = cs[i].plan;
    memcpy(s.grid, s.plan.grid, sizeof s.grid);
    s.block[0] = (unsigned)s.plan.threads, s.block[1] = s.block[2] = 1;
    s.shared_bytes = s.plan.shared_bytes;
    if (!cs[i].gather) s.args[0] = nhwc[x];
    s.args[2] = nhwc[y];
    out[n++] = s;
    /* read as f32 NCHW by anything else (a kernel other than a rewritten
     * conv's dropped copy, the caller): converted back once */
    if (needs_back(p, cs, i))
      out[n++] = convert_step(&s, nhwc[y], y, convert(p, y, 0), "to_nchw");
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
  cov_status st = prune(p, t, cs);
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
