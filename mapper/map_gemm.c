/* mapper/map_gemm.c: how a schedule bound to a systolic array becomes GEMM
 * instructions, how its tiles are laid out for them, and what those
 * instructions cost under the NPU simulator's timing rules
 * (backends/npu-sim/ISA.md, "Timing").
 *
 * map_gemm_plan is the one decision of which scheduled loops one GEMM
 * absorbs: the NPU code generator emits exactly these GEMMs and the cost
 * model (map_cost.c) charges exactly these, per instruction, from the same
 * ACG numbers (array rows/columns, capability throughput, edge bandwidths),
 * so the prediction follows the instruction stream the simulator runs.
 * What the transfers cost the DRAM interface is map_dram.c's. */
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "mapper/map_internal.h"
#include "mapper/map_walk.h"

bool map_output_stationary(const cov_acg *g, int node) {
  if (node < g->n_storage || g->compute[node - g->n_storage].kind != ACG_SYSTOLIC) return false;
  for (int s = 0; s < g->n_storage; s++) {
    if (g->storage[s].kind != ACG_REGFILE) continue;
    for (int e = 0; e < g->n_edges; e++) {
      const acg_edge *ed = &g->edges[e];
      if ((ed->from == node && ed->to == s) || (ed->bidirectional && ed->from == s && ed->to == node))
        return true;
    }
  }
  return false;
}

bool map_gemm_applies_on(const cov_acg *g, int node, int cap, const map_problem *p) {
  if (p->kind != MAP_MAIN_MAC || p->n_inputs != 2) return false;
  return g->compute[node - g->n_storage].kind == ACG_SYSTOLIC || map_mac_tiles(g, node, cap, NULL);
}

bool map_gemm_applies(const map_schedule *s) { return map_gemm_applies_on(s->acg, s->node, s->cap, &s->prob); }

/* No transfer is placed inside scheduled loop i (so it may be moved). */
static bool movable(const map_schedule *s, int i) {
  for (int x = 0; x < s->n_xfers; x++)
    if (s->xfers[x].after >= i) return false;
  return true;
}

/* The least stride >= e (elements) at which `count` elements of place pl
 * fall in distinct banks of its buffer (acg_bank_degree 1, preferring whole
 * words), or e where no stride within one turn of the banks does. */
static int64_t bank_free_stride(const map_schedule *s, const map_place *pl, int64_t e, uint32_t count) {
  const acg_storage *sn = &s->acg->storage[pl->node];
  int64_t es = (int64_t)cov_dtype_size(pl->dtype), wb = sn->width_bits >= 8 ? sn->width_bits / 8 : 1;
  int64_t turn = sn->banks > 1 ? (int64_t)sn->banks * (wb > es ? wb / es : 1) : 1;
  /* whole words first: then no element straddles one, whatever the base */
  for (int pass = 0; pass < 2; pass++)
    for (int64_t p = e; p < e + turn; p++)
      if ((pass || p * es % wb == 0) && acg_bank_degree(sn, 0, p * es, count) <= 1) return p;
  return e;
}

/* A weight-stationary A read through k digits, in the tensor's own order
 * (dense, row-major over the tile: st): whether every k-fold's elements
 * (the row the array reads in one cycle) span so few words of the buffer
 * that they fall in distinct banks wherever the row starts (consecutive
 * words are in consecutive banks; the simulator's count, ISA.md "Bank
 * factor", is then 1). Then the tile keeps that order, and a DMA moves it
 * in whole runs (convnet_layer1's 540 bytes of filters on npu-16x16: 9
 * bursts, not 30 runs of one 3x3 window each) where the padded layout
 * below put the rows' loop innermost. */
static bool kdig_dense_ok(const map_schedule *s, const map_gemm_plan *gp, int o, int lv, int64_t *st) {
  const map_operand *op = &s->prob.operands[o];
  const map_place *pl = &s->place[o][lv];
  const acg_storage *sn = &s->acg->storage[pl->node];
  int64_t es = (int64_t)cov_dtype_size(pl->dtype), wb = sn->width_bits >= 8 ? sn->width_bits / 8 : 1;
  if (sn->kind == ACG_DRAM || gp->n_kd > 3 || gp->kmax == 0) return false;
  int64_t e = 1;
  for (int d = op->rank - 1; d >= 0; d--) {
    st[d] = e;
    e *= pl->shape[d];
  }
  int64_t dstep[3], rad[3], K = 1;
  for (int k = 0; k < gp->n_kd; k++) { /* digit k: loop kd[n_kd - 1 - k], innermost first */
    const map_sloop *sl = &s->sloops[gp->kd[gp->n_kd - 1 - k]];
    dstep[k] = 0;
    for (int d = 0; d < op->rank; d++) dstep[k] += op->acc.coef[d][sl->loop] * sl->step * st[d];
    rad[k] = sl->trips;
    K *= sl->trips;
  }
  if (K > 65535) return false;
  for (int64_t k0 = 0; k0 < K; k0 += gp->kmax) {
    int64_t lo = INT64_MAX, hi = INT64_MIN;
    for (int64_t J = k0; J < K && J < k0 + (int64_t)gp->kmax; J++) {
      int64_t off = 0, r = J;
      for (int k = 0; k < gp->n_kd; k++) {
        off += (r % rad[k]) * dstep[k];
        r /= rad[k];
      }
      if (off < lo) lo = off;
      if (off > hi) hi = off;
    }
    int64_t bytes = (hi - lo + 1) * es, words = (bytes - 1) / wb + 2;
    if (words > (int64_t)(sn->banks > 1 ? sn->banks : 1)) return false;
  }
  return true;
}

/* An output-stationary chain folded at whole groups of channels
 * (os_k_digits) whose A tile is loaded once (all of it ahead of the first
 * GEMM): the dimension of A's tile to put on whole 64-byte blocks, so that
 * the code generator can load it one group at a time, each on blocks of
 * its own (npu_head.c; the simulator's scoreboard works on 64-byte
 * blocks): a whole 15 x 15 input channel of convnet_layer2 is 450 bytes.
 * A tile loaded per output tile keeps its dense layout (its later loads
 * overlap the work anyway, and padding changed which schedules fit). -1:
 * none. */
