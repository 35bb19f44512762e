/* mapper/map_bind.c: capability matching and operand paths.
 *
 * The main statement goes to a compute node whose capability has its op and
 * dtypes: a mac prefers systolic/matrix nodes (the array is what they are
 * for), exact dtypes first, else a narrower float multiplicand with the same
 * accumulator (f16 x f16 -> f32 for an f32 layer, said by --explain); a
 * reduce or map goes to a SIMD node. Each operand then gets the path of
 * software-managed storage along ACG edges between DRAM and that node (the
 * deepest one: more staging levels means more reuse to exploit); caches are
 * crossed, not used as levels. Everything is read from the ACG.
 */
#include <string.h>

#include "mapper/map_internal.h"
#include "common/loc.h"

static const char *kind_word(const map_problem *p) {
  return p->codelet;
}

/* Significant bits an integer dtype's values need (their magnitude), or 0
 * for types this rule does not cover. */
static int int_value_bits(cov_dtype t) {
  return t == COV_I8 ? 7 : t == COV_U8 ? 8 : 0;
}

/* An integer mac on a float capability is exact when the capability's
 * multiplicands hold every value, and its accumulator every product and
 * every partial sum of `red` of them: precision bits from the ACG's dtypes,
 * never a target's name (i8 on f16 x f16 -> f32: 8 <= 11, and 7 + 7 +
 * log2(red) <= 24, so up to 1024 terms per output). */
static bool int_on_float_exact(cov_dtype model, const acg_capability *c, int n_in, int64_t red) {
  int vb = int_value_bits(model);
  if (!vb || !cov_dtype_is_float(c->out)) return false;
  for (int i = 0; i < n_in && i < c->n_in; i++)
    if (!cov_dtype_is_float(c->in[i]) || cov_dtype_precision_bits(c->in[i]) < vb + 1) return false;
  int lg = 0;
  while (lg < 62 && ((int64_t)1 << lg) < red) lg++;
  return 2 * vb + lg <= cov_dtype_precision_bits(c->out);
}

static int dtype_fits(cov_dtype model, cov_dtype acc, const acg_capability *c, int n_in,
                      int64_t red, bool *narrowed) {
  if (int_value_bits(model) && c->op == COV_OP_MAC && c->in[0] != model) {
    *narrowed = int_on_float_exact(model, c, n_in, red);
    return *narrowed;
  }
  for (int i = 0; i < n_in && i < c->n_in; i++) {
    if (c->in[i] == model) continue;
    /* a narrower float multiplicand accumulating in the model's accumulator */
    if (cov_dtype_is_float(model) && cov_dtype_is_float(c->in[i]) &&
        cov_dtype_precision_bits(c->in[i]) < cov_dtype_precision_bits(model) && c->out == acc) {
      *narrowed = true;
      continue;
    }
    return 0;
  }
  return c->out == acc;
}

static bool has_edge(const cov_acg *g, int a, int b) {
  for (int e = 0; e < g->n_edges; e++) {
    const acg_edge *E = &g->edges[e];
    if ((E->from == a && E->to == b) || (E->bidirectional && E->from == b && E->to == a)) return true;
  }
  return false;
}

int map_onchip_mover(const cov_acg *g, int from, int to, cov_dtype din, cov_dtype dout, int *cap) {
  for (int c = 0; c < g->n_compute; c++) {
    const acg_compute *cn = &g->compute[c];
    if (cn->kind != ACG_SIMD || !has_edge(g, from, g->n_storage + c) || !has_edge(g, g->n_storage + c, to))
      continue;
    for (int pass = 0; pass < 2; pass++) /* a copy, else a cast */
      for (int k = 0; k < cn->n_caps; k++)
        if (cn->caps[k].op == (pass ? COV_OP_CAST : COV_OP_COPY) && cn->caps[k].in[0] == din &&
            cn->caps[k].out == dout) {
          if (cap) *cap = k;
          return c;
        }
  }
  return -1;
}

/* Whether an input's tile can hop from storage `from` into storage `to` in
 * a program (map_onchip_mover). */
static bool hop_runs(const cov_acg *g, int from, int to, cov_dtype dt) {
  if (!acg_is_storage(g, from) || !acg_is_storage(g, to)) return true;
  acg_storage_kind kf = g->storage[from].kind, kt = g->storage[to].kind;
  if (kf == ACG_DRAM || kf == ACG_CACHE || kt != ACG_SCRATCHPAD) return true;
  return map_onchip_mover(g, from, to, dt, dt, NULL) >= 0;
}

