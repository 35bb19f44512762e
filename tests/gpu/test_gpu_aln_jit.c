/* tests/gpu/test_gpu_aln_jit.c: the tiled matrix kernel normalising its
 * A rows as it loads them (prob.a_lnorm, backends/gpu/gpu_lower_aln.c),
 * lowered with a host table of target operations, run on this CPU
 * through LLVM's JIT and compared with naive loops.
 *
 * A workgroup's threads run as threads of their own (a barrier is a
 * pthread barrier, a lane exchange two of its warp's around a table of the
 * threads' values, shared memory one module global: one workgroup runs
 * at a time); workgroups run one after another in a scrambled order. The
 * "matrix" fragment is the FMA fragment on 16-bit inputs. A is f32 rows
 * with a large mean (an offset per row) and gamma, beta far from 1 and 0,
 * so a wrong mean, rstd, gamma, beta, row or column shows; the reference
 * takes each row's LayerNorm in double, rounds it to f16 (the operand the
 * kernel feeds its matrix instructions) and multiplies in double. Cases:
 * rows past M in the last tile, K not a multiple of 32 (a lane's last
 * value past the row), batches, K = GPU_ALN_MAX_K, bias, activation,
 * the residual addend, f16 outputs, split-K, and rows read through a map
 * (transposed, picked: prob.a_rq, a_r0, a_r1).
 * With -t TARGET (repeatable) ViT's QKV projection with its norm is also
 * built as that GPU target's code object (PTX: the lane shuffle).
 * Usage: test_gpu_aln_jit [-t TARGET]... */
#include <llvm-c/Error.h>
#include <llvm-c/Orc.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backends/gpu/gpu_ref.h"
#include "backends/gpu/gpu_target.h"
#include "backends/gpu/gpu_tune.h"
#include "gpu_jit_harness.h"

/* ---- the host's target operations ------------------------------------------ */

enum { MAX_T = 1024 };
static _Thread_local int32_t t_tid, t_bid[3];
static pthread_barrier_t g_bar;               /* the running workgroup's */
static pthread_barrier_t g_warp_bar[MAX_T / 32]; /* each warp's, for its lane exchanges */
static int32_t g_slot[MAX_T];                    /* lane exchanges */

static int32_t host_get_tid(void) { return t_tid; }
static int32_t host_get_bid(int32_t d) { return t_bid[d]; }
static int32_t host_barrier_wait(void) {
  pthread_barrier_wait(&g_bar);
  return 0;
}
static int32_t host_exchange(int32_t v, int32_t mask) {
  g_slot[t_tid] = v;
  pthread_barrier_wait(&g_warp_bar[t_tid / 32]);
  int32_t r = g_slot[t_tid ^ mask];
  pthread_barrier_wait(&g_warp_bar[t_tid / 32]);
  return r;
}

static LLVMValueRef host_tid(gpu_gen *g) { return gpu_jit_host_call_i32(g, "cov_host_tid", NULL, 0); }
static LLVMValueRef host_bid(gpu_gen *g, int d) {
  LLVMValueRef a = gpu_i32(g, d);
  return gpu_jit_host_call_i32(g, "cov_host_bid", &a, 1);
}
static void host_barrier(gpu_gen *g) { gpu_jit_host_call_i32(g, "cov_host_barrier", NULL, 0); }
static LLVMValueRef host_lane_xor(gpu_gen *g, LLVMValueRef x, int mask) {
  LLVMValueRef a[2] = {x, gpu_i32(g, mask)};
  return gpu_jit_host_call_i32(g, "cov_host_xor", a, 2);
}
static LLVMValueRef host_shared(gpu_gen *g, unsigned bytes) {
  LLVMTypeRef t = LLVMArrayType(g->i8, bytes ? bytes : 1);
  LLVMValueRef v = LLVMAddGlobal(g->mod, t, "cov_smem");
  LLVMSetInitializer(v, LLVMConstNull(t));
  LLVMSetAlignment(v, 1024);
  return v;
}
static LLVMValueRef host_exp2(gpu_gen *g, LLVMValueRef x) { return gpu_call_intrinsic(g, "llvm.exp2", &g->f32, 1, &x, 1); }
static void host_mark(gpu_gen *g, LLVMValueRef fn) { (void)g, (void)fn; }
static const gpu_frag_ops *host_frag(const gpu_plan *p) { return gpu_fma_frag(p->warp_size); }
static const gpu_target_ops k_host = {.name = "host",
                                      .mark_kernel = host_mark,
                                      .thread_id = host_tid,
                                      .block_id = host_bid,
                                      .barrier = host_barrier,
                                      .shared_array = host_shared,
                                      .exp2 = host_exp2,
                                      .lane_xor = host_lane_xor,
                                      .matrix_frag = host_frag};

