/* explore/explore_npusim.c: the `npusim` evaluator — cycles simulated by the
 * ACG-driven NPU simulator (include/covenant/npu.h) running the program the
 * NPU backend generates for the mapper's best schedule. The most faithful
 * evaluator covenant has, and the slowest (seconds per large layer).
 *
 * DRAM starts zeroed (cov_npu_sim_load): the simulator's timing does not
 * depend on values, and zeros keep runs deterministic. Utilisation is the
 * systolic array's (MACs / cycles x peak); bytes per storage node are the
 * simulator's bytes read plus written there; energy is the simulator's
 * (cov_npu_stats_energy: its counts x the ACG's per-op, per-access and
 * per-edge energies), empty where the ACG gives none. Suite layers only,
 * like the mapper it builds on. */
#include <math.h>

#include "acg/acg_ir.h"
#include "covenant/mapper.h"
#include "covenant/npu.h"
#include "explore/explore.h"

static cov_status npusim_eval(const cov_acg *g, const explore_layer *l, const explore_eval_ctx *ctx,
                              explore_result *r) {
  (void)ctx;
  if (!l->suite_file)
    return cov_error(COV_UNSUPPORTED, EXPLORE_AT(.path = l->name),
                     "the npusim evaluator takes suite layers only (ONNX layer groups: not yet)");
  cov_layer *layer = NULL;
  cov_schedule *s = NULL;
  cov_npu_program *prog = NULL;
  cov_npu_sim *sim = NULL;
  cov_npu_stats *stats = NULL;
  cov_status st = cov_layer_from_suite(l->suite_file, l->suite_name, 1, &layer);
  if (!st) st = cov_map(layer, g, NULL, &s);
  if (!st) st = cov_npu_select_by_simulation(s, g, COV_NPU_SELECT_MAX_OPS, NULL);
  if (!st) st = cov_npu_compile(s, &prog);
  if (!st) st = cov_npu_sim_create(g, &sim);
  if (!st) st = cov_npu_sim_load(sim, prog);
  if (!st) st = cov_npu_sim_run(sim, NULL, &stats);
  if (!st) {
    r->cycles = (double)cov_npu_stats_cycles(stats);
    r->utilisation = cov_npu_stats_array_utilization(stats);
    for (int i = 0; i < g->n_storage && i < EXPLORE_MAX_STORAGE; i++)
      r->bytes[i] = (double)cov_npu_stats_storage_bytes(stats, g->storage[i].name);
    cov_npu_energy en = cov_npu_stats_energy(stats);
    r->energy_pj = en.known ? en.total_pj : NAN;
  }
  cov_npu_stats_free(stats);
  cov_npu_sim_free(sim);
  cov_npu_program_free(prog);
  cov_schedule_free(s);
  cov_layer_free(layer);
  return st ? cov_status_annotate(st, "simulating %s: ", l->name) : NULL;
}

const explore_evaluator explore_npusim = {
    .name = "npusim",
    .about = "cycles simulated by the NPU simulator running the program generated for the mapper's best "
             "schedule, and its energy from the ACG's energies (suite layers only)",
    .eval = npusim_eval,
    .suite_only = 1,
};
