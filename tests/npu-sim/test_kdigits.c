/* tests/npu-sim/test_kdigits.c: several reduction loops on a
 * weight-stationary array's rows (ISA.md "k digits", map_gemm.c k_digits).
 *
 * 1. The stem convnet_layer1 (3 channels, 3x3) on npu-16x16: the mapper's
 *    GEMM plan runs k over more than the 3 channels (k digits), the program
 *    has KDIG gemms with k above 3, and its output matches a naive conv loop
 *    over the same f16-rounded inputs (bias, relu, 2x2 max pool).
 * 2. A hand-built KDIG gemm (k = c x s over a [c][x] tile, 3 x 5 digits,
 *    two folds starting mid-digit) against a naive loop, bit for bit; the
 *    program survives an encode/decode round trip byte for byte.
 * 3. The verifier refuses a zero radix, naming the field.
 * 4. m digits: convnet_layer2 (10 channels, 5x5, 11x11 outputs) streams its
 *    121 output pixels per weight load (MDIG: the input tile's rows are
 *    wider than the output's), against a naive conv (bias, relu). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "acg/acg_ir.h"
#include "backends/npu-sim/npu_internal.h"
#include "covenant/mapper.h"
#include "covenant/npu.h"
#include "mapper/map_ir.h"
#include "tests/check.h"
#define NPU_TEST_SEED 0x2545f4914f6cdd1dull
#include "tests/npu-sim/npu_test.h"

/* A suite conv layer mapped and compiled for npu-16x16 (open), run on
 * random f16-exact x [1][C][H][W], w [KO][C][R][R] and b [KO] with its
 * output read into y (run), and everything freed (close). */
typedef struct conv_case {
  cov_acg *g;
  cov_layer *l;
  cov_schedule *s;
  cov_npu_program *p;
  cov_tensor x, w, b, y;
  cov_npu_sim *sim;
  cov_npu_stats *st;
} conv_case;

static bool conv_case_open(conv_case *t, const char *layer) {
  memset(t, 0, sizeof *t);
  char suite[1024];
  snprintf(suite, sizeof suite, "%s/bench/suite/layers.json", g_src);
  t->g = load_target("npu-16x16");
  CHECK(!cov_layer_from_suite(suite, layer, 1, &t->l));
  CHECK(t->l && !cov_map(t->l, t->g, NULL, &t->s));
  CHECK(t->s && !cov_npu_compile(t->s, &t->p));
  return t->p != NULL;
}

static void conv_case_run(conv_case *t, int C, int H, int W, int KO, int R) {
  CHECK(!cov_tensor_alloc(&t->x, COV_F32, 4, (int64_t[]){1, C, H, W}));
  CHECK(!cov_tensor_alloc(&t->w, COV_F32, 4, (int64_t[]){KO, C, R, R}));
  CHECK(!cov_tensor_alloc(&t->b, COV_F32, 1, (int64_t[]){KO}));
  float *fx = t->x.data, *fw = t->w.data, *fb = t->b.data;
  for (int i = 0; i < C * H * W; i++) fx[i] = rnd();
  for (int i = 0; i < KO * C * R * R; i++) fw[i] = rnd();
  for (int i = 0; i < KO; i++) fb[i] = rnd();
  t->st = run(t->g, t->p, &t->sim, (const char *[]){"in0", "in1", "in2"}, (cov_tensor[]){t->x, t->w, t->b}, 3);
  CHECK(!cov_npu_sim_read(t->sim, "out", &t->y));
}

static void conv_case_close(conv_case *t) {
  cov_tensor_release(&t->x);
  cov_tensor_release(&t->w);
  cov_tensor_release(&t->b);
  cov_tensor_release(&t->y);
  cov_npu_stats_free(t->st);
  cov_npu_sim_free(t->sim);
  cov_npu_program_free(t->p);
  cov_schedule_free(t->s);
  cov_layer_free(t->l);
  cov_acg_free(t->g);
}

