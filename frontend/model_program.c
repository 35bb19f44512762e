/* frontend/model_program.c: a model as a program of steps for artifacts
 * whose control runs on the host (cov_model_program_build, covenant/model.h).
 *
 * The model's graph is walked group by group in execution order. A compute
 * group is described (graph_group_describe) at the shapes its values have;
 * a layout node that only moves bytes unchanged (Identity, Reshape,
 * Flatten, Squeeze, Unsqueeze, a Cast to its own dtype) is a copy; a Loop
 * is its loop-carried values copied into the body's inputs, a LOOP marker,
 * the body's steps and a NEXT marker naming what the next iteration
 * takes, then the final state copied into the node's outputs; an If is
 * its condition, the then branch's steps and copies into the node's
 * outputs, ELSE, the same for the else branch, END. Other layout nodes
 * and groups no codelet call describes are PART steps of one node (the
 * reference interpreter runs them on the host); the top-level part whose
 * sizes depend on the data is one PART step after everything else, its
 * outputs with capacities (model_region.c). Anything else is a MISSING
 * step with the reason.
 *
 * Shapes: a subgraph's loop-carried values have no static dims at load
 * (graph_control.c), so the program runs the model once on the caller's
 * probe inputs and records, per graph, the shape each value had at the end
 * of each run of it. A value seen with two shapes (one per iteration) or
 * made by an operator whose output size depends on data (NonZero, NMS, a
 * Loop's scan outputs) has no shape, and the steps that need it are
 * MISSING: the artifact holds fixed-size buffers only. */
#include <stdlib.h>
#include <string.h>

#include "common/loc.h"
#include "frontend/graph.h"
#include "frontend/model_region.h"
#include "frontend/ops/graph_control.h"

typedef struct seen {
  const graph *g;
  graph_value *vals; /* per value id: the shape of the runs (rank -1: it varied) */
} seen;

struct cov_model_program {
  const graph *root;
  cov_arena *arena;
  cov_model_pstep *steps;
  size_t n, cap;
  seen *seen;
  size_t n_seen, cap_seen;
  const graph_value **vals; /* every value a step names, and the graph it is read in */
  const graph **val_graph;
  size_t n_vals, cap_vals, cap_vgraph;
  graph_region region; /* the top-level graph's part whose sizes depend on the data */
  cov_status err;
};

static void *grow(void *p, size_t *cap, size_t n, size_t size) {
  if (n < *cap) return p;
  size_t c = *cap ? *cap * 2 : 32;
  void *q = realloc(p, c * size);
  if (q) *cap = c;
  return q;
}

/* ---- the probe run's shapes ---------------------------------------------- */

static seen *seen_of(const cov_model_program *p, const graph *g) {
  for (size_t i = 0; i < p->n_seen; i++)
    if (p->seen[i].g == g) return &p->seen[i];
  return NULL;
}

static bool same_type(const graph_value *a, const graph_value *b) {
  if (a->dtype != b->dtype || a->rank != b->rank || a->seq != b->seq) return false;
  for (int d = 0; d < a->rank; d++)
    if (a->dims[d] != b->dims[d]) return false;
  return true;
}

static void on_trace(void *user, const graph *g, const graph_value *vals) {
  cov_model_program *p = user;
  if (p->err) return;
  seen *s = seen_of(p, g);
  if (!s) {
    seen *ns = grow(p->seen, &p->cap_seen, p->n_seen, sizeof *ns);
    graph_value *copy = calloc(g->n_values + 1, sizeof *copy);
    if (!ns || !copy) {
      free(copy);
      if (ns) p->seen = ns;
      p->err = cov_error(COV_OUT_OF_MEMORY, COV_AT_CALL("cov_model_program_build"), "out of memory");
      return;
    }
    p->seen = ns;
    s = &p->seen[p->n_seen++];
    s->g = g;
    s->vals = copy;
    for (size_t i = 0; i < g->n_values; i++) {
      graph_copy_type(&copy[i], &vals[i]);
      copy[i].data = NULL;
    }
    return;
  }
  for (size_t i = 0; i < g->n_values; i++)
    if (!same_type(&s->vals[i], &vals[i])) graph_set_shape(&s->vals[i], -1, NULL);
}

