/* mapper/map_interp.c: runs a schedule on the CPU the way the hardware
 * would: every on-chip storage node is a byte buffer of its ACG capacity,
 * every transfer of the schedule is performed as a copy between those
 * buffers (converting to the level's dtype, f16 included), the main
 * statement reads and writes only the innermost tiles, and the epilogue runs
 * on the outermost on-chip output tile before its store to DRAM. Any element
 * access outside its tile, or any tile outside its buffer, is an error: a
 * schedule's correctness is tested, not assumed.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "mapper/map_internal.h"
#include "mapper/map_walk.h"
#include "common/loc.h"

/* An operand's access, reduced for leaf(): per dimension only the loops
 * with a non-zero coefficient (a convolution's dimensions depend on one or
 * two of its eight loops), and the tile box's flip correction at the
 * operand's innermost level (as map_walk_tile_base starts the box). */
typedef struct leaf_access {
  int lv;
  int n_nz[COV_MAX_RANK];
  int loop[COV_MAX_RANK][MAP_MAX_LOOPS];
  int64_t coef[COV_MAX_RANK][MAP_MAX_LOOPS];
  int64_t flip[COV_MAX_RANK];
} leaf_access;

static void leaf_access_init(const map_schedule *s, int o, leaf_access *a) {
  const map_operand *op = &s->prob.operands[o];
  a->lv = map_walk_deepest(s, o);
  const int64_t *t = s->place[o][a->lv].tile;
  for (int d = 0; d < op->rank; d++) {
    a->n_nz[d] = 0;
    a->flip[d] = 0;
    for (int l = 0; l < s->prob.n_loops; l++) {
      int64_t k = op->acc.coef[d][l];
      if (!k) continue;
      a->loop[d][a->n_nz[d]] = l;
      a->coef[d][a->n_nz[d]++] = k;
      if (k < 0) a->flip[d] += k * (t[l] - 1);
    }
  }
}

typedef struct interp {
  const map_schedule *s;
  const map_problem *p;
  const cov_tensor *inputs;
  int n_inputs;
  cov_tensor *out;
  uint8_t *buf[256];
  map_walk w; /* loop iterations and buffer halves (map_walk.h) */
  int pool_dim[2]; /* output dims pooled, -1 */
  int pool_win[2];
  int bias_dim; /* the output dimension that indexes a preloaded bias */
  leaf_access leaf[MAP_MAX_OPERANDS]; /* the main inputs, then the output */
  cov_status err;
} interp;

static uint8_t *place_ptr(interp *I, int o, int lv) {
  const map_place *pl = &I->s->place[o][lv];
  uint64_t start = map_walk_place_addr(&I->w, o, lv);
  const acg_storage *st = &I->s->acg->storage[pl->node];
  if (!map_fits(I->s->acg, pl->node, start + pl->bytes)) {
    if (!I->err)
      I->err = cov_error(COV_INTERNAL, COV_AT(NULL, I->p->layer), "interp %s: %s's tile [%llu, %llu) is outside %s (%llu B)",
                         I->p->layer, I->p->operands[o].name, (unsigned long long)start,
                         (unsigned long long)(start + pl->bytes), st->name,
                         (unsigned long long)st->capacity_bytes);
    return NULL;
  }
  return I->buf[pl->node] + start;
}

/* Flat element offset of idx in o's level-lv tile box, whose first element
 * is base (map_walk_tile_base), or -1 (error recorded). Callers that visit a
 * whole tile compute base once: it is the loop values above the tile, which
 * do not change within it. */
static int64_t tile_offset(interp *I, int o, int lv, const int64_t *base, const int64_t *idx) {
  const map_operand *op = &I->p->operands[o];
  int64_t shape[COV_MAX_RANK];
  map_walk_box(&I->w, o, lv, shape);
  int64_t off = 0;
  for (int d = 0; d < op->rank; d++) {
    int64_t k = idx[d] - base[d];
    if (k < 0 || k >= shape[d]) {
      if (!I->err)
        I->err = cov_error(COV_INTERNAL, COV_AT(NULL, I->p->layer),
                           "interp %s: %s index %lld in dim %d is outside its L%d tile [%lld, %lld)",
                           I->p->layer, op->name, (long long)idx[d], d, lv, (long long)base[d],
                           (long long)(base[d] + shape[d]));
      return -1;
    }
    off = off * shape[d] + k;
  }
  return off;
}