/* Depth-first search for the simple path from `from` to `to` with the most
 * non-cache storage nodes; ties go to the lexicographically smaller node
 * sequence (deterministic). */
typedef struct pathsearch {
  const cov_acg *g;
  int to;
  int cur[16], n_cur;
  int cur_edges[16];
  int best[16], n_best, best_score;
  int best_edges[16];
  bool on[ACG_MAX_NODES];
  bool through_compute;
  cov_dtype dt; /* the tile's dtype on chip */
  const bool *taken;
} pathsearch;

/* 10 per staging level, minus 1 per node another operand already uses
 * (operands spread over the buffers the ACG provides: ibuf, wbuf, ...) */
static int score(const pathsearch *ps, const int *nodes, int n) {
  int s = 0;
  for (int i = 0; i < n; i++)
    if (acg_is_storage(ps->g, nodes[i]) && ps->g->storage[nodes[i]].kind != ACG_CACHE &&
        ps->g->storage[nodes[i]].kind != ACG_DRAM) {
      s += 10;
      if (ps->taken && ps->taken[nodes[i]]) s -= 1;
    }
  return s;
}

static void dfs(pathsearch *ps, int node) {
  if (node == ps->to) {
    int sc = score(ps, ps->cur, ps->n_cur);
    if (ps->through_compute) sc = 1000 - 2 * (sc / 10 + 1) * 10 + sc; /* results: fewest levels */
    bool better = sc > ps->best_score;
    if (sc == ps->best_score && ps->n_best > 0) {
      for (int i = 0; i < ps->n_cur && i < ps->n_best; i++)
        if (ps->cur[i] != ps->best[i]) {
          better = ps->cur[i] < ps->best[i];
          break;
        }
    }
    if (better || ps->n_best == 0) {
      ps->best_score = sc;
      ps->n_best = ps->n_cur;
      memcpy(ps->best, ps->cur, sizeof ps->cur);
      memcpy(ps->best_edges, ps->cur_edges, sizeof ps->cur_edges);
    }
    return;
  }
  if (ps->n_cur >= 12) return;
  for (int e = 0; e < ps->g->n_edges; e++) {
    const acg_edge *ed = &ps->g->edges[e];
    int next = -1;
    if (ed->from == node) next = ed->to;
    else if (ed->bidirectional && ed->to == node) next = ed->from;
    if (next < 0 || ps->on[next]) continue;
    /* data crosses storage; only results may pass through a (SIMD) compute
     * node on their way out (acc -> vector unit -> buffer) */
    if (next != ps->to && !acg_is_storage(ps->g, next) &&
        (!ps->through_compute || ps->g->compute[next - ps->g->n_storage].kind != ACG_SIMD))
      continue;
    if (!ps->through_compute && !hop_runs(ps->g, node, next, ps->dt)) continue;
    ps->on[next] = true;
    ps->cur_edges[ps->n_cur - 1] = e;
    ps->cur[ps->n_cur++] = next;
    dfs(ps, next);
    ps->n_cur--;
    ps->on[next] = false;
  }
}

/* Fills path[] (storage per level, level 0 DRAM) and edges[] (edge into each
 * level in the direction of flow, for level >= 1; for the output the edge
 * leaving it towards DRAM). Returns the number of levels, 0 if no path. */
