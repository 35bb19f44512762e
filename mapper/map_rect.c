/* mapper/map_rect.c: rectangular pixel tiles for output-stationary GEMMs
 * (map_ir.h "Rectangular pixel tiles").
 *
 * An output-stationary array holds one output pixel per row for the whole
 * reduction, so a layer costs (reduction steps) x (pixel tiles): every
 * pixel tile the rows cannot fill costs as much as a full one. Divisor
 * tiling with padding (map_pad.c) covers an 11 x 11 output with 9 blocks
 * of 4 x 4 (a 12 x 12 padding) where ceil(121 / 16) = 8 tiles of up to 16
 * pixels would do: 1 x 11, five 2 x 8 and two 5 x 3. SCALE-Sim's
 * output-stationary model folds the 121 pixels the same way (im2col rows).
 *
 * Here the best schedules of the search whose GEMMs stream a block of two
 * output loops through m digits get a variant that covers those two loops
 * with the fewest rectangles of at most `rows` pixels: the same loop nest,
 * with the two loops' outer tiling replaced by one loop over the
 * rectangles. Each variant is built (map_build) and costed like any
 * schedule; the cheapest that the cost model ranks below its own source
 * joins the kept schedules without displacing one of them, so that the
 * NPU's selection by simulation (cov_npu_select_by_simulation) still sees
 * every schedule the search kept: narrow rectangles store in short DRAM
 * runs, and where the cost model misjudged that (mobilenet_v2's 14 x 14
 * expansions on npu-32x32-os in 13 rectangles, not 14 rows: 304 cycles
 * slower) the schedule it displaced was the one that simulated fastest.
 *
 * The rectangles come from an exact guillotine partition (dynamic
 * programming over sub-rectangles: each is one tile or cut in two along a
 * row or a column), fewest tiles first, then fewest row segments (each row
 * of a rectangle is one DRAM run of its store per channel). */
#include <stdlib.h>
#include <string.h>

#include "mapper/map_internal.h"

#define RECT_MAX_SIDE 64

typedef struct cell {
  int n, segs; /* tiles, row segments */
  int cut, at; /* 0: one tile; 1: rows [0, at) and [at, a); 2: columns */
} cell;

typedef struct part {
  cell c[RECT_MAX_SIDE + 1][RECT_MAX_SIDE + 1];
  int n;
  map_rect r[MAP_MAX_RECTS];
} part;

static bool better(int n, int segs, const cell *c) { return n < c->n || (n == c->n && segs < c->segs); }

/* Fewest tiles of at most `rows` pixels for every a x b (a, b <= side). */
static void solve(part *P, int64_t A, int64_t B, int64_t rows) {
  for (int a = 1; a <= A; a++)
    for (int b = 1; b <= B; b++) {
      cell *c = &P->c[a][b];
      if ((int64_t)a * b <= rows) {
        *c = (cell){1, a, 0, 0};
        continue;
      }
      c->n = c->segs = 1 << 30;
      for (int i = 1; i < a; i++) {
        const cell *x = &P->c[i][b], *y = &P->c[a - i][b];
        if (better(x->n + y->n, x->segs + y->segs, c)) *c = (cell){x->n + y->n, x->segs + y->segs, 1, i};
      }
      for (int j = 1; j < b; j++) {
        const cell *x = &P->c[a][j], *y = &P->c[a][b - j];
        if (better(x->n + y->n, x->segs + y->segs, c)) *c = (cell){x->n + y->n, x->segs + y->segs, 2, j};
      }
    }
}

static void emit(part *P, int64_t o0, int64_t o1, int a, int b) {
  const cell *c = &P->c[a][b];
  if (c->cut == 1) {
    emit(P, o0, o1, c->at, b);
    emit(P, o0 + c->at, o1, a - c->at, b);
  } else if (c->cut == 2) {
    emit(P, o0, o1, a, c->at);
    emit(P, o0, o1 + c->at, a, b - c->at);
  } else if (P->n < MAP_MAX_RECTS) {
    P->r[P->n++] = (map_rect){{o0, o1}, {a, b}};
  }
}