static bool has_subgraphs(const graph *g) {
  for (size_t i = 0; i < g->n_nodes; i++)
    if (graph_has_subgraphs(g->nodes[i])) return true;
  return false;
}

/* Whether v's size is the same in every run: static at load, a constant,
 * or the one the probe run gave every time it ran, where nothing that
 * makes v depends on a size chosen by the data: its producer is no
 * operator with a data-dependent output size (NonZero, NMS...; a Loop or
 * an If is, through its inputs and its subgraphs' steps, each checked on
 * its own) and every input of its producer is fixed too (depth bounds the
 * walk back; past it, not fixed). Fills *out (data: constants). */
static bool value_fixed(const cov_model_program *p, const graph *g, const graph_value *v, graph_value *out,
                        int depth) {
  graph_copy_type(out, v);
  out->data = v->data;
  if (v->seq || v->dtype == COV_DTYPE_INVALID) return false;
  bool fixed = v->rank >= 0;
  for (int d = 0; fixed && d < v->rank; d++) fixed = v->dims[d] >= 0;
  if (fixed || v->data) return true;
  const seen *s = seen_of(p, g);
  if (!s || depth > 64 || s->vals[v->id].rank < 0 || s->vals[v->id].dtype != v->dtype) return false;
  const graph_node *pr = v->producer;
  if (pr && pr->def && pr->def->dynamic && strcmp(pr->op_type, "Loop") && strcmp(pr->op_type, "If")) return false;
  graph_value t;
  for (int k = 0; pr && k < pr->n_in; k++)
    if (pr->in[k] && !value_fixed(p, g, pr->in[k], &t, depth + 1)) return false;
  graph_copy_type(out, &s->vals[v->id]);
  out->data = NULL;
  return true;
}

static bool value_type(const cov_model_program *p, const graph *g, const graph_value *v, graph_value *out) {
  return value_fixed(p, g, v, out, 0);
}

/* ---- steps ------------------------------------------------------------------ */

static cov_model_pstep *add(cov_model_program *p, cov_model_pstep_kind kind, const graph_node *n, size_t group,
                            const char *kind_name) {
  if (p->err) return NULL;
  cov_model_pstep *ns = grow(p->steps, &p->cap, p->n, sizeof *ns);
  if (!ns) {
    p->err = cov_error(COV_OUT_OF_MEMORY, COV_AT_CALL("cov_model_program_build"), "out of memory");
    return NULL;
  }
  p->steps = ns;
  cov_model_pstep *s = &p->steps[p->n++];
  memset(s, 0, sizeof *s);
  s->kind = kind;
  s->group = group;
  s->node = n ? n->name : "";
  s->kind_name = kind_name;
  return s;
}

static void missing(cov_model_program *p, const graph_node *n, size_t group, const char *fmt, const char *a1,
                    const char *a2) {
  cov_model_pstep *s = add(p, COV_PSTEP_MISSING, n, group, "layout");
  if (!s) return;
  size_t len = strlen(fmt) + (a1 ? strlen(a1) : 0) + (a2 ? strlen(a2) : 0) + 1;
  char *why = cov_arena_alloc(p->arena, len);
  if (!why) {
    p->err = cov_error(COV_OUT_OF_MEMORY, COV_AT_CALL("cov_model_program_build"), "out of memory");
    return;
  }
  snprintf(why, len, fmt, a1 ? a1 : "", a2 ? a2 : "");
  s->why = why;
}

/* Records that a step names v (read in graph g); false when v has no
 * fixed shape (a MISSING step is added naming it). */
