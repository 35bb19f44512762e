/* mapper/map_dump.c: the textual scheduled IR (--dump=schedule) and the
 * cost breakdown. The format is for people and tests; it prints every field
 * a code generator reads, in loop-nest order. */
#include <math.h>
#include <string.h>

#include "mapper/map_internal.h"

const char *map_axis_name(map_axis a) {
  static const char *const n[] = {"-", "rows", "cols", "lanes", "workgroup", "wave", "instance"};
  return a < MAP_AX_COUNT ? n[a] : "?";
}

static void print_access(FILE *out, const map_problem *p, const map_operand *o) {
  fputc('[', out);
  for (int d = 0; d < o->acc.rank; d++) {
    int any = 0;
    if (d) fputs(", ", out);
    for (int l = 0; l < p->n_loops; l++) {
      int64_t c = o->acc.coef[d][l];
      if (!c) continue;
      if (any) fputs(c < 0 ? " - " : " + ", out);
      else if (c < 0) fputs("-", out);
      int64_t a = c < 0 ? -c : c;
      if (a != 1) fprintf(out, "%lld*", (long long)a);
      fputs(p->loop_name[l], out);
      any = 1;
    }
    if (o->acc.off[d] || !any)
      fprintf(out, any ? (o->acc.off[d] < 0 ? " - %lld" : " + %lld") : "%lld",
              (long long)(any && o->acc.off[d] < 0 ? -o->acc.off[d] : o->acc.off[d]));
  }
  fputc(']', out);
}

static void print_vsrc(FILE *out, const map_problem *p, const map_vsrc *v) {
  switch (v->kind) {
  case MAP_VS_REG: fprintf(out, "r%d", v->index); break;
  case MAP_VS_ROW: fprintf(out, "row%d", v->index); break;
  case MAP_VS_VEC: fprintf(out, "%s", p->operands[v->index].name); break;
  case MAP_VS_SCALAR: fprintf(out, "%.9g", v->value); break;
  default: break;
  }
}

/* One epilogue op, as `covenant map --explain` shows it. */
static void print_vop(FILE *out, const map_schedule *s, int v) {
  const cov_acg *g = s->acg;
  const map_problem *p = &s->prob;
  const map_vop *vo = &s->vops[v];
  fprintf(out, "  epilogue %d (%s on %s): ", v, vo->from,
          vo->node >= 0 ? acg_node_name(g, vo->node) : "?");
  if (vo->kind == MAP_VOP_MAP && vo->bias) { /* a fused form: op(a + b) [and its row sum] */
    fprintf(out, "r%d = %s(", vo->dst, common_op_name(vo->op));
    print_vsrc(out, p, &vo->a);
    fputs(" + ", out), print_vsrc(out, p, &vo->b);
    if (vo->row_sum) fprintf(out, "), row%d = sum over %s (fused)\n", vo->sum_row, p->loop_name[vo->loop]);
    else fputs(") (fused)\n", out);
  } else if (vo->kind == MAP_VOP_MAP) {
    fprintf(out, "r%d = %s(", vo->dst, common_op_name(vo->op));
    print_vsrc(out, p, &vo->a);
    if (vo->b.kind != MAP_VS_NONE) fputs(", ", out), print_vsrc(out, p, &vo->b);
    fputs(")\n", out);
  } else if (vo->kind == MAP_VOP_ROW_REDUCE) {
    fprintf(out, "row%d = reduce_%s(", vo->dst, common_op_name(vo->op));
    print_vsrc(out, p, &vo->a);
    fprintf(out, ") over %s", p->loop_name[vo->loop]);
    int64_t dm = v == 0 ? map_epi_drain_max(s) : 0;
    if (dm > 0) fprintf(out, " (of the %lld chunk maxes the drains write)", (long long)dm);
    fputc('\n', out);
  } else if (vo->kind == MAP_VOP_ROW_MAP) {
    fprintf(out, "row%d = %s(", vo->dst, common_op_name(vo->op));
    print_vsrc(out, p, &vo->a);
    if (vo->b.kind != MAP_VS_NONE) fputs(", ", out), print_vsrc(out, p, &vo->b);
    fprintf(out, ") once per row over %s\n", p->loop_name[vo->loop]);
  } else {
    fprintf(out, "r%d = pool_%s(", vo->dst, common_op_name(vo->op));
    print_vsrc(out, p, &vo->a);
    if (vo->b.kind == MAP_VS_SCALAR) {
      fprintf(out, ", from ");
      print_vsrc(out, p, &vo->b);
    }
    fprintf(out, ") window %dx%d over %s,%s\n", vo->window[0], vo->window[1],
            p->loop_name[vo->pool_loop[0]], p->loop_name[vo->pool_loop[1]]);
  }
}

