/* backends/npu-sim/npu_energy.c: a run's energy from the ACG's per-access
 * and per-op energies and the simulator's counts.
 *
 * The accounting (the mapper's estimate, mapper/map_energy.c, follows the
 * same definition with predicted counts):
 *   compute: per compute node and capability, the ops it ran (a gemm's MACs,
 *            a vector op's elements) x the capability's energy_pj_per_op;
 *   storage: per storage node, bytes read x its read pJ/byte + bytes
 *            written x its write pJ/byte (DMA: the DRAM bytes of the
 *            tensor, the on-chip bytes of the tile, padding included; gemm:
 *            A, B unless kept, the partial sums read and written, the bias;
 *            vector ops: their operands and results);
 *   edges:   per edge, the bytes that crossed it x its energy_pj_per_byte
 *            (a DMA's on-chip bytes; a gemm's and a vector op's operands
 *            over the edges from their buffers, results over the edge to
 *            theirs).
 * An energy the ACG does not give counts 0; cov_npu_energy.known is false
 * when it gives none. */
#include <string.h>

#include "backends/npu-sim/npu_internal.h"

cov_status npu_energy_init(npu_energy_counts *e, const cov_acg *g, cov_arena *a) {
  memset(e, 0, sizeof *e);
  e->n_compute = g->n_compute;
  e->cap_base = cov_arena_array(a, (size_t)g->n_compute + 1, sizeof *e->cap_base);
  if (!e->cap_base) return cov_error(COV_OUT_OF_MEMORY, NULL, "energy statistics");
  for (int c = 0; c < g->n_compute; c++) {
    e->cap_base[c] = e->n_caps;
    e->n_caps += g->compute[c].n_caps;
  }
  e->cap_base[g->n_compute] = e->n_caps;
  e->cap_ops = cov_arena_array(a, (size_t)e->n_caps + 1, sizeof *e->cap_ops);
  e->cap_pj = cov_arena_array(a, (size_t)e->n_caps + 1, sizeof *e->cap_pj);
  e->edge_bytes = cov_arena_array(a, (size_t)g->n_edges + 1, sizeof *e->edge_bytes);
  e->edge_pj = cov_arena_array(a, (size_t)g->n_edges + 1, sizeof *e->edge_pj);
  e->read_pj = cov_arena_array(a, (size_t)g->n_storage + 1, sizeof *e->read_pj);
  e->write_pj = cov_arena_array(a, (size_t)g->n_storage + 1, sizeof *e->write_pj);
  if (!e->cap_ops || !e->cap_pj || !e->edge_bytes || !e->edge_pj || !e->read_pj || !e->write_pj)
    return cov_error(COV_OUT_OF_MEMORY, NULL, "energy statistics");
  for (int c = 0; c < g->n_compute; c++)
    for (int k = 0; k < g->compute[c].n_caps; k++) {
      double pj = g->compute[c].caps[k].energy_pj_per_op;
      e->cap_pj[e->cap_base[c] + k] = pj > 0 ? pj : 0;
      e->any |= pj > 0;
    }
  for (int i = 0; i < g->n_edges; i++) {
    e->edge_pj[i] = g->edges[i].pj_per_byte > 0 ? g->edges[i].pj_per_byte : 0;
    e->any |= g->edges[i].pj_per_byte > 0;
  }
  for (int i = 0; i < g->n_storage; i++)
    if (g->storage[i].has_energy) {
      e->read_pj[i] = g->storage[i].read_pj_per_byte;
      e->write_pj[i] = g->storage[i].write_pj_per_byte;
      e->any = true;
    }
  return NULL;
}

void npu_energy_move(npu_energy_counts *e, const cov_acg *g, int from, int to, uint64_t bytes) {
  int k = npu_find_edge(g, from, to);
  if (k >= 0) e->edge_bytes[k] += bytes;
}

void npu_energy_ops(npu_energy_counts *e, int compute, int cap, uint64_t ops) {
  if (compute < 0 || compute >= e->n_compute) return;
  int i = e->cap_base[compute] + cap;
  if (cap >= 0 && i < e->cap_base[compute + 1]) e->cap_ops[i] += ops;
}

