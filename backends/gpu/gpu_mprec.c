/* backends/gpu/gpu_mprec.c: a GPU model's precision plan: which layer
 * groups' matrix kernels take f32 operands (f32 weights; NVPTX's 3xTF32 tensor-core
 * products, the FMA fragment on targets without an f32 matrix capability)
 * inside an f16 plan, chosen by measured error.
 *
 * Rounding the matrix operands to f16 costs a deep random-weight CNN
 * about 1e-2 of max|ref| (resnet50 1.08e-2, mobilenet_v2 1.21e-2 against
 * onnxruntime on the H100), most of it from the first groups, whose
 * rounding every later block amplifies (bench/nvptx/README.md: resnet50's
 * conv1 alone 6.9e-3, layer4 2.0e-4). So the plan estimates the f16
 * plan's error at compile time and, over GPU_MPREC_BUDGET, compiles the
 * shortest prefix of the matrix groups (in plan order, which is
 * topological) with f32 operands that brings the estimate under it.
 *
 * The estimate: the plan's CPU emulation (gpu_model_emulate) on one
 * fixed-seed input in [-1, 1), against the emulation of the plan with
 * every matrix group on f32 operands, max|diff| / max|ref| over the f32
 * outputs. That reference is within 1e-5 of the reference interpreter
 * (every matrix operand f32, no f16 activations between kernels) and
 * runs the matrix kernels as C loop nests: the interpreter's run of the
 * same model took ten times the emulation (resnet18, mobilenet_v2). The
 * estimate does not see rounding that promotion cannot remove (fused
 * attention stays f16). The prefix is found by binary search, the all-f32
 * plan meeting the budget by construction: 2 + ceil(log2 n) emulations for
 * n matrix groups. A model at a batch over 1 is estimated at batch 1,
 * symbolic or fixed by the export (the groups correspond one to one, which
 * is checked; each image is computed alone), and
 * an estimate whose emulation would exceed GPU_MPREC_EMU_MACS or
 * GPU_MPREC_EMU_GB is not run: the plan stays f16 and says why.
 * Everything is deterministic: the same model gives the same plan. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backends/gpu/gpu_driver.h"
#include "backends/gpu/gpu_mcapture.h"
#include "backends/gpu/gpu_mplan.h"
#include "mapper/map_gpu.h"

/* The estimate's bound: the max over 100 random inputs on the H100 ran
 * 1.4x (resnet50) and 1.75x (mobilenet_v2) the one-input estimate, so
 * 3e-3 keeps it under a 1e-2 tolerance with margin. */
#define GPU_MPREC_BUDGET 3e-3
/* an estimate emulates at most this many multiply-adds and GB of buffers
 * per plan (resnet50 at 224x224: 4.1e9, 0.5 GB; mobilenet_v2 at a fixed
 * batch of 32, 9.6e9, ran over 38 minutes on a loaded machine); a model
 * over them compiles all f16 and says so */
#define GPU_MPREC_EMU_MACS 5e9
#define GPU_MPREC_EMU_GB 2.0
/* matrix groups the prefix is taken from (a model of more: its first) */
enum { GPU_MPREC_GROUPS = 4096 };

/* ---- the plans ---------------------------------------------------------- */

/* The groups of p's matrix launches on f16 operands, in plan order, each
 * once (at most cap; the count). */
static int matrix_groups(const gpu_model_plan *p, int *out, int cap) {
  int n = 0;
  for (int i = 0; i < p->n_steps; i++) {
    const gpu_mstep *s = &p->steps[i];
    if (s->op != GPU_STEP_LAUNCH || s->kkind != GPU_KERNEL_MATRIX || s->pre || s->plan.prob.in_dtype != COV_F16 ||
        s->group < 0)
      continue;
    int seen = 0;
    for (int k = 0; k < n && !seen; k++) seen = out[k] == s->group;
    if (!seen && n < cap) out[n++] = s->group;
  }
  return n;
}

/* m compiled with the first k of the n matrix groups `order` on f32
 * operands. */
static cov_status compile_prefix(const cov_model *m, const char *path, const gpu_target *t, const int *order, int k,
                                 int emit, gpu_model_plan *out) {
  int top = 0;
  for (int i = 0; i < k; i++) top = order[i] + 1 > top ? order[i] + 1 : top;
  unsigned char *bits = calloc((size_t)top + 1, 1);
  if (!bits) return cov_error(COV_OUT_OF_MEMORY, GPU_LOC(path, NULL), "out of memory");
  for (int i = 0; i < k; i++) bits[order[i]] = 1;
  gpu_target tk = *t;
  tk.f32_groups = bits, tk.n_f32_groups = top;
  cov_status st = gpu_model_compile_fixed(m, path, &tk, emit, out);
  free(bits);
  return st;
}