static bool name_value(cov_model_program *p, const graph *g, const graph_node *n, size_t group,
                       const graph_value *v) {
  for (size_t i = 0; i < p->n_vals; i++) /* named before, in the graph that makes it */
    if (!strcmp(p->vals[i]->name, v->name)) return true;
  graph_value t;
  if (!value_type(p, g, v, &t)) {
    missing(p, n, group, "value '%s' has no fixed shape (it changes between iterations, or its size depends on "
            "the data)%s", v->name, "");
    return false;
  }
  const graph_value **nv = grow(p->vals, &p->cap_vals, p->n_vals, sizeof *nv);
  if (nv) p->vals = nv;
  const graph **ng = nv ? grow(p->val_graph, &p->cap_vgraph, p->n_vals, sizeof *ng) : NULL;
  if (!nv || !ng) {
    p->err = cov_error(COV_OUT_OF_MEMORY, COV_AT_CALL("cov_model_program_build"), "out of memory");
    return false;
  }
  p->val_graph = ng;
  p->vals[p->n_vals] = v;
  p->val_graph[p->n_vals++] = g;
  return true;
}

/* A step naming values vs[0..n) (NULL entries allowed), each read in
 * graph g unless named before. */
static cov_model_pstep *add_vals(cov_model_program *p, cov_model_pstep_kind kind, const graph *g,
                                 const graph_node *n, size_t group, const graph_value *const *vs, size_t nv) {
  for (size_t k = 0; k < nv; k++)
    if (vs[k] && !name_value(p, g, n, group, vs[k])) return NULL;
  const char **names = cov_arena_array(p->arena, nv + 1, sizeof *names);
  if (!names) {
    p->err = cov_error(COV_OUT_OF_MEMORY, COV_AT_CALL("cov_model_program_build"), "out of memory");
    return NULL;
  }
  for (size_t k = 0; k < nv; k++) names[k] = vs[k] ? vs[k]->name : NULL;
  cov_model_pstep *s = add(p, kind, n, group, kind == COV_PSTEP_COPY ? "copy" : n ? n->op_type : "");
  if (s) s->vals = names, s->n_vals = nv;
  return s;
}

/* Whether a (read in ga) and b (in gb) have one dtype and shape: what
 * flows between them (a copy, a carried value) is the same bytes. A probe
 * run whose loop ran once sees a carried value that grows at one shape
 * only; this is where its change shows. */
static bool same_shape(cov_model_program *p, const graph *ga, const graph_value *a, const graph *gb,
                       const graph_value *b, const graph_node *n, size_t group) {
  graph_value ta, tb;
  if (!value_type(p, ga, a, &ta) || !value_type(p, gb, b, &tb)) return true; /* said where named */
  if (ta.dtype == tb.dtype && ta.rank == tb.rank && !memcmp(ta.dims, tb.dims, (size_t)ta.rank * sizeof ta.dims[0]))
    return true;
  char sa[128], sb[128], msg[700];
  snprintf(msg, sizeof msg, "'%s' is %s and '%s' %s: a loop-carried value that changes shape, or branches that make "
           "two shapes", a->name, graph_type_str(&ta, sa, sizeof sa), b->name, graph_type_str(&tb, sb, sizeof sb));
  missing(p, n, group, "%s%s", msg, "");
  return false;
}

static void copy_value(cov_model_program *p, const graph *from_g, const graph_value *from, const graph *to_g,
                       const graph_value *to, const graph_node *n, size_t group) {
  if (!name_value(p, from_g, n, group, from) || !same_shape(p, from_g, from, to_g, to, n, group)) return;
  const graph_value *vs[2] = {from, to};
  add_vals(p, COV_PSTEP_COPY, to_g, n, group, vs, 2);
}

static void walk(cov_model_program *p, const graph *g);

