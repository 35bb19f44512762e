/* tests/npu-sim/test_cores.c: programs of several cores (ISA.md "Cores")
 * on npu-4core and on npu-16x16 with two cores (every on-chip node and
 * unit at instances 2), hand-built:
 *   - each core has its own buffers: two cores copy different tensors
 *     through the same vmem address and each gets its own back (a naive
 *     comparison), where one shared buffer would mix them;
 *   - the cores share DRAM's interface: two cores loading 8 KiB each at
 *     once take the second load's bursts after the first's (cycles written
 *     out from ISA.md "Timing"), not the one-core figure;
 *   - sync: a core's instructions after a sync start once every core's
 *     earlier ones have finished; cores passing different numbers of syncs
 *     are refused;
 *   - the format: a two-core program encodes as format 2 with its core
 *     table and decodes to the same streams; a one-core program still
 *     encodes as format 1; a core table that does not add up, a bad core
 *     count, a loop crossing into the next core's stream and more cores
 *     than the target has are refused with located messages. */
#include <stdlib.h>
#include <string.h>

#include "acg/acg_ir.h"
#include "backends/npu-sim/npu_internal.h"
#include "covenant/npu.h"
#include "tests/check.h"
#include "tests/npu-sim/npu_test.h"

/* npu-16x16 with n cores: every compute node and on-chip buffer n times. */
static cov_acg *cores_of_16x16(uint32_t n) {
  cov_acg *g = load_target("npu-16x16");
  for (int s = 0; s < g->n_storage; s++)
    if (g->storage[s].kind != ACG_DRAM) g->storage[s].instances = n;
  for (int c = 0; c < g->n_compute; c++) g->compute[c].instances = n;
  return g;
}

/* Core c loads x_c (64 x 64 f16) into vmem at 0 and stores it to y_c,
 * for the cores in [0, n); sync_core >= 0: that core's stream ends with a
 * sync. */
static npu_prog *copy_prog(const cov_acg *g, const npu_target *t, uint32_t n, int sync_core) {
  npu_prog *p = new_prog(t);
  uint64_t x[2], y[2];
  for (uint32_t c = 0; c < n; c++) {
    char nx[8], ny[8];
    snprintf(nx, sizeof nx, "x%u", c);
    snprintf(ny, sizeof ny, "y%u", c);
    x[c] = add_tensor(p, nx, COV_F16, NPU_ROLE_INPUT, 2, (uint32_t[]){64, 64});
    y[c] = add_tensor(p, ny, COV_F16, NPU_ROLE_OUTPUT, 2, (uint32_t[]){64, 64});
  }
  int e = edge(g, "dram", "vmem");
  for (uint32_t c = 0; c < n; c++) {
    p->core_first[c] = p->n_insns;
    add(p, dma2(e, false, COV_F16, x[c], 64, 64, 0, 0, 64, 64, 0, 64, 1));
    add(p, dma2(e, true, COV_F16, y[c], 64, 64, 0, 0, 64, 64, 0, 64, 1));
    if ((int)c == sync_core) add(p, (npu_insn){.op = NPU_OP_SYNC});
  }
  p->core_first[n] = p->n_insns;
  p->n_cores = n;
  return p;
}