/* What emulating p costs: its matrix multiply-adds and its buffers' bytes
 * (the emulation holds every buffer, 16-bit ones as f32). */
static void emu_cost(const gpu_model_plan *p, double *macs, double *bytes) {
  *macs = 0, *bytes = 0;
  for (int i = 0; i < p->n_bufs; i++) *bytes += (double)p->bufs[i].numel * 4;
  for (int i = 0; i < p->n_steps; i++) {
    const gpu_mstep *s = &p->steps[i];
    if (s->op == GPU_STEP_LAUNCH && s->kkind == GPU_KERNEL_MATRIX && !s->pre)
      *macs += (double)s->plan.G * (double)s->plan.M * (double)s->plan.N * (double)s->plan.K;
  }
}

/* ---- the estimate ------------------------------------------------------- */

typedef struct est {
  const cov_model *m;   /* the model the estimate runs on */
  const char *path;
  const gpu_target *t;
  int order[GPU_MPREC_GROUPS]; /* its matrix groups in plan order */
  int n;
  cov_tensor in[GPU_CAP_MAX_IO];    /* the fixed-seed input */
  int n_in;
  cov_tensor ref[GPU_CAP_MAX_IO];   /* the all-f32 plan's outputs */
  int n_out;
  int evals;
} est;

static uint64_t xorshift(uint64_t *s) {
  *s ^= *s << 13, *s ^= *s >> 7, *s ^= *s << 17;
  return *s;
}

/* The fixed-seed inputs of plan p: f32 values in [-1, 1), integer ids
 * within the rows their table has (cov_model_input_range), else 0 / 1. */
static cov_status make_inputs(est *e, const gpu_model_plan *p) {
  uint64_t s = 0x9e3779b97f4a7c15ull;
  e->n_in = p->n_inputs;
  for (int i = 0; i < p->n_inputs; i++) {
    const gpu_mbuf *b = &p->bufs[p->input_buf[i]];
    if (b->dtype != COV_F32 && b->dtype != COV_I64)
      return cov_error(COV_UNSUPPORTED, GPU_LOC(e->path, b->name), "input '%s' is %s (f32 and i64 inputs are drawn)",
                       b->name, cov_dtype_name(b->dtype));
    COV_RETURN_IF_ERROR(cov_tensor_alloc(&e->in[i], b->dtype, b->rank, b->shape));
    int64_t lo = 0, hi = 1;
    if (b->dtype == COV_I64 && (!cov_model_input_range(e->m, (size_t)i, &lo, &hi) || hi < lo)) lo = 0, hi = 1;
    for (int64_t j = 0; j < b->numel; j++) {
      double u = (double)(xorshift(&s) >> 11) * (1.0 / 9007199254740992.0); /* [0, 1) */
      if (b->dtype == COV_F32) ((float *)e->in[i].data)[j] = (float)(2 * u - 1);
      else ((int64_t *)e->in[i].data)[j] = lo + (int64_t)(u * (double)(hi - lo + 1));
    }
  }
  return NULL;
}

/* max |got - ref| / max |ref| over the f32 outputs (the largest). */
static double rel_err(const est *e, const cov_tensor *got) {
  double worst = 0;
  for (int o = 0; o < e->n_out; o++) {
    const cov_tensor *r = &e->ref[o];
    int64_t n = cov_tensor_numel(r);
    if (r->dtype != COV_F32 || got[o].dtype != COV_F32 || cov_tensor_numel(&got[o]) != n) continue;
    double scale = 0, d = 0;
    const float *a = got[o].data, *b = r->data;
    for (int64_t j = 0; j < n; j++) scale = fmax(scale, fabs(b[j]));
    for (int64_t j = 0; j < n; j++) {
      double x = fabs((double)a[j] - (double)b[j]);
      if (!(x <= d)) d = x; /* NaN counts as the worst */
    }
    double rel = d / (scale > 0 ? scale : 1);
    if (!(rel <= worst)) worst = rel;
  }
  return worst;
}

/* Emulates the plan with the first k matrix groups on f32 operands: its
 * outputs into got (k == n: the reference) or its error into *err. */
