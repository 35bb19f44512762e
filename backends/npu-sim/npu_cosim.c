/* backends/npu-sim/npu_cosim.c: several models' programs run at once on
 * disjoint cores of one NPU, sharing its DRAM interface (README
 * "Co-scheduled models").
 *
 * Each tenant is one model's recorded run (npu_tape: its programs in
 * order, each with the DRAM image it started on), compiled for an NPU of
 * the tenant's cores. A tenant runs its programs back to back, as a model
 * run does, each starting when the previous one's last result is ready;
 * the tenants run side by side: of every program in flight, the one whose
 * next instruction issues earliest steps next, and all of them reserve
 * DRAM's one interface (npu_dram_if), so a tenant's transfers take the
 * gaps the others leave. Each tenant has its own memories (its own
 * region of DRAM: no tenant reads another's bytes); after each program,
 * its DRAM image must be the one the run alone left (the digest the tape
 * recorded), so the concurrent run computed exactly what was checked. */
#include <stdlib.h>
#include <string.h>

#include "backends/npu-sim/npu_internal.h"
#include "common/loc.h"

typedef struct tenant {
  const npu_tape *tape;
  const cov_acg *acg;
  size_t next;         /* its next program */
  cov_npu_sim *sim;    /* the program in flight's, or NULL */
  cov_npu_stats *st;
  npu_run *run;
  uint64_t end;        /* when its latest program ended */
} tenant;

static void tenant_release(tenant *t) {
  npu_run_free(t->run);
  cov_npu_stats_free(t->st);
  cov_npu_sim_free(t->sim);
  t->run = NULL, t->st = NULL, t->sim = NULL;
}

/* Starts tenant t's next program at its previous program's end. */
static cov_status tenant_start(tenant *t, npu_dram_if *d) {
  const npu_tape_entry *e = &t->tape->e[t->next];
  COV_RETURN_IF_ERROR(cov_npu_sim_create(t->acg, &t->sim));
  COV_RETURN_IF_ERROR(cov_npu_sim_load(t->sim, e->prog));
  memcpy(t->sim->dram, e->dram, (size_t)e->prog->dram_bytes);
  COV_RETURN_IF_ERROR(npu_stats_create(t->acg, &t->st));
  npu_exec_opts o = {.max_dyn = t->sim->max_dyn, .start = t->end};
  return npu_run_begin(t->sim, &o, t->st, d, &t->run);
}

/* Tenant t's program has ended: its end, its image against the tape's. */
static cov_status tenant_finish(tenant *t) {
  npu_run *r = t->run;
  t->run = NULL;
  COV_RETURN_IF_ERROR(npu_run_finish(r, &t->end));
  const npu_tape_entry *e = &t->tape->e[t->next];
  if (npu_fnv1a(t->sim->dram, t->sim->dram_bytes) != e->digest)
    return cov_error(COV_INTERNAL, COV_AT(NULL, t->acg->name),
                     "program %zu of a co-scheduled model left other DRAM contents than it did alone", t->next);
  t->next++;
  tenant_release(t);
  return NULL;
}

/* The tenant whose program in flight issues next (starting programs that
 * are due), or NULL when every tenant has run all its programs. */
static cov_status pick(tenant *ts, size_t n, npu_dram_if *d, tenant **out) {
  *out = NULL;
  uint64_t best = UINT64_MAX;
  for (size_t i = 0; i < n; i++) {
    tenant *t = &ts[i];
    for (;;) {
      if (!t->run) {
        if (t->next == t->tape->n) break;
        COV_RETURN_IF_ERROR(tenant_start(t, d));
      }
      uint64_t at = npu_run_next(t->run);
      if (at == UINT64_MAX) {
        COV_RETURN_IF_ERROR(tenant_finish(t));
        continue;
      }
      if (at < best) best = at, *out = t;
      break;
    }
  }
  return NULL;
}

cov_status npu_cosim(const npu_tape *const *tapes, const cov_acg *const *acgs, size_t n, uint64_t *latency) {
  npu_dram_if *d = NULL;
  COV_RETURN_IF_ERROR(npu_dram_if_create(&d));
  tenant *ts = calloc(n ? n : 1, sizeof *ts);
  cov_status st = ts ? NULL : cov_error(COV_OUT_OF_MEMORY, NULL, "co-scheduled models");
  for (size_t i = 0; i < n && !st; i++) ts[i] = (tenant){.tape = tapes[i], .acg = acgs[i]};
  for (tenant *t = NULL; !st;) {
    st = pick(ts, n, d, &t);
    if (st || !t) break;
    st = npu_run_step(t->run);
  }
  for (size_t i = 0; ts && i < n; i++) {
    if (!st) latency[i] = ts[i].end;
    tenant_release(&ts[i]);
  }
  free(ts);
  npu_dram_if_free(d);
  return st;
}
