/* backends/gpu/gpu_mcompile.c: a whole model into GPU kernels and their
 * launch sequence (gpu_mplan.h says what and why).
 *
 * long: gpu_model_compile_straight binds the capture's buffers, lowers each group and binds the outputs in one pass over the capture
 */
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "acg/acg_ir.h"
#include "backends/gpu/gpu_manifest.h"
#include "backends/gpu/gpu_driver.h"
#include "backends/gpu/gpu_mattn.h"
#include "backends/gpu/gpu_mcapture.h"
#include "backends/gpu/gpu_mplan.h"
#include "backends/gpu/gpu_qdot.h"
#include "backends/gpu/gpu_tune.h"
#include "backends/gpu/gpu_vendor.h"
#include "backends/gpu/gpu_msteps.h"
#include "common/grow.h"

/* ---- plan building ------------------------------------------------------ */

static int add_buf(gpu_model_plan *p, const char *name, gpu_buf_kind kind, cov_dtype dt, int rank, const int64_t *shape,
                   cov_status *st) {
  return gpu_ms_add_buf(p, name, kind, dt, rank, shape, st);
}
static int add_buf1(gpu_model_plan *p, const char *name, gpu_buf_kind kind, cov_dtype dt, int64_t n, cov_status *st) {
  return add_buf(p, name, kind, dt, 1, &n, st);
}
/* a weight of n elements stored as dt (owned copy): f16 rounded from f32
 * values, any other dtype copied from values of that dtype */
static int add_weight(gpu_model_plan *p, const char *name, cov_dtype dt, int64_t n, const void *vals, cov_status *st) {
  int b = add_buf1(p, name, GPU_BUF_WEIGHT, dt, n, st);
  if (b < 0) return -1;
  size_t es = cov_dtype_size(dt);
  unsigned char *d = malloc((size_t)n * es + 1);
  if (!d) {
    *st = cov_error(COV_OUT_OF_MEMORY, NULL, "out of memory for weight %s", name);
    return -1;
  }
  for (int64_t i = 0; i < n; i++) {
    if (dt == COV_F16) {
      uint16_t h = cov_f32_to_f16(((const float *)vals)[i]);
      memcpy(d + 2 * i, &h, 2);
    } else {
      memcpy(d + es * i, (const char *)vals + es * i, es);
    }
  }
  p->bufs[b].data = d;
  return b;
}

void gpu_model_plan_free(gpu_model_plan *p) {
  for (int i = 0; i < p->n_bufs; i++) free(p->bufs[i].data);
  for (int i = 0; i < p->n_mods; i++) free(p->mods[i].code);
  for (int i = 0; i < p->n_parts; i++) {
    for (int k = 0; k < p->parts[i].n; k++) free(p->parts[i].values[k]);
    free(p->parts[i].values), free(p->parts[i].bufs);
  }
  free(p->bufs), free(p->steps), free(p->mods), free(p->parts);
  memset(p, 0, sizeof *p);
}

/* ---- a group's calls ---------------------------------------------------- */

typedef struct lower_ctx {
  gpu_model_plan *p;
  const gpu_capture *cap;
  const gpu_target *t; /* NULL: no target (CPU emulation only): matrix plans for a generic caps */
  const char *path;
  int *id_buf; /* capture buffer id -> plan buffer */
  int gi;      /* group index in the capture */
  const gpu_cap_group *g;
  int n_kernels; /* kernels of this group so far */
  int file_error; /* the error is the tuning file's (located there), not the group's */
  int split_ok;   /* matrix plans may split K (gpu_model_split_bind binds their workspaces) */
} lower_ctx;

/* a diagnostic's location: the model file and the group's ONNX node */
#define XLOC(x) GPU_LOC((x)->path, (x)->g->node[0] ? (x)->g->node : NULL)

static int64_t attr_i(const gpu_cap_call *c, const char *name, int64_t def) {
  for (size_t i = 0; i < c->n_attrs; i++)
    if (!strcmp(c->attrs[i].name, name)) return c->attrs[i].is_float ? (int64_t)c->attrs[i].f : c->attrs[i].i;
  return def;
}
static double attr_f(const gpu_cap_call *c, const char *name, double def) {
  for (size_t i = 0; i < c->n_attrs; i++)
    if (!strcmp(c->attrs[i].name, name)) return c->attrs[i].is_float ? c->attrs[i].f : (double)c->attrs[i].i;
  return def;
}

static const float *const_f32(const gpu_cap_arg *a) {
  return a->kind == COV_MODEL_ARG_CONST && a->t.dtype == COV_F32 ? a->t.data : NULL;
}

/* A weight holding a constant's elements as they are (bool, integer). */
static int add_raw_weight(gpu_model_plan *p, const char *name, const cov_tensor *t, cov_status *st) {
  int64_t n = cov_tensor_numel(t);
  int b = add_buf1(p, name, GPU_BUF_WEIGHT, t->dtype, n, st);
  if (b < 0) return -1;
  size_t bytes = (size_t)n * cov_dtype_size(t->dtype);
  unsigned char *d = malloc(bytes + 1);
  if (!d) {
    *st = cov_error(COV_OUT_OF_MEMORY, NULL, "out of memory for weight %s", name);
    return -1;
  }
  if (bytes) memcpy(d, t->data, bytes);
  p->bufs[b].data = d;
  return b;
}

/* The plan buffer holding argument a of a call: the previous call's result
 * (prev), a group input (its copy), or a constant made a weight (f32, or
 * bool and integer constants as they are). */
static int arg_buf(lower_ctx *x, const gpu_cap_arg *a, int prev, const int *in_buf, cov_status *st) {
  if (a->kind == COV_MODEL_ARG_PREV) return prev;
  if (a->kind == COV_MODEL_ARG_EXTERNAL) return in_buf[a->input];
  const float *v = const_f32(a);
  cov_dtype dt = a->t.dtype;
  int raw = a->kind == COV_MODEL_ARG_CONST && a->t.data &&
            (dt == COV_BOOL || dt == COV_I64 || dt == COV_I32 || dt == COV_U8 || dt == COV_I8);
  if (!v && !raw) {
    *st = cov_error(COV_UNSUPPORTED, XLOC(x), "constant '%s' is %s (f32, bool and integer constants are lowered)",
                    a->value, cov_dtype_name(dt));
    return -1;
  }
  char nm[160];
  snprintf(nm, sizeof nm, "%s", a->value);
  return raw ? add_raw_weight(x->p, nm, &a->t, st) : add_weight(x->p, nm, COV_F32, cov_tensor_numel(&a->t), v, st);
}

/* Kernel names are symbols in one PTX/HSACO module: only [A-Za-z0-9_], and
 * unique. The copies into model outputs belong to no group (group -1, one
 * lower_ctx per output), so they are named by their step, which is unique in
 * the plan; "g-1" would be rejected by LLVM's NVPTX symbol check. */