static int find_path(const cov_acg *g, int compute, bool to_dram, cov_dtype dt, const bool *taken,
                     int *path, int *edges) {
  int best_n = 0, best_score = -1;
  int bp[16], be[16];
  for (int d = 0; d < g->n_storage; d++) {
    if (g->storage[d].kind != ACG_DRAM) continue;
    pathsearch ps;
    memset(&ps, 0, sizeof ps);
    ps.g = g;
    int from = to_dram ? compute : d;
    ps.to = to_dram ? d : compute;
    ps.cur[0] = from;
    ps.n_cur = 1;
    ps.on[from] = true;
    ps.best_score = -1;
    ps.through_compute = to_dram;
    ps.taken = taken;
    ps.dt = dt;
    dfs(&ps, from);
    /* inputs: the most staging levels (reuse); results: the fewest (write
     * back without detours) */
    int sc = ps.best_score;
    if (ps.n_best && sc > best_score) {
      best_score = sc;
      best_n = ps.n_best;
      memcpy(bp, ps.best, sizeof bp);
      memcpy(be, ps.best_edges, sizeof be);
    }
  }
  if (!best_n) return 0;
  /* storage nodes along the path, ordered from DRAM inwards */
  int n = 0;
  int nodes[16], node_edge[16];
  for (int i = 0; i < best_n; i++) {
    int k = to_dram ? best_n - 1 - i : i;
    int nd = bp[k];
    if (!acg_is_storage(g, nd) || g->storage[nd].kind == ACG_CACHE) continue;
    nodes[n] = nd;
    /* edge of the flow into this level (inputs: from the previous node;
     * output: leaving this node towards DRAM) */
    node_edge[n] = to_dram ? (k < best_n - 1 ? be[k] : -1) : (k > 0 ? be[k - 1] : -1);
    n++;
  }
  for (int l = 0; l < n && l < MAP_MAX_LEVELS; l++) {
    path[l] = nodes[l];
    edges[l] = node_edge[l];
  }
  /* the input edge into level l is the last edge before it: for a path
   * through a cache, report the first edge leaving the outer level instead */
  return n > MAP_MAX_LEVELS ? MAP_MAX_LEVELS : n;
}

static void cap_text(const acg_capability *c, char *buf, size_t n) {
  snprintf(buf, n, "%s(%s,%s->%s)", common_op_name(c->op), cov_dtype_name(c->in[0]),
           cov_dtype_name(c->n_in > 1 ? c->in[1] : c->in[0]), cov_dtype_name(c->out));
}

cov_status map_bind_target(const map_problem *p, const cov_acg *g, map_target *t) {
  return map_bind_target_on(p, g, -1, t);
}

/* The compute node and capability for the main statement: two passes
 * (exact dtypes, then narrowed), systolic/matrix before SIMD for a mac,
 * the highest throughput of each; t->node stays -1 where none runs it
 * (why: the first reason a mac unit gave). */
static void pick_capability(const map_problem *p, const cov_acg *g, int only, cov_dtype model,
                            cov_dtype acc, int64_t red, map_target *t, char *why, size_t why_size) {
  int n_in = p->kind == MAP_MAIN_MAC ? 2 : p->n_inputs;
  for (int pref = 0; pref < 2 && t->node < 0; pref++) {
    for (int pass = 0; pass < 2 && t->node < 0; pass++) {
      double best_tp = -1;
      for (int c = 0; c < g->n_compute; c++) {
        const acg_compute *cn = &g->compute[c];
        bool array = cn->kind == ACG_SYSTOLIC || cn->kind == ACG_MATRIX;
        if (p->kind == MAP_MAIN_MAC ? (pref == 0) != array : cn->kind != ACG_SIMD) continue;
        if (only >= 0 && g->n_storage + c != only) continue;
        for (int k = 0; k < cn->n_caps; k++) {
          const acg_capability *cp = &cn->caps[k];
          if (cp->op != p->op) continue;
          bool narrowed = false;
          if (!dtype_fits(model, acc, cp, n_in, red, &narrowed) || narrowed != (pass == 1))
            continue;
          /* the one check the code generator applies too (acg_mac_form_of) */
          if (p->kind == MAP_MAIN_MAC && !map_mac_runs(g, g->n_storage + c, k, why[0] ? NULL : why, why_size))
            continue;
          if (cp->throughput > best_tp) {
            best_tp = cp->throughput;
            t->node = g->n_storage + c;
            t->cap = k;
            t->narrowed = narrowed;
            t->mul_dtype = cp->in[0];
            t->acc_dtype = cp->out;
          }
        }
      }
    }
  }
}

/* The refusal where no capability runs the main statement: what it needs,
 * what the ACG offers, and why a mac unit could not. */