static int head_block_dim(const map_schedule *s, const map_gemm_plan *gp, int o, int lv, int inner) {
  const map_operand *op = &s->prob.operands[o];
  bool once = false;
  for (int i = 0; i < s->n_xfers; i++)
    if (s->xfers[i].operand == o && s->xfers[i].level == lv && s->xfers[i].dir == MAP_LOAD)
      once = s->xfers[i].count == 1;
  if (!once || !gp || !gp->output_stationary || gp->n_kd < 2 || o != gp->a_op || lv != map_walk_deepest(s, o))
    return -1;
  for (int d = 0; d < op->rank; d++)
    if (op->acc.coef[d][s->sloops[gp->kd[0]].loop] != 0 && s->place[o][lv].shape[d] > 1 && d != inner) return d;
  return -1;
}

static bool chan_major(const map_schedule *s, const map_gemm_plan *gp, int o, int lv, int inner, int *dc,
                       int64_t *st);
/* The most pieces the code generator loads a head tile in
 * (backends/npu-sim/npu_head.c, NPU_HEAD_PIECES). */
#define MAP_HEAD_PIECES 16

static void tile_strides(const map_schedule *s, const map_gemm_plan *gp, int o, int lv, int64_t *st, bool cm) {
  const map_operand *op = &s->prob.operands[o];
  const map_place *pl = &s->place[o][lv];
  int inner = -1;
  if (gp && (o == gp->a_op || o == gp->b_op) && lv == map_walk_deepest(s, o)) {
    int sl = o == gp->b_op ? gp->nl : (gp->output_stationary ? gp->ml : gp->kl);
    if (sl >= 0) {
      int l = s->sloops[sl].loop;
      for (int d = 0; d < op->rank && inner < 0; d++)
        if (op->acc.coef[d][l] != 0 && pl->shape[d] > 1) inner = d;
    }
  }
  /* k digits on a banked A (weight-stationary): each digit's step through
   * the tile is padded to its weight in k modulo the banks (in elements),
   * so the k consecutive elements of a row fall in distinct banks as in a
   * dense row (map_build.c sizes the tile by map_gemm_tile_elems) */
  int64_t target[COV_MAX_RANK], mod = 0;
  bool pad[COV_MAX_RANK] = {false};
  if (gp && gp->n_kd > 1 && !gp->output_stationary && o == gp->a_op && lv == map_walk_deepest(s, o) &&
      kdig_dense_ok(s, gp, o, lv, st))
    return;
  if (gp && gp->n_kd > 1 && !gp->output_stationary && o == gp->a_op && lv == map_walk_deepest(s, o)) {
    const acg_storage *sn = &s->acg->storage[pl->node];
    int64_t es = (int64_t)cov_dtype_size(pl->dtype), wb = sn->width_bits >= 8 ? sn->width_bits / 8 : 1;
    if (sn->banks > 1) mod = (int64_t)sn->banks * (wb > es ? wb / es : 1);
    int64_t w = 1;
    for (int k = gp->n_kd - 1; k >= 0 && mod; k--) {
      const map_sloop *sl = &s->sloops[gp->kd[k]];
      int dd = -1, cnt = 0;
      for (int d = 0; d < op->rank; d++)
        if (op->acc.coef[d][sl->loop] != 0 && pl->shape[d] > 1) {
          dd = d;
          cnt++;
        }
      if (cnt == 1 && dd != inner && !pad[dd] && op->acc.coef[dd][sl->loop] * sl->step == 1) {
        pad[dd] = true;
        target[dd] = w % mod;
      }
      w *= sl->trips;
    }
  }
  int dc;
  if (cm && inner >= 0 && gp->output_stationary && o == gp->b_op && chan_major(s, gp, o, lv, inner, &dc, st))
    return;
  /* Output-stationary B whose n has several dimensions inside it in DRAM
   * that one run could join (a convolution's weights: c x r x s, all but
   * the outermost whole): the tensor's own order, so that a filter stays
   * one contiguous run in DRAM and in the tile (one DMA burst stream, not
   * one burst per 3-element row of a 3x3 filter), with n's stride padded
   * so that the n elements of one cycle still fall in distinct banks. */
  if (inner >= 0 && gp->output_stationary && o == gp->b_op) {
    int after = 0; /* dimensions inside n that one DRAM run could join */
    bool whole = true;
    for (int d = op->rank - 1; d > inner; d--) {
      if (pl->shape[d] <= 1) continue;
      if (after++ > 0 && !whole) after = -64;
      whole &= pl->shape[d] == op->shape[d];
    }
    if (after >= 2) {
      int64_t e = 1;
      for (int d = op->rank - 1; d >= 0; d--) {
        st[d] = d == inner ? bank_free_stride(s, pl, e, pl->shape[d] < gp->nmax ? pl->shape[d] : gp->nmax)
                           : e;
        e = st[d] * pl->shape[d];
      }
      return;
    }
  }
  /* An epilogue in chunks along a dim (map_epi_chunk_plan): that dim
   * outermost, so that each chunk of the output tile is one range. */
  int last = -1;
  if (o == s->prob.output && lv == 1 && s->epi_chunk > 0 && s->epi_chunk_dim >= 0 &&
      s->epi_chunk_dim < op->rank)
    last = s->epi_chunk_dim;
  int64_t n = 1;
  if (inner >= 0) {
    st[inner] = 1;
    n = pl->shape[inner];
  }
  int blockd = head_block_dim(s, gp, o, lv, inner);
  int64_t blk = MAP_PLACE_ALIGN / (int64_t)cov_dtype_size(pl->dtype);
  for (int d = op->rank - 1; d >= 0; d--) {
    if (d == inner || d == last) continue;
    st[d] = n;
    if (pad[d]) st[d] += ((target[d] - n) % mod + mod) % mod;
    if (d == blockd && blk > 0 && n % blk && (n + blk - 1) / blk * blk * 4 <= n * 5)
      st[d] = (n + blk - 1) / blk * blk;
    n = st[d] * pl->shape[d];
  }
  if (last >= 0) st[last] = n;
}

void map_gemm_tile_strides(const map_schedule *s, const map_gemm_plan *gp, int o, int lv, int64_t *st) {
  tile_strides(s, gp, o, lv, st, true);
}

