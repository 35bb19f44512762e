/* acg/acg_show.c: the human summary behind `covenant acg show`.
 *
 * Peak MACs/cycle per dtype combination sum over units (a unit issues one
 * capability at a time, so each unit contributes its best matching one). The
 * roofline ridge point divides that peak by the bandwidth out of DRAM: a
 * layer with fewer MACs per DRAM byte than the ridge is memory-bound here. */
#include <errno.h>
#include <string.h>

#include "acg/acg_ir.h"
#include "common/loc.h"

typedef struct {
  cov_dtype a, b, acc;
  double macs_per_cycle;
} peak_row;

static int collect_peaks(const cov_acg *g, peak_row *rows, int max) {
  int n = 0;
  for (int u = 0; u < g->n_compute; u++) {
    const acg_compute *c = &g->compute[u];
    for (int k = 0; k < c->n_caps; k++) {
      const acg_capability *cap = &c->caps[k];
      if (cap->op != COV_OP_MAC) continue;
      cov_dtype a = cap->in[0], b = cap->n_in > 1 ? cap->in[1] : cap->in[0];
      int seen_in_unit = 0;
      for (int j = 0; j < k; j++) { /* an earlier capability of this unit, same dtypes */
        const acg_capability *o = &c->caps[j];
        if (o->op == COV_OP_MAC && o->in[0] == a &&
            (o->n_in > 1 ? o->in[1] : o->in[0]) == b && o->out == cap->out)
          seen_in_unit = 1;
      }
      if (seen_in_unit) continue;
      double best = 0;
      for (int j = k; j < c->n_caps; j++) {
        const acg_capability *o = &c->caps[j];
        if (o->op == COV_OP_MAC && o->in[0] == a && (o->n_in > 1 ? o->in[1] : o->in[0]) == b &&
            o->out == cap->out && o->throughput > best)
          best = o->throughput;
      }
      best *= c->instances;
      int r = 0;
      while (r < n && !(rows[r].a == a && rows[r].b == b && rows[r].acc == cap->out)) r++;
      if (r == n) {
        if (n == max) continue;
        rows[n++] = (peak_row){a, b, cap->out, 0};
      }
      rows[r].macs_per_cycle += best;
    }
  }
  return n;
}

double acg_dram_bandwidth(const cov_acg *g) {
  double total = 0;
  for (int d = 0; d < g->n_storage; d++) {
    if (g->storage[d].kind != ACG_DRAM) continue;
    double bw = 0;
    for (int e = 0; e < g->n_edges; e++) {
      const acg_edge *ed = &g->edges[e];
      if (ed->from == d || (ed->bidirectional && ed->to == d)) bw += ed->bandwidth_bytes_per_cycle;
    }
    /* A DRAM's own interface caps what its paths can draw together. */
    if (g->storage[d].bandwidth_bytes_per_cycle > 0 && g->storage[d].bandwidth_bytes_per_cycle < bw)
      bw = g->storage[d].bandwidth_bytes_per_cycle;
    total += bw;
  }
  return total;
}

static int same_but_op(const acg_capability *a, const acg_capability *b) {
  if (a->n_in != b->n_in || a->out != b->out || a->tile_rank != b->tile_rank ||
      a->throughput != b->throughput || a->latency != b->latency || a->waves != b->waves ||
      a->operands_in_scratchpad != b->operands_in_scratchpad || a->fused != b->fused)
    return 0;
  for (int i = 0; i < a->n_in; i++)
    if (a->in[i] != b->in[i]) return 0;
  for (int i = 0; i < a->tile_rank; i++)
    if (a->tile[i] != b->tile[i]) return 0;
  return 1;
}

/* Capabilities that differ only in their op (a SIMD unit's long op list) are
 * printed on one line, as they were most likely written. */
static void print_caps(FILE *out, const acg_compute *c) {
  for (int k = 0; k < c->n_caps;) {
    const acg_capability *cap = &c->caps[k];
    int end = k + 1;
    while (end < c->n_caps && same_but_op(cap, &c->caps[end])) end++;
    fprintf(out, "      %s", cov_dtype_name(cap->in[0]));
    for (int i = 1; i < cap->n_in; i++) fprintf(out, ",%s", cov_dtype_name(cap->in[i]));
    fprintf(out, " -> %s, tile ", cov_dtype_name(cap->out));
    for (int i = 0; i < cap->tile_rank; i++) fprintf(out, "%s%u", i ? "x" : "", cap->tile[i]);
    fprintf(out, ", %g/cycle, latency %u:", cap->throughput, cap->latency);
    for (int j = k; j < end; j++) fprintf(out, " %s", common_op_name(c->caps[j].op));
    if (cap->waves > 1) fprintf(out, " (issued by %u waves together)", cap->waves);
    if (cap->operands_in_scratchpad) fprintf(out, " (multiplicands read from the scratchpad)");
    if (cap->fused)
      fprintf(out, " (fused:%s%s%s)", (cap->fused & ACG_FUSE_BIAS) ? " op(x + bias)" : "",
              (cap->fused & ACG_FUSE_ROW_SUM) ? " with the sum of each row" : "",
              (cap->fused & ACG_FUSE_ROW_MAX) ? " with the max of each row" : "");
    fprintf(out, "\n");
    k = end;
  }
}

