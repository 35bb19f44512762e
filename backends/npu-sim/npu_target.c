/* backends/npu-sim/npu_target.c: the NPU an ACG describes, and the digest
 * that ties a program to the ACG it was compiled for.
 *
 * Contractions run on any unit with a mac capability acg_mac_form_of
 * accepts (a systolic array, a matrix unit, SIMD lanes, a scalar unit; the
 * check the mapper's binding applies too). The systolic array's dataflow is
 * read from the graph's shape rather than from a flag: an array whose results go to a register file beside it (an edge array ->
 * regfile) keeps partial sums in the PEs (output-stationary); an array that
 * writes a scratchpad streams partial sums out (weight-stationary). */
#include <string.h>

#include "backends/npu-sim/npu_internal.h"
#include "common/c_locale.h"

int npu_find_edge(const cov_acg *g, int from, int to) {
  for (int e = 0; e < g->n_edges; e++) {
    const acg_edge *ed = &g->edges[e];
    if (ed->from == from && ed->to == to) return e;
  }
  for (int e = 0; e < g->n_edges; e++) {
    const acg_edge *ed = &g->edges[e];
    if (ed->bidirectional && ed->from == to && ed->to == from) return e;
  }
  return -1;
}

typedef struct fnv {
  uint64_t h;
} fnv;
static void fnv_bytes(fnv *f, const void *p, size_t n) {
  const unsigned char *b = p;
  for (size_t i = 0; i < n; i++) {
    f->h ^= b[i];
    f->h *= 1099511628211ull;
  }
}
static void fnv_str(fnv *f, const char *s) { fnv_bytes(f, s ? s : "", strlen(s ? s : "") + 1); }
static void fnv_u(fnv *f, uint64_t v) {
  unsigned char b[8];
  for (int i = 0; i < 8; i++) b[i] = (unsigned char)(v >> (8 * i));
  fnv_bytes(f, b, 8);
}
/* Doubles hashed as decimal text so the digest does not depend on the host's
 * float layout. */
static void fnv_d(fnv *f, double d) {
  char buf[40];
  common_snprintf(buf, sizeof buf, "%.17g", d); /* the same digest in every locale */
  fnv_str(f, buf);
}

uint64_t npu_acg_digest(const cov_acg *g) {
  fnv f = {14695981039346656037ull};
  fnv_d(&f, g->clock_mhz);
  fnv_u(&f, (uint64_t)g->n_storage);
  for (int i = 0; i < g->n_storage; i++) {
    const acg_storage *s = &g->storage[i];
    fnv_str(&f, s->name);
    fnv_u(&f, s->kind);
    fnv_u(&f, s->capacity_bytes);
    fnv_u(&f, s->instances);
    fnv_u(&f, s->banks);
    fnv_u(&f, s->width_bits);
    fnv_u(&f, s->double_buffer);
    fnv_d(&f, s->bandwidth_bytes_per_cycle);
  }
  fnv_u(&f, (uint64_t)g->n_compute);
  for (int i = 0; i < g->n_compute; i++) {
    const acg_compute *c = &g->compute[i];
    fnv_str(&f, c->name);
    fnv_u(&f, c->kind);
    fnv_u(&f, c->dims[0]);
    fnv_u(&f, c->dims[1]);
    /* timing depends on it; hashed only when set, so the digests of ACGs
     * that predate the field stay as they were */
    if (c->weight_buffers > 1) fnv_u(&f, c->weight_buffers);
    /* cores (ISA.md "Cores"), hashed only when several, as weight_buffers */
    if (c->instances > 1) fnv_u(&f, 0x20000u | c->instances);
    fnv_u(&f, (uint64_t)c->n_caps);
    for (int k = 0; k < c->n_caps; k++) {
      const acg_capability *cap = &c->caps[k];
      fnv_u(&f, cap->op);
      for (int j = 0; j < cap->n_in; j++) fnv_u(&f, cap->in[j]);
      fnv_u(&f, cap->out);
      for (int j = 0; j < cap->tile_rank; j++) fnv_u(&f, cap->tile[j]);
      fnv_d(&f, cap->throughput);
      fnv_u(&f, cap->latency);
      /* hashed only when set, as weight_buffers */
      if (cap->fused) fnv_u(&f, 0x10000u | cap->fused);
    }
  }
  fnv_u(&f, (uint64_t)g->n_edges);
  for (int i = 0; i < g->n_edges; i++) {
    const acg_edge *e = &g->edges[i];
    fnv_u(&f, (uint64_t)e->from);
    fnv_u(&f, (uint64_t)e->to);
    fnv_d(&f, e->bandwidth_bytes_per_cycle);
    fnv_u(&f, e->latency_cycles);
    fnv_u(&f, e->bidirectional);
  }
  return f.h;
}