/* The rectangles of an A x B block of pixels (A rows of the outer loop),
 * or 0 when it is larger than this file handles. The one with the fewest
 * rows goes last: after the last GEMM only its drain, epilogue and store
 * remain, and its store is one DRAM run per row and channel. */
static int partition(int64_t A, int64_t B, int64_t rows, map_rect *out) {
  if (A < 1 || B < 1 || A > RECT_MAX_SIDE || B > RECT_MAX_SIDE || rows < 1) return 0;
  part *P = malloc(sizeof *P);
  if (!P) return 0;
  solve(P, A, B, rows);
  int n = 0;
  if (P->c[A][B].n <= MAP_MAX_RECTS) {
    P->n = 0;
    emit(P, 0, 0, (int)A, (int)B);
    n = P->n;
    int last = 0;
    for (int i = 1; i < n; i++) {
      const map_rect *a = &P->r[i], *b = &P->r[last];
      if (a->ext[0] < b->ext[0] || (a->ext[0] == b->ext[0] && a->ext[0] * a->ext[1] < b->ext[0] * b->ext[1]))
        last = i;
    }
    map_rect keep = P->r[last];
    memmove(&P->r[last], &P->r[last + 1], sizeof(map_rect) * (size_t)(n - 1 - last));
    P->r[n - 1] = keep;
    memcpy(out, P->r, sizeof(map_rect) * (size_t)n);
  }
  free(P);
  return n;
}

void map_rect_box(const map_schedule *s, int o, int lv, int r, int64_t *box) {
  const map_place *pl = &s->place[o][lv];
  int64_t t[MAP_MAX_LOOPS];
  for (int l = 0; l < s->prob.n_loops; l++) t[l] = pl->tile[l];
  t[s->rect_loop[0]] = s->rects[r].ext[0];
  t[s->rect_loop[1]] = s->rects[r].ext[1];
  map_tile_box(&s->prob.operands[o], s->prob.n_loops, t, box);
}

/* The mapping decision schedule s was built from (map_build's inverse). */
static void choice_of(const map_schedule *s, map_choice *ch) {
  const map_problem *p = &s->prob;
  memset(ch, 0, sizeof *ch);
  for (int lv = 0; lv < MAP_MAX_LEVELS; lv++) {
    for (int l = 0; l < MAP_MAX_LOOPS; l++) ch->fac[lv][l] = 1;
    bool seen[MAP_MAX_LOOPS] = {false};
    int n = 0;
    for (int i = 0; i < s->n_sloops; i++) {
      const map_sloop *sl = &s->sloops[i];
      if (sl->level != lv || sl->spatial || seen[sl->loop]) continue;
      seen[sl->loop] = true;
      ch->order[lv][n++] = sl->loop;
    }
    for (int l = 0; l < p->n_loops; l++)
      if (!seen[l]) ch->order[lv][n++] = l;
  }
  for (int l = 0; l < MAP_MAX_LOOPS; l++) ch->sp[l] = ch->wg[l] = ch->wave[l] = 1;
  ch->wg_outer = s->n_sloops > 0 && s->sloops[0].axis == MAP_AX_WORKGROUP;
  for (int i = 0; i < s->n_sloops; i++) {
    const map_sloop *sl = &s->sloops[i];
    if (!sl->spatial) ch->fac[sl->level][sl->loop] *= sl->trips;
    else if (sl->axis == MAP_AX_WORKGROUP) ch->wg[sl->loop] *= sl->trips;
    else if (sl->axis == MAP_AX_WAVE) ch->wave[sl->loop] *= sl->trips;
    else {
      ch->sp[sl->loop] *= sl->trips;
      ch->sp_axis[sl->loop] = sl->axis;
    }
  }
  for (int o = 0; o < p->n_operands; o++)
    for (int lv = 1; lv < s->n_levels; lv++)
      if (s->place[o][lv].present && s->place[o][lv].double_buffered) ch->dbuf = true;
}