static double compute_pj(const cov_npu_stats *s, int c) {
  const npu_energy_counts *e = &s->energy;
  double pj = 0;
  for (int i = e->cap_base[c]; i < e->cap_base[c + 1]; i++) pj += (double)e->cap_ops[i] * e->cap_pj[i];
  return pj;
}

static double storage_pj(const cov_npu_stats *s, int i) {
  return (double)s->bytes_read[i] * s->energy.read_pj[i] + (double)s->bytes_written[i] * s->energy.write_pj[i];
}

static double edge_pj(const cov_npu_stats *s, int i) { return (double)s->energy.edge_bytes[i] * s->energy.edge_pj[i]; }

cov_npu_energy cov_npu_stats_energy(const cov_npu_stats *s) {
  cov_npu_energy r = {0};
  if (!s) return r;
  r.known = s->energy.any;
  for (int c = 0; c < s->energy.n_compute; c++) r.compute_pj += compute_pj(s, c);
  for (int i = 0; i < s->n_storage; i++) r.storage_pj += storage_pj(s, i);
  for (int i = 0; i < s->n_edges; i++) r.edge_pj += edge_pj(s, i);
  r.total_pj = r.compute_pj + r.storage_pj + r.edge_pj;
  return r;
}

double cov_npu_stats_node_energy_pj(const cov_npu_stats *s, const char *node) {
  if (!s || !node) return -1;
  for (int c = 0; c < s->energy.n_compute; c++)
    if (strcmp(s->unit_name[s->n_edges + c], node) == 0) return compute_pj(s, c);
  for (int i = 0; i < s->n_storage; i++)
    if (strcmp(s->storage_name[i], node) == 0) return storage_pj(s, i);
  /* an edge by its DMA unit's name without the "dma:" prefix: "dram->ibuf" */
  for (int i = 0; i < s->n_edges; i++)
    if (strncmp(s->unit_name[i], "dma:", 4) == 0 && strcmp(s->unit_name[i] + 4, node) == 0) return edge_pj(s, i);
  return -1;
}

void cov_npu_stats_print_energy(const cov_npu_stats *s, FILE *out) {
  cov_npu_energy en = cov_npu_stats_energy(s);
  if (!en.known) {
    fprintf(out, "energy: the ACG gives no per-access or per-op energies\n");
    return;
  }
  fprintf(out, "energy %.3f uJ: compute %.3f, storage %.3f, edges %.3f uJ (%.3f pJ/MAC)\n",
          en.total_pj * 1e-6, en.compute_pj * 1e-6, en.storage_pj * 1e-6, en.edge_pj * 1e-6,
          s->macs ? en.total_pj / (double)s->macs : 0.0);
  fprintf(out, "%-22s %14s\n", "energy by node", "pJ");
  for (int c = 0; c < s->energy.n_compute; c++)
    if (compute_pj(s, c) > 0) fprintf(out, "%-22s %14.1f\n", s->unit_name[s->n_edges + c], compute_pj(s, c));
  for (int i = 0; i < s->n_storage; i++)
    if (storage_pj(s, i) > 0) fprintf(out, "%-22s %14.1f\n", s->storage_name[i], storage_pj(s, i));
  for (int i = 0; i < s->n_edges; i++)
    if (edge_pj(s, i) > 0) fprintf(out, "%-22s %14.1f\n", s->unit_name[i] + 4, edge_pj(s, i));
}

void npu_energy_trace_args(FILE *f, const cov_npu_stats *s) {
  cov_npu_energy en = cov_npu_stats_energy(s);
  fprintf(f, "{\"total_pj\":%.3f,\"compute_pj\":%.3f,\"storage_pj\":%.3f,\"edge_pj\":%.3f", en.total_pj,
          en.compute_pj, en.storage_pj, en.edge_pj);
  for (int c = 0; c < s->energy.n_compute; c++)
    if (compute_pj(s, c) > 0) fprintf(f, ",\"%s\":%.3f", s->unit_name[s->n_edges + c], compute_pj(s, c));
  for (int i = 0; i < s->n_storage; i++)
    if (storage_pj(s, i) > 0) fprintf(f, ",\"%s\":%.3f", s->storage_name[i], storage_pj(s, i));
  for (int i = 0; i < s->n_edges; i++)
    if (edge_pj(s, i) > 0) fprintf(f, ",\"%s\":%.3f", s->unit_name[i] + 4, edge_pj(s, i));
  fprintf(f, "}");
}
