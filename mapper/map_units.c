/* mapper/map_units.c: which compute units a contraction may run on.
 *
 * A `mac` statement binds to any unit whose capability matches its dtypes
 * (map_bind.c) and whose capability runs a contraction at all: the ACG-level
 * check acg_mac_form_of (acg/acg_mac.c), which the NPU code generator
 * consults too, so the mapper never binds what the backend cannot lower. A
 * systolic array runs it in its own dataflow; a matrix unit as tiles of
 * the capability's [M, N, K] per issue from its register file, a SIMD unit
 * as vector MACs, a scalar unit one MAC per issue (the TILES form). Where
 * several units can take a layer, cov_map searches each binding and keeps
 * the one its cost model ranks cheapest (map_api.c). Whether a unit's
 * instances are an NPU's cores is map_cores'.
 */
#include "mapper/map_internal.h"

bool map_mac_tiles(const cov_acg *g, int node, int cap, acg_mac_form *f) {
  acg_mac_form tmp;
  if (!f) f = &tmp;
  int u = node - g->n_storage;
  if (u < 0 || u >= g->n_compute) return false;
  return acg_mac_form_of(g, u, cap, f, NULL, 0) && f->kind == ACG_MAC_TILES;
}

bool map_mac_runs(const cov_acg *g, int node, int cap, char *why, size_t nwhy) {
  acg_mac_form f;
  return acg_mac_form_of(g, node - g->n_storage, cap, &f, why, nwhy);
}

/* The unit whose instances are an NPU's cores, as npu-sim picks it
 * (npu_target_init): the first systolic array, else the first matrix
 * unit; -1 if none. */
static int core_unit(const cov_acg *g) {
  for (int pass = 0; pass < 2; pass++)
    for (int c = 0; c < g->n_compute; c++)
      if (g->compute[c].kind == (pass == 0 ? ACG_SYSTOLIC : ACG_MATRIX)) return c;
  return -1;
}

bool map_cores(const cov_acg *g, int node) {
  int u = core_unit(g), c = node - g->n_storage;
  if (u < 0 || c < 0 || c >= g->n_compute) return false;
  uint32_t n = g->compute[u].instances ? g->compute[u].instances : 1;
  if ((g->compute[c].instances ? g->compute[c].instances : 1) != n) return false;
  if (g->compute[u].kind == ACG_SYSTOLIC) return true;
  for (int s = 0; s < g->n_storage; s++) {
    uint32_t k = g->storage[s].instances ? g->storage[s].instances : 1;
    if (g->storage[s].kind != ACG_DRAM && k != 1 && k != n) return false;
  }
  return true;
}

int map_mac_units(const map_problem *p, const cov_acg *g, int *nodes, double *floor, int max) {
  int n = 0;
  if (p->kind != MAP_MAIN_MAC || p->n_inputs != 2) return 0;
  for (int c = 0; c < g->n_compute && n < max; c++) {
    map_target t;
    cov_status st = map_bind_target_on(p, g, g->n_storage + c, &t);
    if (st == NULL) {
      /* no schedule on the unit takes fewer cycles than its MACs at the
       * capability's throughput (map_bound.c's gemm floor) */
      double thr = g->compute[c].caps[t.cap].throughput;
      if (floor) floor[n] = (double)p->ops / (thr > 0 ? thr : 1);
      nodes[n++] = t.node;
    }
    cov_status_free(st);
  }
  return n;
}
