/* frontend/model_region.c: the data-dependent part of a model
 * (model_region.h) and running part of a model (cov_model_run_part,
 * covenant/model.h).
 *
 * A compiled artifact holds buffers of fixed sizes, so what an operator
 * with a data-dependent output size (NonZero, TopK with a run-time k,
 * NonMaxSuppression, Compress, Unique) makes, and everything computed from
 * it, runs on the host in the reference interpreter as one step: the
 * region. Its outputs get a capacity, the shape a run in bound mode gives
 * them: every operator with a data-dependent size makes the most its
 * inputs allow (NonZero: every element; NonMaxSuppression: no box
 * suppressed, none under the threshold; Compress: every slice), so sizes
 * computed from those sizes are the largest the model makes from that
 * input (runtime/README.md, "Data-dependent sizes"). */
#include "frontend/model_region.h"

#include <stdlib.h>
#include <string.h>

#include "common/loc.h"
#include "frontend/ops/graph_control.h"
#include "frontend/ops/graph_sequence.h"

static cov_status oom(const graph *g) {
  cov_loc loc = {.file = g->file};
  return cov_error(COV_OUT_OF_MEMORY, &loc, "out of memory");
}

/* Whether a node of a subgraph, or of one nested in it, makes an output
 * whose size depends on the data (depth bounds the nesting walked). */
static bool sub_dynamic(const graph *g, const graph_node *n, int depth) {
  static const char *names[] = {"body", "then_branch", "else_branch", NULL};
  if (!graph_has_subgraphs(n) || depth > 16) return depth > 16;
  for (const char **nm = names; *nm; nm++) {
    cov_status st = NULL;
    const graph *s = graph_subgraph(g, n, *nm, &st);
    if (!s) {
      cov_status_free(st);
      continue;
    }
    for (size_t i = 0; i < s->n_nodes; i++) {
      const graph_node *m = s->nodes[i];
      bool control = graph_has_subgraphs(m);
      if ((m->def && m->def->dynamic && !control) || (!strcmp(m->op_type, "TopK") && m->n_in > 1 && m->in[1] &&
                                                        !m->in[1]->data))
        return true;
      if (control && sub_dynamic(s, m, depth + 1)) return true;
    }
  }
  return false;
}

static bool seed(const graph *g, const graph_node *n, graph_fixed_fn fixed, void *user) {
  for (int k = 0; k < n->n_out; k++)
    if (n->out[k] && !fixed(user, g, n->out[k])) return true;
  return sub_dynamic(g, n, 0);
}

/* Marks every node that reads a value a marked node makes, and every node
 * of a marked node's group, until nothing changes; true when one was. */
static bool spread(const graph *g, bool *node, bool *made) {
  bool changed = false;
  for (size_t i = 0; i < g->n_nodes; i++) {
    const graph_node *n = g->nodes[i];
    for (int k = 0; k < n->n_in && !node[i]; k++)
      if (n->in[k] && made[n->in[k]->id]) node[i] = true;
    for (size_t j = 0; j < g->n_nodes && node[i] && n->group >= 0; j++)
      if (g->nodes[j]->group == n->group && !node[j]) node[j] = changed = true;
    if (!node[i]) continue;
    for (int k = 0; k < n->n_out; k++)
      if (n->out[k] && !made[n->out[k]->id]) made[n->out[k]->id] = changed = true;
  }
  return changed;
}

/* The region's inputs (read by it, made elsewhere, not constants) and
 * outputs (graph outputs it makes), each once. */
static cov_status edges(const graph *g, const bool *made, graph_region *r) {
  bool *listed = calloc(g->n_values + 1, sizeof *listed);
  r->inputs = calloc(g->n_values + 1, sizeof *r->inputs);
  r->outputs = calloc(g->n_outputs + 1, sizeof *r->outputs);
  if (!listed || !r->inputs || !r->outputs) {
    free(listed);
    return oom(g);
  }
  for (size_t i = 0; i < g->n_nodes; i++) {
    const graph_node *n = g->nodes[i];
    for (int k = 0; r->node[i] && k < n->n_in; k++) {
      const graph_value *v = n->in[k];
      if (!v || made[v->id] || listed[v->id] || (v->data && v->kind != GV_INPUT)) continue;
      listed[v->id] = true;
      r->inputs[r->n_inputs++] = v;
    }
  }
  for (size_t i = 0; i < g->n_outputs; i++) {
    const graph_value *v = g->outputs[i];
    if (!made[v->id] || listed[v->id]) continue;
    listed[v->id] = true;
    r->outputs[r->n_outputs++] = v;
  }
  free(listed);
  return NULL;
}