static void kname(lower_ctx *x, const char *what, char *out, size_t n) {
  if (x->g->group < 0)
    snprintf(out, n, "covenant_out_s%d_%s", x->p->n_steps - 1, what);
  else
    snprintf(out, n, "covenant_g%d_%d_%s", x->g->group, x->n_kernels++, what);
}

static cov_status ew_step(lower_ctx *x, const gpu_ew *e, const char *what, int a0, int a1, int a2, int a3) {
  cov_status st = NULL;
  gpu_mstep *s = gpu_ms_add_step(x->p, x->g->group, x->g->node, &st);
  if (!s) return st;
  s->op = GPU_STEP_LAUNCH;
  s->kkind = GPU_KERNEL_EW;
  s->ew = *e;
  kname(x, what, s->kernel, sizeof s->kernel);
  gpu_ew_grid(e, s->grid);
  s->block[0] = GPU_EW_THREADS;
  s->args[0] = a0, s->args[1] = a1, s->args[2] = a2, s->args[3] = a3;
  return NULL;
}

/* Makes group input k available as a whole buffer: the source buffer when
 * it is one run over all of it, else a new buffer filled by strided copies
 * per source (an index table only for a source whose elements follow no
 * few strided patterns: a gather). */
static cov_status input_buffer(lower_ctx *x, size_t k, int *out) {
  const gpu_cap_input *in = &x->g->in[k];
  const gpu_cap_value *v = &in->v;
  if (v->n_runs == 1 && v->runs[0].s0 == 0 && v->runs[0].n == x->cap->id_numel[v->runs[0].src]) {
    *out = x->id_buf[v->runs[0].src];
    return NULL;
  }
  cov_dtype dt = in->t.dtype; /* f32, or integer / bool / 8-bit elements moved as they are */
  if (dt != COV_F32 && dt != COV_I64 && dt != COV_I32 && dt != COV_BOOL && !gpu_cap_is8(dt))
    return cov_error(COV_UNSUPPORTED, XLOC(x), "input '%s' is %s rearranged from its source (copies move f32, "
                     "i64, i32, bool, i8 and u8 elements)", in->name, cov_dtype_name(dt));
  cov_status st = NULL;
  char nm[160];
  snprintf(nm, sizeof nm, "%s", in->name);
  int b = add_buf(x->p, nm, GPU_BUF_INTERMEDIATE, dt, in->t.rank, in->t.shape, &st);
  if (b < 0) return st;
  /* the sources in order of first use (few; runs can be millions: a
   * nearest upsampling at batch 32 is one run per element) */
  int srcs[64], n_src = 0;
  for (int r = 0; r < v->n_runs; r++) {
    int src = v->runs[r].src, seen = 0;
    for (int q = 0; q < n_src && !seen; q++) seen = srcs[q] == src;
    if (seen) continue;
    if (n_src == 64) return cov_error(COV_UNSUPPORTED, XLOC(x), "input '%s' gathers from more than 64 buffers", in->name);
    srcs[n_src++] = src;
    gpu_ew cp[8];
    int nc = gpu_runs_copies(v->runs, v->n_runs, src, cp, 8);
    for (int q = 0; q < nc; q++) {
      cp[q].out_dtype = dt;
      COV_RETURN_IF_ERROR(ew_step(x, &cp[q], "copy", x->id_buf[src], -1, b, -1));
    }
    if (nc >= 0) continue;
    float *tab = malloc((size_t)v->numel * sizeof *tab);
    if (!tab) return cov_error(COV_OUT_OF_MEMORY, NULL, "out of memory");
    for (int64_t j = 0; j < v->numel; j++) ((int32_t *)tab)[j] = -1;
    for (int q = r; q < v->n_runs; q++)
      if (v->runs[q].src == src)
        for (int64_t j = 0; j < v->runs[q].n; j++) ((int32_t *)tab)[v->runs[q].d0 + j] = (int32_t)(v->runs[q].s0 + j);
    snprintf(nm, sizeof nm, "%s.gather%d", in->name, src);
    int tb = add_buf1(x->p, nm, GPU_BUF_WEIGHT, COV_I32, v->numel, &st);
    if (tb < 0) {
      free(tab);
      return st;
    }
    x->p->bufs[tb].data = tab; /* i32 bit patterns */
    gpu_ew e = {.kind = GPU_EW_TABLE, .out_dtype = dt, .n = v->numel};
    COV_RETURN_IF_ERROR(ew_step(x, &e, "gather", x->id_buf[src], tb, b, -1));
  }
  *out = b;
  return NULL;
}

/* The matrix kernels' operand dtype: f16, or f32 on a target opened for
 * f32 (`--dtype f32`: no f16 operand rounding) and in the groups
 * the precision plan promotes (gpu_mprec.c). */
static cov_dtype operand_dtype(const lower_ctx *x) {
  const gpu_target *t = x->t;
  if (!t) return COV_F16;
  int g = x->g->group, promoted = t->f32_groups && g >= 0 && g < t->n_f32_groups && t->f32_groups[g];
  return t->dtype == COV_F32 || promoted ? COV_F32 : COV_F16;
}

/* an f16 copy of buffer b (the matrix kernels' operands; b itself where
 * they are f32) */
static cov_status to_f16(lower_ctx *x, int b, int *out) {
  if (operand_dtype(x) == COV_F32 && x->p->bufs[b].dtype == COV_F32) {
    *out = b;
    return NULL;
  }
  cov_status st = NULL;
  char nm[160];
  snprintf(nm, sizeof nm, "%.140s.f16", x->p->bufs[b].name);
  int h = add_buf(x->p, nm, GPU_BUF_INTERMEDIATE, COV_F16, x->p->bufs[b].rank, x->p->bufs[b].shape, &st);
  if (h < 0) return st;
  gpu_ew e = {.kind = GPU_EW_COPY, .out_dtype = COV_F16, .n = x->p->bufs[b].numel};
  COV_RETURN_IF_ERROR(ew_step(x, &e, "f16", b, -1, h, -1));
  *out = h;
  return NULL;
}

static const gpu_target_caps k_caps_default = {0};

