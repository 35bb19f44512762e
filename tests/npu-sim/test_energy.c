/* tests/npu-sim/test_energy.c: the simulator's energy against a hand count.
 *
 * y = relu(x @ w + b) on npu-16x16 (M 40, K 48, N 32: two column tiles of
 * three 16-deep gemms each, bias preloaded, relu from obuf into vmem, stored
 * from vmem). The bytes every instruction moves follow from the program
 * alone (below, written out per instruction), and the energies from
 * targets/npu-16x16.json: the expected pJ is computed here without the
 * simulator's counters, then compared with cov_npu_stats_energy, per node
 * and in total. An ACG without energies reports none. */
#include <math.h>
#include <string.h>

#include "tests/npu-sim/npu_test.h"

enum { M = 40, K = 48, N = 32, T = 16 };

static npu_prog *relu_gemm(const cov_acg *g, const npu_target *t) {
  npu_prog *p = new_prog(t);
  uint64_t ax = add_tensor(p, "x", COV_F16, NPU_ROLE_INPUT, 2, (uint32_t[]){M, K});
  uint64_t aw = add_tensor(p, "w", COV_F16, NPU_ROLE_WEIGHT, 2, (uint32_t[]){K, N});
  uint64_t ab = add_tensor(p, "b", COV_F32, NPU_ROLE_WEIGHT, 1, (uint32_t[]){N});
  uint64_t ay = add_tensor(p, "y", COV_F32, NPU_ROLE_OUTPUT, 2, (uint32_t[]){M, N});
  int ibuf = node(g, "ibuf"), wbuf = node(g, "wbuf"), obuf = node(g, "obuf"), bbuf = node(g, "bbuf"),
      vmem = node(g, "vmem");
  int mac = cap_of(g, "pe_array", COV_OP_MAC, COV_F16), relu = cap_of(g, "simd", COV_OP_RELU, COV_F32);
  for (uint32_t n0 = 0; n0 < N; n0 += T) {
    add(p, dma2(edge(g, "dram", "bbuf"), false, COV_F32, ab, 1, N, 0, (int32_t)n0, 1, T, 0, T, 1));
    for (uint32_t k0 = 0; k0 < K; k0 += T) {
      uint32_t half = (k0 / T) % 2 * 16384;
      add(p, dma2(edge(g, "dram", "wbuf"), false, COV_F16, aw, K, N, (int32_t)k0, (int32_t)n0, T, T, half, T, 1));
      add(p, dma2(edge(g, "dram", "ibuf"), false, COV_F16, ax, M, K, 0, (int32_t)k0, M, T, half, T, 1));
      npu_insn gm = {.op = NPU_OP_GEMM, .unit = (uint8_t)compute(g, "pe_array"),
                     .flags = k0 == 0 ? NPU_GEMM_BIAS : NPU_GEMM_ACC};
      gm.u.gemm.cap = (uint8_t)mac;
      gm.u.gemm.m = M;
      gm.u.gemm.k = T;
      gm.u.gemm.n = T;
      gm.u.gemm.a = (npu_mem){(uint8_t)ibuf, 0, half, T, 1};
      gm.u.gemm.b = (npu_mem){(uint8_t)wbuf, 0, half, T, 1};
      gm.u.gemm.c = (npu_mem){(uint8_t)obuf, 0, 0, T, 1};
      gm.u.gemm.bias = (npu_mem){(uint8_t)bbuf, 0, 0, 0, 1};
      add(p, gm);
    }
    npu_insn v = vop(compute(g, "simd"), relu, COV_OP_RELU, COV_F32, M, T,
                     (npu_mem){(uint8_t)vmem, 0, 0, T, 1}, (npu_mem){(uint8_t)obuf, 0, 0, T, 1});
    add(p, v);
    add(p, dma2(edge(g, "dram", "vmem"), true, COV_F32, ay, M, N, 0, (int32_t)n0, M, T, 0, T, 1));
  }
  return p;
}

static double near(double a, double b) { return fabs(a - b) <= 1e-9 * fmax(1, fabs(b)); }