static LLVMErrorRef define_host(LLVMOrcLLJITRef J, LLVMOrcJITDylibRef jd) {
  static const char *names[4] = {"cov_host_tid", "cov_host_bid", "cov_host_barrier", "cov_host_xor"};
  LLVMOrcExecutorAddress addr[4] = {
      (LLVMOrcExecutorAddress)(uintptr_t)host_get_tid, (LLVMOrcExecutorAddress)(uintptr_t)host_get_bid,
      (LLVMOrcExecutorAddress)(uintptr_t)host_barrier_wait, (LLVMOrcExecutorAddress)(uintptr_t)host_exchange};
  return gpu_jit_define_host(J, jd, names, addr, 4);
}

static cov_status lower_plan(const void *what, const gpu_target_ops *ops, LLVMModuleRef mod, const char *fn) {
  return gpu_lower(what, ops, mod, fn);
}

/* ---- running a grid ----------------------------------------------------------- */

/* the kernel with its nine arguments (A, B, output, bias, split workspace
 * and counters, residual addend, gamma, beta) */
typedef void (*aln_fn)(void *, void *, void *, void *, void *, void *, void *, void *, void *);
enum { N_ARGS = 9 };

typedef struct item {
  aln_fn f;
  void **a;
  int32_t tid, bid[3];
} item;

static void *run_item(void *arg) {
  item *it = arg;
  t_tid = it->tid;
  memcpy(t_bid, it->bid, sizeof t_bid);
  it->f(it->a[0], it->a[1], it->a[2], it->a[3], it->a[4], it->a[5], it->a[6], it->a[7], it->a[8]);
  return NULL;
}

/* Every workgroup of the plan's grid, in a scrambled order, its threads
 * concurrently. */
static int run_grid(aln_fn f, const gpu_plan *p, void **a) {
  int64_t n = (int64_t)p->grid[0] * p->grid[1] * p->grid[2];
  int T = p->threads;
  item *it = malloc((size_t)T * sizeof *it);
  pthread_t *th = malloc((size_t)T * sizeof *th);
  int bad = T > MAX_T || T % 32 || !it || !th || pthread_barrier_init(&g_bar, NULL, (unsigned)T), warps = 0;
  for (; !bad && warps < T / 32; warps++)
    if (pthread_barrier_init(&g_warp_bar[warps], NULL, 32)) {
      bad = 1;
      break;
    }
  for (int64_t w = 0; w < n && !bad; w++) {
    int64_t id = w * 1000003 % n;
    int32_t bid[3] = {(int32_t)(id % p->grid[0]), (int32_t)(id / p->grid[0] % p->grid[1]),
                      (int32_t)(id / p->grid[0] / p->grid[1])};
    int started = 0;
    for (int t = 0; t < T; t++) {
      it[t] = (item){f, a, t, {bid[0], bid[1], bid[2]}};
      if (pthread_create(&th[t], NULL, run_item, &it[t])) break;
      started++;
    }
    if (started < T) { /* the started threads would wait for the others forever */
      fprintf(stderr, "FAIL: cannot start the threads of a workgroup\n");
      exit(1);
    }
    for (int t = 0; t < started; t++) pthread_join(th[t], NULL);
  }
  if (it && th && T <= MAX_T && T % 32 == 0) pthread_barrier_destroy(&g_bar);
  for (int i = 0; i < warps; i++) pthread_barrier_destroy(&g_warp_bar[i]);
  free(it), free(th);
  if (bad) fprintf(stderr, "FAIL: cannot run the workgroups' threads\n");
  return bad;
}

/* ---- the reference ------------------------------------------------------------ */

static uint64_t rng = 0x9e3779b97f4a7c15ull;
static double next(void) { return gpu_jit_unit(&rng) * 2.0 - 1.0; }

static double act(gpu_act a, double v) {
  return a == GPU_ACT_GELU ? 0.5 * v * (1.0 + erf(v / sqrt(2.0))) : a == GPU_ACT_RELU ? (v > 0 ? v : 0) : v;
}