static cov_status no_capability(const map_problem *p, const cov_acg *g, int only, cov_dtype model,
                                cov_dtype acc, int64_t red, const char *why) {
  char offers[512] = "";
  size_t len = 0;
  for (int c = 0; c < g->n_compute; c++)
    for (int k = 0; k < g->compute[c].n_caps; k++) {
      if (g->compute[c].caps[k].op != p->op) continue;
      char b[96];
      cap_text(&g->compute[c].caps[k], b, sizeof b);
      len += (size_t)snprintf(offers + len, len < sizeof offers ? sizeof offers - len : 0,
                              "%s%s on %s", len ? ", " : "", b, g->compute[c].name);
      if (len >= sizeof offers) len = sizeof offers - 1;
    }
  const char *tn = cov_dtype_name(model);
  char exact[192] = "";
  if (int_value_bits(model) && p->kind == MAP_MAIN_MAC)
    snprintf(exact, sizeof exact,
             " (a float mac would be exact only if its multiplicands held %d-bit values and "
             "its accumulator 2 x %d + log2(%lld terms) bits)",
             int_value_bits(model) + 1, int_value_bits(model), (long long)red);
  if (only >= 0)
    return cov_error(COV_MAPPING_FAILED, COV_AT(NULL, p->layer), "%s: %s cannot run it", kind_word(p),
                     acg_node_name(g, only));
  return cov_error(COV_MAPPING_FAILED, COV_AT(NULL, p->layer),
                   "%s needs %s(%s,%s->%s)%s; %s offers %s%s%s%s", kind_word(p), common_op_name(p->op),
                   tn, tn, cov_dtype_name(acc),
                   cov_dtype_is_float(model) ? " or a narrower float" : "", g->name,
                   len ? offers : "no such capability", exact, why[0] ? "; " : "", why);
}

/* The bound unit's shape (t->dims, t->tiles) and the SIMD unit for the
 * epilogue. */
static void unit_shape(const map_problem *p, const cov_acg *g, map_target *t) {
  const acg_compute *cn = &g->compute[t->node - g->n_storage];
  const acg_capability *cp = &cn->caps[t->cap];
  acg_mac_form form;
  t->tiles = p->kind == MAP_MAIN_MAC && p->n_inputs == 2 && map_mac_tiles(g, t->node, t->cap, &form);
  if (t->tiles) { /* k on the rows, n on the columns of one instruction */
    t->dims[0] = form.rows;
    t->dims[1] = form.cols;
  } else if (cn->kind == ACG_SIMD) {
    t->dims[0] = cn->dims[0] ? cn->dims[0] : 1;
    t->dims[1] = 1;
  } else {
    t->dims[0] = cp->tile_rank >= 1 ? cp->tile[0] : cn->dims[0];
    t->dims[1] = cp->tile_rank >= 2 ? cp->tile[1] : cn->dims[1];
  }
  for (int c = 0; c < g->n_compute; c++)
    if (g->compute[c].kind == ACG_SIMD) {
      t->simd_node = g->n_storage + c;
      break;
    }
}

/* Each operand's storage path from DRAM to its unit (t->path, edge_in),
 * and the number of levels. */
static cov_status bind_paths(const map_problem *p, const cov_acg *g, map_target *t) {
  t->n_levels = 0;
  bool taken[ACG_MAX_NODES] = {0};
  for (int o = 0; o < p->n_operands; o++) {
    for (int l = 0; l < MAP_MAX_LEVELS; l++) t->path[o][l] = t->edge_in[o][l] = -1;
    const map_operand *op = &p->operands[o];
    /* a bias the array preloads (map_bias.c) goes to the array */
    bool on_array = op->role != MAP_ROLE_VECTOR || (p->bias_init && o == p->bias_op);
    int target = on_array ? t->node : t->simd_node;
    if (target < 0)
      return cov_error(COV_MAPPING_FAILED, COV_AT(NULL, p->layer), "%s: %s has no SIMD unit for the epilogue's %s",
                       p->layer, g->name, op->name);
    int n = find_path(g, target, op->role == MAP_ROLE_OUTPUT, map_place_dtype(t, p, o, 1), taken,
                      t->path[o], t->edge_in[o]);
    for (int l = 1; l < n; l++) taken[t->path[o][l]] = true;
    if (n < 2)
      return cov_error(COV_MAPPING_FAILED, COV_AT(NULL, p->layer),
                       "%s: no path through on-chip storage between DRAM and %s for operand %s on %s",
                       p->layer, acg_node_name(g, target), op->name, g->name);
    if (n > t->n_levels) t->n_levels = n;
  }
  return NULL;
}

/* Replicated storage and compute (a GPU's LDS per CU, matrix units per
 * wave): schedules spread tiles over them with spatial loops. */