static void test_stem(void) {
  conv_case t;
  if (!conv_case_open(&t, "convnet_layer1")) {
    conv_case_close(&t);
    return;
  }
  cov_schedule *s = t.s;
  cov_npu_program *p = t.p;
  map_gemm_plan gp;
  map_gemm_plan_make(map_schedule_of(s), &gp);
  int64_t K = map_gemm_k(map_schedule_of(s), &gp);
  CHECK(gp.n_kd >= 2 && K > 3);
  uint32_t kdig = 0, kmax = 0;
  for (uint32_t i = 0; i < p->n_insns; i++)
    if (p->insns[i].op == NPU_OP_GEMM && (p->insns[i].flags & NPU_GEMM_KDIG)) {
      kdig++;
      if (p->insns[i].u.gemm.k > kmax) kmax = p->insns[i].u.gemm.k;
    }
  CHECK(kdig > 0 && kmax > 3);
  enum { C = 3, H = 32, W = 32, KO = 10, R = 3, OH = 30, PH = 15 };
  conv_case_run(&t, C, H, W, KO, R);
  const float *fx = t.x.data, *fw = t.w.data, *fb = t.b.data;
  cov_tensor y = t.y;
  cov_npu_stats *st = t.st;
  double worst = 0, top = 0;
  for (int k = 0; k < KO && y.data; k++)
    for (int py = 0; py < PH; py++)
      for (int px = 0; px < PH; px++) {
        double best = -INFINITY;
        for (int dy = 0; dy < 2; dy++)
          for (int dx = 0; dx < 2; dx++) {
            int oy = 2 * py + dy, ox = 2 * px + dx;
            double acc = fb[k];
            for (int c = 0; c < C; c++)
              for (int r = 0; r < R; r++)
                for (int q = 0; q < R; q++)
                  acc += (double)fx[(c * H + oy + r) * W + ox + q] * fw[((k * C + c) * R + r) * R + q];
            acc = acc > 0 ? acc : 0;
            best = fmax(best, acc);
          }
        double got = ((float *)y.data)[(k * PH + py) * PH + px];
        worst = fmax(worst, fabs(got - best));
        top = fmax(top, fabs(best));
      }
  printf("k digits: convnet_layer1 on npu-16x16, k = %lld over %d loops, %u kdig gemms (k <= %u), "
         "%llu cycles, max err %.3g of %.3g\n", (long long)K, gp.n_kd, kdig, kmax,
         (unsigned long long)(st ? cov_npu_stats_cycles(st) : 0), worst, top);
  CHECK(y.data && worst <= 1e-5 * top);
  conv_case_close(&t);
}

/* y[m][n] = sum over (c, s) of x[c][m + s] w[c * S + s][n]: a 1-D conv of a
 * 3-channel row, k = c x s = 15 as digits (radix 5), in two folds of 8 and
 * 7 (the second starts at c = 1, s = 3). */
static void test_hand_built(void) {
  cov_acg *g = load_target("npu-16x16");
  npu_target t;
  CHECK(!npu_target_init(g, &t));
  npu_prog *p = new_prog(&t);
  enum { C = 3, S = 5, M = 20, X = M + S - 1, N = 16, KT = C * S };
  uint64_t ax = add_tensor(p, "x", COV_F16, NPU_ROLE_INPUT, 2, (uint32_t[]){C, X});
  uint64_t aw = add_tensor(p, "w", COV_F16, NPU_ROLE_WEIGHT, 2, (uint32_t[]){KT, N});
  uint64_t ay = add_tensor(p, "y", COV_F32, NPU_ROLE_OUTPUT, 2, (uint32_t[]){M, N});
  int ibuf = acg_find_node(g, "ibuf"), wbuf = acg_find_node(g, "wbuf"), obuf = acg_find_node(g, "obuf");
  int arr = acg_find_node(g, "pe_array") - g->n_storage;
  int cap = -1;
  for (int k = 0; k < g->compute[arr].n_caps && cap < 0; k++)
    if (g->compute[arr].caps[k].op == COV_OP_MAC && g->compute[arr].caps[k].in[0] == COV_F16) cap = k;
  CHECK(cap >= 0);
  add(p, dma2(npu_find_edge(g, t.dram, ibuf), false, COV_F16, ax, C, X, 0, 0, C, X, 0, X, 1));
  add(p, dma2(npu_find_edge(g, t.dram, wbuf), false, COV_F16, aw, KT, N, 0, 0, KT, N, 0, N, 1));
  for (uint32_t k0 = 0; k0 < KT; k0 += 8) {
    npu_insn gm = {.op = NPU_OP_GEMM, .unit = (uint8_t)arr,
                   .flags = (uint16_t)(NPU_GEMM_KDIG | (k0 ? NPU_GEMM_ACC : 0))};
    gm.u.gemm.cap = (uint8_t)cap;
    gm.u.gemm.m = M;
    gm.u.gemm.k = (uint16_t)(KT - k0 < 8 ? KT - k0 : 8);
    gm.u.gemm.n = N;
    gm.u.gemm.a = (npu_mem){(uint8_t)ibuf, 0, 0, 1, 1};       /* row m: x + m; digit s: +1 */
    gm.u.gemm.b = (npu_mem){(uint8_t)wbuf, 0, 0, N, 1};       /* row (c, s): w + (c S + s) N */
    gm.u.gemm.c = (npu_mem){(uint8_t)obuf, 0, 0, N, 1};
    gm.u.gemm.k0 = (uint16_t)k0;
    gm.u.gemm.krad[0] = S;
    gm.u.gemm.krad[1] = C;
    gm.u.gemm.ka[0] = X; /* digit c: the next channel's row */
    gm.u.gemm.kb[0] = S * N;
    add(p, gm);
  }
  int ob = obuf;
  npu_insn st = dma2(npu_find_edge(g, ob, t.dram), true, COV_F32, ay, M, N, 0, 0, M, N, 0, N, 1);
  add(p, st);
  /* encode -> decode -> encode: the same bytes, the digits kept */
  uint8_t *b1 = NULL, *b2 = NULL;
  size_t n1 = 0, n2 = 0;
  npu_prog *q = NULL;
  CHECK(!npu_encode(p, &b1, &n1));
  CHECK(b1 && !npu_decode(b1, n1, "kdig", &q));
  CHECK(q && !npu_encode(q, &b2, &n2));
  CHECK(n1 == n2 && b2 && !memcmp(b1, b2, n1));
  CHECK(q && q->insns[2].u.gemm.krad[0] == S && q->insns[3].u.gemm.k0 == 8 && q->insns[3].u.gemm.kb[0] == S * N);
  free(b1);
  free(b2);
  npu_prog_free(q);
  cov_tensor x = {0}, w = {0}, y = {0};
  CHECK(!cov_tensor_alloc(&x, COV_F32, 2, (int64_t[]){C, X}));
  CHECK(!cov_tensor_alloc(&w, COV_F32, 2, (int64_t[]){KT, N}));
  float *fx = x.data, *fw = w.data;
  for (int i = 0; i < C * X; i++) fx[i] = rnd();
  for (int i = 0; i < KT * N; i++) fw[i] = rnd();
  cov_npu_sim *sim = NULL;
  cov_npu_stats *stats = run(g, p, &sim, (const char *[]){"x", "w"}, (cov_tensor[]){x, w}, 2);
  CHECK(!cov_npu_sim_read(sim, "y", &y));
  int bad = 0;
  for (int m = 0; m < M && y.data; m++)
    for (int n = 0; n < N; n++) {
      float acc = 0; /* the simulator's order: fold by fold, k in order, f32 */
      for (int k0 = 0; k0 < KT; k0 += 8) {
        float part = acc;
        for (int j = k0; j < KT && j < k0 + 8; j++) part += fx[(j / S) * X + m + j % S] * fw[j * N + n];
        acc = part;
      }
      if (((float *)y.data)[m * N + n] != acc) bad++;
    }
  CHECK(bad == 0);
  /* a zero radix is refused by the verifier, naming the field */
  p->insns[2].u.gemm.krad[1] = 0;
  cov_status vs = cov_npu_program_verify(p, g);
  CHECK(vs && strstr(cov_status_message(vs), "krad"));
  cov_status_free(vs);
  cov_tensor_release(&x);
  cov_tensor_release(&w);
  cov_tensor_release(&y);
  cov_npu_stats_free(stats);
  cov_npu_sim_free(sim);
  npu_prog_free(p);
  cov_acg_free(g);
}