int64_t map_gemm_tile_elems(const map_schedule *s, const map_gemm_plan *gp, int o, int lv) {
  const map_operand *op = &s->prob.operands[o];
  const map_place *pl = &s->place[o][lv];
  int64_t st[COV_MAX_RANK], e = 1;
  map_gemm_tile_strides(s, gp, o, lv, st);
  for (int d = 0; d < op->rank; d++) e += (pl->shape[d] - 1) * st[d];
  return e;
}

/* Elements one iteration of scheduled loop i moves through operand o's
 * deepest tile. */
static int64_t tile_step(const map_schedule *s, const map_gemm_plan *gp, int o, int i) {
  int64_t st[COV_MAX_RANK], r = 0;
  int lv = map_walk_deepest(s, o);
  map_gemm_tile_strides(s, gp, o, lv, st);
  const map_operand *op = &s->prob.operands[o];
  for (int d = 0; d < op->rank; d++) r += op->acc.coef[d][s->sloops[i].loop] * s->sloops[i].step * st[d];
  return r;
}

/* A candidate for the streamed dimension: a temporal output loop of the
 * last level that only A indexes, with no transfer inside it. */
static bool stream_loop(const map_schedule *s, const map_gemm_plan *gp, int i) {
  const map_problem *p = &s->prob;
  const map_sloop *sl = &s->sloops[i];
  return i > gp->out_init_after && sl->level == s->n_levels - 1 && !sl->spatial &&
         !p->reduction[sl->loop] && movable(s, i) && map_operand_depends(&p->operands[gp->a_op], sl->loop) &&
         !map_operand_depends(&p->operands[gp->b_op], sl->loop);
}

/* Where no second loop is one stride on (a convolution's rows: the input
 * tile's rows are wider than the output's) and the stream is shorter than
 * a weight load (the array waits on it), the stream loop with the most
 * trips joins ml as a second digit of m (ISA.md "m digits"); on an
 * output-stationary array (kmax: any k) while m stays within its rows. */
static void m_digits(const map_schedule *s, map_gemm_plan *gp) {
  const map_problem *p = &s->prob;
  int64_t tm = s->sloops[gp->ml].trips, best = 1;
  if (tm >= (int64_t)gp->kmax) return;
  for (int j = 0; j < s->n_sloops; j++) {
    if (j == gp->ml || !stream_loop(s, gp, j) || s->sloops[j].trips <= best) continue;
    if (tm * s->sloops[j].trips > (int64_t)gp->mmax || tm * s->sloops[j].trips > 65535 || tile_step(s, gp, gp->a_op, j) == 0 ||
        tile_step(s, gp, p->output, j) == 0)
      continue;
    best = s->sloops[j].trips;
    gp->ml2 = j;
  }
  gp->m_dig = gp->ml2 >= 0;
}

/* Long streams: a second streamed loop j joins ml when, in A's and the
 * output's tiles, one step of j is trips(ml) steps of ml (a 1x1
 * convolution's q and p over whole rows), so one GEMM streams trips(ml) x
 * trips(j) rows per weight load (weight-stationary) or fills more of the
 * rows (output-stationary, up to mmax: res5's 2 x 7 of 16, where one row
 * of 7 left 9 idle; a plain stride, so the column of A that one cycle
 * reads is what the simulator's bank factor sees). Of such pairs the one
 * with the longest stream, ml becoming the inner loop. Otherwise m digits
 * (strided pairs; on an output-stationary array up to its rows: a 4 x 4
 * block of a 3x3 or 5x5 convolution's pixels). */
static void long_stream(const map_schedule *s, map_gemm_plan *gp) {
  const map_problem *p = &s->prob;
  int64_t best = s->sloops[gp->ml].trips;
  int bi = -1, bj = -1;
  for (int i = 0; i < s->n_sloops; i++) {
    if (!stream_loop(s, gp, i) || s->sloops[i].trips < 2) continue;
    int64_t ai = tile_step(s, gp, gp->a_op, i), ci = tile_step(s, gp, p->output, i);
    if (ai == 0 || ci == 0) continue;
    for (int j = 0; j < s->n_sloops; j++) {
      if (j == i || !stream_loop(s, gp, j) || s->sloops[j].trips < 2) continue;
      int64_t m = s->sloops[i].trips * s->sloops[j].trips;
      if (m <= best || m > gp->mmax) continue;
      if (tile_step(s, gp, gp->a_op, j) != s->sloops[i].trips * ai ||
          tile_step(s, gp, p->output, j) != s->sloops[i].trips * ci)
        continue;
      best = m;
      bi = i;
      bj = j;
    }
  }
  if (bi < 0) {
    m_digits(s, gp);
    return;
  }
  gp->ml = bi;
  gp->ml2 = bj;
}

/* Several reduction loops on the rows of a weight-stationary array: when
 * kl leaves rows idle (a 3-channel stem: 3 of 16), the temporal reduction
 * loops of the last level inside it join k as digits (ISA.md "k digits"),
 * so one GEMM's k runs over c x r x s and the array's rows fill. Of the
 * sets of such loops (all reduction loops inside the outermost digit
 * absorbed, so every output keeps its reduction order; no transfer inside
 * them; at most 3 digits) the one with the fewest GEMM k-folds per
 * reduction step, if fewer than without. */
