/* explore/explore_simulate.c: the evaluators of the backends' layer
 * simulators (backend_info.simulator, reached through the backend registry:
 * a derived design has no target name to open, so the registry's row is
 * found by the design's backend.name). A simulator maps the layer with the
 * mapper, generates the backend's code for its best schedule and simulates
 * it: the most faithful figures covenant has, and the slowest. Suite
 * layers only, like the mapper it builds on. */
#include <math.h>

#include "acg/acg_ir.h"
#include "backends/registry/backend_registry.h"
#include "covenant/mapper.h"
#include "explore/explore.h"

static cov_status simulate_eval(const explore_evaluator *ev, const cov_acg *g, const explore_layer *l,
                                const explore_eval_ctx *ctx, explore_result *r) {
  (void)ctx;
  if (!l->suite_file)
    return cov_error(COV_UNSUPPORTED, EXPLORE_AT(.path = l->name),
                     "the %s evaluator takes suite layers only (ONNX layer groups: not yet)", ev->name);
  const backend_info *b = backend_find(cov_acg_backend(g));
  if (!b || b->simulator != ev->simulator)
    return cov_error(COV_UNSUPPORTED, EXPLORE_AT(.file = cov_acg_file(g), .path = "$.backend.name"),
                     "design %s has backend '%s', which the %s evaluator does not simulate", cov_acg_name(g),
                     cov_acg_backend(g) ? cov_acg_backend(g) : "(none)", ev->name);
  cov_layer *layer = NULL;
  cov_status st = cov_layer_from_suite(l->suite_file, l->suite_name, 1, &layer);
  backend_layer_figures f = {.bytes = r->bytes, .n_bytes = EXPLORE_MAX_STORAGE};
  if (!st) st = ev->simulator->simulate_layer(g, layer, &f);
  if (!st) r->cycles = f.cycles, r->utilisation = f.utilisation, r->energy_pj = f.energy_pj;
  cov_layer_free(layer);
  return st ? cov_status_annotate(st, "simulating %s: ", l->name) : NULL;
}

int explore_simulators(explore_evaluator *out, int max) {
  int n = 0;
  for (int i = 0; i < backend_count() && n < max; i++) {
    const backend_simulator *sim = backend_at(i)->simulator;
    if (!sim) continue;
    out[n++] = (explore_evaluator){
        .name = sim->name, .about = sim->about, .eval = simulate_eval, .suite_only = 1, .simulator = sim};
  }
  return n;
}
