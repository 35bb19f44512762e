/* explore/explore_mapper.c: the `mapper` evaluator — the cost the mapper's
 * ACG-driven cost model predicts for the best schedule its search finds
 * (include/covenant/mapper.h, mapper/map_cost.c). A prediction, not a
 * measurement: it sees buffer capacities, tiling, transfers, latencies and
 * the fit of a layer to the array, which the roofline does not.
 *
 * Figures come from the schedule's map_cost (cycles, utilisation of the
 * bound compute node, energy) and its transfers: bytes per storage node are
 * the bytes the schedule's transfers move into or out of that node over the
 * whole layer (operands read by the compute unit in place are not
 * transfers). The search is deterministic and budgeted by evaluations, so
 * the same design and layer always give the same schedule. Layers come from
 * the suite by name (cov_layer_from_suite); ONNX layer groups cannot be
 * handed to the mapper yet. */
#include <math.h>

#include "acg/acg_ir.h"
#include "covenant/mapper.h"
#include "explore/explore.h"
#include "mapper/map_ir.h"

static cov_status mapper_eval(const explore_evaluator *self, const cov_acg *g, const explore_layer *l,
                              const explore_eval_ctx *ctx, explore_result *r) {
  (void)self;
  (void)ctx; /* the mapper chooses the multiplicand dtype from the ACG */
  if (!l->suite_file)
    return cov_error(COV_UNSUPPORTED, EXPLORE_AT(.path = l->name),
                     "the mapper evaluator takes suite layers only (ONNX layer groups: not yet)");
  cov_layer *layer = NULL;
  COV_RETURN_IF_ERROR(cov_layer_from_suite(l->suite_file, l->suite_name, 1, &layer));
  cov_schedule *s = NULL;
  cov_status st = cov_map(layer, g, NULL, &s);
  cov_layer_free(layer);
  if (st) return cov_status_annotate(st, "mapping %s: ", l->name);
  const map_schedule *ms = map_schedule_of(s);
  r->cycles = ms->cost.cycles;
  int unit = ms->node - g->n_storage;
  r->utilisation = unit >= 0 && unit < MAP_MAX_COMPUTE ? ms->cost.util[unit] : NAN;
  for (int i = 0; i < g->n_storage && i < EXPLORE_MAX_STORAGE; i++) r->bytes[i] = 0;
  for (int x = 0; x < ms->n_xfers; x++) {
    const map_xfer *xf = &ms->xfers[x];
    double b = (double)xf->bytes * (double)xf->count;
    if (xf->src >= 0 && xf->src < g->n_storage && xf->src < EXPLORE_MAX_STORAGE) r->bytes[xf->src] += b;
    if (xf->dst >= 0 && xf->dst < g->n_storage && xf->dst < EXPLORE_MAX_STORAGE) r->bytes[xf->dst] += b;
  }
  r->energy_pj = ms->cost.has_energy ? ms->cost.energy_pj : NAN;
  cov_schedule_free(s);
  return NULL;
}

const explore_evaluator explore_mapper = {
    .name = "mapper",
    .about = "the mapper's cost model, for the best schedule its search finds (suite layers only)",
    .eval = mapper_eval,
    .suite_only = 1,
};