static void test_mdig(void) {
  conv_case t;
  if (!conv_case_open(&t, "convnet_layer2")) {
    conv_case_close(&t);
    return;
  }
  cov_npu_program *p = t.p;
  uint32_t mdig = 0, gemms = 0;
  for (uint32_t i = 0; i < p->n_insns; i++)
    if (p->insns[i].op == NPU_OP_GEMM) {
      gemms++;
      mdig += (p->insns[i].flags & NPU_GEMM_MDIG) && p->insns[i].u.gemm.m == 121;
    }
  CHECK(gemms > 0 && mdig == gemms);
  enum { C = 10, H = 15, KO = 10, R = 5, OH = 11 };
  conv_case_run(&t, C, H, H, KO, R);
  const float *fx = t.x.data, *fw = t.w.data, *fb = t.b.data;
  cov_tensor y = t.y;
  cov_npu_stats *st = t.st;
  double worst = 0, top = 0;
  for (int k = 0; k < KO && y.data; k++)
    for (int oy = 0; oy < OH; oy++)
      for (int ox = 0; ox < OH; ox++) {
        double acc = fb[k];
        for (int c = 0; c < C; c++)
          for (int r = 0; r < R; r++)
            for (int q = 0; q < R; q++)
              acc += (double)fx[(c * H + oy + r) * H + ox + q] * fw[((k * C + c) * R + r) * R + q];
        acc = acc > 0 ? acc : 0;
        worst = fmax(worst, fabs(((float *)y.data)[(k * OH + oy) * OH + ox] - acc));
        top = fmax(top, fabs(acc));
      }
  printf("m digits: convnet_layer2 on npu-16x16, %u of %u gemms stream m = 121, %llu cycles, max err "
         "%.3g of %.3g\n", mdig, gemms, (unsigned long long)(st ? cov_npu_stats_cycles(st) : 0), worst, top);
  CHECK(y.data && worst <= 1e-5 * top);
  conv_case_close(&t);
}

int main(int argc, char **argv) {
  g_src = argc > 1 ? argv[1] : ".";
  test_stem();
  test_mdig();
  test_hand_built();
  return check_summary();
}