/* The row of x that A's row r (of batch * m) normalises. */
static int64_t src_row(const gpu_problem *q, int64_t r) {
  return q->a_rq ? r / q->a_rq * q->a_r1 + r % q->a_rq * q->a_r0 : r;
}
/* Rows of x: every row A reads. */
static int64_t x_rows(const gpu_problem *q) {
  int64_t n = 0;
  for (int64_t r = 0; r < q->batch * q->m; r++) n = src_row(q, r) + 1 > n ? src_row(q, r) + 1 : n;
  return n;
}

/* y = act(LN(x) W + bias) + res by naive loops; LN in double, rounded to
 * f16 as the operand; tol[i]: a bound of the sum's rounding (the f16
 * operand can round either way where the kernel's f32 statistics differ
 * from double in the last bit) */
static void reference(const gpu_problem *q, const float *x, const float *gam, const float *bet, const float *w,
                      const float *bias, const float *res, double *y, double *tol) {
  double *a = malloc((size_t)q->k * sizeof *a);
  for (int64_t r = 0; a && r < q->batch * q->m; r++) {
    const float *row = x + src_row(q, r) * q->k;
    double mean = 0, var = 0;
    for (int64_t k = 0; k < q->k; k++) mean += row[k];
    mean /= (double)q->k;
    for (int64_t k = 0; k < q->k; k++) var += (row[k] - mean) * (row[k] - mean);
    var /= (double)q->k;
    for (int64_t k = 0; k < q->k; k++)
      a[k] = gpu_jit_h16((float)((row[k] - mean) / sqrt(var + q->a_ln_eps) * gam[k] + bet[k]));
    int64_t g = r / q->m;
    for (int64_t n = 0; n < q->n; n++) {
      double s = q->epi.bias ? bias[n] : 0, mag = 0;
      for (int64_t k = 0; k < q->k; k++) {
        double t = a[k] * w[(g * q->k + k) * q->n + n];
        s += t, mag += fabs(t);
      }
      y[r * q->n + n] = act(q->epi.act, s) + (q->epi.residual ? res[r * q->n + n] : 0.0);
      tol[r * q->n + n] = 2e-3 * mag + 1e-4 + (q->out_f16 ? 2e-3 * fabs(y[r * q->n + n]) : 0.0);
    }
  }
  free(a);
}

/* ---- cases -------------------------------------------------------------------- */

static const gpu_target_caps k_caps = {.warp_size = 32,
                                       .max_threads = 1024,
                                       .shared_bytes = 232448,
                                       .regfile_bytes = 262144,
                                       .cores = 132,
                                       .n_tiles = 1,
                                       .tiles = {{4, 8, 4}},
                                       .has_async_copy = 0};
static const int k_shapes[1][3] = {{4, 8, 4}};

typedef struct aln_case {
  const char *name;
  gpu_problem q;
  gpu_fixed_tile tile;
} aln_case;

static gpu_problem matmul(int64_t b, int64_t m, int64_t n, int64_t k, gpu_act a, bool res) {
  gpu_problem q = {.kind = GPU_OP_MATMUL, .in_dtype = COV_F16, .batch = b, .m = m, .n = n, .k = k, .split_ok = true};
  q.epi.act = a, q.epi.bias = true, q.epi.residual = res;
  q.a_lnorm = true, q.a_ln_eps = 1e-5f;
  return q;
}

static gpu_problem mapped(gpu_problem q, int64_t rq, int64_t r0, int64_t r1) {
  q.a_rq = rq, q.a_r0 = r0, q.a_r1 = r1;
  return q;
}

static void *pack16(const float *v, int64_t n) {
  uint16_t *o = malloc((size_t)n * 2 + 16);
  for (int64_t i = 0; o && i < n + 8; i++) o[i] = i < n ? cov_f32_to_f16(v[i]) : 0x7e00;
  return o;
}

/* Inputs: rows of x at an offset of their own, gamma, beta, weights (f16
 * values), bias, the residual addend. */
static void fill(const gpu_problem *q, float *x, float *gam, float *bet, float *w, float *bias, float *res, size_t nw,
                 size_t no) {
  for (int64_t r = 0; r < x_rows(q); r++) {
    double off = 4.0 * next(), scale = 0.5 + fabs(next());
    for (int64_t k = 0; k < q->k; k++) x[r * q->k + k] = (float)(off + scale * next());
  }
  for (int64_t k = 0; k < q->k; k++) gam[k] = (float)(1.5 * next()), bet[k] = (float)(0.5 * next());
  for (size_t i = 0; i < nw; i++) w[i] = gpu_jit_h16((float)next());
  for (int64_t n = 0; n < q->n; n++) bias[n] = (float)next();
  for (size_t i = 0; i < no; i++) res[i] = (float)next();
}

