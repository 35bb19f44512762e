/* tests/npu-sim/test_units.c: gemm on units other than a systolic array
 * (acg_mac_form_of, ISA.md "Units that run gemm"): a vector DSP's SIMD
 * unit (dsp-hvx) and a matrix engine (npu-matrix) against naive loops and
 * against the timing rule written out here (issues at the capability's
 * throughput, operand bytes over their edges); the forms each kind gets;
 * the flags only an array has, refused. */
#include <math.h>
#include <string.h>

#include "tests/npu-sim/npu_test.h"

static int mac_cap(const cov_acg *g, int unit, cov_dtype in) {
  for (int k = 0; k < g->compute[unit].n_caps; k++)
    if (g->compute[unit].caps[k].op == COV_OP_MAC && g->compute[unit].caps[k].in[0] == in) return k;
  CHECK(0);
  return -1;
}

/* One gemm C (+)= A x B on `unit`, its operands written to the buffers by
 * DMA; checked against a naive loop (f16 products are exact in f32 and
 * both sum k in order) and its busy cycles returned. */
static uint64_t one_gemm(const cov_acg *g, const char *unit_name, const char *abuf, const char *bbuf,
                         const char *cbuf, uint32_t M, uint32_t K, uint32_t N, bool acc) {
  npu_target t;
  cov_status st = npu_target_init(g, &t);
  CHECK(!st);
  cov_status_free(st);
  npu_prog *p = new_prog(&t);
  uint64_t ax = add_tensor(p, "x", COV_F16, NPU_ROLE_INPUT, 2, (uint32_t[]){M, K});
  uint64_t aw = add_tensor(p, "w", COV_F16, NPU_ROLE_WEIGHT, 2, (uint32_t[]){K, N});
  uint64_t ay = add_tensor(p, "y", COV_F32, NPU_ROLE_OUTPUT, 2, (uint32_t[]){M, N});
  int dram = node(g, "dram"), na = node(g, abuf), nb = node(g, bbuf), nc = node(g, cbuf);
  int ea = npu_find_edge(g, dram, na), eb = npu_find_edge(g, dram, nb);
  int unit = compute(g, unit_name);
  uint32_t boff = na == nb ? 65536 : 0;
  add(p, dma2(ea, false, COV_F16, ax, M, K, 0, 0, M, K, 0, K, 1));
  add(p, dma2(eb, false, COV_F16, aw, K, N, 0, 0, K, N, boff, N, 1));
  npu_insn gm = {.op = NPU_OP_GEMM, .unit = (uint8_t)unit};
  gm.u.gemm.cap = (uint8_t)mac_cap(g, unit, COV_F16);
  gm.u.gemm.m = M;
  gm.u.gemm.k = (uint16_t)K;
  gm.u.gemm.n = (uint16_t)N;
  gm.u.gemm.a = (npu_mem){(uint8_t)na, 0, 0, (int32_t)K, 1};
  gm.u.gemm.b = (npu_mem){(uint8_t)nb, 0, boff, (int32_t)N, 1};
  gm.u.gemm.c = (npu_mem){(uint8_t)nc, 0, 131072, (int32_t)N, 1};
  add(p, gm); /* C = A x B */
  if (acc) {
    gm.flags = NPU_GEMM_ACC;
    add(p, gm); /* C += A x B */
  }
  /* the result reaches DRAM the way the code generator moves it: a copy
   * on the SIMD unit where c is not in a buffer with a DMA edge */
  int ec = npu_find_edge(g, nc, dram), out = nc;
  uint32_t ooff = 131072;
  if (ec < 0) {
    int ub = node(g, "ub");
    npu_insn v = unit_vop(g, "vec", COV_OP_COPY, COV_F32, M, N, (npu_mem){(uint8_t)ub, 0, 0, (int32_t)N, 1},
                          (npu_mem){(uint8_t)nc, 0, 131072, (int32_t)N, 1});
    v.u.vop.src2 = (npu_mem){0xFF, 0, 0, 0, 0};
    add(p, v);
    out = ub;
    ooff = 0;
    ec = npu_find_edge(g, ub, dram);
  }
  (void)out;
  add(p, dma2(ec, true, COV_F32, ay, M, N, 0, 0, M, N, ooff, N, 1));
  cov_status vs = cov_npu_program_verify(p, g);
  if (vs) cov_status_print(stderr, vs, 1);
  CHECK(vs == NULL);
  cov_status_free(vs);
  cov_tensor x = {0}, w = {0};
  CHECK(!cov_tensor_alloc(&x, COV_F32, 2, (int64_t[]){M, K}));
  CHECK(!cov_tensor_alloc(&w, COV_F32, 2, (int64_t[]){K, N}));
  float *fx = x.data, *fw = w.data;
  for (uint32_t i = 0; i < M * K; i++) fx[i] = rnd();
  for (uint32_t i = 0; i < K * N; i++) fw[i] = rnd();
  cov_npu_sim *sim = NULL;
  cov_npu_stats *s = run(g, p, &sim, (const char *[]){"x", "w"}, (cov_tensor[]){x, w}, 2);
  cov_tensor y = {0};
  CHECK(!cov_npu_sim_read(sim, "y", &y));
  int bad = 0;
  for (uint32_t m = 0; m < M && y.data; m++)
    for (uint32_t n = 0; n < N; n++) {
      float a1 = 0;
      for (uint32_t k = 0; k < K; k++) a1 += fx[m * K + k] * fw[k * N + n];
      float want = a1;
      if (acc)
        for (uint32_t k = 0; k < K; k++) want += fx[m * K + k] * fw[k * N + n];
      if (((float *)y.data)[m * N + n] != want) bad++;
    }
  CHECK(bad == 0);
  CHECK(cov_npu_stats_macs(s) == (uint64_t)M * K * N * (acc ? 2 : 1));
  uint64_t busy = s ? s->unit[g->n_edges + unit].busy : 0;
  cov_tensor_release(&x);
  cov_tensor_release(&w);
  cov_tensor_release(&y);
  cov_npu_stats_free(s);
  cov_npu_sim_free(sim);
  npu_prog_free(p);
  return busy;
}