cov_status graph_region_find(const graph *g, graph_fixed_fn fixed, void *user, graph_region *r) {
  memset(r, 0, sizeof *r);
  r->node = calloc(g->n_nodes + 1, sizeof *r->node);
  bool *made = calloc(g->n_values + 1, sizeof *made);
  if (!r->node || !made) {
    free(made);
    return oom(g);
  }
  bool any = false;
  for (size_t i = 0; i < g->n_nodes; i++)
    if (!g->nodes[i]->dead && seed(g, g->nodes[i], fixed, user)) r->node[i] = any = true;
  if (any)
    while (spread(g, r->node, made)) {
    }
  /* A Loop or Scan runs as often as the data says: no run bounds what it
   * makes, so the region has no capacities; left to the program (a value
   * without a fixed shape, said where it is named). */
  for (size_t i = 0; any && i < g->n_nodes; i++)
    if (r->node[i] && (!strcmp(g->nodes[i]->op_type, "Loop") || !strcmp(g->nodes[i]->op_type, "Scan")))
      any = false, memset(r->node, 0, g->n_nodes * sizeof *r->node);
  cov_status st = any ? edges(g, made, r) : NULL;
  free(made);
  return st;
}

static void on_bound(void *user, const graph *g, const graph_value *vals) {
  graph_region *r = user;
  if (g->parent) return; /* the top-level graph's run only */
  for (size_t i = 0; i < g->n_values; i++) graph_copy_type(&r->bound[i], &vals[i]), r->bound[i].data = NULL;
}

cov_status graph_region_bound(const graph *g, const cov_tensor *probe, size_t n_probe, graph_region *r) {
  r->bound = calloc(g->n_values + 1, sizeof *r->bound);
  cov_tensor *outs = calloc(g->n_outputs + 1, sizeof *outs);
  if (!r->bound || !outs) {
    free(outs);
    return oom(g);
  }
  for (size_t i = 0; i < g->n_values; i++) r->bound[i].rank = -1;
  graph_run_io io = {probe, NULL, n_probe, outs, NULL, g->n_outputs, false, on_bound, r, true};
  cov_status st = graph_run_values(g, &io, NULL, NULL, NULL);
  for (size_t i = 0; i < g->n_outputs; i++) cov_tensor_release(&outs[i]);
  free(outs);
  if (st) return cov_status_annotate(st, "bounding the sizes that depend on the data (a run where each such "
                                         "operator makes the most it can): ");
  return NULL;
}

void graph_region_free(graph_region *r) {
  free(r->node), free(r->inputs), free(r->outputs), free(r->bound);
  memset(r, 0, sizeof *r);
}

/* ---- running part of a model ------------------------------------------ */

static const graph_value *find_value(const graph *g, const char *name) {
  for (size_t i = 0; i < g->n_values; i++)
    if (!strcmp(g->values[i]->name, name)) return g->values[i];
  return NULL;
}

/* Which nodes make what `want` needs from what is given (constants are). */
static void needed(const graph *g, const bool *given, bool *want, bool *run) {
  for (size_t i = g->n_nodes; i-- > 0;) {
    const graph_node *n = g->nodes[i];
    for (int k = 0; k < n->n_out && !n->dead && !run[i]; k++)
      run[i] = n->out[k] && want[n->out[k]->id];
    for (int k = 0; run[i] && k < n->n_in; k++)
      if (n->in[k] && !given[n->in[k]->id] && !(n->in[k]->data && n->in[k]->kind != GV_INPUT))
        want[n->in[k]->id] = true;
  }
}

static cov_status part_error(const graph *g, const char *name, cov_code code, const char *what) {
  cov_loc loc = {.file = g->file, .path = name};
  return cov_error(code, &loc, "value '%s' %s", name, what);
}

