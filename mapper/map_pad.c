/* mapper/map_pad.c: loop extents padded up to the array's size.
 *
 * Tiling is divisor-based (map_ir.h), so a loop of 58 (2 x 29: shufflenet's
 * channels; 116, 232 and a classifier's 1000 alike) can put at most 2 of its
 * values on a 16-row or 16-column array. Padding the loop to 64 lets 16 of
 * them run at once for 6 wasted values of 64: the extent grows, every access
 * stays as it was, and the values past the tensor are the reads' padding
 * and writes that the DMA drops (a store moves only coordinates inside the
 * tensor, as the simulator and the schedule interpreter both do). So
 *   - a reduction loop may grow when an input with padding 0 reads it alone
 *     in one dimension (coefficient 1, offset 0, the dimension's size = the
 *     extent): every added term multiplies that 0;
 *   - an output loop may grow when the output reads it so: the added
 *     outputs fall outside the tensor and are never stored; the other
 *     operands' reads there only feed those outputs.
 * Loops an epilogue reduces or pools over keep their extent (a window would
 * mix the padding into stored values). The padded problem is searched next
 * to the original (map_rewrite_search) and the cost model keeps the cheaper,
 * so a layer whose extents divide well is unchanged. */
#include "mapper/map_internal.h"

/* Largest divisor of n that is <= cap. */
static int64_t best_divisor(int64_t n, int64_t cap) {
  for (int64_t d = cap < n ? cap : n; d > 1; d--)
    if (n % d == 0) return d;
  return 1;
}

/* Whether operand o reads loop l alone in one of its dimensions, from 0 to
 * exactly the dimension's size (only loops of more than one trip count). */
static bool reads_alone(const map_problem *p, const map_operand *o, int l) {
  for (int d = 0; d < o->acc.rank; d++) {
    if (o->acc.coef[d][l] != 1 || o->acc.off[d] != 0 || o->shape[d] != p->extent[l]) continue;
    bool alone = true;
    for (int k = 0; k < p->n_loops; k++)
      if (k != l && p->extent[k] > 1 && o->acc.coef[d][k]) alone = false;
    if (alone) return true;
  }
  return false;
}

static bool epilogue_reads_loop(const map_schedule *proto, int l) {
  for (int v = 0; v < proto->n_vops; v++) {
    const map_vop *vo = &proto->vops[v];
    if (vo->kind == MAP_VOP_ROW_REDUCE && vo->loop == l) return true;
    if (vo->kind == MAP_VOP_POOL && (vo->pool_loop[0] == l || vo->pool_loop[1] == l)) return true;
  }
  return false;
}

static bool may_pad(const map_schedule *proto, int l) {
  const map_problem *p = &proto->prob;
  if (epilogue_reads_loop(proto, l)) return false;
  if (!p->reduction[l]) return reads_alone(p, &p->operands[p->output], l);
  for (int i = 0; i < p->n_inputs; i++)
    if (p->operands[i].pad_value == 0 && reads_alone(p, &p->operands[i], l)) return true;
  return false;
}

/* The most rows of an output-stationary array that m = d x e_k fills, d a
 * divisor of e (a long stream of two loops, map_gemm.c long_stream). */
static int64_t stream_fill(int64_t e, int64_t ek, int64_t rows) {
  int64_t best = 0;
  for (int64_t d = 1; d <= e && d * ek <= rows; d++)
    if (e % d == 0 && d * ek > best) best = d * ek;
  return best;
}

/* On an output-stationary array a GEMM streams up to `rows` output rows of
 * two loops that the same inputs read (a 1x1 convolution's p and q). Where
 * the inner one leaves rows idle and no divisor of the outer one fills
 * them (res5's 7 x 7: m = 7 of 16), the outer loop grows by at most a
 * quarter to an extent that does (7 -> 8: m = 2 x 7 = 14), as SCALE-Sim's
 * ceil(49 / 16) folds pay for the 64 - 49 idle rows too; where it cannot,
 * both loops grow (below). One loop or pair per problem; the cost model
 * decides against the unpadded search. */