static uint64_t cdivu(uint64_t a, uint64_t b) { return (a + b - 1) / b; }

static void test_vector_dsp(void) {
  cov_acg *g = load_target("dsp-hvx");
  /* vector MACs: one element of A times 64 lanes of B per issue, 64 MACs
   * per cycle: 5 x 37 x ceil(60 / 64) = 185 issues, 185 cycles; its bytes
   * over the VTCM port (256 B/cycle: A 370, B 22,200, C 1,200) take 93 */
  CHECK(one_gemm(g, "hvx", "vtcm", "vtcm", "vtcm", 5, 37, 60, false) == 185);
  /* the same again accumulating: the second reads C too (1,200 B more) */
  CHECK(one_gemm(g, "hvx", "vtcm", "vtcm", "vtcm", 5, 37, 60, true) == 370);
  /* bytes-bound: k = 1, B's one vector moves once per row of A */
  uint64_t b2 = one_gemm(g, "hvx", "vtcm", "vtcm", "vtcm", 64, 1, 64, false);
  uint64_t want = 64; /* issues */
  uint64_t bytes = 64 * 1 * 2 + 1 * 64 * 2 * 64 + 64 * 64 * 4;
  if (cdivu(bytes, 256) > want) want = cdivu(bytes, 256);
  CHECK(b2 == want);
  acg_mac_form f;
  int hvx = compute(g, "hvx");
  CHECK(acg_mac_form_of(g, hvx, mac_cap(g, hvx, COV_F16), &f, NULL, 0));
  CHECK(f.kind == ACG_MAC_TILES && f.tm == 1 && f.tn == 64 && f.tk == 1);
  CHECK(acg_mac_form_of(g, hvx, mac_cap(g, hvx, COV_I8), &f, NULL, 0));
  CHECK(f.tm == 1 && f.tn == 32 && f.tk == 4); /* the dot-product form */
  cov_acg_free(g);
}