/* Plans a matrix problem for the target (or, without one, checks it only). */
static cov_status matrix_plan(lower_ctx *x, const gpu_problem *q, gpu_plan *plan) {
  if (!x->t) {
    /* no target: the problem's GEMM view only (the CPU emulation runs the
     * reference loop nest) */
    (void)k_caps_default;
    return gpu_problem_check(q, plan);
  }
  const gpu_tune_entry *e; /* a tuning file's schedule that does not plan is the file's error */
  gpu_problem sq = *q;
  sq.split_ok = x->split_ok;
  sq.exact_channels = true; /* channel tails only where gpu_mlayout.c links two convs */
  const gpu_target *t = x->t;
  gpu_target t32; /* a promoted group's f32 problem against the target's f32 caps */
  if (q->in_dtype == COV_F32 && t->dtype != COV_F32) {
    t32 = *t;
    t32.caps = t->caps_f32, t32.n_shapes = t->n_shapes_f32;
    memcpy(t32.shapes, t->shapes_f32, sizeof t32.shapes);
    t = &t32;
  }
  cov_status st = gpu_plan_pick(t, &sq, plan, &e);
  x->file_error = st && e;
  return st;
}

static cov_status matrix_step(lower_ctx *x, const gpu_plan *plan, const char *what, int a, int w, int y, int bias) {
  cov_status st = NULL;
  if (plan->prob.epi.maxpool2x2) {
    gpu_mstep *f = gpu_ms_add_step(x->p, x->g->group, x->g->node, &st);
    if (!f) return st;
    f->op = GPU_STEP_FILL;
    f->fill_buf = y;
  }
  int src = a;
  if (plan->nhwc) {
    /* the channels-last transform into a workspace, then the conv */
    char nm[160];
    snprintf(nm, sizeof nm, "%.140s.nhwc", x->p->bufs[a].name);
    int wsb = add_buf1(x->p, nm, GPU_BUF_INTERMEDIATE, plan->prob.in_dtype, x->p->bufs[a].numel, &st);
    if (wsb < 0) return st;
    gpu_mstep *s = gpu_ms_add_step(x->p, x->g->group, x->g->node, &st);
    if (!s) return st;
    s->op = GPU_STEP_LAUNCH, s->kkind = GPU_KERNEL_MATRIX, s->plan = *plan, s->pre = 1;
    gpu_nhwc_grid(plan, s->grid);
    s->block[0] = GPU_NHWC_THREADS;
    s->shared_bytes = gpu_nhwc_shared_bytes();
    s->args[0] = a, s->args[2] = wsb;
    src = wsb;
  }
  gpu_mstep *s = gpu_ms_add_step(x->p, x->g->group, x->g->node, &st);
  if (!s) return st;
  s->op = GPU_STEP_LAUNCH, s->kkind = GPU_KERNEL_MATRIX, s->plan = *plan;
  kname(x, what, s->kernel, sizeof s->kernel);
  if (plan->nhwc) { /* the transform step before is named after this kernel */
    char k[sizeof s->kernel]; /* a copy: gcc -O0 -Wrestrict takes s[-1] and s for one object */
    memcpy(k, s->kernel, sizeof k);
    snprintf(s[-1].kernel, sizeof s[-1].kernel, "%.150s_nhwc", k);
  }
  memcpy(s->grid, plan->grid, sizeof s->grid);
  s->block[0] = (unsigned)plan->threads;
  s->shared_bytes = plan->shared_bytes;
  s->args[0] = src, s->args[1] = w, s->args[2] = y, s->args[3] = bias;
  return NULL;
}

static void unary_params(const gpu_cap_call *c, gpu_ew_fn f, float *p0, float *p1) {
  *p0 = 0, *p1 = 0;
  if (!strcmp(c->codelet, "relu6")) *p0 = 0, *p1 = 6;
  else if (f == GPU_FN_CLIP) *p0 = (float)attr_f(c, "lo", -INFINITY), *p1 = (float)attr_f(c, "hi", INFINITY);
  else if (f == GPU_FN_HSIGMOID) *p0 = (float)attr_f(c, "alpha", 0.2), *p1 = (float)attr_f(c, "beta", 0.5);
}

/* The call's attributes, named by the codelet's own strings (the
 * capture's die with it; the plan keeps the call). */
static cov_status call_attrs(lower_ctx *x, const gpu_cap_call *c, gpu_cdl_call *k) {
  const cdl_codelet *cd = c->cdl;
  if (c->n_attrs > GPU_CDL_MAX_ATTRS)
    return cov_error(COV_UNSUPPORTED, XLOC(x), "%zu attributes (%d at most)", c->n_attrs, GPU_CDL_MAX_ATTRS);
  for (size_t i = 0; i < c->n_attrs; i++) {
    int j = 0;
    while (j < cd->n_attrs && strcmp(cd->attrs[j].name, c->attrs[i].name)) j++;
    if (j == cd->n_attrs)
      return cov_error(COV_INVALID_ARGUMENT, XLOC(x), "codelet '%s' has no attribute '%s'", cd->name, c->attrs[i].name);
    /* field by field into zeroed bytes: calls compare bytewise (equal
     * calls share a kernel), so padding and the unused value must not carry
     * whatever the capture's memory held */
    cov_attr *a = &k->attrs[k->n_attrs++];
    memset(a, 0, sizeof *a);
    a->name = cd->attrs[j].name, a->is_float = c->attrs[i].is_float;
    if (a->is_float) a->f = c->attrs[i].f;
    else a->i = c->attrs[i].i;
  }
  return NULL;
}

/* One call as its codelet's kernel (gpu_cdl.h) writing `y`; `prev` is the
 * chain's value. Outputs and workspaces its writes do not cover are
 * zeroed first, as the interpreter starts them. */
/* gather_rows of an f32 [V, D] table, or gather_axis of an f32 [A, V, D]
 * value, at i64 ids as the row gather kernel (gpu_lower_gather.c) rather
 * than its loop nest (a comparison with every row); 0: not such a call. */
static int rows_call(lower_ctx *x, const gpu_cap_call *c, int prev, const int *in_buf, int y, cov_status *st) {
  int axis = !strcmp(c->codelet, "gather_axis");
  if ((!axis && strcmp(c->codelet, "gather_rows") != 0) || c->n_args != 2) return 0;
  const cov_tensor *t = &c->args[0].t, *ids = &c->args[1].t;
  if (t->dtype != COV_F32 || t->rank != 2 + axis || ids->dtype != COV_I64 || ids->rank != 1) return 0;
  int tb = arg_buf(x, &c->args[0], prev, in_buf, st), ib = tb < 0 ? -1 : arg_buf(x, &c->args[1], prev, in_buf, st);
  if (ib < 0) return 1;
  if (x->p->bufs[ib].dtype != COV_I64 || x->p->bufs[y].dtype != COV_F32) return 0;
  gpu_ew e;
  memset(&e, 0, sizeof e);
  e.kind = GPU_EW_ROWS, e.out_dtype = COV_F32, e.V = t->shape[axis], e.D = t->shape[axis + 1];
  e.n = ids->shape[0] * e.D * (axis ? t->shape[0] : 1);
  e.N = axis ? ids->shape[0] : 0;
  *st = ew_step(x, &e, "rows", tb, ib, y, -1);
  return 1;
}