static void test_private_buffers_shared_dram(void) {
  cov_acg *g = cores_of_16x16(2);
  npu_target t;
  CHECK(!npu_target_init(g, &t));
  CHECK(t.cores == 2);
  cov_tensor in[2];
  for (int c = 0; c < 2; c++) {
    in[c] = (cov_tensor){0};
    CHECK(!cov_tensor_alloc(&in[c], COV_F32, 2, (int64_t[]){64, 64}));
    for (int i = 0; i < 64 * 64; i++) ((float *)in[c].data)[i] = rnd();
  }
  uint64_t cyc[3];
  for (uint32_t n = 1; n <= 2; n++) {
    npu_prog *p = copy_prog(g, &t, n, -1);
    cov_npu_sim *sim = NULL;
    const char *names[2] = {"x0", "x1"};
    cov_npu_stats *s = run(g, p, &sim, names, in, (int)n);
    cyc[n] = s ? cov_npu_stats_cycles(s) : 0;
    for (uint32_t c = 0; c < n && s; c++) {
      char ny[8];
      snprintf(ny, sizeof ny, "y%u", c);
      cov_tensor out = {0};
      cov_status st = cov_npu_sim_read(sim, ny, &out);
      CHECK(!st);
      cov_status_free(st);
      int bad = 0;
      for (int i = 0; i < 64 * 64 && out.data; i++) {
        float v = out.dtype == COV_F16 ? cov_f16_to_f32(((uint16_t *)out.data)[i]) : ((float *)out.data)[i];
        bad += v != ((float *)in[c].data)[i];
      }
      printf("cores: %u core(s), core %u's copy: %d wrong elements\n", n, c, bad);
      CHECK(out.data && bad == 0);
      cov_tensor_release(&out);
    }
    cov_npu_stats_free(s);
    cov_npu_sim_free(sim);
    npu_prog_free(p);
  }
  /* 8192 B at 64 B/cycle: one core loads [0, 128), its data after the
   * edge's 200 cycles, stores [328, 456), done at 656. Two cores: the
   * second load's bursts follow the first's on the interface, [128, 256);
   * the first store [328, 456), the second [456, 584), done at 784. */
  printf("cores: copies of 8 KiB: one core %llu cycles (want 656), two cores %llu (want 784)\n",
         (unsigned long long)cyc[1], (unsigned long long)cyc[2]);
  CHECK(cyc[1] == 656 && cyc[2] == 784);
  for (int c = 0; c < 2; c++) cov_tensor_release(&in[c]);
  cov_acg_free(g);
}

static void expect_verify_err(const npu_prog *p, const cov_acg *g, const char *want) {
  cov_status st = cov_npu_program_verify(p, g);
  const char *m = st ? cov_status_message(st) : "";
  printf("cores: refused: %s\n", m);
  CHECK(st && strstr(m, want));
  cov_status_free(st);
}

static void test_sync(void) {
  cov_acg *g = cores_of_16x16(2);
  npu_target t;
  CHECK(!npu_target_init(g, &t));
  /* core 1 starts with a sync, core 0 ends with one: core 1's copy waits
   * for core 0's to finish (656), then runs alone: 656 + 656 */
  npu_prog *p = copy_prog(g, &t, 2, 0);
  npu_insn s1 = {.op = NPU_OP_SYNC};
  /* put a sync at the head of core 1's stream */
  npu_prog *q = new_prog(&t);
  for (uint32_t i = 0; i < p->n_tensors; i++) CHECK(!npu_prog_add_tensor(q, &p->tensors[i]));
  q->dram_bytes = p->dram_bytes;
  for (uint32_t i = 0; i < p->core_first[1]; i++) add(q, p->insns[i]);
  q->core_first[1] = q->n_insns;
  add(q, s1);
  for (uint32_t i = p->core_first[1]; i < p->n_insns; i++) add(q, p->insns[i]);
  q->core_first[2] = q->n_insns;
  q->n_cores = 2;
  cov_npu_sim *sim = NULL;
  cov_npu_stats *s = run(g, q, &sim, NULL, NULL, 0);
  uint64_t cyc = s ? cov_npu_stats_cycles(s) : 0;
  printf("cores: copy, sync | sync, copy: %llu cycles (want 1312)\n", (unsigned long long)cyc);
  CHECK(cyc == 1312);
  cov_npu_stats_free(s);
  cov_npu_sim_free(sim);
  /* core 0 passes a sync that core 1 never reaches */
  expect_verify_err(p, g, "core 1 passes 0 sync instructions, core 0 1");
  npu_prog_free(q);
  npu_prog_free(p);
  cov_acg_free(g);
}