static int64_t local_offset(interp *I, int o, int lv, const int64_t *idx) {
  int64_t base[COV_MAX_RANK];
  map_walk_tile_base(&I->w, o, lv, base);
  return tile_offset(I, o, lv, base, idx);
}

static float load_el(const uint8_t *p, cov_dtype t, int64_t i) {
  if (t == COV_F16) {
    uint16_t h;
    memcpy(&h, p + 2 * i, 2);
    return cov_f16_to_f32(h);
  }
  if (t == COV_BF16) {
    uint16_t h;
    memcpy(&h, p + 2 * i, 2);
    return cov_bf16_to_f32(h);
  }
  if (t == COV_E4M3) return cov_e4m3_to_f32(p[i]);
  if (t == COV_E5M2) return cov_e5m2_to_f32(p[i]);
  float f;
  memcpy(&f, p + 4 * i, 4);
  return f;
}

static void store_el(uint8_t *p, cov_dtype t, int64_t i, float v) {
  if (t == COV_F16) {
    uint16_t h = cov_f32_to_f16(v);
    memcpy(p + 2 * i, &h, 2);
  } else if (t == COV_BF16) {
    uint16_t h = cov_f32_to_bf16(v);
    memcpy(p + 2 * i, &h, 2);
  } else if (t == COV_E4M3) {
    p[i] = cov_f32_to_e4m3(v);
  } else if (t == COV_E5M2) {
    p[i] = cov_f32_to_e5m2(v);
  } else {
    memcpy(p + 4 * i, &v, 4);
  }
}

static const cov_tensor *dram_tensor(interp *I, int o) {
  const map_operand *op = &I->p->operands[o];
  if (op->role == MAP_ROLE_OUTPUT) return I->out;
  return &I->inputs[op->layer_input];
}

static float dram_read(interp *I, int o, const int64_t *idx) {
  const map_operand *op = &I->p->operands[o];
  const cov_tensor *t = dram_tensor(I, o);
  int64_t off = 0;
  for (int d = 0; d < op->rank; d++) {
    if (idx[d] < 0 || idx[d] >= op->shape[d]) return (float)op->pad_value;
    off = off * op->shape[d] + idx[d];
  }
  return ((const float *)t->data)[off];
}

/* Iterates the box of operand o at level lv: global indices. */
static int next_idx(const int64_t *shape, int rank, int64_t *k) {
  for (int d = rank - 1; d >= 0; d--) {
    if (++k[d] < shape[d]) return 1;
    k[d] = 0;
  }
  return 0;
}

/* copy operand o's tile from level lv-1 into level lv (fill: init instead) */
static void do_load(interp *I, int o, int lv, int mode /* 0 copy, 1 init */) {
  const map_operand *op = &I->p->operands[o];
  const map_place *pl = &I->s->place[o][lv];
  uint8_t *dst = place_ptr(I, o, lv);
  if (!dst) return;
  int64_t base[COV_MAX_RANK], k[COV_MAX_RANK] = {0}, idx[COV_MAX_RANK], above[COV_MAX_RANK];
  int64_t box[COV_MAX_RANK];
  map_walk_tile_base(&I->w, o, lv, base);
  map_walk_box(&I->w, o, lv, box);
  uint8_t *src = NULL;
  if (mode == 0 && lv > 1) {
    map_walk_tile_base(&I->w, o, lv - 1, above);
    if (!(src = place_ptr(I, o, lv - 1))) return;
  }
  int64_t n = 0;
  do {
    for (int d = 0; d < op->rank; d++) idx[d] = base[d] + k[d];
    float v;
    if (mode == 1 && I->p->bias_init) { /* the preloaded bias (map_bias.c) */
      int64_t bi[1] = {idx[I->bias_dim]};
      v = dram_read(I, I->p->bias_op, bi);
    } else if (mode == 1) {
      v = (float)I->p->init;
    } else if (lv == 1) {
      v = dram_read(I, o, idx);
    } else {
      int64_t off = tile_offset(I, o, lv - 1, above, idx);
      if (off < 0) return;
      v = load_el(src, I->s->place[o][lv - 1].dtype, off);
    }
    store_el(dst, pl->dtype, n++, v);
  } while (op->rank > 0 && next_idx(box, op->rank, k));
}

