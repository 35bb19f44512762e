/* mapper/map_gpu_explain.c: a layer's GEMM view for the GPU search, and the
 * --explain text of its result (mapper/map_gpu.h). */
#include <stdlib.h>
#include <string.h>

#include "acg/acg_ir.h"
#include "mapper/map_gpu.h"
#include "mapper/map_internal.h"

/* Whether some dimension of op's access moves with two or more loops (a
 * convolution's halo, or its group and channel): an implicit GEMM gathers
 * A; a matmul's operands are plain matrices. */
static bool gathered(const map_operand *op, int n_loops) {
  for (int d = 0; d < op->acc.rank; d++) {
    int n = 0;
    for (int l = 0; l < n_loops; l++) n += op->acc.coef[d][l] != 0;
    if (n > 1) return true;
  }
  return false;
}

static cov_status view_of(const map_schedule *s, cov_dtype in, map_gpu_problem *out) {
  const map_problem *p = &s->prob;
  if (p->kind != MAP_MAIN_MAC || p->n_inputs != 2)
    return cov_error(COV_UNSUPPORTED, MAP_LOC(NULL, p->layer),
                     "layer %s: '%s' is not a contraction; the GPU backend runs it as one output per thread "
                     "(no schedule to search)",
                     p->layer, p->codelet);
  const map_operand *a = &p->operands[0], *b = &p->operands[1];
  memset(out, 0, sizeof *out);
  out->in = in;
  out->G = out->M = out->N = out->K = 1;
  out->kind = gathered(a, p->n_loops) ? MAP_GPU_CONV : MAP_GPU_MATMUL;
  for (int l = 0; l < p->n_loops; l++) {
    bool da = map_operand_depends(a, l), db = map_operand_depends(b, l);
    int64_t e = p->extent[l];
    if (p->reduction[l]) out->K *= e;
    else if (da && db) out->G *= e;
    else if (db) out->N *= e;
    else out->M *= e;
    /* the channels a channels-last K tile runs along: the reduction loop
     * on A's channel dimension (NCHW: dimension 1) */
    if (out->kind == MAP_GPU_CONV && p->reduction[l] && a->acc.rank > 1 && a->acc.coef[1][l]) out->conv_c = e;
  }
  out->groups = out->kind == MAP_GPU_CONV ? out->G : 1;
  for (int v = 0; v < s->n_vops; v++)
    if (s->vops[v].kind == MAP_VOP_ROW_REDUCE) out->rows_whole = true;
  return NULL;
}

cov_status map_gpu_problem_of_layer(const cov_layer *layer, const cov_acg *acg, cov_dtype in,
                                    map_gpu_problem *out) {
  (void)acg;
  cov_arena *arena = cov_arena_create();
  map_schedule *s = calloc(1, sizeof *s);
  cov_status st = NULL;
  int first = 1;
  if (!arena || !s) st = cov_error(COV_OUT_OF_MEMORY, NULL, "out of memory");
  if (!st) st = map_extract(layer, s, &first, arena);
  if (!st) st = map_lower_epilogue(layer, first, s, arena);
  if (!st) st = view_of(s, in, out);
  free(s);
  cov_arena_destroy(arena);
  return st;
}

void map_gpu_sched_text(const map_gpu_sched *c, char *buf, size_t size) {
  int n = snprintf(buf, size, "tile %dx%dx%d %s %dx%d %s %dx%dx%d stages %d%s%s", c->bm, c->bn, c->bk,
                   c->warpgroup ? "warpgroup" : "wave", c->wm, c->wn, c->matrix ? "matrix" : "fma", c->fm, c->fn,
                   c->fk, c->stages, c->channels_last ? " channels-last" : "", c->vector_copy ? " 16-byte copies" : "");
  if (c->split > 1 && n >= 0 && (size_t)n < size) snprintf(buf + n, size - (size_t)n, " split-K %d", c->split);
}

cov_status map_gpu_explain(const cov_acg *acg, const char *layer, const map_gpu_problem *p,
                           const map_gpu_result *r, int top, FILE *out) {
  if (r->n < 1) return cov_error(COV_INVALID_ARGUMENT, MAP_LOC(NULL, layer), "GPU search: no candidate to explain");
  const map_gpu_sched *c = &r->c[0];
  double mhz = r->clock_mhz > 0 ? r->clock_mhz : 1;
  char txt[192];
  map_gpu_sched_text(c, txt, sizeof txt);
  fprintf(out, "GPU schedule of %s on %s\n", layer, cov_acg_name(acg));
  fprintf(out, "  GEMM view G=%lld M=%lld N=%lld K=%lld (%s, %s multiplicands, f32 accumulation%s)\n",
          (long long)p->G, (long long)p->M, (long long)p->N, (long long)p->K,
          p->kind == MAP_GPU_CONV ? "convolution as an implicit GEMM" : "matmul", cov_dtype_name(p->in),
          p->rows_whole ? ", whole rows per workgroup" : "");
  fprintf(out, "  chosen: %s\n", txt);
  fprintf(out, "    %d threads per workgroup, %llu B of scratchpad, ~%d registers per thread, %d resident per "
               "core, %lld workgroups\n",
          c->threads, (unsigned long long)c->shared_bytes, c->regs, c->per_core, (long long)c->tiles);
  fprintf(out, "  cost: %.0f cycles (%.3f us at %g MHz) on the busiest core\n", c->cycles, c->cycles / mhz, mhz);
  fprintf(out, "    demand: matrix %.0f, scratchpad->registers %.0f, L2->scratchpad %.0f, copy issue %.0f, "
               "epilogue %.0f; one tile's chain %.0f; DRAM floor %.0f\n",
          c->mma, c->smem, c->copy, c->issue, c->epilogue, c->chain, c->dram);
  fprintf(out, "  search: %lld candidates, %lld fit the ACG\n", (long long)r->enumerated, (long long)r->feasible);
  if (r->n > 1) fprintf(out, "  next best alternatives:\n");
  for (int i = 1; i < r->n && i <= top; i++) {
    map_gpu_sched_text(&r->c[i], txt, sizeof txt);
    fprintf(out, "    %d. %.0f cycles (%+.1f%%): %s\n", i, r->c[i].cycles,
            100.0 * (r->c[i].cycles / c->cycles - 1.0), txt);
  }
  return NULL;
}