static cov_status emulate_prefix(est *e, int k, cov_tensor *got, double *err) {
  gpu_model_plan p;
  COV_RETURN_IF_ERROR(compile_prefix(e->m, e->path, e->t, e->order, k, 0, &p));
  cov_tensor out[GPU_CAP_MAX_IO];
  memset(out, 0, sizeof out);
  cov_status st = gpu_model_emulate(&p, e->in, (size_t)e->n_in, got ? got : out, (size_t)p.n_outputs);
  e->evals++;
  if (!st && !got) *err = rel_err(e, out);
  for (int o = 0; o < p.n_outputs && !got; o++) cov_tensor_release(&out[o]);
  if (!st && got) e->n_out = p.n_outputs;
  gpu_model_plan_free(&p);
  return st;
}

/* The shortest prefix (of e->n) whose estimate is within budget: *k, its
 * error *err (the all-f16 plan is over it). */
static cov_status search(est *e, int *k, double *err) {
  int lo = 0, hi = e->n; /* lo over budget, hi within (the reference itself) */
  double at_hi = 0;
  while (hi - lo > 1) {
    int mid = lo + (hi - lo) / 2;
    double em = 0;
    COV_RETURN_IF_ERROR(emulate_prefix(e, mid, NULL, &em));
    if (em <= GPU_MPREC_BUDGET) hi = mid, at_hi = em;
    else lo = mid;
  }
  *k = hi, *err = at_hi;
  return NULL;
}

/* ---- the batch ---------------------------------------------------------- */

static int is16(cov_dtype d) { return d == COV_F16 || d == COV_BF16; }

/* m at batch 1 where some input's dim 0 is over 1 (other dims as m binds
 * them), loaded as gpu_widened loads a 16-bit model: a symbolic batch bound
 * to 1, a batch the export fixed given over (cov_model_options.rebatch; a
 * model whose nodes hard-code it fails to load, and the estimate says so);
 * *out NULL where m is at batch 1. */
static cov_status batch_one(const cov_model *m, const char *path, cov_model **out) {
  *out = NULL;
  size_t ni = cov_model_num_inputs(m), no = cov_model_num_outputs(m);
  if (ni > GPU_CAP_MAX_IO) return NULL;
  cov_model_shape shapes[GPU_CAP_MAX_IO];
  int over = 0, need16 = 0, fixed = 0;
  for (size_t i = 0; i < ni; i++) {
    cov_dtype dt;
    cov_model_shape *s = &shapes[i];
    s->name = cov_model_input_name(m, i);
    COV_RETURN_IF_ERROR(cov_model_input_info(m, i, &dt, &s->rank, s->dims));
    need16 |= is16(cov_model_io_dtype(m, 0, i));
    if (s->rank < 1 || s->dims[0] <= 1) continue;
    fixed |= !(cov_model_input_symbolic(m, i) & 1);
    s->dims[0] = 1, over = 1;
  }
  for (size_t o = 0; o < no; o++) need16 |= is16(cov_model_io_dtype(m, 1, o));
  if (!over) return NULL;
  int cells = cov_model_unrolls_recurrence(m) && !gpu_model_has_control(m);
  cov_model_options mo = {.shapes = shapes, .n_shapes = ni, .compute_f32 = need16, .recurrent_cells = cells};
  if (fixed) mo.shapes = NULL, mo.n_shapes = 0, mo.rebatch = 1;
  return cov_model_load_file(path, &mo, out);
}

/* ---- the cost model ----------------------------------------------------- */

/* The mapper's time of problem q's chosen schedule against caps / shapes
 * (us); 0 where it does not plan. */
static double plan_us(const gpu_target *t, const gpu_problem *q, const gpu_target_caps *caps, const int (*shapes)[3],
                      int n_shapes) {
  map_gpu_result *r = malloc(sizeof *r);
  if (!r) return 0;
  gpu_plan pl;
  double us = 0;
  cov_status st = gpu_plan_map(q, t->acg, caps, shapes, n_shapes, &pl, r);
  for (int i = 0; !st && i < r->n && us == 0; i++) {
    const map_gpu_sched *c = &r->c[i];
    if (c->bm == pl.bm && c->bn == pl.bn && c->bk == pl.bk && c->wm == pl.wm && c->wn == pl.wn &&
        c->stages == pl.stages && c->matrix == pl.matrix && r->clock_mhz > 0)
      us = c->cycles / r->clock_mhz;
  }
  cov_status_free(st);
  free(r);
  return us;
}