static void walk_loop(cov_model_program *p, const graph *g, const graph_node *n, size_t gi) {
  cov_status st = NULL;
  const graph *b = graph_subgraph(g, n, "body", &st);
  if (!b) {
    p->err = st;
    return;
  }
  int nf = n->n_in - n->n_implicit, carried = nf - 2, scans = (int)b->n_outputs - 1 - carried;
  if (carried < 0 || scans < 0)
    return missing(p, n, gi, "Loop '%s': its body makes another number of outputs%s", n->name, "");
  /* stacked outputs have a row per iteration: a fixed count only with a
   * constant trip count and no condition */
  if (scans > 0 && (n->in[1] || !n->in[0] || !n->in[0]->data))
    return missing(p, n, gi, "Loop '%s' has scan outputs and %s: how many rows they stack depends on the data",
                   n->name, n->in[1] ? "a condition" : "a trip count known at run time only");
  for (int k = 0; k < carried; k++) copy_value(p, g, n->in[2 + k], b, b->inputs[2 + k], n, gi);
  for (int k = 0; k < 2; k++) /* the trip count and condition are the outer graph's */
    if (n->in[k] && !name_value(p, g, n, gi, n->in[k])) return;
  const graph_value *head[4] = {n->in[0], n->in[1], b->inputs[0], b->inputs[1]};
  if (!add_vals(p, COV_PSTEP_LOOP, b, n, gi, head, 4)) return;
  walk(p, b);
  const graph_value **tail = calloc((size_t)(1 + 2 * (carried + scans)), sizeof *tail);
  if (!tail) {
    p->err = cov_error(COV_OUT_OF_MEMORY, COV_AT_CALL("cov_model_program_build"), "out of memory");
    return;
  }
  tail[0] = n->in[1] ? b->outputs[0] : NULL;
  bool same = true;
  for (int k = 0; k < carried; k++) {
    tail[1 + 2 * k] = b->outputs[1 + k], tail[2 + 2 * k] = b->inputs[2 + k];
    same = same && same_shape(p, b, b->outputs[1 + k], b, b->inputs[2 + k], n, gi);
  }
  for (int j = 0; j < scans; j++) {
    tail[1 + 2 * (carried + j)] = b->outputs[1 + carried + j];
    tail[2 + 2 * (carried + j)] = n->out[carried + j];
    if (!n->out[carried + j]) same = false, missing(p, n, gi, "Loop '%s': scan output %s has no name", n->name, "");
    else if (same && !name_value(p, g, n, gi, n->out[carried + j])) same = false; /* the outer graph's */
  }
  cov_model_pstep *next = same ? add_vals(p, COV_PSTEP_NEXT, b, n, gi, tail, (size_t)(1 + 2 * (carried + scans))) : NULL;
  if (next) next->n_carried = (size_t)carried;
  free(tail);
  for (int k = 0; k < carried; k++)
    if (n->out[k]) copy_value(p, b, b->inputs[2 + k], g, n->out[k], n, gi);
}

static void walk_branch(cov_model_program *p, const graph *g, const graph_node *n, size_t gi, const char *name) {
  cov_status st = NULL;
  const graph *br = graph_subgraph(g, n, name, &st);
  if (!br) {
    p->err = st;
    return;
  }
  if ((int)br->n_outputs != n->n_out)
    return missing(p, n, gi, "If '%s': its %s branch makes another number of outputs", n->name, name);
  walk(p, br);
  for (int k = 0; k < n->n_out; k++)
    if (n->out[k]) copy_value(p, br, br->outputs[k], g, n->out[k], n, gi);
}

static void walk_if(cov_model_program *p, const graph *g, const graph_node *n, size_t gi) {
  const graph_value *c = n->in[0];
  if (!add_vals(p, COV_PSTEP_IF, g, n, gi, &c, 1)) return;
  walk_branch(p, g, n, gi, "then_branch");
  add(p, COV_PSTEP_ELSE, n, gi, "If");
  walk_branch(p, g, n, gi, "else_branch");
  add(p, COV_PSTEP_END, n, gi, "If");
}

static bool is_move(const graph_node *n) {
  static const char *ops[] = {"Identity", "Reshape", "Flatten", "Squeeze", "Unsqueeze", NULL};
  if (n->n_out < 1 || !n->out[0] || n->n_in < 1 || !n->in[0]) return false;
  for (const char **o = ops; *o; o++)
    if (!strcmp(n->op_type, *o)) return true;
  return !strcmp(n->op_type, "Cast") && n->in[0]->dtype == n->out[0]->dtype;
}

/* Node n of the top-level graph as a PART step of its own (layout work,
 * a group no codelet call describes): the reference interpreter runs it
 * on the host at fixed shapes. In a subgraph: MISSING, saying why. */