static void test_matrix_engine(void) {
  cov_acg *g = load_target("npu-matrix");
  /* 16 x 16 x 16 tiles at 4,096 MACs/cycle: one tile per cycle. 20 x 40 x
   * 16: 2 x 3 x 1 = 6 issues; A 1,600 B and B 2,560 B over 512 B/cycle
   * each (4, 5 cycles), C 1,280 B over 1,024 (2): 6 cycles */
  CHECK(one_gemm(g, "cube", "l0a", "l0b", "l0c", 20, 40, 16, false) == 6);
  /* one tile: 1 cycle of compute, C's 1,024 B written over its 1,024
   * B/cycle edge: 1; accumulating, C read and written over the same
   * (bidirectional) edge: 2 for the second gemm */
  CHECK(one_gemm(g, "cube", "l0a", "l0b", "l0c", 16, 16, 16, false) == 1);
  CHECK(one_gemm(g, "cube", "l0a", "l0b", "l0c", 16, 16, 16, true) == 3);
  int cube = compute(g, "cube");
  acg_mac_form f;
  CHECK(acg_mac_form_of(g, cube, mac_cap(g, cube, COV_F16), &f, NULL, 0));
  CHECK(f.kind == ACG_MAC_TILES && f.tm == 16 && f.tn == 16 && f.tk == 16);
  /* the flags of a systolic array are refused on the matrix unit */
  npu_target t;
  CHECK(!npu_target_init(g, &t));
  npu_prog *p = new_prog(&t);
  npu_insn gm = {.op = NPU_OP_GEMM, .unit = (uint8_t)cube, .flags = NPU_GEMM_WKEEP};
  gm.u.gemm.cap = (uint8_t)mac_cap(g, cube, COV_F16);
  gm.u.gemm.m = gm.u.gemm.k = gm.u.gemm.n = 16;
  gm.u.gemm.a = (npu_mem){(uint8_t)node(g, "l0a"), 0, 0, 16, 1};
  gm.u.gemm.b = (npu_mem){(uint8_t)node(g, "l0b"), 0, 0, 16, 1};
  gm.u.gemm.c = (npu_mem){(uint8_t)node(g, "l0c"), 0, 0, 16, 1};
  add(p, gm);
  cov_status v = cov_npu_program_verify(p, g);
  CHECK(v && strstr(cov_status_message(v), "hold/chain/wkeep/bias are a systolic array's"));
  cov_status_free(v);
  npu_prog_free(p);
  cov_acg_free(g);
}

/* The forms' refusals: a matrix mac without an [M, N, K] tile, dtypes the
 * instruction set does not multiply. */
static void test_forms(void) {
  cov_acg *g = load_target("npu-matrix");
  int cube = compute(g, "cube");
  acg_capability *c = &g->compute[cube].caps[mac_cap(g, cube, COV_F16)];
  char why[200];
  acg_mac_form f;
  c->tile_rank = 2;
  CHECK(!acg_mac_form_of(g, cube, mac_cap(g, cube, COV_F16), &f, why, sizeof why));
  CHECK(strstr(why, "needs a tile [M, N, K]") != NULL);
  c->tile_rank = 3;
  c->out = COV_F16;
  CHECK(!acg_mac_form_of(g, cube, mac_cap(g, cube, COV_F16), &f, why, sizeof why));
  CHECK(strstr(why, "is not one the instruction set multiplies") != NULL);
  cov_acg_free(g);
}

int main(int argc, char **argv) {
  g_src = argc > 1 ? argv[1] : ".";
  test_vector_dsp();
  test_matrix_engine();
  test_forms();
  return check_summary();
}