/* The two output loops of s's GEMMs' pixels: the streamed one (ml) and the
 * second digit of m (ml2), or with one streamed loop (a 13-pixel row of a
 * 13 x 13 output: 13 tiles where ceil(169 / 16) = 11 do) the longest
 * other output loop that A and the output read and B does not. */
static bool pixel_loops(const map_schedule *s, const map_gemm_plan *gp, int *lo, int *li) {
  const map_problem *p = &s->prob;
  *li = s->sloops[gp->ml].loop;
  *lo = gp->ml2 >= 0 ? s->sloops[gp->ml2].loop : -1;
  for (int l = 0; l < p->n_loops && gp->ml2 < 0; l++)
    if (l != *li && !p->reduction[l] && p->extent[l] > 1 && map_operand_depends(&p->operands[gp->a_op], l) &&
        map_operand_depends(&p->operands[p->output], l) && !map_operand_depends(&p->operands[gp->b_op], l) &&
        (*lo < 0 || p->extent[l] > p->extent[*lo]))
      *lo = l;
  return *lo >= 0 && !p->reduction[*li] && !p->reduction[*lo];
}

/* The rectangle variant of schedule s, whose problem may be proto's with
 * its two streamed loops padded; false when s does not stream two loops
 * through m digits or the rectangles need as many tiles as s. */
static bool variant(const map_schedule *s, const map_schedule *proto, map_schedule *out) {
  if (s->n_rects || !map_gemm_applies(s) || !map_output_stationary(s->acg, s->node) || s->n_levels < 3)
    return false;
  map_gemm_plan gp;
  map_gemm_plan_make(s, &gp);
  if (gp.ml < 0) return false;
  const map_problem *p = &s->prob, *p0 = &proto->prob;
  int L = s->n_levels, li, lo;
  if (!pixel_loops(s, &gp, &lo, &li) || p->n_loops != p0->n_loops) return false;
  for (int l = 0; l < p->n_loops; l++)
    if (l != li && l != lo && p->extent[l] != p0->extent[l]) return false;
  /* rectangles are laid out along the loop of the output's innermost
   * dimension (its DRAM runs): rect_loop[1] */
  const map_operand *out0 = &p->operands[p->output];
  for (int d = out0->rank - 1; d >= 0; d--) {
    if (out0->acc.coef[d][lo] && !out0->acc.coef[d][li]) {
      int tmp = lo;
      lo = li;
      li = tmp;
    }
    if (out0->acc.coef[d][lo] || out0->acc.coef[d][li]) break;
  }
  int64_t rows = gp.mmax, A = p0->extent[lo], B = p0->extent[li];
  /* s's pixel tiles: the two loops' extents over what one GEMM streams */
  int64_t tiles = 1;
  for (int k = 0; k < 2; k++) {
    int l = k ? li : lo, in = -1;
    if (s->sloops[gp.ml].loop == l) in = gp.ml;
    if (gp.ml2 >= 0 && s->sloops[gp.ml2].loop == l) in = gp.ml2;
    tiles *= p->extent[l] / (in >= 0 ? s->sloops[in].trips : 1);
  }
  map_rect r[MAP_MAX_RECTS];
  int n = partition(A, B, rows, r);
  if (n < 2 || n >= tiles) return false;
  int nom = 0;
  for (int i = 1; i < n; i++) {
    int64_t ai = r[i].ext[0] * r[i].ext[1], an = r[nom].ext[0] * r[nom].ext[1];
    if (ai > an || (ai == an && r[i].ext[1] > r[nom].ext[1])) nom = i;
  }
  if (r[nom].ext[0] < 2 || r[nom].ext[1] < 2) return false;
  map_choice ch;
  choice_of(s, &ch);
  for (int lv = 0; lv < L - 1; lv++) ch.fac[lv][lo] = ch.fac[lv][li] = 1;
  ch.fac[L - 1][lo] = r[nom].ext[0];
  ch.fac[L - 1][li] = r[nom].ext[1];
  /* the two loops next to each other, lo outside, where li was */
  int *ord = ch.order[L - 1], m = 0, tmp[MAP_MAX_LOOPS];
  for (int i = 0; i < p->n_loops; i++) {
    if (ord[i] == lo) continue;
    if (ord[i] == li) tmp[m++] = lo;
    tmp[m++] = ord[i];
  }
  memcpy(ord, tmp, sizeof tmp[0] * (size_t)p->n_loops);
  map_schedule *P = malloc(sizeof *P);
  map_target *t = malloc(sizeof *t);
  bool ok = false;
  if (!P || !t) goto done;
  *P = *s;
  P->prob.extent[lo] = A;
  P->prob.extent[li] = B;
  P->prob.ops = 1;
  for (int l = 0; l < P->prob.n_loops; l++) P->prob.ops *= P->prob.extent[l];
  P->n_rects = n;
  P->rect_level = L - 2;
  P->rect_nominal = nom;
  P->rect_loop[0] = lo;
  P->rect_loop[1] = li;
  memcpy(P->rects, r, sizeof(map_rect) * (size_t)n);
  cov_status st = map_bind_target(&P->prob, s->acg, t);
  if (!st) st = map_bind_epilogue_storage(P, t);
  if (st || t->node != s->node || t->cap != s->cap) {
    cov_status_free(st);
    goto done;
  }
  const char *why = NULL;
  if (map_build(t, P, &ch, out, &why) < 0) goto done;
  /* the variant keeps what made s's GEMMs: the same two loops streamed */
  map_gemm_plan g2;
  map_gemm_plan_make(out, &g2);
  if (g2.ml < 0 || g2.ml2 < 0 || !map_rect_inner(out, g2.ml) || !map_rect_inner(out, g2.ml2)) goto done;
  /* each rectangle's epilogue runs as it drains, in place, and its store
   * leaves from there (npu_cg_store_subtile) */
  if (s->prob.bias_init || (s->n_vops && !map_epi_per_subtile(out)) ||
      map_epi_out_dtype(out) != out->place[out->prob.output][1].dtype)
    goto done;
  st = map_verify(out);
  ok = !st;
  cov_status_free(st);
done:
  free(P);
  free(t);
  return ok;
}