/* partial sums back to the level above (lv >= 2) */
static void do_store_partial(interp *I, int o, int lv) {
  const map_operand *op = &I->p->operands[o];
  const map_place *pl = &I->s->place[o][lv];
  uint8_t *src = place_ptr(I, o, lv), *dst = place_ptr(I, o, lv - 1);
  if (!src || !dst) return;
  int64_t base[COV_MAX_RANK], k[COV_MAX_RANK] = {0}, idx[COV_MAX_RANK], above[COV_MAX_RANK];
  int64_t box[COV_MAX_RANK];
  map_walk_tile_base(&I->w, o, lv, base);
  map_walk_box(&I->w, o, lv, box);
  map_walk_tile_base(&I->w, o, lv - 1, above);
  int64_t n = 0;
  do {
    for (int d = 0; d < op->rank; d++) idx[d] = base[d] + k[d];
    int64_t off = tile_offset(I, o, lv - 1, above, idx);
    if (off < 0) return;
    store_el(dst, I->s->place[o][lv - 1].dtype, off, load_el(src, pl->dtype, n++));
  } while (op->rank > 0 && next_idx(box, op->rank, k));
}

static float apply(cov_op op, float a, float b) { return common_op_eval_f32((cov_op)op, a, b); }

/* The epilogue's registers live where the schedule put them (map_ir.h:
 * epi_node, epi_addr, laid out by map_epi_plan), in the buffer of that
 * storage, in the accumulator type; register 0 in place is the output's
 * level-1 tile itself. Every access is checked against the reserved area. */
typedef struct epi_view {
  uint8_t *area;
  cov_dtype dt;
  map_epi_layout lay;
  uint8_t *reg0;       /* in place: the output's level-1 tile */
  cov_dtype reg0_dt;
  int64_t *off0;       /* in place: each point's offset in that tile */
} epi_view;

static bool epi_slot(interp *I, int64_t base, int64_t i, int64_t size, const epi_view *E, int64_t *at) {
  if (base < 0 || i < 0 || i >= size || base + i >= E->lay.elems) {
    if (!I->err)
      I->err = cov_error(COV_INTERNAL, COV_AT(NULL, I->p->layer),
                         "interp %s: an epilogue register access falls outside the temporaries "
                         "the schedule reserves",
                         I->p->layer);
    return false;
  }
  *at = base + i;
  return true;
}

static float reg_ld(interp *I, const epi_view *E, int r, int64_t pt) {
  int64_t at;
  if (r == 0 && I->s->epi_in_place) return load_el(E->reg0, E->reg0_dt, E->off0[pt]);
  if (!epi_slot(I, E->lay.reg_off[r], pt, E->lay.npts, E, &at)) return 0;
  return load_el(E->area, E->dt, at);
}

static void reg_st(interp *I, const epi_view *E, int r, int64_t pt, float v) {
  int64_t at;
  if (r == 0 && I->s->epi_in_place) {
    store_el(E->reg0, E->reg0_dt, E->off0[pt], v);
    return;
  }
  if (epi_slot(I, E->lay.reg_off[r], pt, E->lay.npts, E, &at)) store_el(E->area, E->dt, at, v);
}

/* Point number of k[] with loop `drop` fixed (row registers) or the pooled
 * loops divided by their windows (the pooled result). */
static int64_t pt_key(const int64_t *k, const int *ol, int n_ol, const int64_t *tile, int drop,
                      const map_vop *pool) {
  int64_t key = 0;
  for (int j = 0; j < n_ol; j++) {
    int64_t ext = tile[ol[j]], kj = k[j];
    if (ol[j] == drop) ext = 1, kj = 0;
    for (int w = 0; pool && w < 2; w++)
      if (ol[j] == pool->pool_loop[w]) ext /= pool->window[w], kj /= pool->window[w];
    key = key * ext + kj;
  }
  return key;
}