/* Whether a buffer of dtype b holds what a codelet reads as dtype t (a
 * bool mask read as u8 by the codelets whose types admit numbers only). */
static int same_bytes(cov_dtype b, cov_dtype t) { return b == t || (b == COV_BOOL && t == COV_U8); }

static cov_status codelet_call(lower_ctx *x, const gpu_cap_call *c, int prev, const int *in_buf, int y) {
  cov_status rst = NULL;
  if (rows_call(x, c, prev, in_buf, y, &rst)) return rst;
  if (!c->cdl) return cov_error(COV_UNSUPPORTED, XLOC(x), "codelet '%s' is not in the model's library", c->codelet);
  if (c->n_args > GPU_CDL_MAX_IO)
    return cov_error(COV_UNSUPPORTED, XLOC(x), "%zu inputs (%d at most)", c->n_args, GPU_CDL_MAX_IO);
  gpu_ew e;
  memset(&e, 0, sizeof e); /* calls compare bytewise */
  e.kind = GPU_EW_CODELET, e.out_dtype = COV_F32;
  gpu_cdl_call *k = &e.cdl;
  k->c = c->cdl;
  COV_RETURN_IF_ERROR(call_attrs(x, c, k));
  int args[GPU_CDL_MAX_ARGS];
  cov_status st = NULL;
  for (size_t a = 0; a < c->n_args; a++) {
    const cov_tensor *t = &c->args[a].t;
    const cov_tensor *ct = c->args[a].kind == COV_MODEL_ARG_CONST ? &c->args[a].t : NULL;
    args[a] = ct ? gpu_ms_same_weight(x->p, c->args[a].value, ct) : -1;
    if (args[a] < 0 && (args[a] = arg_buf(x, &c->args[a], prev, in_buf, &st)) < 0) return st;
    if (!same_bytes(x->p->bufs[args[a]].dtype, t->dtype))
      return cov_error(COV_UNSUPPORTED, XLOC(x), "input %zu of '%s' is %s (the GPU model path takes %s values)", a,
                       c->codelet, cov_dtype_name(t->dtype), cov_dtype_name(x->p->bufs[args[a]].dtype));
    k->in_dtype[a] = t->dtype, k->in_rank[a] = t->rank;
    for (int d = 0; d < t->rank && d < COV_MAX_RANK; d++) k->in_shape[a][d] = t->shape[d]; /* the rest stays 0 */
  }
  k->n_in = (int)c->n_args;
  gpu_cdl_info in;
  COV_RETURN_IF_ERROR(gpu_cdl_analyse(k, &in));
  if (in.n_out != 1 || in.numel[k->n_in] != cov_tensor_numel(&c->out) || in.dtype[k->n_in] != x->p->bufs[y].dtype)
    return cov_error(COV_UNSUPPORTED, XLOC(x), "codelet '%s': %d outputs, the first %s (one %s output is lowered)",
                     c->codelet, in.n_out, cov_dtype_name(in.dtype[k->n_in]), cov_dtype_name(x->p->bufs[y].dtype));
  args[k->n_in] = y;
  for (int w = k->n_in + 1; w < in.n_args; w++) {
    char nm[160];
    snprintf(nm, sizeof nm, "%.120s.ws%d", c->node, w);
    if ((args[w] = add_buf(x->p, nm, GPU_BUF_INTERMEDIATE, in.dtype[w], in.rank[w], in.shape[w], &st)) < 0) return st;
  }
  for (int w = k->n_in; w < in.n_args; w++) {
    if (!in.zero[w]) continue;
    gpu_mstep *f = gpu_ms_add_step(x->p, x->g->group, x->g->node, &st);
    if (!f) return st;
    f->op = GPU_STEP_FILL, f->fill_buf = args[w];
  }
  e.n = in.threads;
  COV_RETURN_IF_ERROR(ew_step(x, &e, c->codelet, -1, -1, -1, -1));
  gpu_mstep *s = &x->p->steps[x->p->n_steps - 1];
  s->n_args = in.n_args;
  memcpy(s->args, args, (size_t)in.n_args * sizeof *args);
  return NULL;
}

/* ---- matrix chains ------------------------------------------------------ */

/* How many calls from `c0` the matrix kernel takes (0: none); fills q. */
/* The constant bias of an Add after a matmul (a row of n added to every
 * row, on either side: torch exports bias + x as often as x + bias), NULL
 * if c is no such Add. */
static const gpu_cap_arg *bias_of_add(const gpu_cap_call *c, int64_t n) {
  if (strcmp(c->codelet, "add") || c->n_args != 2) return NULL;
  int k = c->args[0].kind == COV_MODEL_ARG_PREV ? 1 : c->args[1].kind == COV_MODEL_ARG_PREV ? 0 : -1;
  if (k < 0 || !const_f32(&c->args[k])) return NULL;
  const cov_tensor *t = &c->args[k].t;
  return cov_tensor_numel(t) == n && t->shape[t->rank - 1] == n ? &c->args[k] : NULL;
}

