/* tests/npu-sim/test_cosim.c: programs of several tenants run at once on
 * one DRAM interface (npu_cosim.c; README "Co-scheduled models"), on
 * hand-built programs of npu-16x16, against cycles written out from ISA.md
 * "Timing" (the figures of test_cores.c's two-core copy):
 *   - one 8 KiB copy (load at 64 B/cycle, 200 cycles of latency, store)
 *     takes 656 cycles alone; two tenants copying at once take 656 and 784
 *     (the second load's bursts after the first's on the interface), as
 *     two cores of one program do;
 *   - a tenant's programs run back to back: two copies 1,312;
 *   - a job that waits for another tenant's job starts when that one has
 *     ended: 656 + 656;
 *   - a program whose DRAM image after the run differs from the one its run
 *     alone left (a tampered digest) is an error. */
#include <stdlib.h>
#include <string.h>

#include "acg/acg_ir.h"
#include "backends/npu-sim/npu_internal.h"
#include "covenant/npu.h"
#include "tests/check.h"
#include "tests/npu-sim/npu_test.h"

/* x (64 x 64 f16) loaded into vmem and stored to y. */
static npu_prog *copy_prog(const cov_acg *g, const npu_target *t) {
  npu_prog *p = new_prog(t);
  uint64_t x = add_tensor(p, "x", COV_F16, NPU_ROLE_INPUT, 2, (uint32_t[]){64, 64});
  uint64_t y = add_tensor(p, "y", COV_F16, NPU_ROLE_OUTPUT, 2, (uint32_t[]){64, 64});
  int e = npu_find_edge(g, acg_find_node(g, "dram"), acg_find_node(g, "vmem"));
  add(p, dma2(e, false, COV_F16, x, 64, 64, 0, 0, 64, 64, 0, 64, 1));
  add(p, dma2(e, true, COV_F16, y, 64, 64, 0, 0, 64, 64, 0, 64, 1));
  return p;
}

/* The program run alone on random x: its tape entry (the image it
 * started on, the digest of the one it left, its cycles). */
static npu_tape_entry record(const cov_acg *g, npu_prog *p) {
  npu_tape_entry e = {.prog = p};
  cov_tensor x = {0};
  CHECK(!cov_tensor_alloc(&x, COV_F32, 2, (int64_t[]){64, 64}));
  for (int i = 0; i < 64 * 64; i++) ((float *)x.data)[i] = rnd();
  cov_npu_sim *sim = NULL;
  cov_status st = cov_npu_sim_create(g, &sim);
  if (!st) st = cov_npu_sim_load(sim, p);
  if (!st) st = cov_npu_sim_write(sim, "x", &x);
  cov_npu_stats *s = NULL;
  if (!st) {
    e.dram = malloc((size_t)sim->dram_bytes);
    memcpy(e.dram, sim->dram, (size_t)sim->dram_bytes);
    st = cov_npu_sim_run(sim, NULL, &s);
  }
  CHECK(!st);
  cov_status_free(st);
  if (s) {
    e.digest = npu_fnv1a(sim->dram, sim->dram_bytes);
    e.cycles = cov_npu_stats_cycles(s);
  }
  cov_npu_stats_free(s);
  cov_npu_sim_free(sim);
  cov_tensor_release(&x);
  return e;
}

/* Tenants of jobs[t][0..n[t]) on g, job j of tenant t waiting for
 * tenant dep[t][j] >= 0's job djob[t][j]; each tenant's last end into
 * end[t]; the status (freed here) into *failed. */
static void cosim(const cov_acg *g, size_t nt, const npu_tape_entry *e, const size_t *n, const int *dep,
                  const size_t *djob, uint64_t *end, bool *failed) {
  npu_cotenant ts[4];
  npu_cojob jobs[4][4];
  uint64_t done[4][4] = {{0}};
  for (size_t t = 0; t < nt; t++) {
    for (size_t j = 0; j < n[t]; j++)
      jobs[t][j] = (npu_cojob){
          .e = &e[t], .dep_tenant = dep ? dep[t * 4 + j] : -1, .dep_job = djob ? djob[t * 4 + j] : 0};
    ts[t] = (npu_cotenant){.acg = g, .jobs = jobs[t], .n = n[t], .done_at = done[t]};
  }
  cov_status st = npu_cosim_jobs(ts, nt);
  *failed = st != NULL;
  if (st) printf("cosim: refused: %s\n", cov_status_message(st));
  cov_status_free(st);
  for (size_t t = 0; t < nt; t++) end[t] = done[t][n[t] - 1];
}

int main(int argc, char **argv) {
  g_src = argc > 1 ? argv[1] : ".";
  (void)run; /* npu_test.h's; the runs here keep the image they start on */
  cov_acg *g = load_target("npu-16x16");
  npu_target t;
  CHECK(!npu_target_init(g, &t));
  npu_tape_entry e[2] = {record(g, copy_prog(g, &t)), record(g, copy_prog(g, &t))};
  printf("cosim: one 8 KiB copy alone: %llu cycles (want 656)\n", (unsigned long long)e[0].cycles);
  CHECK(e[0].cycles == 656 && e[1].cycles == 656);
  uint64_t end[2];
  bool failed;
  cosim(g, 2, e, (size_t[]){1, 1}, NULL, NULL, end, &failed);
  printf("cosim: two tenants at once: %llu and %llu cycles (want 656 and 784)\n", (unsigned long long)end[0],
         (unsigned long long)end[1]);
  CHECK(!failed && end[0] == 656 && end[1] == 784);
  cosim(g, 1, e, (size_t[]){2}, NULL, NULL, end, &failed);
  printf("cosim: one tenant, two copies: %llu cycles (want 1312)\n", (unsigned long long)end[0]);
  CHECK(!failed && end[0] == 1312);
  int dep[8] = {-1, -1, -1, -1, 0, -1, -1, -1};
  size_t djob[8] = {0};
  cosim(g, 2, e, (size_t[]){1, 1}, dep, djob, end, &failed);
  printf("cosim: tenant 1 after tenant 0: %llu and %llu cycles (want 656 and 1312)\n", (unsigned long long)end[0],
         (unsigned long long)end[1]);
  CHECK(!failed && end[0] == 656 && end[1] == 1312);
  e[1].digest ^= 1;
  cosim(g, 2, e, (size_t[]){1, 1}, NULL, NULL, end, &failed);
  CHECK(failed);
  for (int i = 0; i < 2; i++) {
    npu_prog_free(e[i].prog);
    free(e[i].dram);
  }
  cov_acg_free(g);
  return check_summary();
}
