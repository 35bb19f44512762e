/* backends/npu-sim/npu_model.c: a whole ONNX model on the simulated NPU.
 *
 * Through the frontend's backend hook (cov_model_run_with), every codelet
 * call of a compute node becomes a layer: mapped by the mapper onto the ACG,
 * compiled to an NPU program and run in the simulator. Calls the NPU path
 * cannot take yet (an operation the code generator does not lower, a layer no
 * schedule fits) run on the CPU reference interpreter and are reported as
 * such, with the reason. Layout operations run in the frontend. */
#include <stdlib.h>
#include <string.h>

#include "backends/npu-sim/npu_internal.h"
#include "covenant/mapper.h"
#include "covenant/model.h"

typedef struct npu_row {
  char node[64], codelet[32], where[160];
  int group;
  uint64_t cycles, macs, dram_bytes, onchip_bytes;
  double util_array, util_simd, predicted;
} npu_row;

struct cov_npu_report {
  npu_row *rows;
  int n, cap;
  double clock_mhz;
};

typedef struct hook_ctx {
  const cov_acg *acg;
  cov_npu_report *rep;
} hook_ctx;

static cov_status add_row(cov_npu_report *r, const npu_row *row) {
  if (r->n == r->cap) {
    int cap = r->cap ? 2 * r->cap : 16;
    npu_row *p = realloc(r->rows, (size_t)cap * sizeof *p);
    if (!p) return cov_error(COV_OUT_OF_MEMORY, NULL, "report");
    r->rows = p;
    r->cap = cap;
  }
  r->rows[r->n++] = *row;
  return NULL;
}

/* First line of a status message, for the report's "where" column. */
static void reason(char *buf, size_t n, cov_status st) {
  char msg[512];
  cov_status_format(st, msg, sizeof msg);
  char *nl = strchr(msg, '\n');
  if (nl) *nl = 0;
  size_t k = strlen(msg);
  if (n < 8) return;
  if (k > n - 6) k = n - 6; /* cut to fit: the reason is a summary */
  memcpy(buf, "cpu: ", 5);
  memcpy(buf + 5, msg, k);
  buf[5 + k] = 0;
}

static cov_status npu_hook(void *user, const cov_model_call *call, cov_tensor *out, size_t n_out,
                           int *handled) {
  hook_ctx *h = user;
  *handled = 0;
  npu_row row = {0};
  snprintf(row.node, sizeof row.node, "%s", call->node);
  snprintf(row.codelet, sizeof row.codelet, "%s", call->codelet);
  row.group = call->group;
  int64_t shapes[8][COV_MAX_RANK];
  int ranks[8];
  bool ok = n_out == 1 && call->n_in <= 8;
  for (size_t i = 0; ok && i < call->n_in; i++) {
    ok = call->in[i].dtype == COV_F32;
    ranks[i] = call->in[i].rank;
    for (int d = 0; d < call->in[i].rank; d++) shapes[i][d] = call->in[i].shape[d];
  }
  if (!ok) {
    snprintf(row.where, sizeof row.where, "cpu: not an f32 single-output call");
    return add_row(h->rep, &row);
  }
  cov_layer *layer = NULL;
  cov_schedule *sched = NULL;
  cov_npu_program *prog = NULL;
  cov_npu_sim *sim = NULL;
  cov_npu_stats *stats = NULL;
  cov_status st = cov_layer_from_codelet(call->codelet, call->attrs, call->n_attrs,
                                         (const int64_t(*)[COV_MAX_RANK])shapes, ranks, call->n_in,
                                         &layer);
  if (!st) st = cov_map(layer, h->acg, NULL, &sched);
  if (!st) st = cov_npu_compile(sched, &prog);
  cov_status fatal = NULL;
  if (st) { /* the NPU path does not take this call: the CPU does, reported */
    reason(row.where, sizeof row.where, st);
    cov_status_free(st);
    st = NULL;
    goto done;
  }
  if ((fatal = cov_npu_sim_create(h->acg, &sim))) goto done;
  if ((fatal = cov_npu_sim_load(sim, prog))) goto done;
  for (size_t i = 0; i < call->n_in && !fatal; i++) {
    char nm[32];
    snprintf(nm, sizeof nm, "in%u", (unsigned)i);
    fatal = cov_npu_sim_write(sim, nm, &call->in[i]);
  }
  if (!fatal) fatal = cov_npu_sim_run(sim, NULL, &stats);
  if (!fatal) fatal = cov_npu_sim_read(sim, "out", &out[0]);
  if (fatal) goto done;
  *handled = 1;
  snprintf(row.where, sizeof row.where, "npu");
  row.cycles = cov_npu_stats_cycles(stats);
  row.macs = cov_npu_stats_macs(stats);
  row.util_array = cov_npu_stats_array_utilization(stats);
  row.predicted = cov_schedule_cycles(sched);
  const cov_acg *g = h->acg;
  for (int s = 0; s < g->n_storage; s++) {
    uint64_t b = cov_npu_stats_storage_bytes(stats, g->storage[s].name);
    if (g->storage[s].kind == ACG_DRAM) row.dram_bytes += b;
    else row.onchip_bytes += b;
  }
  for (int c = 0; c < g->n_compute; c++)
    if (g->compute[c].kind == ACG_SIMD) {
      double u = cov_npu_stats_unit_utilization(stats, g->compute[c].name);
      if (u > row.util_simd) row.util_simd = u;
    }
done:
  cov_npu_stats_free(stats);
  cov_npu_sim_free(sim);
  cov_npu_program_free(prog);
  cov_schedule_free(sched);
  cov_layer_free(layer);
  if (fatal) return cov_status_annotate(fatal, "node %s (%s) on the NPU: ", call->node, call->codelet);
  return add_row(h->rep, &row);
}

