/* acg/acg_graph.c: naming and traversal helpers over a built ACG. */
#include <string.h>

#include "acg/acg_ir.h"

const char *acg_node_name(const cov_acg *g, int node) {
  if (node < 0 || node >= acg_n_nodes(g)) return "?";
  return node < g->n_storage ? g->storage[node].name : g->compute[node - g->n_storage].name;
}

const acg_src *acg_node_src(const cov_acg *g, int node) {
  return node < g->n_storage ? &g->storage[node].src : &g->compute[node - g->n_storage].src;
}

int acg_find_node(const cov_acg *g, const char *name) {
  for (int i = 0; i < acg_n_nodes(g); i++)
    if (strcmp(acg_node_name(g, i), name) == 0) return i;
  return -1;
}

const char *acg_storage_kind_name(acg_storage_kind k) {
  static const char *const names[] = {"dram", "cache", "scratchpad", "regfile"};
  return k < ACG_STORAGE_KIND_COUNT ? names[k] : "?";
}

const char *acg_compute_kind_name(acg_compute_kind k) {
  static const char *const names[] = {"systolic", "matrix", "simd", "scalar"};
  return k < ACG_COMPUTE_KIND_COUNT ? names[k] : "?";
}

/* Breadth-first from every DRAM at once; edges marked bidirectional count
 * both ways. O(nodes * edges), fine for the few dozen nodes an ACG has. */
void acg_levels_from_dram(const cov_acg *g, int *out) {
  int n = acg_n_nodes(g);
  for (int i = 0; i < n; i++) out[i] = (i < g->n_storage && g->storage[i].kind == ACG_DRAM) ? 0 : -1;
  for (int level = 0, changed = 1; changed; level++) {
    changed = 0;
    for (int e = 0; e < g->n_edges; e++) {
      const acg_edge *ed = &g->edges[e];
      if (out[ed->from] == level && out[ed->to] < 0) {
        out[ed->to] = level + 1;
        changed = 1;
      }
      if (ed->bidirectional && out[ed->to] == level && out[ed->from] < 0) {
        out[ed->from] = level + 1;
        changed = 1;
      }
    }
  }
}

static int edge_into(const cov_acg *g, int from, int to) {
  for (int e = 0; e < g->n_edges; e++) {
    const acg_edge *ed = &g->edges[e];
    if ((ed->from == from && ed->to == to) || (ed->bidirectional && ed->from == to && ed->to == from))
      return e;
  }
  return -1;
}

bool acg_weights_overlap(const cov_acg *g, int array, int a_buf, int b_buf, int pre_buf) {
  int u = array - g->n_storage;
  if (u < 0 || u >= g->n_compute || g->compute[u].kind != ACG_SYSTOLIC ||
      g->compute[u].weight_buffers < 2)
    return false;
  int eb = edge_into(g, b_buf, array);
  if (eb < 0 || eb == edge_into(g, a_buf, array)) return false;
  return pre_buf < 0 || eb != edge_into(g, pre_buf, array);
}

uint32_t acg_bank_degree(const acg_storage *s, uint64_t addr, int64_t stride, uint32_t n) {
  uint32_t banks = s->banks ? s->banks : 1;
  uint64_t word = s->width_bits >= 8 ? s->width_bits / 8 : 1;
  uint32_t ports = s->ports ? s->ports : 1;
  /* Fast paths: one address (a broadcast), and runs that step by at most a
   * word, which touch consecutive words and so spread over the banks. */
  if (n <= 1 || stride == 0) return 1;
  if (stride > 0 && (uint64_t)stride <= word) {
    uint64_t w0 = addr / word, w1 = (addr + (uint64_t)stride * (n - 1)) / word;
    uint64_t nw = w1 - w0 + 1, per_bank = (nw + banks - 1) / banks;
    return (uint32_t)((per_bank + ports - 1) / ports);
  }
  /* Addresses move monotonically, so repeated words are adjacent. */
  uint32_t cnt[256] = {0}, worst = 0;
  if (banks > 256) banks = 256; /* more banks than that: counted modulo 256 (rarely matters) */
  uint64_t prev = UINT64_MAX;
  for (uint32_t i = 0; i < n; i++) {
    uint64_t w = (uint64_t)((int64_t)addr + (int64_t)i * stride) / word;
    if (w == prev) continue;
    prev = w;
    uint32_t c = ++cnt[w % banks];
    if (c > worst) worst = c;
  }
  worst = (worst + ports - 1) / ports;
  return worst ? worst : 1;
}

uint32_t acg_bank_degree2(const acg_storage *s, uint64_t addr, int64_t stride, uint32_t radix,
                          int64_t stride2, uint32_t n) {
  if (radix == 0 || radix >= n) return acg_bank_degree(s, addr, stride, n);
  uint32_t banks = s->banks ? s->banks : 1, ports = s->ports ? s->ports : 1;
  uint64_t word = s->width_bits >= 8 ? s->width_bits / 8 : 1;
  if (banks > 256) banks = 256;
  /* the words need not move monotonically: repeats are found among the
   * last 256 distinct words (every word when n <= 256) */
  uint64_t seen[256];
  uint32_t n_seen = 0, cnt[256] = {0}, worst = 0;
  for (uint32_t i = 0; i < n; i++) {
    int64_t off = (int64_t)(i % radix) * stride + (int64_t)(i / radix) * stride2;
    uint64_t w = (uint64_t)((int64_t)addr + off) / word;
    bool dup = false;
    for (uint32_t j = 0; j < n_seen && j < 256 && !dup; j++) dup = seen[j] == w;
    if (dup) continue;
    seen[n_seen++ % 256] = w;
    uint32_t c = ++cnt[w % banks];
    if (c > worst) worst = c;
  }
  worst = (worst + ports - 1) / ports;
  return worst ? worst : 1;
}