static int check_out(const char *name, const gpu_plan *p, const void *out, const double *want, const double *tol,
                     int64_t n) {
  for (int64_t i = 0; i < n; i++) {
    double got = p->out_f16 ? cov_f16_to_f32(((const uint16_t *)out)[i]) : ((const float *)out)[i];
    if (!(fabs(got - want[i]) <= tol[i])) {
      fprintf(stderr, "FAIL %s: output %lld: got %.7g, want %.7g (tolerance %.3g)\n", name, (long long)i, got, want[i],
              tol[i]);
      return 1;
    }
  }
  return 0;
}

static int plan_case(const aln_case *c, gpu_plan *p) {
  cov_status st = gpu_plan_fixed(&c->q, &k_caps, k_shapes, 1, &c->tile, p);
  if (!st && p->out_f16 != c->q.out_f16) p->out_f16 = c->q.out_f16, st = gpu_plan_check(p, &k_caps);
  if (!st && (!gpu_aln_ok(p) || p->split != c->tile.split))
    st = cov_error(COV_INTERNAL, NULL, "plan vector %d, split %d (not %d)", p->vector_copy, p->split, c->tile.split);
  if (st) {
    fprintf(stderr, "FAIL %s: ", c->name);
    cov_status_print(stderr, st, 0);
    cov_status_free(st);
    return 1;
  }
  return 0;
}

static int run_case(const aln_case *c) {
  gpu_plan p;
  if (plan_case(c, &p)) return 1;
  const gpu_problem *q = &c->q;
  size_t na = (size_t)(x_rows(q) * q->k), nw = (size_t)(q->batch * q->k * q->n), no = (size_t)(q->batch * q->m * q->n);
  int64_t nws = gpu_split_ws_floats(&p), ncnt = gpu_split_counters(&p);
  float *x = malloc(na * 4 + 4), *gam = malloc((size_t)q->k * 4), *bet = malloc((size_t)q->k * 4);
  float *w = malloc(nw * 4 + 4), *bias = malloc((size_t)q->n * 4), *res = malloc(no * 4 + 4);
  float *ws = malloc((size_t)nws * 4 + 4);
  uint32_t *cnt = calloc((size_t)ncnt + 1, 4);
  double *want = malloc(no * sizeof *want + 8), *tol = malloc(no * sizeof *tol + 8);
  size_t ob = p.out_f16 ? 2 : 4;
  unsigned char *out = malloc(no * ob + 4);
  void *wi = NULL;
  int bad = !x || !gam || !bet || !w || !bias || !res || !ws || !cnt || !want || !tol || !out;
  if (!bad) {
    fill(q, x, gam, bet, w, bias, res, nw, no);
    wi = pack16(w, (int64_t)nw);
    bad = !wi;
  }
  gpu_jit_kernel k = {0};
  if (!bad) bad = gpu_jit_compile(c->name, lower_plan, &p, &k_host, define_host, &k);
  if (!bad) {
    reference(q, x, gam, bet, w, bias, res, want, tol);
    memset(out, 0xff, no * ob); /* NaN everywhere the kernel must write */
    for (int64_t i = 0; i < nws; i++) ws[i] = NAN;
    void *a[N_ARGS] = {x, wi, out, bias, ws, cnt, q->epi.residual ? res : NULL, gam, bet};
    bad = run_grid((aln_fn)(void (*)(void))k.fn, &p, a); /* via the generic function type */
  }
  if (!bad) bad = check_out(c->name, &p, out, want, tol, (int64_t)no);
  if (k.jit) gpu_jit_kernel_free(&k);
  if (!bad)
    printf("ok %s: %lldx%lldx%lld (batch %lld), tile %dx%dx%d, %d threads, split %d, %u bytes shared\n", c->name,
           (long long)q->m, (long long)q->n, (long long)q->k, (long long)q->batch, p.bm, p.bn, p.bk, p.threads,
           p.split, p.shared_bytes);
  free(x), free(gam), free(bet), free(w), free(bias), free(res), free(ws), free(cnt), free(want), free(tol), free(out);
  free(wi);
  return bad;
}