/* The points of the level-1 output tile: its output loops (ol), their
 * count, and the walk's loop values at the tile's origin. */
typedef struct tile_points {
  const map_place *pl;
  int ol[MAP_MAX_LOOPS], n_ol;
  int64_t npts;
  int64_t origin[MAP_MAX_LOOPS];
} tile_points;

/* Point pt's position along each output loop (k) and, with v, the loop
 * values there. */
static void point_at(const interp *I, const tile_points *P, int64_t pt, int64_t *k, int64_t *v) {
  int64_t r = pt;
  for (int j = P->n_ol - 1; j >= 0; j--) k[j] = r % P->pl->tile[P->ol[j]], r /= P->pl->tile[P->ol[j]];
  if (!v) return;
  for (int l = 0; l < I->p->n_loops; l++) v[l] = P->origin[l];
  for (int j = 0; j < P->n_ol; j++) v[P->ol[j]] += k[j];
}

/* The epilogue's view: its temporaries (checked against what the
 * schedule reserves), register 0 on the tile, each point's offset in the
 * tile (gathered into register 0 unless that is the tile itself). */
static bool epi_setup(interp *I, int o, const tile_points *P, uint8_t *src, epi_view *E) {
  const map_problem *p = I->p;
  const map_schedule *s = I->s;
  memset(E, 0, sizeof *E);
  map_epi_plan(s, s->epi_in_place, P->pl->tile, &E->lay);
  E->dt = s->acc_dtype;
  E->reg0 = src;
  E->reg0_dt = P->pl->dtype;
  if (s->n_vops) {
    const acg_storage *st = s->epi_node >= 0 ? &s->acg->storage[s->epi_node] : NULL;
    uint64_t need = (uint64_t)E->lay.elems * cov_dtype_size(E->dt);
    if (!st || !I->buf[s->epi_node] || need > s->epi_bytes ||
        !map_fits(s->acg, s->epi_node, s->epi_addr + s->epi_bytes)) {
      I->err = cov_error(COV_INTERNAL, COV_AT(NULL, I->p->layer),
                         "interp %s: the epilogue needs %llu bytes of temporaries; the schedule "
                         "reserves %llu in %s",
                         p->layer, (unsigned long long)need, (unsigned long long)s->epi_bytes,
                         st ? st->name : "no storage");
      return false;
    }
    E->area = I->buf[s->epi_node] + s->epi_addr;
  }
  E->off0 = malloc(sizeof(int64_t) * (size_t)P->npts);
  if (!E->off0) {
    I->err = cov_error(COV_OUT_OF_MEMORY, NULL, "out of memory");
    return false;
  }
  int64_t v[MAP_MAX_LOOPS], idx[COV_MAX_RANK], k[MAP_MAX_LOOPS] = {0};
  for (int64_t pt = 0; pt < P->npts && !I->err; pt++) {
    point_at(I, P, pt, k, v);
    map_walk_index_of(&p->operands[o], v, p->n_loops, idx);
    E->off0[pt] = local_offset(I, o, 1, idx);
    if (E->off0[pt] < 0) break;
    if (s->n_vops && !s->epi_in_place) reg_st(I, E, 0, pt, load_el(src, P->pl->dtype, E->off0[pt]));
  }
  return true;
}

/* A row reduction's or a pool's starting values, and a fused row sum's 0. */
static void epi_vop_init(interp *I, epi_view *E, const map_vop *vo) {
  const map_vop *pool = vo->kind == MAP_VOP_POOL ? vo : NULL;
  int64_t at;
  if (vo->kind == MAP_VOP_ROW_REDUCE || pool) {
    float init = vo->op == COV_OP_MAX ? -INFINITY : 0.0f;
    if (pool && vo->b.kind == MAP_VS_SCALAR) init = (float)vo->b.value;
    int64_t base = pool ? E->lay.pool_off : E->lay.row_off[vo->dst];
    int64_t size = pool ? E->lay.pool_elems : E->lay.row_elems;
    for (int64_t i = 0; i < size; i++)
      if (epi_slot(I, base, i, size, E, &at)) store_el(E->area, E->dt, at, init);
  }
  if (vo->row_sum)
    for (int64_t i = 0; i < E->lay.row_elems; i++)
      if (epi_slot(I, E->lay.row_off[vo->sum_row], i, E->lay.row_elems, E, &at)) store_el(E->area, E->dt, at, 0.0f);
}