static void part_node(cov_model_program *p, const graph *g, const graph_node *n, size_t gi, const char *why) {
  char msg[600];
  snprintf(msg, sizeof msg, "node '%s' (%s): %s", n->name, n->op_type, why);
  if (g != p->root) return missing(p, n, gi, "%s%s", msg, "");
  const graph_value *vs[130];
  size_t nv = 0, n_in = 0;
  for (int k = 0; k < n->n_in && nv < 64; k++)
    if (n->in[k] && !(n->in[k]->data && n->in[k]->kind != GV_INPUT)) vs[nv++] = n->in[k];
  n_in = nv;
  for (int k = 0; k < n->n_out && nv < 128; k++)
    if (n->out[k]) vs[nv++] = n->out[k];
  if (nv == n_in || n->n_in > 64 || n->n_out > 64) return missing(p, n, gi, "%s%s", msg, "");
  cov_model_pstep *s = add_vals(p, COV_PSTEP_PART, g, n, gi, vs, nv);
  if (s) s->n_in = n_in, s->kind_name = "part";
}

/* A move of bytes unchanged: a copy where both have one dtype and size. */
static void move_value(cov_model_program *p, const graph *g, const graph_node *n, size_t gi) {
  graph_value ta, tb;
  if (!value_type(p, g, n->in[0], &ta) || !value_type(p, g, n->out[0], &tb) || ta.dtype != tb.dtype ||
      graph_numel(&ta) != graph_numel(&tb))
    return copy_value(p, g, n->in[0], g, n->out[0], n, gi); /* says why */
  if (!name_value(p, g, n, gi, n->in[0])) return;
  const graph_value *vs[2] = {n->in[0], n->out[0]};
  add_vals(p, COV_PSTEP_COPY, g, n, gi, vs, 2);
}

static void walk_layout(cov_model_program *p, const graph *g, const graph_node *n, size_t gi) {
  if (!strcmp(n->op_type, "Loop")) return walk_loop(p, g, n, gi);
  if (!strcmp(n->op_type, "If")) return walk_if(p, g, n, gi);
  if (is_move(n)) return move_value(p, g, n, gi);
  part_node(p, g, n, gi, "layout work the frontend does");
}

static void walk_compute(cov_model_program *p, const graph *g, size_t gi) {
  const graph_group *grp = &g->groups[gi];
  const seen *s = seen_of(p, g);
  graph_value *vals = NULL;
  if (s) { /* the probe's shapes, where fixed; constants as loaded */
    vals = calloc(g->n_values + 1, sizeof *vals);
    if (!vals) {
      p->err = cov_error(COV_OUT_OF_MEMORY, COV_AT_CALL("cov_model_program_build"), "out of memory");
      return;
    }
    for (size_t i = 0; i < g->n_values; i++)
      if (!value_type(p, g, g->values[i], &vals[i])) graph_set_shape(&vals[i], -1, NULL), vals[i].data = NULL;
  }
  cov_model_group *d = NULL;
  cov_status st = graph_group_describe(g, gi, vals, &d);
  free(vals);
  if (st && cov_status_code(st) == COV_OUT_OF_MEMORY) { /* an error, not a group left out */
    p->err = st;
    return;
  }
  if (st) {
    char msg[512];
    cov_status_format(st, msg, sizeof msg);
    cov_status_free(st);
    char *nl = strchr(msg, '\n');
    if (nl) *nl = '\0';
    if (g != p->root) return missing(p, grp->nodes[0], gi, "%s%s", msg, "");
    for (int k = 0; k < grp->n_nodes && !p->err; k++) /* node by node in the interpreter */
      if (!grp->nodes[k]->dead) part_node(p, g, grp->nodes[k], gi, "a group no codelet call describes");
    return;
  }
  for (size_t k = 0; k < cov_model_group_num_inputs(d); k++) {
    int id = graph_group_input_id(d, k);
    if (id >= 0) name_value(p, g, grp->nodes[0], gi, g->values[id]);
  }
  int out = graph_group_output_id(d);
  if (out >= 0) name_value(p, g, grp->nodes[0], gi, g->values[out]);
  cov_model_pstep *ps = add(p, COV_PSTEP_GROUP, grp->nodes[0], gi, grp->kind);
  if (!ps) {
    cov_model_group_free(d);
    return;
  }
  ps->desc = d;
}