static size_t matrix_chain(lower_ctx *x, size_t c0, gpu_problem *q, int *bias_arg) {
  const gpu_cap_group *g = x->g;
  const gpu_cap_call *c = &g->calls[c0];
  memset(q, 0, sizeof *q);
  q->in_dtype = operand_dtype(x);
  q->file = x->path;
  snprintf(q->node, sizeof q->node, "%s", g->node);
  q->batch = 1, q->stride = 1, q->dilation = 1, q->groups = 1;
  *bias_arg = -1;
  size_t i = c0 + 1;
  if (!strcmp(c->codelet, "conv2d") && c->n_args == 2 && c->args[0].kind != COV_MODEL_ARG_CONST &&
      const_f32(&c->args[1])) {
    int64_t sh = attr_i(c, "stride_h", 1), sw = attr_i(c, "stride_w", 1), dh = attr_i(c, "dilation_h", 1),
            dw = attr_i(c, "dilation_w", 1);
    int64_t pt = attr_i(c, "pad_top", 0), pl = attr_i(c, "pad_left", 0), pb = attr_i(c, "pad_bottom", 0),
            pr = attr_i(c, "pad_right", 0);
    if (sh != sw || dh != dw || pt != pl || pt != pb || pt != pr) return 0;
    const cov_tensor *t = &c->args[0].t, *w = &c->args[1].t;
    q->kind = GPU_OP_CONV2D;
    q->cn = t->shape[0], q->cc = t->shape[1], q->ch = t->shape[2], q->cw = t->shape[3];
    q->ck = w->shape[0], q->cr = w->shape[2], q->cs = w->shape[3];
    q->stride = sh, q->dilation = dh, q->pad = pt, q->groups = attr_i(c, "groups", 1);
    if (i < g->n_calls && !strcmp(g->calls[i].codelet, "bias_add") && g->calls[i].args[0].kind == COV_MODEL_ARG_PREV &&
        const_f32(&g->calls[i].args[1]) && cov_tensor_numel(&g->calls[i].args[1].t) == q->ck)
      q->epi.bias = true, *bias_arg = (int)i, i++;
  } else if ((!strcmp(c->codelet, "gemm") || !strcmp(c->codelet, "gemm_bias")) && c->args[0].kind != COV_MODEL_ARG_CONST &&
             const_f32(&c->args[1]) && attr_i(c, "transA", 0) == 0) {
    int tb = (int)attr_i(c, "transB", 0);
    const cov_tensor *a = &c->args[0].t, *b = &c->args[1].t;
    q->kind = GPU_OP_MATMUL;
    q->m = a->shape[0], q->k = a->shape[1], q->n = tb ? b->shape[0] : b->shape[1];
    if (!strcmp(c->codelet, "gemm_bias")) {
      const gpu_cap_arg *cb = &c->args[2];
      if (!const_f32(cb) || cov_tensor_numel(&cb->t) != q->n || cb->t.shape[0] != 1) return 0;
      q->epi.bias = true, *bias_arg = (int)c0;
    }
  } else if ((!strcmp(c->codelet, "matmul") || !strcmp(c->codelet, "batch_matmul")) &&
             c->args[0].kind != COV_MODEL_ARG_CONST) {
    const cov_tensor *a = &c->args[0].t, *b = &c->args[1].t;
    int r = a->rank;
    int64_t ba = r == 3 ? a->shape[0] : 1, bb = b->rank == 3 ? b->shape[0] : 1;
    q->kind = GPU_OP_MATMUL;
    q->m = a->shape[r - 2], q->k = a->shape[r - 1], q->n = b->shape[b->rank - 1];
    if (bb == 1) q->m *= ba; /* a shared B: the batches are more rows */
    else if (ba == bb) q->batch = ba;
    else return 0;
    if (i < g->n_calls && bias_of_add(&g->calls[i], q->n)) q->epi.bias = true, *bias_arg = (int)i, i++;
  } else {
    return 0;
  }
  if (i < g->n_calls && g->calls[i].args[0].kind == COV_MODEL_ARG_PREV) {
    const gpu_cap_call *n = &g->calls[i];
    gpu_ew_fn f = n->n_args == 1 ? gpu_unary_fn(n->codelet) : GPU_FN_NONE;
    if (f == GPU_FN_RELU) q->epi.act = GPU_ACT_RELU, i++;
    else if (f == GPU_FN_CLIP) {
      float lo, hi;
      unary_params(n, f, &lo, &hi);
      q->epi.act = GPU_ACT_CLIP, q->epi.clip_lo = lo, q->epi.clip_hi = hi, i++;
    } else if (f == GPU_FN_GELU) q->epi.act = GPU_ACT_GELU, i++;
    else if (f == GPU_FN_HSWISH) q->epi.act = GPU_ACT_HSWISH, i++;
    else if (f == GPU_FN_HSIGMOID) {
      q->epi.act = GPU_ACT_HSIGMOID, i++;
      unary_params(n, f, &q->epi.clip_lo, &q->epi.clip_hi);
    }
  }
  if (i < g->n_calls && g->calls[i].args[0].kind == COV_MODEL_ARG_PREV) {
    const gpu_cap_call *n = &g->calls[i];
    if (q->kind == GPU_OP_CONV2D && !strcmp(n->codelet, "maxpool") && attr_i(n, "kernel_h", 0) == 2 &&
        attr_i(n, "kernel_w", 0) == 2 && attr_i(n, "stride_h", 1) == 2 && attr_i(n, "stride_w", 1) == 2 &&
        !attr_i(n, "pad_top", 0) && !attr_i(n, "pad_left", 0) && !attr_i(n, "pad_bottom", 0) &&
        !attr_i(n, "pad_right", 0) && attr_i(n, "dilation_h", 1) == 1 && attr_i(n, "dilation_w", 1) == 1 &&
        (q->epi.act == GPU_ACT_RELU || (q->epi.act == GPU_ACT_CLIP && q->epi.clip_lo >= 0)))
      q->epi.maxpool2x2 = true, i++;
    else if (q->kind == GPU_OP_MATMUL && !strcmp(n->codelet, "softmax") && q->n <= 512)
      q->epi.softmax = true, i++;
  }
  return i - c0;
}

/* The weights of a matrix problem in its kernel's layout and operand
 * dtype (f16, or f32). */
static cov_status matrix_weights(lower_ctx *x, const gpu_cap_call *c, const gpu_plan *plan, int *out) {
  const gpu_problem *q = &plan->prob;
  const float *w = const_f32(&c->args[1]);
  cov_status st = NULL;
  int64_t n = cov_tensor_numel(&c->args[1].t);
  float *v = malloc((size_t)n * sizeof *v + 4);
  if (!v) return cov_error(COV_OUT_OF_MEMORY, NULL, "out of memory");
  if (q->kind == GPU_OP_CONV2D && plan->nhwc) {
    int64_t rs = q->cr * q->cs;
    for (int64_t o = 0; o < q->ck; o++)
      for (int64_t ch = 0; ch < q->cc; ch++)
        for (int64_t t = 0; t < rs; t++) v[(t * q->cc + ch) * q->ck + o] = w[(o * q->cc + ch) * rs + t];
  } else if (q->kind == GPU_OP_MATMUL && (!strcmp(c->codelet, "gemm") || !strcmp(c->codelet, "gemm_bias"))) {
    /* Gemm: alpha op(B), as [K][N] */
    float alpha = (float)attr_f(c, "alpha", 1.0);
    int tb = (int)attr_i(c, "transB", 0);
    for (int64_t k = 0; k < q->k; k++)
      for (int64_t j = 0; j < q->n; j++) v[k * q->n + j] = alpha * (tb ? w[j * q->k + k] : w[k * q->n + j]);
  } else {
    memcpy(v, w, (size_t)n * sizeof *v);
  }
  char nm[160];
  snprintf(nm, sizeof nm, "%s", c->args[1].value);
  *out = add_weight(x->p, nm, q->in_dtype, n, v, &st);
  free(v);
  return st;
}

/* A depthwise convolution (one input channel per group) with its fused
 * bias and activation as the direct f32 kernel instead of the matrix
 * kernel: its reduction is only R*S long, so a matrix tile would be mostly
 * padding, and it is memory-bound anyway; f32 operands also keep it from
 * adding f16 rounding (mobilenet_v2 alternates 17 depthwise and 35 dense
 * layers: with every depthwise layer on f16 operands the 224x224 export
 * reached 1.2e-2 against onnxruntime, beyond the 1e-2 the dense f16
 * layers alone stay within). `take` excludes a 2x2 max pool (left to the
 * next call). Returns the calls taken. */