static void k_digits(const map_schedule *s, map_gemm_plan *gp) {
  const map_problem *p = &s->prob;
  int cand[MAP_MAX_SLOOPS], nc = 0;
  for (int i = gp->out_init_after + 1; i < s->n_sloops; i++) {
    const map_sloop *sl = &s->sloops[i];
    if (!p->reduction[sl->loop] || sl->trips < 2 || i == gp->kl) continue;
    if (sl->spatial || sl->level != s->n_levels - 1 || !movable(s, i) ||
        !map_operand_depends(&p->operands[gp->a_op], sl->loop) ||
        !map_operand_depends(&p->operands[gp->b_op], sl->loop)) {
      /* a reduction loop a GEMM cannot take: only loops inside it may join
       * (and none if it is inside kl), so that the order is kept */
      if (gp->kl >= 0 && i > gp->kl) return;
      nc = 0;
      continue;
    }
    cand[nc++] = i;
  }
  if (nc == 0 || nc > 6) return;
  double kl_trips = gp->kl >= 0 ? (double)s->sloops[gp->kl].trips : 1;
  double best = ceil(kl_trips / gp->kmax);
  int best_set = 0;
  for (int set = 1; set < (1 << nc); set++) {
    /* every candidate inside the outermost chosen one is chosen too */
    int lo = 0;
    while (!(set >> lo & 1)) lo++;
    if (set >> lo != (1 << (nc - lo)) - 1) continue;
    int nd = nc - lo + (gp->kl >= 0);
    if (nd > 3) continue;
    if (gp->kl >= 0 && gp->kl < cand[lo]) continue; /* kl outside: its order would change */
    double k = kl_trips, prod = 1;
    for (int j = lo; j < nc; j++) {
      k *= (double)s->sloops[cand[j]].trips;
      prod *= (double)s->sloops[cand[j]].trips;
    }
    if (k > 65535) continue;
    double folds = ceil(k / gp->kmax) / prod;
    if (folds < best) {
      best = folds;
      best_set = set;
    }
  }
  if (!best_set) return;
  for (int i = 0; i < s->n_sloops; i++) {
    bool in = i == gp->kl;
    for (int j = 0; j < nc; j++) in |= (best_set >> j & 1) && cand[j] == i;
    if (in) gp->kd[gp->n_kd++] = i;
  }
}

/* On an output-stationary array the reduction of one output tile is one
 * chain of GEMMs; its order decides what the first GEMM waits for. With
 * k = kl (a convolution's channels) chained over the temporal reduction
 * loops (its filter taps), the first GEMM reads a tap of every channel:
 * all of the first input tile must be on chip before the array starts.
 * Here those loops join kl as digits of k, kl outermost (ISA.md "k
 * digits"), and the chain folds k at whole groups of kl (kmax), so the
 * first GEMM reads only the first group and the code generator loads the
 * first tile group by group (npu_head.c): convnet_layer2 on npu-16x16-os
 * (k = 10 channels x 25 taps) waits for one channel of its input, not all
 * ten (2,926 -> 2,854 cycles). The array's steps per tile are the same,
 * with no preload or drain inside a chain. Only where the first fold reads
 * a prefix of A's tile (kl's step beyond the other digits' reach: not a
 * channel loop split in two with kl its inner part, where the chain
 * gained nothing and shufflenet_v2_x1_0's 1x1 convolutions lost 4% each,
 * 1,160,898 -> 1,174,784 cycles at 224 on npu-32x32-os), with at most MAP_OS_KFOLDS GEMMs per chain (a deep reduction
 * stays few instructions) and folds of at least the array's rows (m's
 * limit): where folds were shorter the simulator's re-ranked schedules
 * came out slower (convnet_layer1, folds of 9 on 16 rows: 3,523 ->
 * 3,813). Every reduction loop of the last level must join (each output
 * keeps one chain), at most 3 digits. */
#define MAP_OS_KFOLDS 16
static void os_k_digits(const map_schedule *s, map_gemm_plan *gp) {
  const map_problem *p = &s->prob;
  if (gp->kl < 0) return;
  int cand[2], nc = 0;
  int64_t inner = 1;
  for (int i = gp->out_init_after + 1; i < s->n_sloops; i++) {
    const map_sloop *sl = &s->sloops[i];
    if (!p->reduction[sl->loop] || i == gp->kl || sl->trips < 2) continue;
    if (sl->spatial || sl->level != s->n_levels - 1 || !movable(s, i) || nc == 2 ||
        !map_operand_depends(&p->operands[gp->a_op], sl->loop) ||
        !map_operand_depends(&p->operands[gp->b_op], sl->loop))
      return;
    cand[nc++] = i;
    inner *= sl->trips;
  }
  int64_t groups = s->sloops[gp->kl].trips;
  int64_t per = (groups + MAP_OS_KFOLDS - 1) / MAP_OS_KFOLDS;
  if (nc == 0 || groups < 2 || groups * inner > 65535 || per * inner < (int64_t)gp->mmax) return;
  /* the first fold must read a prefix of A's tile: kl's step through it
   * beyond everything the other digits reach (a channel loop split in two,
   * kl its inner part, would put the first fold all over the tile) */
  int64_t reach = 1, ka = tile_step(s, gp, gp->a_op, gp->kl);
  for (int j = 0; j < nc; j++) {
    int64_t st = tile_step(s, gp, gp->a_op, cand[j]);
    reach += (st < 0 ? -st : st) * (s->sloops[cand[j]].trips - 1);
  }
  if ((ka < 0 ? -ka : ka) < reach) return;
  gp->kd[gp->n_kd++] = gp->kl;
  for (int j = 0; j < nc; j++) gp->kd[gp->n_kd++] = cand[j];
  gp->kmax = (uint32_t)(per * inner);
}

int64_t map_gemm_k(const map_schedule *s, const map_gemm_plan *gp) {
  if (gp->n_kd <= 1) return gp->kl < 0 ? 1 : s->sloops[gp->kl].trips;
  int64_t k = 1;
  for (int d = 0; d < gp->n_kd; d++) k *= s->sloops[gp->kd[d]].trips;
  return k;
}

bool map_gemm_absorbs(const map_gemm_plan *gp, int i) {
  if (i < 0) return false;
  if (i == gp->ml || i == gp->ml2 || i == gp->kl || i == gp->nl) return true;
  for (int d = 0; d < gp->n_kd; d++)
    if (gp->kd[d] == i) return true;
  return false;
}

int64_t map_gemm_m(const map_schedule *s, const map_gemm_plan *gp) {
  return (gp->ml < 0 ? 1 : s->sloops[gp->ml].trips) * (gp->ml2 < 0 ? 1 : s->sloops[gp->ml2].trips);
}

