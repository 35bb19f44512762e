/* explore/explore_eval.c: the evaluator registry and design-level figures.
 *
 * An evaluator turns (design ACG, layer) into cycles, utilisation, bytes per
 * storage node and energy. Each CSV row names the evaluator that produced it,
 * so figures of different evaluators are never mixed up. The registry lists
 * what this build has, best first: `npusim` (simulated cycles of the
 * generated program), `mapper` (the mapper's predicted cost of its best
 * schedule), both for suite layers only, and `roofline` (analytical bound,
 * any layer). */
#include <math.h>
#include <string.h>

#include "acg/acg_ir.h"
#include "common/edit_distance.h"
#include "explore/explore.h"

static const explore_evaluator *const k_evaluators[] = {&explore_npusim, &explore_mapper,
                                                        &explore_roofline};
#define N_EVALUATORS (sizeof k_evaluators / sizeof *k_evaluators)

cov_status explore_evaluator_find(const char *name, int has_models, const explore_evaluator **out) {
  *out = NULL;
  for (size_t i = 0; i < N_EVALUATORS; i++) {
    const explore_evaluator *ev = k_evaluators[i];
    if (name ? strcmp(ev->name, name) != 0 : (has_models && ev->suite_only)) continue;
    if (has_models && ev->suite_only)
      return cov_error(COV_UNSUPPORTED, COV_AT_OPTION("--eval", name),
                       "this evaluator takes suite layers only, not --model layer "
                       "groups (use --eval roofline for models)");
    *out = ev;
    return NULL;
  }
  char have[128] = "";
  const char *names[N_EVALUATORS];
  for (size_t i = 0; i < N_EVALUATORS; i++) {
    names[i] = k_evaluators[i]->name;
    strncat(have, i ? ", " : "", sizeof have - strlen(have) - 1);
    strncat(have, k_evaluators[i]->name, sizeof have - strlen(have) - 1);
  }
  const char *near = common_nearest(name, names, N_EVALUATORS);
  if (near)
    return cov_error(COV_INVALID_ARGUMENT, COV_AT_OPTION("--eval", name), "unknown evaluator (did you mean '%s'?)",
                     near);
  return cov_error(COV_INVALID_ARGUMENT, COV_AT_OPTION("--eval", name), "unknown evaluator (available: %s)", have);
}

double explore_area_mm2(const cov_acg *g) {
  double area = 0;
  int any = 0;
  for (int i = 0; i < g->n_storage; i++)
    if (g->storage[i].area_mm2 > 0) area += g->storage[i].area_mm2, any = 1;
  for (int i = 0; i < g->n_compute; i++)
    if (g->compute[i].area_mm2 > 0) area += g->compute[i].area_mm2, any = 1;
  return any ? area : NAN;
}