/* Binds the given values and marks what is wanted; vals is the run's table. */
static cov_status part_bind(const graph *g, const cov_model_part *pt, graph_value *vals, bool *given, bool *want) {
  for (size_t k = 0; k < pt->n_in; k++) {
    const graph_value *v = find_value(g, pt->in_names[k]);
    const cov_tensor *t = &pt->in[k];
    if (!v) return part_error(g, pt->in_names[k], COV_NOT_FOUND, "is not in the model");
    if (v->dtype != t->dtype || t->rank < 0 || t->rank > COV_MAX_RANK || cov_tensor_numel(t) < 0 ||
        (v->rank >= 0 && v->rank != t->rank) || (!t->data && cov_tensor_numel(t) > 0))
      return part_error(g, pt->in_names[k], COV_INVALID_ARGUMENT, "is given with another dtype or rank");
    graph_set_shape(&vals[v->id], t->rank, t->shape);
    vals[v->id].data = t->data;
    given[v->id] = true;
  }
  for (size_t k = 0; k < pt->n_out; k++) {
    const graph_value *v = find_value(g, pt->out_names[k]);
    if (!v) return part_error(g, pt->out_names[k], COV_NOT_FOUND, "is not in the model");
    if (!given[v->id]) want[v->id] = true;
  }
  return NULL;
}

static cov_status part_run(const graph *g, graph_value *vals, bool *owned, const bool *run) {
  graph_exec x = {.g = g, .lib = g->lib};
  for (size_t i = 0; i < g->n_nodes; i++) {
    const graph_node *n = g->nodes[i];
    if (!run[i]) continue;
    graph_value *in[64], *out[64];
    if (n->n_in > 64 || n->n_out > 64)
      return graph_node_error(g, n, COV_UNSUPPORTED, "more than 64 inputs or outputs in a part run");
    for (int k = 0; k < n->n_in; k++) in[k] = n->in[k] ? &vals[n->in[k]->id] : NULL;
    for (int k = 0; k < n->n_out; k++) out[k] = n->out[k] ? &vals[n->out[k]->id] : NULL;
    COV_RETURN_IF_ERROR(graph_exec_node(&x, n, in, out));
    for (int k = 0; k < n->n_out; k++)
      if (n->out[k]) owned[n->out[k]->id] = true;
  }
  return NULL;
}

static cov_status part_take(const graph *g, const cov_model_part *pt, const graph_value *vals) {
  for (size_t k = 0; k < pt->n_out; k++) {
    const graph_value *v = &vals[find_value(g, pt->out_names[k])->id];
    if (v->seq || v->rank < 0 || (!v->data && graph_numel(v) > 0))
      return part_error(g, pt->out_names[k], COV_UNSUPPORTED, "is not a tensor this part of the model makes");
    COV_RETURN_IF_ERROR(cov_tensor_alloc(&pt->out[k], v->dtype, v->rank, v->dims));
    size_t bytes = graph_value_bytes(v);
    if (bytes) memcpy(pt->out[k].data, v->data, bytes);
  }
  return NULL;
}

cov_status cov_model_run_part(const cov_model *m, const cov_model_part *pt) {
  if (!m || !pt || (pt->n_in && (!pt->in || !pt->in_names)) || (pt->n_out && (!pt->out || !pt->out_names)))
    return cov_error(COV_INVALID_ARGUMENT, COV_AT_CALL("cov_model_run_part"), "NULL");
  const graph *g = graph_of_model(m);
  for (size_t k = 0; k < pt->n_out; k++) memset(&pt->out[k], 0, sizeof pt->out[k]);
  size_t nv = g->n_values + 1;
  graph_value *vals = calloc(nv, sizeof *vals);
  bool *given = calloc(nv, 1), *want = calloc(nv, 1), *owned = calloc(nv, 1), *run = calloc(g->n_nodes + 1, 1);
  cov_status st = vals && given && want && owned && run ? NULL : oom(g);
  for (size_t i = 0; !st && i < g->n_values; i++) {
    vals[i] = *g->values[i];
    if (g->values[i]->kind == GV_ACTIVATION || g->values[i]->kind == GV_INPUT) vals[i].data = NULL;
  }
  if (!st) st = part_bind(g, pt, vals, given, want);
  if (!st) needed(g, given, want, run);
  for (size_t i = 0; !st && i < g->n_values; i++) /* what nothing given or run makes */
    if (want[i] && !given[i] && (!g->values[i]->producer || g->values[i]->kind == GV_INPUT) &&
        !(g->values[i]->data && g->values[i]->kind != GV_INPUT))
      st = part_error(g, g->values[i]->name, COV_INVALID_ARGUMENT, "is needed and not given");
  if (!st) st = part_run(g, vals, owned, run);
  if (!st) st = part_take(g, pt, vals);
  if (st)
    for (size_t k = 0; k < pt->n_out; k++) cov_tensor_release(&pt->out[k]);
  for (size_t i = 0; vals && owned && i < g->n_values; i++)
    if (owned[i]) free(vals[i].data);
  free(vals), free(given), free(want), free(owned), free(run);
  return st;
}
