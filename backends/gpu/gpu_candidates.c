/* backends/gpu/gpu_candidates.c: the mapper's ranked GPU schedules of a
 * suite layer that the lowering takes (covenant gpu candidates,
 * bench/nvptx/rank_*). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backends/gpu/gpu_driver.h"
#include "backends/gpu/gpu_tune.h"

cov_status gpu_spec_candidates(const gpu_target *t, const char *suite, const char *spec, cov_dtype dt, int top,
                               FILE *out) {
  gpu_layer layer;
  char found[4096], base[128];
  if (!suite) {
    COV_RETURN_IF_ERROR(cov_suite_find(found, sizeof found));
    suite = found;
  }
  /* SPEC:f16: the candidates of the layer with f16 outputs (hand-fixed as
   * SPEC:...:wsh) */
  const char *colon = strchr(spec, ':');
  bool f16 = colon && !strcmp(colon, ":f16");
  if (colon && (!f16 || (size_t)(colon - spec) >= sizeof base))
    return cov_error(COV_INVALID_ARGUMENT, GPU_LOC(NULL, spec), "layer '%s': candidates take NAME or NAME:f16", spec);
  if (f16) {
    memcpy(base, spec, (size_t)(colon - spec));
    base[colon - spec] = '\0';
    spec = base;
  }
  COV_RETURN_IF_ERROR(gpu_layer_from_spec(suite, spec, dt, &layer));
  layer.prob.out_f16 = f16;
  if (layer.prob.kind == GPU_OP_MAXPOOL)
    return cov_error(COV_UNSUPPORTED, GPU_LOC(suite, layer.name), "layer %s: a pool has no schedule to search", layer.name);
  gpu_tune_cand *c = malloc(sizeof *c * (size_t)top);
  if (!c) return cov_error(COV_OUT_OF_MEMORY, NULL, "out of memory");
  int n = 0;
  cov_status st = gpu_tune_candidates(t, &layer.prob, top, c, &n);
  for (int i = 0; !st && i < n; i++) {
    const int *v = c[i].sched.s;
    char sched[64];
    gpu_sched_format(&c[i].sched, sched, sizeof sched);
    if (c[i].sched.kind == GPU_SCHED_DW) { /* as gpu_compile_one names SPEC:dwP */
      fprintf(out, "%s %s:%s covenant_%s_%s %d %.0f\n", spec, spec, sched, layer.name, sched, c[i].rank, c[i].cycles);
      continue;
    }
    /* the kernel's name as gpu_compile_layer gives the hand-fixed spec */
    const char *kind = !v[6] ? "" : v[6] == 2 ? "ws0" : v[6] >= 3 ? "ws" : v[7] < 0 ? "wg" : v[7] ? "wg1" : "wg0";
    const char *h = f16 ? "h" : "", *pp = v[6] == 4 ? "p" : "";
    /* (gpu_sched_format writes :wsp; the h flag goes before p in the name) */
    if (v[6] == 4) sched[strlen(sched) - 1] = '\0';
    fprintf(out, "%s%s %s:%s%s%s covenant_%s_t%dx%dx%dw%dx%ds%d%s%s%s %d %.0f\n", spec, f16 ? ":f16" : "", spec, sched,
            h, pp, layer.name, v[0], v[1], v[2], v[3], v[4], v[5], kind, h, pp, c[i].rank, c[i].cycles);
  }
  free(c);
  return st;
}