/* A per-row op: once per row value, in its row register. */
static void epi_row_map(interp *I, epi_view *E, const map_vop *vo) {
  float b = vo->b.kind == MAP_VS_SCALAR ? (float)vo->b.value : 0;
  for (int64_t i = 0; i < E->lay.row_elems && !I->err; i++) {
    int64_t at, to;
    if (epi_slot(I, E->lay.row_off[vo->a.index], i, E->lay.row_elems, E, &at) &&
        epi_slot(I, E->lay.row_off[vo->dst], i, E->lay.row_elems, E, &to))
      store_el(E->area, E->dt, to, apply(vo->op, load_el(E->area, E->dt, at), b));
  }
}

/* The value of source sv at point pt (position k): false when a vector
 * operand falls outside its place (then the op's later sources are not
 * read). */
static bool epi_src(interp *I, epi_view *E, const tile_points *P, const map_vop *vo, const map_vsrc *sv, int64_t pt,
                    const int64_t *k, float *val) {
  const map_problem *p = I->p;
  int64_t at;
  if (sv->kind == MAP_VS_REG) *val = reg_ld(I, E, sv->index, pt);
  else if (sv->kind == MAP_VS_SCALAR) *val = (float)sv->value;
  else if (sv->kind == MAP_VS_ROW) {
    if (epi_slot(I, E->lay.row_off[sv->index], pt_key(k, P->ol, P->n_ol, P->pl->tile, vo->loop, NULL),
                 E->lay.row_elems, E, &at))
      *val = load_el(E->area, E->dt, at);
  } else if (sv->kind == MAP_VS_VEC) {
    int64_t v[MAP_MAX_LOOPS], kk[MAP_MAX_LOOPS], vidx[COV_MAX_RANK];
    point_at(I, P, pt, kk, v);
    int vo_i = sv->index, lv = 1;
    map_walk_index_of(&p->operands[vo_i], v, p->n_loops, vidx);
    int64_t off = local_offset(I, vo_i, lv, vidx);
    uint8_t *vp = place_ptr(I, vo_i, lv);
    if (off < 0 || !vp) return false;
    *val = load_el(vp, I->s->place[vo_i][lv].dtype, off);
  }
  return true;
}

/* One vector op at every point: an element-wise op into its register (the
 * fused form adding to its row's sum), a row reduction or a pool into its
 * accumulators. */
static void epi_vop_points(interp *I, epi_view *E, const tile_points *P, const map_vop *vo) {
  const map_vop *pool = vo->kind == MAP_VOP_POOL ? vo : NULL;
  int64_t k[MAP_MAX_LOOPS] = {0};
  for (int64_t pt = 0; pt < P->npts && !I->err; pt++) {
    point_at(I, P, pt, k, NULL);
    float a = 0, b = 0;
    if (epi_src(I, E, P, vo, &vo->a, pt, k, &a)) epi_src(I, E, P, vo, &vo->b, pt, k, &b);
    if (I->err) break;
    int64_t at;
    if (vo->kind == MAP_VOP_MAP && vo->bias) {
      /* the fused form: op(a + b) rounded as the unfused add and op, and
       * the stored result added to its row's sum */
      float y = apply(vo->op, a + b, 0);
      reg_st(I, E, vo->dst, pt, y);
      if (vo->row_sum && epi_slot(I, E->lay.row_off[vo->sum_row], pt_key(k, P->ol, P->n_ol, P->pl->tile, vo->loop, NULL),
                                  E->lay.row_elems, E, &at))
        store_el(E->area, E->dt, at, load_el(E->area, E->dt, at) + reg_ld(I, E, vo->dst, pt));
    } else if (vo->kind == MAP_VOP_MAP) {
      reg_st(I, E, vo->dst, pt, apply(vo->op, a, b));
    } else if (vo->kind == MAP_VOP_ROW_REDUCE) {
      if (epi_slot(I, E->lay.row_off[vo->dst], pt_key(k, P->ol, P->n_ol, P->pl->tile, vo->loop, NULL),
                   E->lay.row_elems, E, &at))
        store_el(E->area, E->dt, at, apply(vo->op, load_el(E->area, E->dt, at), a));
    } else if (epi_slot(I, E->lay.pool_off, pt_key(k, P->ol, P->n_ol, P->pl->tile, -1, pool), E->lay.pool_elems, E,
                        &at)) {
      store_el(E->area, E->dt, at, apply(vo->op, load_el(E->area, E->dt, at), a));
    }
  }
}