void map_gemm_plan_make(const map_schedule *s, map_gemm_plan *gp) {
  const map_problem *p = &s->prob;
  const cov_acg *g = s->acg;
  memset(gp, 0, sizeof *gp);
  gp->output_stationary = map_output_stationary(g, s->node);
  /* The output's deepest tile: where it restarts, whether partial sums come back. */
  int out_lv = map_walk_deepest(s, p->output);
  gp->out_init_after = -1;
  for (int i = 0; i < s->n_xfers; i++) {
    const map_xfer *x = &s->xfers[i];
    if (x->operand != p->output || x->level != out_lv) continue;
    if (x->dir == MAP_STORE) gp->out_init_after = x->after;
    if (x->dir == MAP_LOAD) gp->out_acc_load = true;
  }
  int last = s->n_levels - 1;
  gp->ml = gp->kl = gp->nl = -1;
  for (int i = gp->out_init_after + 1; i < s->n_sloops; i++) {
    const map_sloop *sl = &s->sloops[i];
    if (sl->level != last || !sl->spatial || !movable(s, i)) continue;
    if (sl->axis == MAP_AX_ROWS && p->reduction[sl->loop]) gp->kl = i;
    if (sl->axis == MAP_AX_COLS && !p->reduction[sl->loop]) gp->nl = i;
  }
  const map_operand *in0 = &p->operands[0], *in1 = &p->operands[1];
  int ln = gp->nl >= 0 ? s->sloops[gp->nl].loop : -1;
  /* B is the input the columns loop indexes; both (depthwise): no n loop. */
  if (map_operand_depends(in0, ln) && map_operand_depends(in1, ln)) gp->nl = ln = -1;
  gp->a_op = map_operand_depends(in0, ln) ? 1 : 0;
  gp->b_op = 1 - gp->a_op;
  /* m: the output loop with the most trips that only A depends on, moved
   * innermost (each output element keeps its reduction order; no transfer
   * sits inside it). Without a columns loop, either input may be A. */
  for (int pass = 0; pass < (ln < 0 ? 2 : 1) && gp->ml < 0; pass++) {
    if (pass == 1) {
      gp->a_op = 1;
      gp->b_op = 0;
    }
    int64_t best = 1;
    for (int i = gp->out_init_after + 1; i < s->n_sloops; i++) {
      const map_sloop *sl = &s->sloops[i];
      if (sl->level != last || sl->spatial || p->reduction[sl->loop] || !movable(s, i)) continue;
      if (!map_operand_depends(&p->operands[gp->a_op], sl->loop) ||
          map_operand_depends(&p->operands[gp->b_op], sl->loop))
        continue;
      if (sl->trips > best) {
        best = sl->trips;
        gp->ml = i;
      }
    }
  }
  if (gp->ml < 0 && ln < 0) {
    gp->a_op = 0;
    gp->b_op = 1;
  }
  gp->ml2 = -1;
  const acg_compute *cn = &g->compute[s->node - g->n_storage];
  const acg_capability *cap = &cn->caps[s->cap];
  uint32_t rows = cap->tile_rank > 0 ? cap->tile[0] : cn->dims[0];
  uint32_t cols = cap->tile_rank > 1 ? cap->tile[1] : cn->dims[1];
  acg_mac_form form;
  if (map_mac_tiles(g, s->node, s->cap, &form)) { /* k and n per instruction (acg_mac.c) */
    rows = form.rows;
    cols = form.cols;
  }
  gp->kmax = gp->output_stationary ? 65535 : rows;
  gp->mmax = gp->output_stationary ? rows : 65535;
  gp->nmax = cols;
  /* On an output-stationary array k is the time axis, any length already.
   * Digits first: they pad A's layout, which long streams must match.
   * Long streams on both dataflows (map_gemm_m <= mmax on an output-
   * stationary one: no m fold splits a stream). */
  if (!gp->output_stationary && gp->ml >= 0) k_digits(s, gp);
  if (gp->ml >= 0) long_stream(s, gp);
  if (gp->output_stationary && gp->ml >= 0) os_k_digits(s, gp);
}

static double cdiv(double a, double per_cycle) { return per_cycle > 0 ? ceil(a / per_cycle) : (a > 0); }

static double trips_of(const map_schedule *s, int i) { return i < 0 ? 1 : (double)s->sloops[i].trips; }

/* Bandwidth of the ACG edge between storage node buf and compute node n
 * (either direction), 0 if none. */
static double edge_between(const cov_acg *g, int a, int b) {
  for (int e = 0; e < g->n_edges; e++) {
    const acg_edge *ed = &g->edges[e];
    if ((ed->from == a && ed->to == b) || (ed->bidirectional && ed->from == b && ed->to == a))
      return ed->bandwidth_bytes_per_cycle;
  }
  return 0;
}

/* One GEMM's occupancy of the array (ISA.md "Timing", bank factors 1: the
 * code generator lays each array operand's tile out so that one cycle's
 * elements fall in distinct banks). */
/* The bank factor the simulator charges a gemm operand (acg_bank_degree,
 * the one count both use): `count` elements that one cycle reads along
 * scheduled loop i of operand o's deepest tile, laid out as the code
 * generator lays it (map_gemm_tile_strides), from a bank boundary. */
static double operand_bank_degree(const map_schedule *s, const map_gemm_plan *gp, int o, int i,
                                  double count);

/* Loop i's step through operand o's deepest tile, in bytes. */
static int64_t tile_step_bytes(const map_schedule *s, const map_gemm_plan *gp, int o, int i) {
  int lv = map_walk_deepest(s, o);
  return tile_step(s, gp, o, i) * (int64_t)cov_dtype_size(s->place[o][lv].dtype);
}

/* A column of an output-stationary A read through m digits (ml inside,
 * ml2 outside): the simulator's count where the digits put the elements. */
static double a_column_bank_degree(const map_schedule *s, const map_gemm_plan *gp, double m) {
  if (!gp->m_dig || !gp->output_stationary) return operand_bank_degree(s, gp, gp->a_op, gp->ml, m);
  int lv = map_walk_deepest(s, gp->a_op);
  const map_place *pl = &s->place[gp->a_op][lv];
  if (m < 2 || lv == 0 || s->acg->storage[pl->node].kind == ACG_DRAM) return 1;
  int64_t s1 = tile_step_bytes(s, gp, gp->a_op, gp->ml), s2 = tile_step_bytes(s, gp, gp->a_op, gp->ml2);
  return (double)acg_bank_degree2(&s->acg->storage[pl->node], 0, s1, (uint32_t)s->sloops[gp->ml].trips, s2,
                                  (uint32_t)m);
}