cov_status cov_npu_run_model(const cov_model *m, const cov_acg *acg, const cov_tensor *inputs,
                             size_t n_inputs, cov_tensor *outputs, size_t n_outputs,
                             cov_npu_report **out_report) {
  *out_report = NULL;
  npu_target t;
  COV_RETURN_IF_ERROR(npu_target_init(acg, &t));
  cov_npu_report *rep = calloc(1, sizeof *rep);
  if (!rep) return cov_error(COV_OUT_OF_MEMORY, NULL, "report");
  rep->clock_mhz = acg->clock_mhz;
  hook_ctx h = {acg, rep};
  cov_status st = cov_model_run_with(m, inputs, n_inputs, outputs, n_outputs, npu_hook, &h);
  if (st) {
    cov_npu_report_free(rep);
    return st;
  }
  *out_report = rep;
  return NULL;
}

void cov_npu_report_free(cov_npu_report *r) {
  if (!r) return;
  free(r->rows);
  free(r);
}

uint64_t cov_npu_report_cycles(const cov_npu_report *r) {
  uint64_t c = 0;
  for (int i = 0; i < r->n; i++) c += r->rows[i].cycles;
  return c;
}

int cov_npu_report_cpu_calls(const cov_npu_report *r) {
  int n = 0;
  for (int i = 0; i < r->n; i++) n += strcmp(r->rows[i].where, "npu") != 0;
  return n;
}

void cov_npu_report_print(const cov_npu_report *r, FILE *out) {
  fprintf(out, "%-5s %-24s %-14s %12s %12s %7s %7s %12s %12s  %s\n", "group", "node", "codelet",
          "cycles", "predicted", "array", "simd", "DRAM B", "on-chip B", "where");
  uint64_t tc = 0, tm = 0, td = 0, to = 0;
  for (int i = 0; i < r->n; i++) {
    const npu_row *w = &r->rows[i];
    bool npu = strcmp(w->where, "npu") == 0;
    if (npu)
      fprintf(out, "%-5d %-24s %-14s %12llu %12.0f %6.1f%% %6.1f%% %12llu %12llu  %s\n", w->group,
              w->node, w->codelet, (unsigned long long)w->cycles, w->predicted,
              100 * w->util_array, 100 * w->util_simd, (unsigned long long)w->dram_bytes,
              (unsigned long long)w->onchip_bytes, w->where);
    else
      fprintf(out, "%-5d %-24s %-14s %12s %12s %7s %7s %12s %12s  %s\n", w->group, w->node,
              w->codelet, "-", "-", "-", "-", "-", "-", w->where);
    tc += w->cycles;
    tm += w->macs;
    td += w->dram_bytes;
    to += w->onchip_bytes;
  }
  fprintf(out, "total: %llu cycles (%.3f us at %.0f MHz), %llu MACs on the array, %llu B DRAM, "
          "%llu B on-chip; %d of %d calls on the CPU\n",
          (unsigned long long)tc, (double)tc / r->clock_mhz, r->clock_mhz, (unsigned long long)tm,
          (unsigned long long)td, (unsigned long long)to, cov_npu_report_cpu_calls(r), r->n);
}
