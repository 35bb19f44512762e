/* backends/registry/backend_npu_simulate.c: the npu-sim row's layer
 * simulator (backend_info.simulator), explore's `npusim` evaluator: cycles
 * simulated by the ACG-driven NPU simulator (include/covenant/npu.h)
 * running the program this backend generates for the mapper's best
 * schedule. The most faithful figures covenant has, and the slowest
 * (seconds per large layer).
 *
 * DRAM starts zeroed (cov_npu_sim_load): the simulator's timing does not
 * depend on values, and zeros keep runs deterministic. Utilisation is the
 * systolic array's (MACs / cycles x peak); bytes per storage node are the
 * simulator's bytes read plus written there; energy is the simulator's
 * (cov_npu_stats_energy: its counts x the ACG's per-op, per-access and
 * per-edge energies), NaN where the ACG gives none. */
#include <math.h>

#include "acg/acg_ir.h"
#include "backends/registry/backend_rows.h"
#include "covenant/npu.h"

static cov_status simulate_layer(const cov_acg *g, const cov_layer *layer, backend_layer_figures *r) {
  cov_schedule *s = NULL;
  cov_npu_program *prog = NULL;
  cov_npu_sim *sim = NULL;
  cov_npu_stats *stats = NULL;
  cov_status st = cov_map(layer, g, NULL, &s);
  if (!st) st = cov_npu_select_by_simulation(s, g, COV_NPU_SELECT_MAX_OPS, NULL);
  if (!st) st = cov_npu_compile(s, &prog);
  if (!st) st = cov_npu_sim_create(g, &sim);
  if (!st) st = cov_npu_sim_load(sim, prog);
  if (!st) st = cov_npu_sim_run(sim, NULL, &stats);
  if (!st) {
    r->cycles = (double)cov_npu_stats_cycles(stats);
    r->utilisation = cov_npu_stats_array_utilization(stats);
    int n = r->n_bytes < g->n_storage ? r->n_bytes : g->n_storage;
    for (int i = 0; i < n; i++) r->bytes[i] = (double)cov_npu_stats_storage_bytes(stats, g->storage[i].name);
    r->n_bytes = n;
    cov_npu_energy en = cov_npu_stats_energy(stats);
    r->energy_pj = en.known ? en.total_pj : NAN;
  }
  cov_npu_stats_free(stats);
  cov_npu_sim_free(sim);
  cov_npu_program_free(prog);
  cov_schedule_free(s);
  return st;
}

const backend_simulator backend_npu_simulator = {
    .name = "npusim",
    .about = "cycles simulated by the NPU simulator running the program generated for the mapper's best "
             "schedule, and its energy from the ACG's energies (suite layers only)",
    .simulate_layer = simulate_layer,
};