/* The promoted matrix kernels of p (f32 operands) as the cost model
 * times them, and the same problems on f16 operands. */
static void promoted_cost(const gpu_target *t, const gpu_model_plan *p, gpu_mprec *r) {
  r->us_f32 = r->us_f16 = 0;
  for (int i = 0; i < p->n_steps; i++) {
    const gpu_mstep *s = &p->steps[i];
    if (s->op != GPU_STEP_LAUNCH || s->kkind != GPU_KERNEL_MATRIX || s->pre || s->plan.prob.in_dtype != COV_F32)
      continue;
    gpu_problem q = s->plan.prob;
    q.epi.residual = false, q.a_pro = GPU_APRO_NONE; /* the plain kernel of either */
    r->us_f32 += plan_us(t, &q, &t->caps_f32, (const int (*)[3])t->shapes_f32, t->n_shapes_f32);
    q.in_dtype = COV_F16;
    r->us_f16 += plan_us(t, &q, &t->caps, (const int (*)[3])t->shapes, t->n_shapes);
  }
}

/* ---- the plan ----------------------------------------------------------- */

static void est_free(est *e) {
  for (int i = 0; i < 16; i++) cov_tensor_release(&e->in[i]), cov_tensor_release(&e->ref[i]);
}

/* Runs the estimate on e (its model's all-f16 plan p0): *k groups to
 * promote, the findings in r. */
static cov_status estimate(est *e, const gpu_model_plan *p0, int *k, gpu_mprec *r) {
  COV_RETURN_IF_ERROR(make_inputs(e, p0));
  COV_RETURN_IF_ERROR(emulate_prefix(e, e->n, e->ref, NULL));
  cov_tensor got[GPU_CAP_MAX_IO];
  memset(got, 0, sizeof got);
  cov_status st = gpu_model_emulate(p0, e->in, (size_t)e->n_in, got, (size_t)p0->n_outputs);
  e->evals++;
  if (!st) r->err_f16 = rel_err(e, got);
  for (int o = 0; o < p0->n_outputs; o++) cov_tensor_release(&got[o]);
  if (st) return st;
  r->ran = 1, r->err = r->err_f16, *k = 0;
  if (r->err_f16 > GPU_MPREC_BUDGET) st = search(e, k, &r->err);
  return st;
}

/* Why the estimate cannot run on the plan p (a message into why), 0: it
 * can. */
/* A part on the host (NonMaxSuppression, TopK) selects and orders by
 * value: its outputs jump where rounding moves a score past another, so
 * their difference does not measure the rounding (a detector's boxes
 * "differ" by 0.7 at f16 while matching onnxruntime's detections). Checked
 * on the plan itself, before a batch-1 sibling is compiled for nothing. */
static int has_host_part(const gpu_model_plan *p, char *why, size_t n) {
  for (int i = 0; i < p->n_steps; i++)
    if (p->steps[i].op == GPU_STEP_PART) {
      snprintf(why, n, "its outputs come from a part run on the host, which selects by value");
      return 1;
    }
  return 0;
}

static int cannot_estimate(const gpu_model_plan *p, char *why, size_t n) {
  double macs, bytes;
  emu_cost(p, &macs, &bytes);
  if (macs > GPU_MPREC_EMU_MACS || bytes > GPU_MPREC_EMU_GB * 1e9) {
    snprintf(why, n, "its emulation would take %.3g multiply-adds and %.3g GB (bounds %.3g and %.3g GB)", macs, bytes / 1e9, GPU_MPREC_EMU_MACS, GPU_MPREC_EMU_GB);
    return 1;
  }
  return 0;
}

/* The precision plan of m's all-f16 plan p0 (n matrix groups):
 * how many groups to promote (*k), the findings in r. An estimate that
 * cannot run leaves *k 0 and says why. */