/* The steps of graph g: its groups in node order (groups are contiguous). */
static void walk(cov_model_program *p, const graph *g) {
  for (size_t i = 0; i < g->n_nodes && !p->err;) {
    int gi = g->nodes[i]->group;
    size_t end = i + 1;
    while (end < g->n_nodes && g->nodes[end]->group == gi) end++;
    const bool *part = g == p->root ? p->region.node : NULL; /* run as the PART step */
    if (part && part[i] && gi >= 0)
      ; /* the whole group is (graph_region_find) */
    else if (gi >= 0 && !g->groups[gi].layout)
      walk_compute(p, g, (size_t)gi);
    else
      for (size_t k = i; k < end && !p->err; k++)
        if (!g->nodes[k]->dead && !(part && part[k])) walk_layout(p, g, g->nodes[k], gi < 0 ? 0 : (size_t)gi);
    i = end;
  }
}

static bool fixed_cb(void *user, const graph *g, const graph_value *v) {
  graph_value t;
  return value_type(user, g, v, &t);
}

/* The region's outputs within COV_PROGRAM_MAX_CAPACITY_ELEMS. */
static cov_status check_capacities(const cov_model_program *p) {
  for (size_t k = 0; k < p->region.n_outputs; k++) {
    const graph_value *v = p->region.outputs[k], *b = &p->region.bound[v->id];
    int64_t n = graph_numel(b);
    if (b->rank >= 0 && n >= 0 && n <= COV_PROGRAM_MAX_CAPACITY_ELEMS) continue;
    char ts[128];
    cov_loc loc = {.file = p->root->file, .path = v->name};
    return cov_error(COV_OUT_OF_RANGE, &loc, "value '%s' may hold %s (its capacity: the most the model makes), "
                     "more than %lld elements, the limit for a value whose size depends on the data in an "
                     "artifact", v->name, b->rank < 0 ? "no bounded shape" : graph_type_str(b, ts, sizeof ts),
                     (long long)COV_PROGRAM_MAX_CAPACITY_ELEMS);
  }
  return NULL;
}

/* The PART step after everything else: the region reads only what the
 * rest makes, and nothing else reads what it makes. */
static cov_status add_part(cov_model_program *p, const cov_tensor *probe, size_t n_probe) {
  const graph_region *r = &p->region;
  if (!r->n_outputs) return NULL;
  const seen *sn = seen_of(p, p->root); /* the probe ran in bound mode */
  if (sn && (p->region.bound = calloc(p->root->n_values + 1, sizeof *p->region.bound)))
    for (size_t i = 0; i < p->root->n_values; i++) graph_copy_type(&p->region.bound[i], &sn->vals[i]);
  else if (sn)
    return cov_error(COV_OUT_OF_MEMORY, COV_AT_CALL("cov_model_program_build"), "out of memory");
  else
    COV_RETURN_IF_ERROR(graph_region_bound(p->root, probe, n_probe, &p->region));
  COV_RETURN_IF_ERROR(check_capacities(p));
  for (size_t k = 0; k < r->n_inputs; k++)
    if (!name_value(p, p->root, r->inputs[k]->producer, 0, r->inputs[k])) return p->err;
  const char **names = cov_arena_array(p->arena, r->n_inputs + r->n_outputs + 1, sizeof *names);
  if (!names) return cov_error(COV_OUT_OF_MEMORY, COV_AT_CALL("cov_model_program_build"), "out of memory");
  for (size_t k = 0; k < r->n_inputs; k++) names[k] = r->inputs[k]->name;
  for (size_t k = 0; k < r->n_outputs; k++) names[r->n_inputs + k] = r->outputs[k]->name;
  const graph_node *first = NULL;
  for (size_t i = 0; i < p->root->n_nodes && !first; i++)
    if (r->node[i]) first = p->root->nodes[i];
  cov_model_pstep *s = add(p, COV_PSTEP_PART, first, first && first->group >= 0 ? (size_t)first->group : 0, "part");
  if (s) s->vals = names, s->n_vals = r->n_inputs + r->n_outputs, s->n_in = r->n_inputs;
  return p->err;
}

