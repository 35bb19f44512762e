/* explore/explore_roofline.c: the analytical `roofline` evaluator.
 *
 * A bound, not a schedule: a layer takes at least as long as its MACs at the
 * design's peak rate (acg_peak_macs_per_cycle, the figure `covenant acg show`
 * prints) and at least as long as moving its minimum DRAM traffic (every
 * operand read once, every result written once) at the DRAM bandwidth
 * (acg_dram_bandwidth). cycles = ceil(max of the two). It sees neither buffer
 * capacities nor tiling, so on-chip traffic is unknown (empty cells), and
 * sweeping a buffer size changes only area. Energy is likewise a lower
 * bound: MACs x the MAC unit's pJ/op + DRAM bytes x DRAM pJ/byte. */
#include <math.h>

#include "acg/acg_ir.h"
#include "explore/explore.h"

/* pJ per MAC of the unit that supplies most of the peak for these dtypes;
 * NaN when that unit gives no energy. */
static double mac_energy(const cov_acg *g, cov_dtype in, cov_dtype acc) {
  double best = 0, pj = NAN;
  for (int u = 0; u < g->n_compute; u++)
    for (int k = 0; k < g->compute[u].n_caps; k++) {
      const acg_capability *c = &g->compute[u].caps[k];
      if (c->op != COV_OP_MAC || c->in[0] != in || (c->n_in > 1 && c->in[1] != in) || c->out != acc)
        continue;
      double rate = c->throughput * g->compute[u].instances;
      if (rate > best) {
        best = rate;
        pj = c->energy_pj_per_op > 0 ? c->energy_pj_per_op : NAN;
      }
    }
  return pj;
}

static cov_status roofline_eval(const explore_evaluator *self, const cov_acg *g, const explore_layer *l,
                                const explore_eval_ctx *ctx, explore_result *r) {
  (void)self;
  double peak = acg_peak_macs_per_cycle(g, ctx->in_dtype, ctx->in_dtype, ctx->acc_dtype);
  if (l->macs > 0 && peak <= 0)
    return cov_error(COV_MAPPING_FAILED, EXPLORE_AT(.file = cov_acg_file(g), .path = l->name),
                     "no compute unit offers mac %s x %s -> %s", cov_dtype_name(ctx->in_dtype),
                     cov_dtype_name(ctx->in_dtype), cov_dtype_name(ctx->acc_dtype));
  double bw = acg_dram_bandwidth(g);
  if (bw <= 0)
    return cov_error(COV_MAPPING_FAILED, EXPLORE_AT(.file = cov_acg_file(g)),
                     "no data path leaves DRAM");
  double elem = (double)cov_dtype_size(ctx->in_dtype);
  double rd = (l->in_elems + l->w_elems) * elem, wr = l->out_elems * elem;
  double compute = l->macs > 0 ? l->macs / peak : 0;
  double memory = (rd + wr) / bw;
  r->cycles = ceil(compute > memory ? compute : memory);
  if (r->cycles < 1) r->cycles = 1;
  r->utilisation = l->macs > 0 ? l->macs / (r->cycles * peak) : 0;
  int dram = -1;
  for (int i = 0; i < g->n_storage && i < EXPLORE_MAX_STORAGE; i++) {
    r->bytes[i] = NAN;
    if (dram < 0 && g->storage[i].kind == ACG_DRAM) dram = i;
  }
  if (dram >= 0 && dram < EXPLORE_MAX_STORAGE) r->bytes[dram] = rd + wr;
  r->energy_pj = NAN;
  if (dram >= 0 && g->storage[dram].has_energy) {
    double e = rd * g->storage[dram].read_pj_per_byte + wr * g->storage[dram].write_pj_per_byte;
    if (l->macs > 0) e += l->macs * mac_energy(g, ctx->in_dtype, ctx->acc_dtype);
    r->energy_pj = e;
  }
  return NULL;
}

const explore_evaluator explore_roofline = {
    .name = "roofline",
    .about = "analytical bound: max(MACs / peak MACs per cycle, minimum DRAM bytes / DRAM "
             "bandwidth); sees no buffer capacities or tiling",
    .eval = roofline_eval,
};