/* The cores (ISA.md "Cores"): the array's instances. Every compute node is
 * one per core; an on-chip storage node is one per core or, with instances
 * 1, one that the cores share. */
static cov_status npu_target_cores(const cov_acg *g, npu_target *t, int u, const cov_loc *loc) {
  uint32_t n = g->compute[u].instances ? g->compute[u].instances : 1;
  t->cores = n;
  if (n > NPU_MAX_CORES)
    return cov_error(COV_UNSUPPORTED, loc, "ACG '%s': %s has %u instances; npu-sim runs at most %d cores",
                     g->name, g->compute[u].name, n, NPU_MAX_CORES);
  for (int i = 0; i < g->n_compute; i++) {
    uint32_t k = g->compute[i].instances ? g->compute[i].instances : 1;
    if (k != n)
      return cov_error(COV_UNSUPPORTED, loc,
                       "ACG '%s': %s has %u instances, %s %u: npu-sim runs cores of one array and "
                       "one of every other unit each (give every compute node the same instances)",
                       g->name, g->compute[i].name, k, g->compute[u].name, n);
  }
  for (int i = 0; i < g->n_storage; i++) {
    uint32_t k = g->storage[i].instances ? g->storage[i].instances : 1;
    if (g->storage[i].kind != ACG_DRAM && k != 1 && k != n)
      return cov_error(COV_UNSUPPORTED, loc,
                       "ACG '%s': storage %s has %u instances for %u cores: one per core (%u) or "
                       "one shared (1)",
                       g->name, g->storage[i].name, k, n, n);
  }
  return NULL;
}

cov_status npu_target_init(const cov_acg *g, npu_target *t) {
  memset(t, 0, sizeof *t);
  t->acg = g;
  t->dram = t->array = t->simd = -1;
  for (int i = 0; i < g->n_storage && t->dram < 0; i++)
    if (g->storage[i].kind == ACG_DRAM) t->dram = i;
  for (int i = 0; i < g->n_compute; i++) {
    if (g->compute[i].kind == ACG_SYSTOLIC && t->array < 0) t->array = i;
    if (g->compute[i].kind == ACG_SIMD && t->simd < 0) t->simd = i;
  }
  /* any unit with a mac capability of a form acg_mac_form_of accepts runs
   * contractions: a systolic array, a matrix unit, SIMD lanes, a scalar unit */
  bool mac = false;
  int mac_unit = t->array; /* the unit whose instances are the cores */
  for (int i = 0; i < g->n_compute && !mac; i++)
    for (int k = 0; k < g->compute[i].n_caps && !mac; k++) {
      acg_mac_form f;
      mac = acg_mac_form_of(g, i, k, &f, NULL, 0);
      if (mac && mac_unit < 0) mac_unit = i;
    }
  cov_loc loc = {g->file, 0, 0, NULL};
  if (t->dram < 0 || !mac)
    return cov_error(COV_UNSUPPORTED, &loc,
                     "ACG '%s' is not an NPU: npu-sim needs a DRAM storage node and a compute node "
                     "with a mac capability it runs (acg_mac_form_of: f16, bf16, e4m3, e5m2 or f32 into f32, "
                     "i8 into i32; a matrix unit's with a tile [M, N, K])",
                     g->name);
  COV_RETURN_IF_ERROR(npu_target_cores(g, t, mac_unit, &loc));
  int an = t->array >= 0 ? npu_node_of_compute(g, t->array) : -1;
  for (int s = 0; s < g->n_storage && an >= 0; s++)
    if (g->storage[s].kind == ACG_REGFILE && npu_find_edge(g, an, s) >= 0)
      t->output_stationary = true;
  t->digest = npu_acg_digest(g);
  return NULL;
}