void map_dump_problem(const map_problem *p, FILE *out) {
  fprintf(out, "  problem %s: %s", p->codelet,
          p->kind == MAP_MAIN_MAC ? "mac" : p->kind == MAP_MAIN_REDUCE ? "reduce" : "map");
  fprintf(out, " op=%s init=%g ops=%lld\n", common_op_name(p->op), p->init, (long long)p->ops);
  fputs("  loops", out);
  for (int l = 0; l < p->n_loops; l++)
    fprintf(out, " %s=%lld%s", p->loop_name[l], (long long)p->extent[l], p->reduction[l] ? "(red)" : "");
  fputc('\n', out);
  for (int o = 0; o < p->n_operands; o++) {
    const map_operand *op = &p->operands[o];
    fprintf(out, "  operand %s %s %s[", op->name,
            op->role == MAP_ROLE_INPUT ? "in" : op->role == MAP_ROLE_OUTPUT ? "out" : "vec",
            cov_dtype_name(op->dtype));
    for (int d = 0; d < op->rank; d++) fprintf(out, "%s%lld", d ? "," : "", (long long)op->shape[d]);
    fputs("] at ", out);
    print_access(out, p, op);
    if (op->pad_value != 0) fprintf(out, " else %g", op->pad_value);
    fputc('\n', out);
  }
}

void map_dump_epilogue(const map_schedule *s, FILE *out) {
  for (int v = 0; v < s->n_vops; v++) print_vop(out, s, v);
}