/* The pooled values go to the destination register at each window's
 * first point (where the store reads them). */
static void epi_pool_out(interp *I, epi_view *E, const tile_points *P, const map_vop *pool) {
  int64_t k[MAP_MAX_LOOPS] = {0};
  for (int64_t pt = 0; pt < P->npts && !I->err; pt++) {
    point_at(I, P, pt, k, NULL);
    bool first = true;
    for (int j = 0; j < P->n_ol; j++)
      for (int w = 0; w < 2; w++)
        if (P->ol[j] == pool->pool_loop[w] && k[j] % pool->window[w]) first = false;
    int64_t at;
    if (first && epi_slot(I, E->lay.pool_off, pt_key(k, P->ol, P->n_ol, P->pl->tile, -1, pool), E->lay.pool_elems, E, &at))
      reg_st(I, E, pool->dst, pt, load_el(E->area, E->dt, at));
  }
}

/* Every point of the tile into the DRAM output: register 0 after an
 * epilogue, else the tile itself; pooled points once per window, and the
 * outputs of a padded loop (map_pad.c) dropped as the DMA store drops them. */
static void store_points(interp *I, int o, epi_view *E, const tile_points *P, const uint8_t *src) {
  const map_problem *p = I->p;
  float *outp = I->out->data;
  int64_t k[MAP_MAX_LOOPS] = {0}, v[MAP_MAX_LOOPS], idx[COV_MAX_RANK];
  for (int64_t pt = 0; pt < P->npts && !I->err; pt++) {
    point_at(I, P, pt, k, v);
    map_walk_index_of(&p->operands[o], v, p->n_loops, idx);
    bool skip = false;
    for (int w = 0; w < 2; w++)
      if (I->pool_dim[w] >= 0) {
        if (idx[I->pool_dim[w]] % I->pool_win[w]) skip = true;
        idx[I->pool_dim[w]] /= I->pool_win[w];
      }
    for (int d = 0; d < I->out->rank; d++) skip |= idx[d] < 0 || idx[d] >= I->out->shape[d];
    if (skip) continue;
    int64_t off = 0;
    for (int d = 0; d < I->out->rank; d++) off = off * I->out->shape[d] + idx[d];
    outp[off] = I->s->n_vops ? reg_ld(I, E, 0, pt) : load_el(src, P->pl->dtype, E->off0[pt]);
  }
}

/* The epilogue and the store of the level-1 output tile into DRAM. */
static void store_final(interp *I, int o) {
  const map_problem *p = I->p;
  const map_schedule *s = I->s;
  uint8_t *src = place_ptr(I, o, 1);
  if (!src) return;
  tile_points P = {.pl = &s->place[o][1], .npts = 1};
  for (int l = 0; l < p->n_loops; l++)
    if (!p->reduction[l]) P.ol[P.n_ol++] = l, P.npts *= P.pl->tile[l];
  map_walk_values(&I->w, 1, P.origin);
  epi_view E;
  if (!epi_setup(I, o, &P, src, &E)) return;
  for (int vi = 0; vi < s->n_vops && !I->err; vi++) {
    const map_vop *vo = &s->vops[vi];
    epi_vop_init(I, &E, vo);
    if (vo->kind == MAP_VOP_ROW_MAP) {
      epi_row_map(I, &E, vo);
      continue;
    }
    epi_vop_points(I, &E, &P, vo);
    if (vo->kind == MAP_VOP_POOL) epi_pool_out(I, &E, &P, vo);
  }
  store_points(I, o, &E, &P, src);
  free(E.off0);
}