static size_t direct_depthwise(lower_ctx *x, size_t c, const gpu_problem *q, size_t take, int bias_arg,
                               const int *in_buf, int prev, int y, cov_status *st) {
  const gpu_cap_group *g = x->g;
  const gpu_cap_call *call = &g->calls[c];
  gpu_ew e = {.kind = GPU_EW_CONV, .out_dtype = COV_F32, .n = cov_tensor_numel(&g->calls[c + take - 1].out)};
  const cov_tensor *t = &call->args[0].t, *w = &call->args[1].t;
  e.N = t->shape[0], e.C = t->shape[1], e.H = t->shape[2], e.W = t->shape[3];
  e.K = w->shape[0], e.R = w->shape[2], e.S = w->shape[3];
  e.P = call->out.shape[2], e.Q = call->out.shape[3];
  e.sh = e.sw = q->stride, e.pt = e.pl = q->pad, e.dh = e.dw = q->dilation, e.groups = q->groups;
  e.post = gpu_act_fn(q->epi.act);
  e.post0 = q->epi.clip_lo, e.post1 = q->epi.clip_hi;
  int a = arg_buf(x, &call->args[0], prev, in_buf, st);
  int wb = *st ? -1 : arg_buf(x, &call->args[1], prev, in_buf, st);
  int bias = -1;
  if (!*st && bias_arg >= 0) {
    e.bias = 1;
    bias = arg_buf(x, &g->calls[bias_arg].args[1], prev, in_buf, st);
  }
  if (!*st) *st = ew_step(x, &e, "dwconv", a, wb, y, bias);
  if (!*st) x->p->steps[x->p->n_steps - 1].plan.prob = *q; /* for the channels-last pass (gpu_mlayout.c) */
  return *st ? 0 : take;
}

/* An integer conv / matmul chain as the dot-product kernel (gpu_qdot.h):
 * the weights packed four channels to a word, bias and requantisation
 * operands as they are. */
static cov_status qdot_step(lower_ctx *x, const gpu_qdot_layer *src, int prev, const int *in_buf, int y) {
  const gpu_ew *e = &src->e;
  cov_status st = NULL;
  int a = arg_buf(x, &x->g->calls[src->x_call].args[0], prev, in_buf, &st);
  if (a < 0) return st;
  if (x->p->bufs[a].dtype != COV_I8 || x->p->bufs[y].dtype != e->out_dtype)
    return cov_error(COV_INTERNAL, XLOC(x), "integer layer: an operand or result buffer of another dtype");
  char nm[160];
  snprintf(nm, sizeof nm, "%.150s.dot4", src->w->value);
  int32_t *packed = gpu_qdot_packed(src);
  int wb = packed ? add_weight(x->p, nm, COV_I32, gpu_qdot_words(e), packed, &st) : -1;
  free(packed);
  if (wb < 0) return st ? st : cov_error(COV_OUT_OF_MEMORY, NULL, "out of memory");
  int bias = -1, m = -1, zp = -1;
  if (src->bias && (bias = arg_buf(x, src->bias, prev, in_buf, &st)) < 0) return st;
  if (src->m && ((m = arg_buf(x, src->m, prev, in_buf, &st)) < 0 || (zp = arg_buf(x, src->zp, prev, in_buf, &st)) < 0))
    return st;
  if ((st = ew_step(x, e, "int8_dot", a, wb, y, bias))) return st;
  gpu_mstep *s = &x->p->steps[x->p->n_steps - 1];
  s->n_args = GPU_QDOT_ARGS;
  s->args[4] = m, s->args[5] = zp;
  return NULL;
}

static cov_status lower_group(lower_ctx *x) {
  const gpu_cap_group *g = x->g;
  cov_status st = NULL;
  int in_buf[64];
  if (g->n_in > 64) return cov_error(COV_UNSUPPORTED, XLOC(x), "%zu inputs (64 at most)", g->n_in);
  for (size_t k = 0; k < g->n_in; k++) {
    if (!g->in[k].v.ok) return cov_error(COV_UNSUPPORTED, XLOC(x), "input '%s': %s", g->in[k].name, g->in[k].v.why);
    COV_RETURN_IF_ERROR(input_buffer(x, k, &in_buf[k]));
  }
  int result = x->id_buf[g->buf_id], prev = -1;
  for (size_t c = 0; c < g->n_calls;) {
    gpu_problem q;
    int bias_arg = -1;
    gpu_qdot_layer ql;
    size_t qtake = gpu_qdot_chain(g, c, &ql), take = qtake ? 0 : matrix_chain(x, c, &q, &bias_arg);
    gpu_plan plan;
    if (take) {
      cov_status ps = matrix_plan(x, &q, &plan);
      if (ps && x->file_error) return ps; /* not a reason to compile the group another way */
      if (ps) cov_status_free(ps), take = 0;
    }
    int depthwise = take && q.kind == GPU_OP_CONV2D && q.groups > 1 && q.cc == q.groups;
    if (depthwise && q.epi.maxpool2x2) take--;
    size_t last = c + (qtake ? qtake : take ? take : 1) - 1;
    int y;
    if (last == g->n_calls - 1) {
      y = result;
    } else {
      char nm[160];
      snprintf(nm, sizeof nm, "%.120s.%zu", g->node, last);
      const cov_tensor *o = &g->calls[last].out;
      y = add_buf(x->p, nm, GPU_BUF_INTERMEDIATE, o->dtype, o->rank, o->shape, &st);
      if (y < 0) return st;
    }
    const gpu_cap_call *call = &g->calls[c];
    if (qtake) {
      if ((st = qdot_step(x, &ql, prev, in_buf, y)))
        return cov_status_annotate(st, "call %zu (%s, node '%s'): ", c, call->codelet, call->node);
      prev = y, c += qtake;
      continue;
    }
    if (depthwise) {
      q.epi.maxpool2x2 = false;
      take = direct_depthwise(x, c, &q, take, bias_arg, in_buf, prev, y, &st);
      if (st) return cov_status_annotate(st, "call %zu (%s, node '%s'): ", c, call->codelet, call->node);
      prev = y, c += take;
      continue;
    }
    if (!take) {
      st = codelet_call(x, call, prev, in_buf, y);
      if (st) return cov_status_annotate(st, "call %zu (%s, node '%s'): ", c, call->codelet, call->node);
      prev = y, c++;
      continue;
    }
    int a = arg_buf(x, &call->args[0], prev, in_buf, &st), a16, b16 = -1, bias = -1;
    if (st) return st;
    COV_RETURN_IF_ERROR(to_f16(x, a, &a16));
    if (call->args[1].kind == COV_MODEL_ARG_CONST) {
      COV_RETURN_IF_ERROR(matrix_weights(x, call, &plan, &b16));
    } else {
      int b = arg_buf(x, &call->args[1], prev, in_buf, &st);
      if (st) return st;
      COV_RETURN_IF_ERROR(to_f16(x, b, &b16));
    }
    if (bias_arg >= 0) {
      const gpu_cap_call *bc = &g->calls[bias_arg];
      const gpu_cap_arg *ba = bc == call                    ? &bc->args[2]
                              : !strcmp(bc->codelet, "add") ? bias_of_add(bc, plan.prob.n)
                                                            : &bc->args[1];
      const float *bv = const_f32(ba);
      float beta = bc == call ? (float)attr_f(bc, "beta", 1.0) : 1.0f;
      int64_t n = cov_tensor_numel(&ba->t);
      float *tmp = malloc((size_t)n * sizeof *tmp + 4);
      if (!tmp) return cov_error(COV_OUT_OF_MEMORY, NULL, "out of memory");
      for (int64_t i = 0; i < n; i++) tmp[i] = beta * bv[i];
      bias = add_weight(x->p, ba->value, COV_F32, n, tmp, &st);
      free(tmp);
      if (bias < 0) return st;
    }
    COV_RETURN_IF_ERROR(matrix_step(x, &plan, plan.prob.in_dtype == COV_F32 ? "matrix_f32" : "matrix", a16, b16, y, bias));
    prev = y;
    c += take;
  }
  return NULL;
}