/* ViT's QKV projection with its norm (65 x 288 x 96) as the target's
 * mapper plans it, built as its code object; PTX must shuffle lanes. A
 * target whose plan cannot take the norm (whole-vector copies, warpgroup
 * instructions) builds a plan with guarded element copies instead. */
static int build_targets(const gpu_jit_targets *ts) {
  int bad = 0;
  for (int i = 0; i < ts->n; i++) {
    const gpu_target *t = &ts->t[i];
    gpu_problem q = matmul(1, 65, 288, 96, GPU_ACT_NONE, false);
    q.split_ok = false;
    gpu_plan p;
    const gpu_tune_entry *e;
    char *code = NULL;
    size_t size = 0;
    gpu_kernel_info info;
    cov_status st = gpu_plan_pick(t, &q, &p, &e);
    if (!st && !gpu_aln_ok(&p)) st = cov_error(COV_INTERNAL, NULL, "the picked plan cannot take the norm");
    if (!st) st = gpu_build_kernel(t, &p, "covenant_aln", 0, &code, &size, &info);
    if (!st && t->vendor->code_text && !strstr(code, "shfl.sync.bfly"))
      st = cov_error(COV_INTERNAL, NULL, "the PTX has no lane shuffle");
    if (st) {
      fprintf(stderr, "FAIL build for %s: ", cov_acg_name(t->acg));
      cov_status_print(stderr, st, 0);
      bad = 1;
    } else {
      printf("ok build %s: tile %dx%dx%d, %d threads, %u bytes shared\n", cov_acg_name(t->acg), p.bm, p.bn, p.bk,
             p.threads, p.shared_bytes);
    }
    cov_status_free(st);
    free(code);
  }
  return bad;
}

int main(int argc, char **argv) {
  gpu_jit_targets ts = {0};
  if (gpu_jit_targets_from_args(argc, argv, &ts)) return 2;
  gpu_jit_init();
  /* 16x32x16 tiles of 4 warps (4 rows each in the statistics), 32x32x16
   * of 8 warps */
  gpu_fixed_tile t16 = {.bm = 16, .bn = 32, .bk = 16, .wm = 8, .wn = 16, .stages = 2, .inflight = -1, .split = 1};
  gpu_fixed_tile t32 = {.bm = 32, .bn = 32, .bk = 16, .wm = 16, .wn = 8, .stages = 2, .inflight = -1, .split = 1};
  gpu_fixed_tile t16s = t16;
  t16s.split = 3;
  gpu_problem res_f16 = matmul(1, 33, 40, 192, GPU_ACT_NONE, true);
  res_f16.out_f16 = true;
  aln_case cases[] = {
      /* ViT-like: 65 rows (the last tile mostly past M), K = 96 */
      {"rows_vit", matmul(1, 65, 48, 96, GPU_ACT_NONE, false), t16},
      /* K not a multiple of 32, GELU, 8 warps over 32 rows */
      {"rows_k72_gelu", matmul(1, 37, 40, 72, GPU_ACT_GELU, false), t32},
      /* batches: row g * M + m */
      {"rows_batch", matmul(2, 20, 24, 200, GPU_ACT_RELU, false), t16},
      /* the widest rows a lane holds, one row */
      {"rows_k1024", matmul(1, 5, 33, 1024, GPU_ACT_NONE, false), t32},
      /* ConvNeXt's stage-3 width, the residual addend, f16 out */
      {"rows_res_f16", res_f16, t32},
      {"rows_k320_res", matmul(1, 50, 40, 320, GPU_ACT_NONE, true), t16},
      /* split-K: every range's workgroups take the statistics of whole rows */
      {"rows_split", matmul(1, 9, 32, 300, GPU_ACT_NONE, false), t16s},
      /* rows transposed: [13][3] of [3][13] (a seq-first transformer's) */
      {"rows_transposed", mapped(matmul(1, 39, 40, 96, GPU_ACT_NONE, false), 13, 3, 1), t16},
      /* rows picked: every ninth (a class token per image) */
      {"rows_picked", mapped(matmul(1, 4, 24, 64, GPU_ACT_NONE, false), 4, 9, 0), t16},
  };
  int bad = 0;
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) bad |= run_case(&cases[i]);
  bad |= build_targets(&ts);
  gpu_jit_targets_close(&ts);
  if (!bad) printf("gpu_aln_jit: all cases pass\n");
  return bad;
}