/* the walk's transfers (map_walk.h): copies between the level buffers */
static void w_load(map_walk *w, int o, int lv) { do_load(w->ctx, o, lv, 0); }
static void w_fresh(map_walk *w, int o, int lv) { do_load(w->ctx, o, lv, 1); }
static void w_store(map_walk *w, int o, int lv) {
  if (lv == 1) store_final(w->ctx, o);
  else do_store_partial(w->ctx, o, lv);
}

/* Operand o's element offset in its innermost tile at the current point,
 * or -1 (error recorded). inner: the loop values below that tile. */
static int64_t leaf_offset(interp *I, int o, const leaf_access *a, const int64_t *inner) {
  const map_place *pl = &I->s->place[o][a->lv];
  int64_t rbox[COV_MAX_RANK];
  const int64_t *shape = pl->shape;
  if (map_walk_in_rect(I->s, o, a->lv)) { /* the current rectangle's box */
    map_walk_box(&I->w, o, a->lv, rbox);
    shape = rbox;
  }
  int64_t off = 0;
  for (int d = 0; d < I->p->operands[o].rank; d++) {
    int64_t k = -a->flip[d];
    for (int z = 0; z < a->n_nz[d]; z++) k += a->coef[d][z] * inner[a->loop[d][z]];
    if (k < 0 || k >= shape[d]) {
      /* outside the tile: the general path computes the index and the
       * tile's box and records the error */
      int64_t v[MAP_MAX_LOOPS], idx[COV_MAX_RANK];
      map_walk_values(&I->w, MAP_MAX_LEVELS + 1, v);
      map_walk_index_of(&I->p->operands[o], v, I->p->n_loops, idx);
      return local_offset(I, o, a->lv, idx);
    }
    off = off * shape[d] + k;
  }
  return off;
}

/* The main statement at one point. It runs once per point of the problem
 * (per MAC of a convolution), so it takes each operand's place in its
 * innermost tile from the loop values below that tile (one pass over the
 * scheduled loops): what tile_offset computes as index - box base. */
static void leaf(interp *I) {
  const map_problem *p = I->p;
  const map_schedule *s = I->s;
  const int n_ops = p->n_inputs + 1; /* leaf[j]: the inputs, then the output */
  int64_t inner[MAP_MAX_OPERANDS][MAP_MAX_LOOPS];
  for (int j = 0; j < n_ops; j++)
    for (int l = 0; l < p->n_loops; l++) inner[j][l] = 0;
  for (int i = 0; i < s->n_sloops; i++) {
    if (s->n_rects > 0 && i == s->rect_sloop) { /* a rectangle's origin (map_ir.h) */
      const map_rect *r = &s->rects[I->w.iter[i]];
      for (int j = 0; j < n_ops; j++)
        if (s->sloops[i].level >= I->leaf[j].lv)
          for (int d = 0; d < 2; d++) inner[j][s->rect_loop[d]] += r->org[d];
      continue;
    }
    const int64_t add = I->w.iter[i] * s->sloops[i].step;
    for (int j = 0; j < n_ops; j++)
      if (s->sloops[i].level >= I->leaf[j].lv) inner[j][s->sloops[i].loop] += add;
  }
  float a[4] = {0}, cur = 0;
  uint8_t *ob = NULL;
  int64_t ooff = 0;
  for (int j = 0; j < n_ops; j++) {
    const int o = j < p->n_inputs ? j : p->output, lv = I->leaf[j].lv;
    int64_t off = leaf_offset(I, o, &I->leaf[j], inner[j]);
    uint8_t *b = place_ptr(I, o, lv);
    if (off < 0 || !b) return;
    float x = load_el(b, s->place[o][lv].dtype, off);
    if (j < p->n_inputs) a[j] = x;
    else cur = x, ob = b, ooff = off;
  }
  float r;
  if (p->kind == MAP_MAIN_MAC) r = cur + a[0] * a[1];
  else if (p->kind == MAP_MAIN_REDUCE) r = apply(p->op, cur, a[0]);
  else r = p->n_inputs > 1 ? apply(p->op, a[0], a[1]) : apply(p->op, a[0], 0);
  store_el(ob, s->place[p->output][I->leaf[n_ops - 1].lv].dtype, ooff, r);
}

static void w_leaf(map_walk *w) { leaf(w->ctx); }

