/* explore/explore_eval.c: the evaluator registry and design-level figures.
 *
 * An evaluator turns (design ACG, layer) into cycles, utilisation, bytes per
 * storage node and energy. Each CSV row names the evaluator that produced it,
 * so figures of different evaluators are never mixed up. The registry lists
 * what this build has, best first: the backends' layer simulators
 * (explore_simulate.c: simulated cycles of the generated program), `mapper`
 * (the mapper's predicted cost of its best schedule), both for suite layers
 * only, and `roofline` (analytical bound, any layer). */
#include <math.h>
#include <string.h>

#include "acg/acg_ir.h"
#include "common/edit_distance.h"
#include "explore/explore.h"

enum { MAX_EVALUATORS = 16 };

/* The evaluators this build has, best first: the backends' simulators, then
 * the mapper and the roofline. */
static int evaluators(explore_evaluator *all) {
  int n = explore_simulators(all, MAX_EVALUATORS - 2);
  all[n++] = explore_mapper;
  all[n++] = explore_roofline;
  return n;
}

cov_status explore_evaluator_find(const char *name, int has_models, explore_evaluator *out) {
  *out = (explore_evaluator){0};
  explore_evaluator all[MAX_EVALUATORS];
  int n = evaluators(all);
  for (int i = 0; i < n; i++) {
    const explore_evaluator *ev = &all[i];
    if (name ? strcmp(ev->name, name) != 0 : (has_models && ev->suite_only)) continue;
    if (has_models && ev->suite_only)
      return cov_error(COV_UNSUPPORTED, COV_AT_OPTION("--eval", name),
                       "this evaluator takes suite layers only, not --model layer "
                       "groups (use --eval roofline for models)");
    *out = *ev;
    return NULL;
  }
  char have[128] = "";
  const char *names[MAX_EVALUATORS];
  for (int i = 0; i < n; i++) {
    names[i] = all[i].name;
    strncat(have, i ? ", " : "", sizeof have - strlen(have) - 1);
    strncat(have, all[i].name, sizeof have - strlen(have) - 1);
  }
  const char *near = common_nearest(name, names, (size_t)n);
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