/* The hand count: per instruction, bytes and ops (2 column tiles x 3 gemms). */
static void expected(const cov_acg *g, double *total, double *arr, double *obuf_pj, double *dram_pj) {
  const double tiles = N / T, gemms = tiles * (K / T);
  double macs = (double)M * K * N, relu_elems = tiles * M * T;
  double x_bytes = tiles * M * K * 2, w_bytes = K * N * 2.0, b_bytes = N * 4.0, y_bytes = M * N * 4.0;
  /* obuf: every gemm writes its 40 x 16 f32 sums; the 2 later ones of each
   * tile read them back (ACC); relu reads each tile once */
  double obuf_w = gemms * M * T * 4, obuf_r = (gemms - tiles) * M * T * 4 + tiles * M * T * 4;
  double ibuf_rw = x_bytes, wbuf_rw = w_bytes, bbuf_w = b_bytes, bbuf_r = tiles * T * 4;
  double vmem_rw = y_bytes;
  const acg_storage *st = g->storage;
#define E(name) (&st[node(g, name)])
  *arr = macs * g->compute[compute(g, "pe_array")].caps[cap_of(g, "pe_array", COV_OP_MAC, COV_F16)].energy_pj_per_op;
  double simd = relu_elems * g->compute[compute(g, "simd")].caps[cap_of(g, "simd", COV_OP_RELU, COV_F32)].energy_pj_per_op;
  *dram_pj = (x_bytes + w_bytes + b_bytes) * E("dram")->read_pj_per_byte + y_bytes * E("dram")->write_pj_per_byte;
  *obuf_pj = obuf_r * E("obuf")->read_pj_per_byte + obuf_w * E("obuf")->write_pj_per_byte;
  double onchip = ibuf_rw * (E("ibuf")->read_pj_per_byte + E("ibuf")->write_pj_per_byte) +
                  wbuf_rw * (E("wbuf")->read_pj_per_byte + E("wbuf")->write_pj_per_byte) +
                  bbuf_w * E("bbuf")->write_pj_per_byte + bbuf_r * E("bbuf")->read_pj_per_byte +
                  vmem_rw * (E("vmem")->read_pj_per_byte + E("vmem")->write_pj_per_byte);
#undef E
  /* edges with an energy: the four DMA paths to and from DRAM */
  double edges = x_bytes * g->edges[edge(g, "dram", "ibuf")].pj_per_byte +
                 w_bytes * g->edges[edge(g, "dram", "wbuf")].pj_per_byte +
                 b_bytes * g->edges[edge(g, "dram", "bbuf")].pj_per_byte +
                 y_bytes * g->edges[edge(g, "dram", "vmem")].pj_per_byte;
  *total = *arr + simd + *dram_pj + *obuf_pj + onchip + edges;
}

static void test_energy_hand_count(void) {
  cov_acg *g = load_target("npu-16x16");
  npu_target t;
  cov_status st = npu_target_init(g, &t);
  CHECK(!st);
  npu_prog *p = relu_gemm(g, &t);
  cov_tensor x = {0}, w = {0}, b = {0};
  CHECK(!cov_tensor_alloc(&x, COV_F32, 2, (int64_t[]){M, K}));
  CHECK(!cov_tensor_alloc(&w, COV_F32, 2, (int64_t[]){K, N}));
  CHECK(!cov_tensor_alloc(&b, COV_F32, 1, (int64_t[]){N}));
  for (int i = 0; i < M * K; i++) ((float *)x.data)[i] = rnd();
  for (int i = 0; i < K * N; i++) ((float *)w.data)[i] = rnd();
  cov_npu_sim *sim = NULL;
  cov_npu_stats *s = run(g, p, &sim, (const char *[]){"x", "w", "b"}, (cov_tensor[]){x, w, b}, 3);
  double total, arr, obuf, dram;
  expected(g, &total, &arr, &obuf, &dram);
  cov_npu_energy en = cov_npu_stats_energy(s);
  printf("energy: simulated %.1f pJ, hand count %.1f pJ\n", en.total_pj, total);
  CHECK(en.known);
  CHECK(near(en.total_pj, total));
  CHECK(near(en.compute_pj + en.storage_pj + en.edge_pj, en.total_pj));
  CHECK(near(cov_npu_stats_node_energy_pj(s, "pe_array"), arr));
  CHECK(near(cov_npu_stats_node_energy_pj(s, "obuf"), obuf));
  CHECK(near(cov_npu_stats_node_energy_pj(s, "dram"), dram));
  CHECK(cov_npu_stats_node_energy_pj(s, "no_such_node") < 0);
  cov_npu_stats_free(s);
  cov_npu_sim_free(sim);

  /* the same program on the same ACG with every energy removed */
  cov_acg *g0 = load_target("npu-16x16");
  for (int i = 0; i < g0->n_storage; i++) g0->storage[i].has_energy = false;
  for (int i = 0; i < g0->n_edges; i++) g0->edges[i].pj_per_byte = 0;
  for (int c = 0; c < g0->n_compute; c++)
    for (int k = 0; k < g0->compute[c].n_caps; k++) g0->compute[c].caps[k].energy_pj_per_op = 0;
  s = run(g0, p, &sim, (const char *[]){"x", "w", "b"}, (cov_tensor[]){x, w, b}, 3);
  en = cov_npu_stats_energy(s);
  CHECK(!en.known && en.total_pj == 0);
  cov_npu_stats_free(s);
  cov_npu_sim_free(sim);
  cov_tensor_release(&x);
  cov_tensor_release(&w);
  cov_tensor_release(&b);
  npu_prog_free(p);
  cov_acg_free(g0);
  cov_acg_free(g);
}

int main(int argc, char **argv) {
  g_src = argc > 1 ? argv[1] : ".";
  test_energy_hand_count();
  return check_summary();
}