static double operand_bank_degree(const map_schedule *s, const map_gemm_plan *gp, int o, int i,
                                  double count) {
  const cov_acg *g = s->acg;
  const map_operand *op = &s->prob.operands[o];
  int lv = map_walk_deepest(s, o);
  const map_place *pl = &s->place[o][lv];
  if (i < 0 || count < 2 || lv == 0 || g->storage[pl->node].kind == ACG_DRAM) return 1;
  int64_t strides[COV_MAX_RANK], st = 0;
  map_gemm_tile_strides(s, gp, o, lv, strides);
  for (int d = 0; d < op->rank; d++) st += op->acc.coef[d][s->sloops[i].loop] * s->sloops[i].step * strides[d];
  int64_t bst = st * (int64_t)cov_dtype_size(pl->dtype);
  return (double)acg_bank_degree(&g->storage[pl->node], 0, bst < 0 ? -bst : bst, (uint32_t)count);
}

static double gemm_occ(const map_schedule *s, const map_gemm_plan *gp, double m, double k, double n,
                       bool acc, bool chain, bool hold) {
  const cov_acg *g = s->acg;
  const map_problem *p = &s->prob;
  const acg_capability *cap = &g->compute[s->node - g->n_storage].caps[s->cap];
  int la = map_walk_deepest(s, gp->a_op), lb = map_walk_deepest(s, gp->b_op), lc = map_walk_deepest(s, p->output);
  int na = s->place[gp->a_op][la].node, nb = s->place[gp->b_op][lb].node;
  int nc = s->place[p->output][lc].node;
  double ea = (double)cov_dtype_size(s->place[gp->a_op][la].dtype);
  double eb = (double)cov_dtype_size(s->place[gp->b_op][lb].dtype);
  double eo = (double)cov_dtype_size(cap->out);
  double bwa = edge_between(g, na, s->node), bwb = edge_between(g, nb, s->node);
  double bwc = edge_between(g, s->node, nc);
  double thr = cap->throughput > 0 ? cap->throughput : 1;
  acg_mac_form form;
  if (map_mac_tiles(g, s->node, s->cap, &form)) { /* the simulator's own count (acg_mac.c) */
    int unit = s->node - g->n_storage;
    cov_dtype tb = cap->n_in > 1 ? cap->in[1] : cap->in[0];
    acg_mac_operands mo = {(uint64_t)m, (uint64_t)k, (uint64_t)n, {na, nb, nc, nc},
                           {cov_dtype_size(cap->in[0]), cov_dtype_size(tb), cov_dtype_size(cap->out)}, acc};
    return (double)acg_mac_tile_cycles(g, unit, s->cap, &form, &mo);
  }
  if (!gp->output_stationary) {
    /* bank factors as the simulator charges them: a row of B (n elements)
     * per weight-load cycle, a row of A (k elements) per stream cycle */
    double da = operand_bank_degree(s, gp, gp->a_op, gp->kl, k);
    double db = operand_bank_degree(s, gp, gp->b_op, gp->nl, n);
    double wl = fmax(k, cdiv(k * n * eb, bwb)) * db;
    double sm = fmax(m, cdiv(m * k * ea, bwa));
    double st = fmax(sm, fmax(cdiv(m * n * eo, bwc), cdiv(m * k * n, thr))) + sm * (da - 1);
    /* Double-buffered weights (ACG weight_buffers 2): in a stream of such
     * gemms each one's load hides behind its predecessor's stream. */
    if (acg_weights_overlap(g, s->node, na, nb, acc ? nc : -1)) return fmax(wl, st);
    return wl + st;
  }
  double pre = acc && !chain ? cdiv(m * n * eo, edge_between(g, nc, s->node)) : 0;
  /* A's and B's bytes each in whole cycles, summed on a shared edge, as the
   * simulator counts them (7 x 16 f16 of each over 64 B/cycle: 4 + 4, not
   * 7: resnet50_conv1's 7-step gemms) */
  double feed = na == nb && bwa > 0 ? cdiv(k * m * ea, bwa) + cdiv(k * n * eb, bwa)
                                    : fmax(cdiv(k * m * ea, bwa), cdiv(k * n * eb, bwb));
  double body = fmax(fmax(k, feed), cdiv(m * k * n, thr));
  /* a column of A (m elements) and a row of B (n) per step: the worse of
   * their bank factors, as the simulator charges it */
  body *= fmax(a_column_bank_degree(s, gp, m), operand_bank_degree(s, gp, gp->b_op, gp->nl, n));
  return pre + body + (hold ? 0 : cdiv(m * n * eo, bwc));
}

static double gemm_cycles(const map_schedule *s, const map_gemm_plan *gp, bool one_chain);

double map_gemm_cycles(const map_schedule *s, const map_gemm_plan *gp) { return gemm_cycles(s, gp, false); }

double map_gemm_chain_cycles(const map_schedule *s, const map_gemm_plan *gp) { return gemm_cycles(s, gp, true); }

/* All the schedule's GEMMs, or (one_chain) those of one leaf, or of one
 * chain where a chain runs over several leaves. */