/* ---- the model ---------------------------------------------------------- */

static cov_status located(cov_status st, const char *path, const gpu_cap_group *g) {
  char msg[1024];
  snprintf(msg, sizeof msg, "%s", cov_status_message(st));
  cov_status_free(st);
  return cov_error(COV_UNSUPPORTED, GPU_LOC(path, g->node[0] ? g->node : NULL),
                   "layer group %d (%s, node '%s'): %s", g->group, g->kind, g->node, msg);
}


cov_status gpu_model_compile_straight(const cov_model *m, const char *path, const gpu_target *t, int emit,
                                      gpu_model_plan *p) {
  memset(p, 0, sizeof *p);
  gpu_capture cap;
  COV_RETURN_IF_ERROR(gpu_capture_model(m, path, &cap));
  /* value-changing layout work: listed with every other group that cannot
   * be compiled (the capture's hash check also fails what reads it) */
  cov_status st = NULL, errs = gpu_capture_altering(m, path, &cap);
  int *id_buf = calloc((size_t)cap.n_ids + 1, sizeof *id_buf);
  if (!id_buf) st = cov_error(COV_OUT_OF_MEMORY, NULL, "out of memory");
  if (t) {
    snprintf(p->target, sizeof p->target, "%s", cov_acg_name(t->acg));
    snprintf(p->backend, sizeof p->backend, "%s", t->vendor->backend);
    p->vendor = t->vendor;
    snprintf(p->mcpu, sizeof p->mcpu, "%s", t->acg->backend.mcpu ? t->acg->backend.mcpu : "");
  }
  p->n_inputs = cap.n_inputs, p->n_outputs = cap.n_outputs;
  for (int i = 0; i < cap.n_inputs && !st; i++) {
    id_buf[i] = add_buf(p, cov_model_input_name(m, (size_t)i), GPU_BUF_INPUT, cap.in_shape[i].dtype, cap.in_shape[i].rank,
                        cap.in_shape[i].shape, &st);
    if (!st) p->bufs[id_buf[i]].io = i, p->input_buf[i] = id_buf[i];
    p->in_symbolic[i] = cov_model_input_symbolic(m, (size_t)i);
    p->in_has_range[i] = cov_model_input_range(m, (size_t)i, &p->in_lo[i], &p->in_hi[i]);
    p->in_io[i] = cov_model_io_dtype(m, 0, (size_t)i);
  }
  for (int k = 0; k < cap.n_groups && !st; k++) {
    const gpu_cap_group *g = &cap.groups[k];
    if (!g->described) continue;
    id_buf[g->buf_id] = add_buf(p, g->out_name, GPU_BUF_INTERMEDIATE, g->out.dtype, g->out.rank, g->out.shape, &st);
  }
  /* constants that layout operations mix into group inputs or outputs */
  for (int i = 0; i < cap.n_ids && !st; i++) {
    const float *cv = gpu_cap_const(&cap, i);
    char nm[32];
    snprintf(nm, sizeof nm, "const%d", i);
    if (cv) id_buf[i] = add_weight(p, nm, COV_F32, cap.id_numel[i], cv, &st);
  }
  /* groups the frontend cannot describe: fine where they only move
   * elements (their results decode as copies), else named below with
   * whatever fails to read them */
  cov_status undescribed = NULL;
  gpu_mattn_set attn = {0}; /* attention chains as one fused launch (gpu_mattn.c) */
  if (!st && t && !t->f32_activations) st = gpu_mattn_find(&cap, t, &attn);
  /* outputs: a group's result itself, or copies into a buffer of their own */
  for (int k = 0; k < cap.n_groups && !st; k++) {
    const gpu_cap_group *g = &cap.groups[k];
    if (g->constant) continue;
    if (!g->described) {
      cov_status e = g->node[0] ? cov_error(COV_UNSUPPORTED, GPU_LOC(path, g->node), "layer group %d (%s, node '%s'): %s",
                                            g->group, g->kind, g->node, g->why)
                                : cov_error(COV_UNSUPPORTED, GPU_LOC(path, NULL), "layer group %d (%s): %s", g->group,
                                            g->kind, g->why);
      undescribed = cov_status_join(undescribed, e);
      continue;
    }
    lower_ctx x = {p, &cap, t, path, id_buf, k, g, 0, 0, 1};
    int role = attn.role ? attn.role[k] : GPU_MATTN_LOWERED;
    if (role == GPU_MATTN_ABSORBED) continue;
    cov_status gs = role >= 0 ? gpu_mattn_lower(p, g, id_buf, &attn.m[role]) : lower_group(&x);
    if (gs && x.file_error) st = gs;
    else if (gs) errs = cov_status_join(errs, located(gs, path, g));
  }
  for (int o = 0; o < cap.n_outputs && !st && !errs; o++) {
    const gpu_cap_value *v = &cap.outputs[o];
    const char *name = cov_model_output_name(m, (size_t)o);
    if (!v->ok) {
      errs = cov_status_join(errs, cov_error(COV_UNSUPPORTED, GPU_LOC(path, name),
                                             "model output '%s': %s", name, v->why));
      continue;
    }
    int direct = v->n_runs == 1 && v->runs[0].s0 == 0 && v->runs[0].n == cap.id_numel[v->runs[0].src] &&
                 p->bufs[id_buf[v->runs[0].src]].kind == GPU_BUF_INTERMEDIATE;
    int b;
    if (direct) {
      b = id_buf[v->runs[0].src];
      snprintf(p->bufs[b].name, sizeof p->bufs[b].name, "%s", name);
      p->bufs[b].rank = cap.out_shape[o].rank;
      memcpy(p->bufs[b].shape, cap.out_shape[o].shape, sizeof p->bufs[b].shape);
    } else {
      cov_dtype odt = cap.out_shape[o].dtype == COV_F32 ? COV_F32 : cap.out_shape[o].dtype; /* integer / bool: moved */
      b = add_buf(p, name, GPU_BUF_OUTPUT, odt, cap.out_shape[o].rank, cap.out_shape[o].shape, &st);
      if (b < 0) break;
      gpu_cap_group og = {.group = -1};
      snprintf(og.node, sizeof og.node, "%s", name);
      gpu_cap_input in = {.v = *v};
      snprintf(in.name, sizeof in.name, "%s", name);
      in.t = cap.out_shape[o];
      og.in = &in, og.n_in = 1;
      lower_ctx x = {p, &cap, t, path, id_buf, -1, &og, 0, 0, 0};
      int tmp;
      /* copies straight into the output buffer: input_buffer makes a new
       * one, so copy its steps' destination over */
      int first_step = p->n_steps, nb = p->n_bufs;
      st = input_buffer(&x, 0, &tmp);
      if (!st && tmp == nb) {
        for (int s = first_step; s < p->n_steps; s++)
          if (p->steps[s].args[2] == tmp) p->steps[s].args[2] = b;
      } else if (!st) {
        gpu_ew e = {.kind = GPU_EW_COPY, .out_dtype = odt, .n = v->numel};
        st = ew_step(&x, &e, "copy", tmp, -1, b, -1);
      }
    }
    p->bufs[b].kind = GPU_BUF_OUTPUT;
    p->bufs[b].io = o;
    p->out_io[o] = cov_model_io_dtype(m, 1, (size_t)o);
    p->output_buf[o] = b;
  }
  free(id_buf);
  gpu_mattn_free(&attn);
  gpu_capture_free(&cap);
  if (errs) errs = cov_status_join(errs, undescribed);
  else cov_status_free(undescribed);
  if (!st && errs) {
    size_t n = cov_status_count(errs);
    st = cov_status_join(cov_error(COV_UNSUPPORTED, GPU_LOC(path, NULL),
                                   "%zu layer group%s cannot be compiled for %s:", n, n == 1 ? "" : "s",
                                   t ? cov_acg_name(t->acg) : "the GPU"),
                         errs);
    errs = NULL;
  }
  cov_status_free(errs);
  if (!st && t && !t->f32_activations) st = gpu_model_fuse_act(p);
  if (!st && t && !t->f32_activations) st = gpu_model_channels_last(p, t);
  if (!st && t && !t->f32_activations) st = gpu_model_fuse(p);
  if (!st && t && !t->f32_activations) st = gpu_mattn_fuse_out(p);
  if (!st && t) st = gpu_model_split_bind(p);
  if (!st && t && emit) st = gpu_model_build_modules(p, t);
  if (st) gpu_model_plan_free(p);
  return st;
}

