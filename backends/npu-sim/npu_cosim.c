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
  const npu_cotenant *d; /* its jobs, where their ends go */
  size_t next;           /* its next job */
  cov_npu_sim *sim;      /* the job in flight's, or NULL */
  cov_npu_stats *st;
  npu_run *run;
  uint64_t end;          /* when its latest job ended */
} tenant;

static void tenant_release(tenant *t) {
  npu_run_free(t->run);
  cov_npu_stats_free(t->st);
  cov_npu_sim_free(t->sim);
  t->run = NULL, t->st = NULL, t->sim = NULL;
}

/* Starts tenant t's next job at `at`. */
static cov_status tenant_start(tenant *t, npu_dram_if *d, uint64_t at) {
  const npu_tape_entry *e = t->d->jobs[t->next].e;
  COV_RETURN_IF_ERROR(cov_npu_sim_create(t->d->acg, &t->sim));
  COV_RETURN_IF_ERROR(cov_npu_sim_load(t->sim, e->prog));
  memcpy(t->sim->dram, e->dram, (size_t)e->prog->dram_bytes);
  COV_RETURN_IF_ERROR(npu_stats_create(t->d->acg, &t->st));
  npu_exec_opts o = {.max_dyn = t->sim->max_dyn, .start = at};
  return npu_run_begin(t->sim, &o, t->st, d, &t->run);
}

/* Tenant t's job has ended: its end, its image against the tape's. */
static cov_status tenant_finish(tenant *t) {
  npu_run *r = t->run;
  t->run = NULL;
  COV_RETURN_IF_ERROR(npu_run_finish(r, &t->end));
  const npu_tape_entry *e = t->d->jobs[t->next].e;
  if (npu_fnv1a(t->sim->dram, t->sim->dram_bytes) != e->digest)
    return cov_error(COV_INTERNAL, COV_AT(NULL, t->d->acg->name),
                     "a program run beside others left other DRAM contents than it did alone (job %zu)", t->next);
  t->d->done_at[t->next++] = t->end;
  tenant_release(t);
  return NULL;
}

/* Whether tenant t's next job may start (the job it waits for has
 * ended), and when: *at. */
static bool job_ready(const tenant *ts, const tenant *t, uint64_t *at) {
  const npu_cojob *j = &t->d->jobs[t->next];
  *at = t->end;
  if (j->dep_tenant < 0) return true;
  const tenant *o = &ts[j->dep_tenant];
  if (o->next <= j->dep_job) return false;
  if (o->d->done_at[j->dep_job] > *at) *at = o->d->done_at[j->dep_job];
  return true;
}

/* The tenant whose job in flight issues next (starting jobs that may),
 * or NULL when every tenant has run all its jobs. */
static cov_status pick(tenant *ts, size_t n, npu_dram_if *d, tenant **out) {
  *out = NULL;
  uint64_t best = UINT64_MAX;
  bool left = false;
  for (size_t i = 0; i < n; i++) {
    tenant *t = &ts[i];
    for (;;) {
      uint64_t at;
      if (!t->run) {
        if (t->next == t->d->n) break;
        left = true;
        if (!job_ready(ts, t, &at)) break;
        COV_RETURN_IF_ERROR(tenant_start(t, d, at));
      }
      at = npu_run_next(t->run);
      if (at == UINT64_MAX) {
        COV_RETURN_IF_ERROR(tenant_finish(t));
        continue;
      }
      if (at < best) best = at, *out = t;
      break;
    }
  }
  if (!*out && left) /* a finish above may have released a waiting job */
    for (size_t i = 0; i < n; i++) {
      uint64_t at;
      if (!ts[i].run && ts[i].next < ts[i].d->n && job_ready(ts, &ts[i], &at)) return pick(ts, n, d, out);
    }
  if (!*out && left)
    return cov_error(COV_INTERNAL, COV_AT(NULL, ts[0].d->acg->name), "co-scheduled jobs wait for each other");
  return NULL;
}

cov_status npu_cosim_jobs(const npu_cotenant *ts_in, size_t n) {
  npu_dram_if *d = NULL;
  COV_RETURN_IF_ERROR(npu_dram_if_create(&d));
  tenant *ts = calloc(n ? n : 1, sizeof *ts);
  cov_status st = ts ? NULL : cov_error(COV_OUT_OF_MEMORY, NULL, "co-scheduled programs");
  for (size_t i = 0; i < n && !st; i++) ts[i] = (tenant){.d = &ts_in[i]};
  for (tenant *t = NULL; !st;) {
    st = pick(ts, n, d, &t);
    if (st || !t) break;
    st = npu_run_step(t->run);
  }
  for (size_t i = 0; ts && i < n; i++) tenant_release(&ts[i]);
  free(ts);
  npu_dram_if_free(d);
  return st;
}

cov_status npu_cosim(const npu_tape *const *tapes, const cov_acg *const *acgs, size_t n, uint64_t *latency) {
  size_t total = 0;
  for (size_t i = 0; i < n; i++) total += tapes[i]->n;
  npu_cotenant *ts = calloc(n ? n : 1, sizeof *ts);
  npu_cojob *jobs = calloc(total ? total : 1, sizeof *jobs);
  uint64_t *done = calloc(total ? total : 1, sizeof *done);
  cov_status st = ts && jobs && done ? NULL : cov_error(COV_OUT_OF_MEMORY, NULL, "co-scheduled programs");
  for (size_t i = 0, k = 0; !st && i < n; k += tapes[i]->n, i++) {
    ts[i] = (npu_cotenant){.acg = acgs[i], .jobs = jobs + k, .n = tapes[i]->n, .done_at = done + k};
    for (size_t j = 0; j < tapes[i]->n; j++) jobs[k + j] = (npu_cojob){.e = &tapes[i]->e[j], .dep_tenant = -1};
  }
  if (!st) st = npu_cosim_jobs(ts, n);
  for (size_t i = 0; !st && i < n; i++) latency[i] = ts[i].n ? ts[i].done_at[ts[i].n - 1] : 0;
  free(ts);
  free(jobs);
  free(done);
  return st;
}