static void bind_replicas(const map_problem *p, const cov_acg *g, map_target *t) {
  t->wg_max = t->wave_max = 1;
  t->cores = map_cores(g, t->node);
  int l1 = t->path[0][1];
  if (l1 >= 0 && g->storage[l1].instances > 1) {
    t->wg_max = g->storage[l1].instances;
    /* a workgroup needs its own copy of every operand's on-chip tiles: no
     * more of them than any storage on a path has instances (an NPU's
     * buffer that its cores share) */
    for (int o = 0; o < p->n_operands; o++)
      for (int l = 1; l < MAP_MAX_LEVELS; l++) {
        int nd = t->path[o][l];
        if (nd >= 0 && g->storage[nd].instances >= 1 && g->storage[nd].instances < t->wg_max)
          t->wg_max = g->storage[nd].instances;
      }
    uint32_t ci = g->compute[t->node - g->n_storage].instances;
    if (t->n_levels >= 3 && ci > g->storage[l1].instances && ci % g->storage[l1].instances == 0)
      t->wave_max = ci / g->storage[l1].instances;
  }
}

cov_status map_bind_target_on(const map_problem *p, const cov_acg *g, int only, map_target *t) {
  memset(t, 0, sizeof *t);
  t->acg = g;
  t->node = t->cap = -1;
  t->simd_node = -1;
  cov_dtype model = p->operands[0].dtype;
  cov_dtype acc = cdl_acc_dtype(model);
  if (p->kind != MAP_MAIN_MAC) acc = model;
  int64_t red = 1; /* terms summed into one output: the reduction loops' trips */
  for (int l = 0; l < p->n_loops; l++)
    if (p->reduction[l] && p->extent[l] > 0) red = red > INT64_MAX / p->extent[l] ? INT64_MAX : red * p->extent[l];
  char why[160] = "";
  pick_capability(p, g, only, model, acc, red, t, why, sizeof why);
  if (t->node < 0) return no_capability(p, g, only, model, acc, red, why);
  unit_shape(p, g, t);
  COV_RETURN_IF_ERROR(bind_paths(p, g, t));
  bind_replicas(p, g, t);
  return NULL;
}

/* Whether data can move from node a to node b over one ACG edge. */
static bool edge_between(const cov_acg *g, int a, int b) { return has_edge(g, a, b); }

cov_status map_bind_epilogue_storage(const map_schedule *proto, map_target *t) {
  const cov_acg *g = t->acg;
  t->epi_node = -1;
  t->epi_in_place = false;
  if (proto->n_vops == 0) return NULL;
  int simd = proto->vops[0].node;
  int out1 = t->path[proto->prob.output][1];
  /* the epilogue starts from the output tile where the main loop nest left
   * it: the SIMD unit must read that storage over an edge of the ACG */
  if (out1 >= 0 && !edge_between(g, out1, simd))
    return cov_error(COV_MAPPING_FAILED, COV_AT(NULL, proto->prob.layer),
                     "%s: the epilogue on '%s' cannot read the output tile in '%s': %s has no "
                     "edge %s -> %s",
                     proto->prob.layer, acg_node_name(g, simd), acg_node_name(g, out1), g->name,
                     acg_node_name(g, out1), acg_node_name(g, simd));
  /* the output's level-1 storage reaches DRAM along the output's own path;
   * any other storage needs an edge to DRAM of its own. The NPU code
   * generator places the epilogue by the same rule. */
  for (int k = -1; k < g->n_storage; k++) {
    int b = k < 0 ? out1 : k;
    if (b < 0 || g->storage[b].kind == ACG_DRAM || g->storage[b].kind == ACG_CACHE) continue;
    if (!edge_between(g, simd, b) || !edge_between(g, b, simd)) continue;
    bool to_dram = b == out1;
    for (int d = 0; d < g->n_storage && !to_dram; d++)
      to_dram = g->storage[d].kind == ACG_DRAM && edge_between(g, b, d);
    if (!to_dram) continue;
    t->epi_node = b;
    t->epi_in_place = b == out1;
    return NULL;
  }
  return cov_error(COV_MAPPING_FAILED, COV_AT(NULL, proto->prob.layer),
                   "%s: the epilogue's temporaries need storage that %s both reads and writes "
                   "and that can store to DRAM; %s has none",
                   proto->prob.layer, acg_node_name(g, simd), g->name);
}