void map_dump(const map_schedule *s, FILE *out) {
  const cov_acg *g = s->acg;
  const map_problem *p = &s->prob;
  const acg_compute *cn = &g->compute[s->node - g->n_storage];
  fprintf(out, "schedule %s on %s\n", p->layer, g->name);
  map_dump_problem(p, out);
  const acg_capability *cap = &cn->caps[s->cap];
  fprintf(out, "  compute %s cap %d %s(%s,%s->%s)%s\n", cn->name, s->cap, common_op_name(cap->op),
          cov_dtype_name(s->mul_dtype), cov_dtype_name(s->mul_dtype), cov_dtype_name(s->acc_dtype),
          s->narrowed ? "  [narrowed: multiplicands rounded to this dtype, accumulation kept]" : "");
  if (p->bias_init)
    fprintf(out, "  accumulators start from %s, preloaded by %s (its add left the epilogue)\n",
            p->operands[p->bias_op].name, cn->name);
  map_dump_epilogue(s, out);
  for (int o = 0; o < p->n_operands; o++)
    for (int lv = 1; lv < s->n_levels; lv++) {
      const map_place *pl = &s->place[o][lv];
      if (!pl->present) continue;
      fprintf(out, "  place %s L%d %s tile[", p->operands[o].name, lv, g->storage[pl->node].name);
      for (int d = 0; d < p->operands[o].rank; d++)
        fprintf(out, "%s%lld", d ? "," : "", (long long)pl->shape[d]);
      fprintf(out, "] %s %llu B @%llu%s\n", cov_dtype_name(pl->dtype), (unsigned long long)pl->bytes,
              (unsigned long long)pl->addr, pl->double_buffered ? " x2" : "");
    }
  if (s->n_vops && s->epi_node >= 0)
    fprintf(out, "  epilogue temporaries %s %llu B @%llu%s\n", g->storage[s->epi_node].name,
            (unsigned long long)s->epi_bytes, (unsigned long long)s->epi_addr,
            s->epi_in_place ? " (register 0 in place)" : "");
  if (map_epi_chunks(s) > 1)
    fprintf(out, "  epilogue and store in %lld chunks of %lld along %s dim %d (outermost in its L1 tile)\n",
            (long long)map_epi_chunks(s), (long long)s->epi_chunk, p->operands[p->output].name,
            s->epi_chunk_dim);
  /* the nest, with transfers at their positions */
  int depth = 0;
  for (int i = -1; i < s->n_sloops; i++) {
    if (i >= 0 && s->n_rects > 0 && i == s->rect_sloop) { /* map_ir.h "Rectangular pixel tiles" */
      fprintf(out, "  %*sL%d for %s,%s in %d rectangles", 2 * depth, "", s->sloops[i].level,
              p->loop_name[s->rect_loop[0]], p->loop_name[s->rect_loop[1]], s->n_rects);
      for (int r = 0; r < s->n_rects; r++)
        fprintf(out, "%s%lldx%lld@%lld,%lld", r ? " " : " ", (long long)s->rects[r].ext[0],
                (long long)s->rects[r].ext[1], (long long)s->rects[r].org[0], (long long)s->rects[r].org[1]);
      fputc('\n', out);
      depth++;
    } else if (i >= 0) {
      const map_sloop *sl = &s->sloops[i];
      fprintf(out, "  %*sL%d %s %s %s in %lld step %lld\n", 2 * depth, "", sl->level,
              sl->spatial ? "spatial" : "for", sl->spatial ? map_axis_name(sl->axis) : "",
              p->loop_name[sl->loop], (long long)sl->trips, (long long)sl->step);
      depth++;
    }
    for (int k = 0; k < s->n_xfers; k++) {
      const map_xfer *x = &s->xfers[k];
      if (x->after != i) continue;
      fprintf(out, "  %*s%s%s %s L%d %s -> %s  %llu B x %lld\n", 2 * depth, "",
              x->dir == MAP_LOAD ? "load" : "store", x->accumulate ? "(partial)" : "",
              p->operands[x->operand].name, x->level, g->storage[x->src].name, g->storage[x->dst].name,
              (unsigned long long)x->bytes, (long long)x->count);
    }
  }
  fprintf(out, "  %*s%s\n", 2 * depth, "", "compute");
}

void map_dump_cost(const map_schedule *s, FILE *out) {
  const map_cost *c = &s->cost;
  const cov_acg *g = s->acg;
  fprintf(out, "cost: %.0f cycles (%.3f us at %g MHz)\n", c->cycles,
           g->clock_mhz > 0 ? c->cycles / g->clock_mhz : 0.0, g->clock_mhz);
  fprintf(out, "  compute %.0f, epilogue %.0f, exposed transfers %.0f\n", c->compute_cycles,
          c->epilogue_cycles, c->exposed_cycles);
  for (int i = 0; i < s->n_xfers; i++) {
    const map_xfer *x = &s->xfers[i];
    fprintf(out, "  transfer %s %s L%d via %s->%s: %.0f cycles%s\n",
            x->dir == MAP_LOAD ? "load" : "store", s->prob.operands[x->operand].name, x->level,
            x->edge >= 0 ? acg_node_name(g, g->edges[x->edge].from) : "-",
            x->edge >= 0 ? acg_node_name(g, g->edges[x->edge].to) : "-", c->xfer_cycles[i], s->place[x->operand][x->level].double_buffered ? " (overlapped)" : "");
  }
  for (int l = 1; l < s->n_levels; l++) fprintf(out, "  bytes moved at L%d: %.0f\n", l, c->bytes_level[l]);
  for (int k = 0; k < g->n_compute && k < MAP_MAX_COMPUTE; k++)
    if (c->util[k] > 0) fprintf(out, "  utilisation of %s: %.1f%%\n", g->compute[k].name, 100 * c->util[k]);
  if (c->has_energy) fprintf(out, "  energy: %.3f uJ\n", c->energy_pj * 1e-6);
}