cov_status cov_model_program_build(const cov_model *m, const cov_tensor *probe, size_t n_probe,
                                   cov_model_program **out) {
  if (!out || !m) return cov_error(COV_INVALID_ARGUMENT, COV_AT_CALL("cov_model_program_build"), "NULL");
  *out = NULL;
  cov_model_program *p = calloc(1, sizeof *p);
  if (!p || !(p->arena = cov_arena_create())) {
    free(p);
    return cov_error(COV_OUT_OF_MEMORY, COV_AT_CALL("cov_model_program_build"), "out of memory");
  }
  p->root = graph_of_model(m);
  cov_status st = NULL;
  if (has_subgraphs(p->root)) {
    cov_tensor *outs = calloc(p->root->n_outputs + 1, sizeof *outs);
    /* in bound mode: it changes only operators with data-dependent output
     * sizes, which run inside the part (graph_region_find), so the shapes
     * outside it are a plain run's and those inside it its capacities */
    graph_run_io io = {probe, NULL, n_probe, outs, NULL, p->root->n_outputs, false, on_trace, p, true};
    st = outs ? graph_run_values(p->root, &io, NULL, NULL, NULL)
              : cov_error(COV_OUT_OF_MEMORY, COV_AT_CALL("cov_model_program_build"), "out of memory");
    for (size_t i = 0; outs && i < p->root->n_outputs; i++) cov_tensor_release(&outs[i]);
    free(outs);
    if (st) st = cov_status_annotate(st, "running the model on its probe inputs (the shapes of its subgraphs): ");
  }
  if (!st) st = graph_region_find(p->root, fixed_cb, p, &p->region);
  if (!st) walk(p, p->root);
  if (!st) st = p->err, p->err = NULL;
  if (!st) st = add_part(p, probe, n_probe);
  if (st) {
    cov_model_program_free(p);
    return st;
  }
  *out = p;
  return NULL;
}

size_t cov_model_program_count(const cov_model_program *p) { return p ? p->n : 0; }

const cov_model_pstep *cov_model_program_step(const cov_model_program *p, size_t i) {
  return p && i < p->n ? &p->steps[i] : NULL;
}

bool cov_model_program_value(const cov_model_program *p, const char *name, cov_tensor *out) {
  if (!p || !name || !out) return false;
  for (size_t i = 0; i < p->n_vals; i++) {
    if (strcmp(p->vals[i]->name, name)) continue;
    graph_value t;
    memset(out, 0, sizeof *out);
    out->rank = -1;
    if (!value_type(p, p->val_graph[i], p->vals[i], &t)) return true;
    out->dtype = t.dtype;
    out->rank = t.rank;
    for (int d = 0; d < t.rank; d++) out->shape[d] = t.dims[d];
    out->data = t.data;
    return true;
  }
  return false;
}

bool cov_model_program_capacity(const cov_model_program *p, const char *name, cov_tensor *cap, unsigned *dynamic) {
  if (!p || !name || !cap || !dynamic || !p->region.bound) return false;
  for (size_t k = 0; k < p->region.n_outputs; k++) {
    const graph_value *v = p->region.outputs[k], *b = &p->region.bound[v->id];
    if (strcmp(v->name, name) || b->rank < 0) continue;
    memset(cap, 0, sizeof *cap);
    cap->dtype = b->dtype, cap->rank = b->rank;
    *dynamic = 0;
    for (int d = 0; d < b->rank; d++) {
      cap->shape[d] = b->dims[d];
      if (v->rank < 0 || v->rank != b->rank || v->dims[d] < 0) *dynamic |= 1u << d;
    }
    return true;
  }
  return false;
}

void cov_model_program_free(cov_model_program *p) {
  if (!p) return;
  graph_region_free(&p->region);
  for (size_t i = 0; i < p->n; i++) cov_model_group_free((cov_model_group *)p->steps[i].desc);
  for (size_t i = 0; i < p->n_seen; i++) free(p->seen[i].vals);
  free(p->seen);
  free(p->steps);
  free(p->vals);
  free(p->val_graph);
  cov_arena_destroy(p->arena);
  free(p);
}