static double gemm_cycles(const map_schedule *s, const map_gemm_plan *gp, bool one_chain) {
  const map_problem *p = &s->prob;
  double M = (double)map_gemm_m(s, gp), K = (double)map_gemm_k(s, gp), N = trips_of(s, gp->nl);
  /* Leaves: every scheduled loop the GEMM does not absorb (instances of a
   * replicated node run in parallel). */
  double leaves = 1;
  for (int i = 0; i < s->n_sloops; i++) {
    const map_sloop *sl = &s->sloops[i];
    if (map_gemm_absorbs(gp, i)) continue;
    if (sl->spatial && sl->axis > MAP_AX_LANES) continue;
    leaves *= (double)sl->trips;
  }
  /* On an output-stationary array consecutive leaves that only advance the
   * innermost reduction loops (no transfer inside them) keep the partial
   * sums in the PEs (chain/hold): the preload and drain are paid once per
   * run of such leaves. */
  double run = 1;
  if (gp->output_stationary)
    for (int i = s->n_sloops - 1; i > gp->out_init_after; i--) {
      const map_sloop *sl = &s->sloops[i];
      if (i == gp->ml || i == gp->ml2 || i == gp->kl || i == gp->nl) continue;
      if (!p->reduction[sl->loop]) break;
      run *= (double)sl->trips;
    }
  double per_leaf = 0;
  double kf = floor(K / gp->kmax), mf = floor(M / gp->mmax), nf = floor(N / gp->nmax);
  double kr = K - kf * gp->kmax, mr = M - mf * gp->mmax, nr = N - nf * gp->nmax;
  double kk[2] = {gp->kmax < K ? gp->kmax : K, kr}, mm[2] = {gp->mmax < M ? gp->mmax : M, mr};
  double nn[2] = {gp->nmax < N ? gp->nmax : N, nr};
  double kc[2] = {gp->kmax < K ? kf : 1, gp->kmax < K && kr > 0 ? 1 : 0};
  double mc[2] = {gp->mmax < M ? mf : 1, gp->mmax < M && mr > 0 ? 1 : 0};
  double nc[2] = {gp->nmax < N ? nf : 1, gp->nmax < N && nr > 0 ? 1 : 0};
  /* A leaf emits its GEMMs k piece outermost, then m, then n (the code
   * generator's leaf): consecutive ones accumulate into the same c tile, and
   * so chain (npu_chain_gemms), only where m and n are one piece each (m
   * digits alike in every GEMM of the chain). Then a chain runs over the leaf's k pieces and the
   * run of leaves: its first preloads (when it accumulates), its last
   * drains, the others neither. Otherwise every GEMM preloads and drains. */
  double kp = kc[0] + kc[1];
  bool one_c = mc[0] + mc[1] == 1 && nc[0] + nc[1] == 1;
  if (!gp->output_stationary || !one_c || run * kp <= 1) {
    for (int a = 0; a < 2; a++)
      for (int b = 0; b < 2; b++)
        for (int c = 0; c < 2; c++) {
          double cnt = kc[a] * mc[b] * nc[c];
          if (cnt > 0) per_leaf += cnt * gemm_occ(s, gp, mm[b], kk[a], nn[c], true, false, false);
        }
    if (one_chain || !map_mac_tiles(s->acg, s->node, s->cap, NULL) || gp->out_acc_load)
      return one_chain ? per_leaf : leaves * per_leaf;
    /* A tile unit reads C only where it accumulates: an output tile's first
     * GEMMs (the first k piece of its first reduction leaf, every m and n
     * piece) start it, as the code generator emits them */
    double red = 1, first = 0;
    for (int i = 0; i < s->n_sloops; i++) {
      const map_sloop *sl = &s->sloops[i];
      if (i > gp->out_init_after && p->reduction[sl->loop] && !map_gemm_absorbs(gp, i) &&
          !(sl->spatial && sl->axis > MAP_AX_LANES))
        red *= (double)sl->trips;
    }
    for (int b = 0; b < 2; b++)
      for (int c = 0; c < 2; c++)
        if (mc[b] * nc[c] > 0)
          first += mc[b] * nc[c] * (gemm_occ(s, gp, mm[b], kk[0], nn[c], false, false, false) -
                                    gemm_occ(s, gp, mm[b], kk[0], nn[c], true, false, false));
    return leaves * per_leaf + leaves / red * first;
  }
  double m = mm[0], n = nn[0];
  for (int a = 0; a < 2; a++)
    if (kc[a] > 0) per_leaf += kc[a] * gemm_occ(s, gp, m, kk[a], n, true, true, true);
  /* the first accumulates where the reduction goes on outside the run */
  double red = 1;
  for (int i = 0; i < s->n_sloops; i++) {
    const map_sloop *sl = &s->sloops[i];
    if (i > gp->out_init_after && p->reduction[sl->loop] && !map_gemm_absorbs(gp, i) &&
        !(sl->spatial && sl->axis > MAP_AX_LANES))
      red *= (double)sl->trips;
  }
  int la = kc[1] > 0 ? 1 : 0;
  double first = gemm_occ(s, gp, m, kk[0], n, gp->out_acc_load || red > run, false, true) -
                 gemm_occ(s, gp, m, kk[0], n, true, true, true);
  double lastg = gemm_occ(s, gp, m, kk[la], n, true, true, false) - gemm_occ(s, gp, m, kk[la], n, true, true, true);
  per_leaf += (first + lastg) / run;
  return one_chain ? run * per_leaf : leaves * per_leaf;
}

/* An output-stationary chain folded at whole groups of kl (os_k_digits)
 * reads, in its first GEMM, only the first group of B's kl dimension (a
 * convolution's filters at one input channel: convnet_layer2's w[:, 0] on
 * npu-16x16-os, 10 runs of 50 bytes inside the [kg][c][r][s] tensor). In
 * the tensor's order that group is spread over the whole tile and the
 * first GEMM waits for all of it (5,000 bytes, 80 cycles of DRAM). Laid
 * out channel-major, kl's dimension outermost with its step on whole
 * 64-byte blocks (the simulator's scoreboard unit, MAP_PLACE_ALIGN), each
 * group is a range of its own: the code generator then loads the tile
 * group by group (npu_head.c) and the first GEMM waits for one group. The
 * rest keeps the order of the tensor-order layout below (n's stride padded
 * so that one cycle's n elements fall in distinct banks).
 *
 * The price: DRAM runs end at the group's edge (a filter's r x s: 50 bytes,
 * one 64-byte burst, where the tensor's order joined c x r x s into 500),
 * so every load of the tile costs more bursts. Decided from the DRAM
 * costs (dram_cost, the bursts the simulator charges) of the two layouts:
 * channel-major only where the extra bursts of all of the tile's loads
 * take less of the DRAM interface than the first GEMM stops waiting for
 * (convnet_layer2: 20 cycles against 70; a tile reloaded per output tile
 * keeps the tensor's order). */