/* Split-K launches (plan.split) get their arguments 4 and 5: a workspace
 * of partial tiles each (an intermediate, sharing arena bytes like any),
 * and one counter buffer for all of them, zeroed by one fill before the
 * first: a tile's last workgroup leaves its counter zero again, so the
 * launches after it (run in order on one stream) find zeros too, and the
 * fill makes the first run of a session (and every graph replay) start
 * from zeros whatever the arena held. */
cov_status gpu_model_split_bind(gpu_model_plan *p) {
  int64_t most = 0;
  int first = -1;
  for (int i = 0; i < p->n_steps; i++) {
    const gpu_mstep *s = &p->steps[i];
    if (s->op != GPU_STEP_LAUNCH || s->kkind != GPU_KERNEL_MATRIX || s->pre || gpu_split_of(&s->plan) < 2) continue;
    if (first < 0) first = i;
    if (gpu_split_counters(&s->plan) > most) most = gpu_split_counters(&s->plan);
  }
  if (first < 0) return NULL;
  cov_status st = NULL;
  int cnt = add_buf1(p, "split_k.counters", GPU_BUF_INTERMEDIATE, COV_I32, most, &st);
  if (cnt < 0) return st;
  for (int i = first; i < p->n_steps; i++) {
    gpu_mstep *s = &p->steps[i];
    if (s->op != GPU_STEP_LAUNCH || s->kkind != GPU_KERNEL_MATRIX || s->pre || gpu_split_of(&s->plan) < 2) continue;
    char nm[160];
    snprintf(nm, sizeof nm, "%.120s.split_k", s->label);
    int ws = add_buf1(p, nm, GPU_BUF_INTERMEDIATE, COV_F32, gpu_split_ws_floats(&s->plan), &st);
    if (ws < 0) return st;
    s = &p->steps[i];
    s->args[4] = ws, s->args[5] = cnt;
    if (s->n_args < 6) s->n_args = 6; /* 7 with a residual addend (argument 6) */
  }
  /* the fill, just before the first split launch (and its transform) */
  int at = first > 0 && p->steps[first - 1].pre ? first - 1 : first;
  gpu_mstep *f = gpu_ms_add_step(p, p->steps[at].group, p->steps[at].label, &st);
  if (!f) return st;
  gpu_mstep fill = *f;
  fill.op = GPU_STEP_FILL, fill.fill_buf = cnt;
  memmove(&p->steps[at + 1], &p->steps[at], (size_t)(p->n_steps - 1 - at) * sizeof *p->steps);
  p->steps[at] = fill;
  return NULL;
}

int gpu_mplan_add_buf(gpu_model_plan *p, const char *name, gpu_buf_kind kind, cov_dtype dt, int rank,
                      const int64_t *shape, cov_status *st) {
  return add_buf(p, name, kind, dt, rank, shape, st);
}

gpu_mstep *gpu_mplan_add_step(gpu_model_plan *p, int group, const char *label, cov_status *st) {
  return gpu_ms_add_step(p, group, label, st);
}

cov_status gpu_model_lower_group(gpu_model_plan *p, const gpu_capture *cap, const gpu_target *t, const char *path,
                                 int *id_buf, int gi, const gpu_cap_group *g, int *file_error) {
  lower_ctx x = {p, cap, t, path, id_buf, gi, g, 0, 0, 0};
  cov_status st = lower_group(&x);
  *file_error = x.file_error;
  return st;
}