static bool stream_pad(const map_schedule *proto, map_problem *out, int64_t rows) {
  const map_problem *p = &proto->prob;
  for (int l = 0; l < p->n_loops; l++) {
    int64_t e = p->extent[l];
    if (p->reduction[l] || e < 2 || e >= rows || out->extent[l] != e || !may_pad(proto, l)) continue;
    for (int k = 0; k < p->n_loops; k++) {
      int64_t ek = p->extent[k];
      if (k == l || p->reduction[k] || ek < 2 || ek >= rows) continue;
      bool same = true; /* read by exactly the same operands */
      for (int o = 0; o < p->n_operands; o++)
        same &= map_operand_depends(&p->operands[o], l) == map_operand_depends(&p->operands[o], k);
      if (!same || 4 * stream_fill(e, ek, rows) >= 3 * rows) continue;
      for (int64_t e2 = e + 1; 4 * (e2 - e) <= e; e2++)
        if (4 * stream_fill(e2, ek, rows) >= 3 * rows) {
          out->extent[l] = e2;
          return true;
        }
      /* neither grows alone to fill them (convnet_layer2's 11 x 11: one row
       * of 11, 2 x 11 > 16): both grow, by at most a quarter each, to
       * extents with divisors d x rows/d (12 x 12: blocks of 4 x 4 pixels,
       * streamed through m digits, map_gemm.c m_digits) */
      for (int64_t e2 = e + 1; 4 * (e2 - e) <= e; e2++)
        for (int64_t k2 = ek + 1; 4 * (k2 - ek) <= ek; k2++)
          for (int64_t d = 2; d <= e2 && d <= rows; d++)
            if (e2 % d == 0 && rows % d == 0 && k2 % (rows / d) == 0 && out->extent[k] == ek &&
                may_pad(proto, k)) {
              out->extent[l] = e2;
              out->extent[k] = k2;
              return true;
            }
    }
  }
  return false;
}

/* Spread over workgroups (an NPU's cores), an output loop none of whose
 * divisors up to their count does may grow by at most a quarter to one
 * that they divide (squeezenet's 15 x 15 pixels: rows 15 -> 16, 8 on each
 * of 2 cores), the first such loop of the problem that the array-size
 * padding left alone. */
static bool cores_pad(const map_schedule *proto, const map_target *t, map_problem *out) {
  const map_problem *p = &proto->prob;
  int64_t w = (int64_t)t->wg_max;
  for (int l = 0; l < p->n_loops; l++) {
    int64_t e = p->extent[l];
    if (p->reduction[l] || e < 2 || out->extent[l] != e || best_divisor(e, w) > 1 || !may_pad(proto, l)) continue;
    for (int64_t k = w; k >= 2; k--) {
      int64_t e2 = (e + k - 1) / k * k;
      if (4 * (e2 - e) <= e) {
        out->extent[l] = e2;
        return true;
      }
    }
  }
  return false;
}

bool map_pad_rewrite(const map_schedule *proto, const map_target *t, map_schedule *outs) {
  const map_problem *p = &proto->prob;
  map_problem *out = &outs->prob;
  const cov_acg *g = t->acg;
  if (p->kind != MAP_MAIN_MAC || t->node < g->n_storage ||
      g->compute[t->node - g->n_storage].kind != ACG_SYSTOLIC)
    return false;
  int64_t rows = (int64_t)t->dims[0], cols = (int64_t)t->dims[1];
  bool any = false;
  for (int l = 0; l < p->n_loops; l++) {
    /* reductions go on the rows of a weight-stationary array, output loops
     * on the columns (and on both of an output-stationary one): pad to the
     * larger, which is a multiple of both on every shipped array */
    int64_t a = rows > cols ? rows : cols, e = p->extent[l];
    int64_t useful = e < a ? e : a;
    /* a loop whose divisors already fill 3/4 of what it could use keeps its
     * extent */
    if (e < 2 || 4 * best_divisor(e, a) >= 3 * useful || !may_pad(proto, l)) continue;
    out->extent[l] = (e + a - 1) / a * a;
    /* an output loop spread over workgroups (an NPU's cores) pads to a
     * multiple of their count too where that adds at most 1/16 more
     * (a classifier's 1000 on 2 or 4 cores: 1024, not 1008 = 16 x 63,
     * which divides over none) */
    int64_t wa = a * (int64_t)t->wg_max, e2 = (e + wa - 1) / wa * wa;
    if (!p->reduction[l] && t->wg_max > 1 && 16 * (e2 - e) <= e) out->extent[l] = e2;
    any = true;
  }
  if (t->wg_max > 1) any |= cores_pad(proto, t, out);
  if (map_output_stationary(g, t->node)) any |= stream_pad(proto, out, rows);
  if (!any) return false;
  out->ops = 1;
  for (int l = 0; l < out->n_loops; l++) out->ops *= out->extent[l];
  return true;
}