static void expect_decode_err(const uint8_t *b, size_t n, const char *want) {
  npu_prog *d = NULL;
  cov_status st = npu_decode(b, n, "t.npu", &d);
  const char *m = st ? cov_status_message(st) : "";
  printf("cores: decode refused: %s\n", m);
  CHECK(st && strstr(m, want));
  cov_status_free(st);
  npu_prog_free(d);
}

static void test_format(void) {
  cov_acg *g = cores_of_16x16(2);
  npu_target t;
  CHECK(!npu_target_init(g, &t));
  npu_prog *p = copy_prog(g, &t, 2, -1);
  uint8_t *b = NULL;
  size_t n = 0;
  CHECK(!npu_encode(p, &b, &n));
  CHECK(b && b[4] == NPU_VERSION_CORES && b[6] == 2);
  npu_prog *d = NULL;
  CHECK(b && !npu_decode(b, n, "t.npu", &d));
  CHECK(d && d->n_cores == 2 && d->core_first[1] == 2 && d->core_first[2] == 4 && d->n_insns == 4);
  npu_prog_free(d);
  /* the core table follows the tensor table: core 0's count at 80 + 4 x 80 */
  size_t ct = NPU_HEADER_BYTES + (size_t)p->n_tensors * NPU_TENSOR_BYTES;
  uint8_t *h = malloc(n);
  memcpy(h, b, n);
  h[ct] = 3; /* 3 + 2 instructions, the header says 4 */
  expect_decode_err(h, n, "core 1 (offset");
  memcpy(h, b, n);
  h[ct] = 1;
  expect_decode_err(h, n, "add up to 3, the header says 4");
  memcpy(h, b, n);
  h[6] = 1;
  expect_decode_err(h, n, "field n_cores (offset 6): 1 cores");
  memcpy(h, b, n);
  h[6] = NPU_MAX_CORES + 1;
  expect_decode_err(h, n, "field n_cores (offset 6)");
  free(h);
  free(b);
  /* one core: format 1, as before */
  npu_prog *one = copy_prog(g, &t, 1, -1);
  one->n_cores = 0;
  CHECK(!npu_encode(one, &b, &n));
  CHECK(b && b[4] == NPU_VERSION && b[6] == 0);
  free(b);
  npu_prog_free(one);
  /* a loop of core 0 whose body runs into core 1's stream */
  npu_insn loop = {.op = NPU_OP_LOOP};
  loop.u.loop.count = 2;
  loop.u.loop.body = 2;
  npu_insn keep = p->insns[1];
  p->insns[1] = loop;
  expect_verify_err(p, g, "only 0 follow in its core's stream");
  p->insns[1] = keep;
  cov_acg_free(g);
  /* two cores on a one-core target */
  cov_acg *g1 = load_target("npu-16x16");
  npu_target t1;
  CHECK(!npu_target_init(g1, &t1));
  npu_prog_set_target(p, &t1);
  expect_verify_err(p, g1, "runs on 2 cores, 'npu-16x16' has 1");
  cov_acg_free(g1);
  npu_prog_free(p);
  /* npu-4core is four cores; a node of another count is refused */
  cov_acg *g4 = load_target("npu-4core");
  npu_target t4;
  CHECK(!npu_target_init(g4, &t4) && t4.cores == 4);
  g4->compute[1].instances = 2;
  cov_status st = npu_target_init(g4, &t4);
  printf("cores: target refused: %s\n", st ? cov_status_message(st) : "");
  CHECK(st && strstr(cov_status_message(st), "give every compute node the same instances"));
  cov_status_free(st);
  cov_acg_free(g4);
}

int main(int argc, char **argv) {
  g_src = argc > 1 ? argv[1] : ".";
  test_private_buffers_shared_dram();
  test_sync();
  test_format();
  return check_summary();
}