cov_status map_interp(const map_schedule *s, const cov_tensor *inputs, int n_inputs,
                      cov_tensor *out) {
  interp I;
  memset(&I, 0, sizeof I);
  I.s = s;
  I.p = &s->prob;
  I.inputs = inputs;
  I.n_inputs = n_inputs;
  I.out = out;
  for (int o = 0; o < I.p->n_operands; o++) {
    const map_operand *op = &I.p->operands[o];
    if (op->role == MAP_ROLE_OUTPUT) continue;
    if (op->layer_input < 0 || op->layer_input >= n_inputs)
      return cov_error(COV_INVALID_ARGUMENT, COV_AT(NULL, s->prob.layer), "interp: operand %s has no input", op->name);
    const cov_tensor *t = &inputs[op->layer_input];
    if (t->dtype != COV_F32 || t->rank != op->rank)
      return cov_error(COV_INVALID_ARGUMENT, COV_AT(NULL, s->prob.layer), "interp: input %s must be f32 of rank %d",
                       op->name, op->rank);
    for (int d = 0; d < op->rank; d++)
      if (t->shape[d] != op->shape[d])
        return cov_error(COV_INVALID_ARGUMENT, COV_AT(NULL, s->prob.layer), "interp: input %s has the wrong shape",
                         op->name);
  }
  /* the output tensor (pooled dims shrink) */
  const map_operand *oo = &I.p->operands[I.p->output];
  int64_t shape[COV_MAX_RANK];
  for (int d = 0; d < oo->rank; d++) shape[d] = oo->shape[d];
  I.pool_dim[0] = I.pool_dim[1] = -1;
  for (int v = 0; v < s->n_vops; v++)
    if (s->vops[v].kind == MAP_VOP_POOL)
      for (int w = 0; w < 2; w++)
        for (int d = 0; d < oo->rank; d++)
          if (oo->acc.coef[d][s->vops[v].pool_loop[w]]) {
            I.pool_dim[w] = d;
            I.pool_win[w] = s->vops[v].window[w];
            shape[d] /= s->vops[v].window[w];
          }
  if (I.p->n_inputs + 1 > MAP_MAX_OPERANDS || I.p->n_inputs > 4)
    return cov_error(COV_INTERNAL, COV_AT(NULL, s->prob.layer), "interp %s: %d main inputs",
                     s->prob.layer, I.p->n_inputs);
  for (int j = 0; j <= I.p->n_inputs; j++)
    leaf_access_init(s, j < I.p->n_inputs ? j : I.p->output, &I.leaf[j]);
  I.bias_dim = s->prob.bias_init ? map_bias_out_dim(&s->prob, s->prob.bias_op) : 0;
  if (I.bias_dim < 0)
    return cov_error(COV_INTERNAL, COV_AT(NULL, s->prob.layer), "interp %s: the preloaded bias is not indexed "
                     "by an output dimension", s->prob.layer);
  COV_RETURN_IF_ERROR(cov_tensor_alloc(out, COV_F32, oo->rank, shape));
  /* buffers of the ACG capacities */
  cov_status st = NULL;
  const cov_acg *g = s->acg;
  for (int n = 0; n < g->n_storage && n < 256; n++) {
    if (g->storage[n].kind == ACG_DRAM || g->storage[n].kind == ACG_CACHE) continue;
    if (g->storage[n].capacity_bytes > ((uint64_t)1 << 30)) {
      st = cov_error(COV_OUT_OF_RANGE, COV_AT(NULL, s->prob.layer), "interp: %s is too large to simulate", g->storage[n].name);
      break;
    }
    I.buf[n] = malloc(g->storage[n].capacity_bytes);
    if (!I.buf[n]) st = cov_error(COV_OUT_OF_MEMORY, NULL, "out of memory");
  }
  if (!st) {
    static const map_walk_ops ops = {.load = w_load, .fresh = w_fresh, .store = w_store, .leaf = w_leaf};
    map_walk_init(&I.w, s, &ops, &I, &I.err);
    map_walk_run(&I.w);
    st = I.err;
  }
  for (int n = 0; n < 256; n++) free(I.buf[n]);
  if (st) cov_tensor_release(out);
  return st;
}