static bool chan_major(const map_schedule *s, const map_gemm_plan *gp, int o, int lv, int inner, int *dc,
                       int64_t *st) {
  const map_operand *op = &s->prob.operands[o];
  const map_place *pl = &s->place[o][lv];
  if (gp->n_kd < 2 || gp->kd[0] != gp->kl || gp->kl < 0 || (int64_t)gp->kmax >= map_gemm_k(s, gp)) return false;
  int l = s->sloops[gp->kl].loop, d0 = -1;
  for (int d = 0; d < op->rank; d++)
    if (op->acc.coef[d][l] != 0 && pl->shape[d] > 1) {
      if (d0 >= 0) return false;
      d0 = d;
    }
  if (d0 < 0 || d0 == inner) return false;
  /* B's DRAM loads at this level: their count and the DRAM node */
  const map_xfer *ld = NULL;
  double count = 0;
  for (int i = 0; i < s->n_xfers; i++) {
    const map_xfer *x = &s->xfers[i];
    if (x->operand != o || x->level != lv || x->dir != MAP_LOAD) continue;
    if (s->acg->storage[x->src].kind != ACG_DRAM) return false;
    ld = x;
    count += (double)x->count;
  }
  if (!ld) return false;
  double dbw = s->acg->storage[ld->src].bandwidth_bytes_per_cycle;
  if (!(dbw > 0)) return false;
  /* channel-major: kl's dimension outermost on whole blocks, the others
   * as the tensor-order layout orders them (recomputed without d0) */
  int64_t es = (int64_t)cov_dtype_size(pl->dtype), e = 1, blk = MAP_PLACE_ALIGN / es > 0 ? MAP_PLACE_ALIGN / es : 1;
  int64_t cm[COV_MAX_RANK], tord[COV_MAX_RANK];
  tile_strides(s, gp, o, lv, tord, false);
  for (int d = op->rank - 1; d >= 0; d--) {
    if (d == d0) continue;
    cm[d] = d == inner ? bank_free_stride(s, pl, e, pl->shape[d] < gp->nmax ? pl->shape[d] : gp->nmax) : e;
    e = cm[d] * pl->shape[d];
  }
  cm[d0] = (e + blk - 1) / blk * blk;
  double c_t = map_dram_cost_layout(s, ld, NULL, tord), c_cm = map_dram_cost_layout(s, ld, NULL, cm);
  /* the first GEMM's share: one piece of the split load (npu_head.c) */
  int64_t n = pl->shape[d0], pieces = n < MAP_HEAD_PIECES ? n : MAP_HEAD_PIECES, per = (n + pieces - 1) / pieces;
  double saved = (c_t - c_cm * (double)per / (double)n) / dbw, extra = (c_cm - c_t) * count / dbw;
  if (!(extra < saved)) return false;
  memcpy(st, cm, sizeof cm[0] * (size_t)op->rank);
  *dc = d0;
  return true;
}

/* Iterations of scheduled loop i the first GEMM of a leaf covers: its m,
 * n and the first fold of its k (k digits innermost first), 1 for the
 * loops it does not absorb. */
static int64_t first_cover(const map_schedule *s, const map_gemm_plan *gp, int i) {
  int64_t t = s->sloops[i].trips;
  if (i == gp->ml || i == gp->ml2) return t;
  if (i == gp->nl) return t < (int64_t)gp->nmax ? t : (int64_t)gp->nmax;
  if (gp->n_kd >= 2) {
    int64_t rem = gp->kmax;
    for (int d = gp->n_kd - 1; d >= 0; d--) {
      int64_t tr = s->sloops[gp->kd[d]].trips, c = rem < tr ? rem : tr;
      if (gp->kd[d] == i) return c;
      rem = (rem + tr - 1) / tr;
    }
    return 1;
  }
  if (i == gp->kl) return t < (int64_t)gp->kmax ? t : (int64_t)gp->kmax;
  return 1;
}

double map_gemm_first_share(const map_schedule *s, const map_gemm_plan *gp, const map_xfer *x) {
  int o = x->operand, lv = x->level;
  const map_operand *op = &s->prob.operands[o];
  const map_place *pl = &s->place[o][lv];
  /* only a chain folded at whole groups of kl (os_k_digits): where the
   * pieces follow another order the GEMMs wait on them in ways the cost
   * model does not follow (the tiles of a chain over k folds, A's k rows,
   * feed GEMMs faster than DRAM) */
  if ((o != gp->a_op && o != gp->b_op) || lv != map_walk_deepest(s, o) || !gp->output_stationary ||
      gp->n_kd < 2 || gp->kd[0] != gp->kl || gp->kl < 0 || (int64_t)gp->kmax >= map_gemm_k(s, gp))
    return 1;
  int64_t st[COV_MAX_RANK], es = (int64_t)cov_dtype_size(pl->dtype);
  map_gemm_tile_strides(s, gp, o, lv, st);
  /* the dimension npu_head.c splits: the outermost on chip, each step on
   * whole 64-byte blocks, the others within one step, not the DMA's
   * innermost (a DRAM run), not merged into it */
  int d0 = -1;
  for (int d = 0; d < op->rank; d++)
    if (pl->shape[d] > 1 && (d0 < 0 || st[d] > st[d0])) d0 = d;
  if (d0 < 0 || st[d0] * es % MAP_PLACE_ALIGN) return 1;
  bool merged = true, inside = false;
  int64_t dense = 1;
  for (int d = op->rank - 1; d >= 0; d--) {
    if (pl->shape[d] <= 1 || d == d0) continue;
    if (st[d] * pl->shape[d] > st[d0]) return 1;
    inside |= d > d0;
    merged &= d > d0 && st[d] == dense && pl->shape[d] == op->shape[d] && op->acc.off[d] == 0;
    dense *= pl->shape[d];
  }
  if (!inside || (merged && st[d0] == dense)) return 1;
  /* how far along d0 the first GEMM reads, from the tile's start */
  int64_t e0 = 1;
  for (int i = x->after + 1; i < s->n_sloops; i++) {
    int64_t k = op->acc.coef[d0][s->sloops[i].loop];
    e0 += (k < 0 ? -k : k) * s->sloops[i].step * (first_cover(s, gp, i) - 1);
  }
  int64_t n = pl->shape[d0], pieces = n < MAP_HEAD_PIECES ? n : MAP_HEAD_PIECES, per = (n + pieces - 1) / pieces;
  if (e0 >= n) return 1;
  int64_t need = (e0 + per - 1) / per * per;
  return (double)(need < n ? need : n) / (double)n;
}