cov_status cov_acg_print_summary(const cov_acg *g, FILE *out) {
  int level[ACG_MAX_NODES];
  acg_levels_from_dram(g, level);
  int max_level = 0;
  for (int i = 0; i < acg_n_nodes(g); i++)
    if (level[i] > max_level) max_level = level[i];

  fprintf(out, "target %s  (%s)\n", g->name, g->file);
  fprintf(out, "  backend %s%s%s, clock %g MHz\n", g->backend.name,
          g->backend.mcpu ? " " : "", g->backend.mcpu ? g->backend.mcpu : "", g->clock_mhz);
  if (g->backend.wave_size)
    fprintf(out, "  waves of %u threads, at most %u threads per workgroup", g->backend.wave_size,
            g->backend.max_workgroup_threads);
  if (g->backend.max_thread_registers) fprintf(out, ", %u registers per thread", g->backend.max_thread_registers);
  if (g->backend.wave_size) fprintf(out, "\n");
  if (g->about) fprintf(out, "  about: %s\n", g->about);

  fprintf(out, "\nstorage levels (hops from DRAM)\n");
  fprintf(out, "  %-5s %-14s %-10s %10s %9s %6s %6s %5s %5s\n", "level", "name", "kind",
          "capacity", "instances", "banks", "width", "ports", "dbuf");
  for (int l = 0; l <= max_level; l++)
    for (int i = 0; i < g->n_storage; i++) {
      if (level[i] != l) continue;
      const acg_storage *s = &g->storage[i];
      char cap[32];
      acg_format_size(s->capacity_bytes, cap, sizeof cap);
      fprintf(out, "  %-5d %-14s %-10s %10s %9u %6u %6u %5u %5s\n", l, s->name,
              acg_storage_kind_name(s->kind), cap, s->instances, s->banks, s->width_bits,
              s->ports, s->double_buffer ? "yes" : "no");
    }

  fprintf(out, "\ncompute units\n");
  for (int u = 0; u < g->n_compute; u++) {
    const acg_compute *c = &g->compute[u];
    fprintf(out, "  %-14s %-8s ", c->name, acg_compute_kind_name(c->kind));
    if (c->kind == ACG_SIMD) fprintf(out, "%u lanes", c->dims[0]);
    else if (c->n_dims) {
      for (int i = 0; i < c->n_dims; i++) fprintf(out, "%s%u", i ? "x" : "", c->dims[i]);
    } else fprintf(out, "-");
    fprintf(out, "  x%u  (level %d)\n", c->instances, level[g->n_storage + u]);
    print_caps(out, c);
  }

  peak_row rows[64];
  int n_rows = collect_peaks(g, rows, 64);
  double dram_bw = acg_dram_bandwidth(g);
  fprintf(out, "\npeak MACs/cycle\n");
  if (n_rows == 0) fprintf(out, "  (no unit offers mac)\n");
  for (int r = 0; r < n_rows; r++)
    fprintf(out, "  %-4s x %-4s -> %-4s %12g MACs/cycle  %10.2f TMAC/s\n",
            cov_dtype_name(rows[r].a), cov_dtype_name(rows[r].b), cov_dtype_name(rows[r].acc),
            rows[r].macs_per_cycle, rows[r].macs_per_cycle * g->clock_mhz * 1e6 / 1e12);

  fprintf(out, "\ndata paths\n");
  for (int e = 0; e < g->n_edges; e++) {
    const acg_edge *ed = &g->edges[e];
    fprintf(out, "  %-14s %s %-14s %10.10g B/cycle %9.1f GB/s  latency %u cycles%s\n",
            acg_node_name(g, ed->from), ed->bidirectional ? "<->" : "-> ",
            acg_node_name(g, ed->to), ed->bandwidth_bytes_per_cycle,
            ed->bandwidth_bytes_per_cycle * g->clock_mhz * 1e6 / 1e9, ed->latency_cycles,
            ed->async ? ", asynchronous copies" : "");
  }

  fprintf(out, "\nroofline\n");
  fprintf(out, "  DRAM bandwidth %g B/cycle (%.1f GB/s): the paths out of DRAM, capped by its interface\n",
          dram_bw, dram_bw * g->clock_mhz * 1e6 / 1e9);
  for (int r = 0; r < n_rows && dram_bw > 0; r++)
    fprintf(out, "  ridge point %s x %s -> %s: %.2f MACs/byte\n", cov_dtype_name(rows[r].a),
            cov_dtype_name(rows[r].b), cov_dtype_name(rows[r].acc),
            rows[r].macs_per_cycle / dram_bw);
  if (ferror(out)) return cov_error(COV_IO_ERROR, COV_AT_CALL("cov_acg_print_summary"), "write error: %s", strerror(errno));
  return NULL;
}

/* The peak the summary prints, for one dtype combination, so exploration
 * studies use the same figure `covenant acg show` reports. */
double acg_peak_macs_per_cycle(const cov_acg *g, cov_dtype a, cov_dtype b, cov_dtype acc) {
  peak_row rows[64];
  int n = collect_peaks(g, rows, 64);
  for (int r = 0; r < n; r++)
    if (rows[r].a == a && rows[r].b == b && rows[r].acc == acc) return rows[r].macs_per_cycle;
  return 0;
}