static cov_status choose(const cov_model *m, const char *path, const gpu_target *t, const gpu_model_plan *p0, int n,
                         int *k, gpu_mprec *r) {
  *k = 0;
  if (has_host_part(p0, r->why, sizeof r->why)) return NULL;
  cov_model *one = NULL;
  cov_status st = batch_one(m, path, &one);
  gpu_model_plan p1;
  int have1 = 0;
  est *e = calloc(1, sizeof *e);
  if (!e && !st) st = cov_error(COV_OUT_OF_MEMORY, GPU_LOC(path, NULL), "out of memory");
  if (!st && one) have1 = !(st = gpu_model_compile_fixed(one, path, t, 0, &p1));
  const gpu_model_plan *pe = have1 ? &p1 : p0;
  if (!st) {
    e->m = one ? one : m, e->path = path, e->t = t;
    e->n = matrix_groups(pe, e->order, GPU_MPREC_GROUPS);
    r->batch = pe->n_inputs && pe->bufs[pe->input_buf[0]].rank ? pe->bufs[pe->input_buf[0]].shape[0] : 1;
    if (e->n != n)
      snprintf(r->why, sizeof r->why, "the batch-1 plan has %d matrix groups, the plan %d", e->n, n);
    else if (!cannot_estimate(pe, r->why, sizeof r->why))
      st = estimate(e, pe, k, r);
    r->evals = e->evals;
  }
  if (e) est_free(e);
  free(e);
  if (have1) gpu_model_plan_free(&p1);
  cov_model_free(one);
  if (st && !r->ran) { /* the estimate, not the model, failed: the plan stays f16 and says why */
    snprintf(r->why, sizeof r->why, "%s", cov_status_message(st));
    cov_status_free(st);
    st = NULL, *k = 0;
  }
  return st;
}

cov_status gpu_model_compile_with(const cov_model *m, const char *path, const gpu_target *t, int emit,
                                  gpu_model_plan *out) {
  if (!t || t->f16_operands || t->dtype != COV_F16 || t->f32_activations || t->f32_groups)
    return gpu_model_compile_fixed(m, path, t, emit, out);
  COV_RETURN_IF_ERROR(gpu_model_compile_fixed(m, path, t, 0, out));
  gpu_mprec r;
  memset(&r, 0, sizeof r);
  r.budget = GPU_MPREC_BUDGET;
  int *order = malloc(GPU_MPREC_GROUPS * sizeof *order), k = 0;
  cov_status st = order ? NULL : cov_error(COV_OUT_OF_MEMORY, GPU_LOC(path, NULL), "out of memory");
  if (!st) r.n_groups = matrix_groups(out, order, GPU_MPREC_GROUPS);
  if (!st && r.n_groups) st = choose(m, path, t, out, r.n_groups, &k, &r);
  if (!st && k) {
    gpu_model_plan_free(out);
    st = compile_prefix(m, path, t, order, k, 0, out);
  }
  free(order);
  if (!st) {
    r.n_f32 = k;
    promoted_cost(t, out, &r);
    out->prec = r;
  }
  if (!st && emit) st = gpu_model_build_modules(out, t);
  if (st) gpu_model_plan_free(out);
  return st;
}

/* ---- the notes ---------------------------------------------------------- */

/* The label (first ONNX node) of group g's first step in p. */
static const char *group_label(const gpu_model_plan *p, int g) {
  for (int i = 0; i < p->n_steps; i++)
    if (p->steps[i].group == g) return p->steps[i].label;
  return "?";
}

void gpu_mprec_note(const gpu_model_plan *p, FILE *notes) {
  const gpu_mprec *r = &p->prec;
  if (!notes || !r->n_groups) return;
  if (!r->ran) {
    fprintf(notes, "note: precision: f16 operands in every matrix kernel (the error was not estimated: %s)\n", r->why);
    return;
  }
  fprintf(notes, "note: precision: estimated error %.3g with f16 operands (budget %.3g, %d plans emulated at batch "
          "%lld)", r->err_f16, r->budget, r->evals, (long long)r->batch);
  if (!r->n_f32) {
    fprintf(notes, ": every matrix kernel on f16 operands\n");
    return;
  }
  fprintf(notes, ", %.3g with the first %d of %d matrix groups on f32 operands:", r->err, r->n_f32, r->n_groups);
  int shown = 0, seen[64], n_seen = 0;
  for (int i = 0; i < p->n_steps && shown < 8; i++) {
    const gpu_mstep *s = &p->steps[i];
    if (s->op != GPU_STEP_LAUNCH || s->kkind != GPU_KERNEL_MATRIX || s->pre || s->plan.prob.in_dtype != COV_F32)
      continue;
    int dup = 0;
    for (int k = 0; k < n_seen && !dup; k++) dup = seen[k] == s->group;
    if (dup || n_seen == 64) continue;
    seen[n_seen++] = s->group;
    fprintf(notes, " %s", group_label(p, s->group));
    shown++;
  }
  fprintf(notes, "%s; their kernels (*_matrix_f32) %.1f us on f32 operands against %.1f us on f16 (cost model)\n",
          r->n_f32 > shown ? " ..." : "", r->us_f32, r->us_f16);
}