cov_status map_rect_search(const map_schedule *proto, cov_schedule *cs) {
  map_schedule *v = malloc(sizeof *v), *best = malloc(sizeof *best);
  if (!v || !best) {
    free(v);
    free(best);
    return cov_error(COV_OUT_OF_MEMORY, NULL, "out of memory");
  }
  bool have = false;
  for (int i = -1; i < cs->n_alts && cs->n_alts < MAP_MAX_ALTS + 1; i++) {
    const map_schedule *src = i < 0 ? &cs->s : &cs->alts[i];
    if (!variant(src, proto, v)) continue;
    cs->evaluations++;
    /* fewer tiles must pay for the rectangles' shorter store runs and
     * narrower epilogues: kept where the cost model says so */
    if (v->cost.cycles >= src->cost.cycles) continue;
    if (!have || v->cost.cycles < best->cost.cycles) {
      *best = *v;
      have = true;
    }
  }
  if (have) {
    /* one more candidate, none dropped: the schedules the search kept stay
     * for the selection by simulation (cov_npu_select_by_simulation),
     * which decides where the cost model misjudges the variant */
    int n = cs->n_alts + 1, at = 0;
    map_schedule *all = malloc(sizeof *all * (size_t)(n + 1));
    if (!all) {
      free(v);
      free(best);
      return cov_error(COV_OUT_OF_MEMORY, NULL, "out of memory");
    }
    all[0] = cs->s;
    for (int i = 0; i < cs->n_alts; i++) all[i + 1] = cs->alts[i];
    while (at < n && all[at].cost.cycles <= best->cost.cycles) at++;
    memmove(&all[at + 1], &all[at], sizeof *all * (size_t)(n - at));
    all[at] = *best;
    cs->s = all[0];
    cs->n_alts = n;
    for (int i = 0; i < n; i++) cs->alts[i] = all[i + 1];
    free(all);
  }
  free(v);
  free(best);
  return NULL;
}
