/* acg/acg_dot.c: Graphviz rendering of an ACG, one rank per storage level. */
#include <errno.h>
#include <string.h>

#include "acg/acg_ir.h"
#include "common/loc.h"

cov_status cov_acg_print_dot(const cov_acg *g, FILE *out) {
  int level[ACG_MAX_NODES];
  acg_levels_from_dram(g, level);
  int n = acg_n_nodes(g), max_level = 0;
  for (int i = 0; i < n; i++)
    if (level[i] > max_level) max_level = level[i];

  /* Names are validated identifiers ([A-Za-z_][A-Za-z0-9_-]*), so quoting
   * them needs no escaping. */
  fprintf(out, "digraph \"%s\" {\n", g->name);
  fprintf(out, "  rankdir=TB;\n  node [fontname=\"Helvetica\", fontsize=11];\n");
  fprintf(out, "  edge [fontname=\"Helvetica\", fontsize=9];\n");
  fprintf(out, "  label=\"%s (%s, %g MHz)\";\n  labelloc=t;\n", g->name, g->backend.name,
          g->clock_mhz);
  for (int i = 0; i < g->n_storage; i++) {
    const acg_storage *s = &g->storage[i];
    char cap[32];
    acg_format_size(s->capacity_bytes, cap, sizeof cap);
    fprintf(out, "  \"%s\" [shape=%s, style=filled, fillcolor=\"%s\", label=\"%s\\n%s %s%s",
            s->name, s->kind == ACG_DRAM ? "cylinder" : "box",
            s->kind == ACG_DRAM ? "#dde6f5" : "#eef5dd", s->name, acg_storage_kind_name(s->kind),
            cap, s->instances > 1 ? " x" : "");
    if (s->instances > 1) fprintf(out, "%u", s->instances);
    fprintf(out, "\\n%u banks x %u bits\"];\n", s->banks, s->width_bits);
  }
  for (int u = 0; u < g->n_compute; u++) {
    const acg_compute *c = &g->compute[u];
    fprintf(out, "  \"%s\" [shape=box, peripheries=2, style=\"rounded,filled\", "
            "fillcolor=\"#f5e3dd\", label=\"%s\\n%s",
            c->name, c->name, acg_compute_kind_name(c->kind));
    for (int i = 0; i < c->n_dims; i++) fprintf(out, "%s%u", i ? "x" : " ", c->dims[i]);
    if (c->instances > 1) fprintf(out, " x%u", c->instances);
    for (int k = 0; k < c->n_caps; k++)
      fprintf(out, "%s%s", k ? " " : "\\n", common_op_name(c->caps[k].op));
    fprintf(out, "\"];\n");
  }
  for (int l = 0; l <= max_level; l++) {
    fprintf(out, "  { rank=same;");
    for (int i = 0; i < n; i++)
      if (level[i] == l) fprintf(out, " \"%s\";", acg_node_name(g, i));
    fprintf(out, " }\n");
  }
  for (int e = 0; e < g->n_edges; e++) {
    const acg_edge *ed = &g->edges[e];
    fprintf(out, "  \"%s\" -> \"%s\" [label=\"%g B/c, %u cyc\"%s];\n", acg_node_name(g, ed->from),
            acg_node_name(g, ed->to), ed->bandwidth_bytes_per_cycle, ed->latency_cycles,
            ed->bidirectional ? ", dir=both" : "");
  }
  fprintf(out, "}\n");
  if (ferror(out)) return cov_error(COV_IO_ERROR, COV_AT_CALL("cov_acg_print_dot"), "write error: %s", strerror(errno));
  return NULL;
}
