/* mapper/map_interp.c: runs a schedule on the CPU the way the hardware
 * would: every on-chip storage node is a byte buffer of its ACG capacity,
 * every transfer of the schedule is performed as a copy between those
 * buffers (converting to the level's dtype, f16 included), the main
 * statement reads and writes only the innermost tiles, and the epilogue runs
 * on the outermost on-chip output tile before its store to DRAM. Any element
 * access outside its tile, or any tile outside its buffer, is an error: a
 * schedule's correctness is tested, not assumed. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "mapper/map_internal.h"

typedef struct interp {
  const map_schedule *s;
  const map_problem *p;
  const cov_tensor *inputs;
  int n_inputs;
  cov_tensor *out;
  uint8_t *buf[256];
  int64_t iter[MAP_MAX_SLOOPS];
  int64_t parity[MAP_MAX_OPERANDS][MAP_MAX_LEVELS];
  int pool_dim[2]; /* output dims pooled, -1 */
  int pool_win[2];
  float *regs[MAP_MAX_VREGS];
  float *rows[2];
  int64_t n_pts_max;
  cov_status err;
} interp;

static void values(const interp *I, int below_level, int64_t *v) {
  for (int l = 0; l < I->p->n_loops; l++) v[l] = 0;
  for (int i = 0; i < I->s->n_sloops; i++)
    if (I->s->sloops[i].level < below_level)
      v[I->s->sloops[i].loop] += I->iter[i] * I->s->sloops[i].step;
}

static void index_of(const map_operand *o, const int64_t *v, int n_loops, int64_t *idx) {
  for (int d = 0; d < o->rank; d++) {
    int64_t x = o->acc.off[d];
    for (int l = 0; l < n_loops; l++) x += o->acc.coef[d][l] * v[l];
    idx[d] = x;
  }
}

/* The tile box origin of operand o at level lv for the current iteration. */
static void tile_base(const interp *I, int o, int lv, int64_t *base) {
  const map_operand *op = &I->p->operands[o];
  int64_t v[MAP_MAX_LOOPS];
  values(I, lv, v);
  const int64_t *t = I->s->place[o][lv].tile;
  for (int d = 0; d < op->rank; d++) {
    int64_t x = op->acc.off[d];
    for (int l = 0; l < I->p->n_loops; l++) {
      int64_t c = op->acc.coef[d][l];
      x += c * v[l];
      if (c < 0) x += c * (t[l] - 1);
    }
    base[d] = x;
  }
}

static uint8_t *place_ptr(interp *I, int o, int lv) {
  const map_place *pl = &I->s->place[o][lv];
  uint64_t half = pl->double_buffered ? (uint64_t)(I->parity[o][lv] & 1) : 0;
  uint64_t start = pl->addr + half * pl->bytes;
  const acg_storage *st = &I->s->acg->storage[pl->node];
  if (start + pl->bytes > st->capacity_bytes) {
    if (!I->err)
      I->err = cov_error(COV_INTERNAL, NULL, "interp %s: %s's tile [%llu, %llu) is outside %s (%llu B)",
                         I->p->layer, I->p->operands[o].name, (unsigned long long)start,
                         (unsigned long long)(start + pl->bytes), st->name,
                         (unsigned long long)st->capacity_bytes);
    return NULL;
  }
  return I->buf[pl->node] + start;
}

/* Flat element offset of idx in the tile box, or -1 (error recorded). */
static int64_t local_offset(interp *I, int o, int lv, const int64_t *idx) {
  const map_operand *op = &I->p->operands[o];
  const map_place *pl = &I->s->place[o][lv];
  int64_t base[COV_MAX_RANK], off = 0;
  tile_base(I, o, lv, base);
  for (int d = 0; d < op->rank; d++) {
    int64_t k = idx[d] - base[d];
    if (k < 0 || k >= pl->shape[d]) {
      if (!I->err)
        I->err = cov_error(COV_INTERNAL, NULL,
                           "interp %s: %s index %lld in dim %d is outside its L%d tile [%lld, %lld)",
                           I->p->layer, op->name, (long long)idx[d], d, lv, (long long)base[d],
                           (long long)(base[d] + pl->shape[d]));
      return -1;
    }
    off = off * pl->shape[d] + k;
  }
  return off;
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
  I->parity[o][lv]++;
  uint8_t *dst = place_ptr(I, o, lv);
  if (!dst) return;
  int64_t base[COV_MAX_RANK], k[COV_MAX_RANK] = {0}, idx[COV_MAX_RANK];
  tile_base(I, o, lv, base);
  int64_t n = 0;
  do {
    for (int d = 0; d < op->rank; d++) idx[d] = base[d] + k[d];
    float v;
    if (mode == 1) {
      v = (float)I->p->init;
    } else if (lv == 1) {
      v = dram_read(I, o, idx);
    } else {
      int64_t off = local_offset(I, o, lv - 1, idx);
      uint8_t *src = place_ptr(I, o, lv - 1);
      if (off < 0 || !src) return;
      v = load_el(src, I->s->place[o][lv - 1].dtype, off);
    }
    store_el(dst, pl->dtype, n++, v);
  } while (op->rank > 0 && next_idx(pl->shape, op->rank, k));
}

/* partial sums back to the level above (lv >= 2) */
static void do_store_partial(interp *I, int o, int lv) {
  const map_operand *op = &I->p->operands[o];
  const map_place *pl = &I->s->place[o][lv];
  uint8_t *src = place_ptr(I, o, lv), *dst = place_ptr(I, o, lv - 1);
  if (!src || !dst) return;
  int64_t base[COV_MAX_RANK], k[COV_MAX_RANK] = {0}, idx[COV_MAX_RANK];
  tile_base(I, o, lv, base);
  int64_t n = 0;
  do {
    for (int d = 0; d < op->rank; d++) idx[d] = base[d] + k[d];
    int64_t off = local_offset(I, o, lv - 1, idx);
    if (off < 0) return;
    store_el(dst, I->s->place[o][lv - 1].dtype, off, load_el(src, pl->dtype, n++));
  } while (op->rank > 0 && next_idx(pl->shape, op->rank, k));
}

static float apply(cov_op op, float a, float b) { return cov_op_eval_f32((cov_op)op, a, b); }

/* The epilogue and the store of the level-1 output tile into DRAM. */
static void store_final(interp *I, int o) {
  const map_problem *p = I->p;
  const map_operand *op = &p->operands[o];
  const map_place *pl = &I->s->place[o][1];
  uint8_t *src = place_ptr(I, o, 1);
  if (!src) return;
  /* points: the output loops of the tile */
  int ol[MAP_MAX_LOOPS], n_ol = 0;
  int64_t npts = 1;
  for (int l = 0; l < p->n_loops; l++)
    if (!p->reduction[l]) ol[n_ol++] = l, npts *= pl->tile[l];
  if (npts > I->n_pts_max) {
    I->err = cov_error(COV_INTERNAL, NULL, "interp: epilogue tile too large");
    return;
  }
  int64_t origin[MAP_MAX_LOOPS], v[MAP_MAX_LOOPS], idx[COV_MAX_RANK], k[MAP_MAX_LOOPS];
  values(I, 1, origin);
  /* gather */
  memset(k, 0, sizeof k);
  for (int64_t pt = 0; pt < npts; pt++) {
    int64_t r = pt;
    for (int j = n_ol - 1; j >= 0; j--) k[j] = r % pl->tile[ol[j]], r /= pl->tile[ol[j]];
    for (int l = 0; l < p->n_loops; l++) v[l] = origin[l];
    for (int j = 0; j < n_ol; j++) v[ol[j]] += k[j];
    index_of(op, v, p->n_loops, idx);
    int64_t off = local_offset(I, o, 1, idx);
    if (off < 0) return;
    I->regs[0][pt] = load_el(src, pl->dtype, off);
  }
  /* strides of each output loop in point numbering */
  int64_t stride[MAP_MAX_LOOPS] = {0}, acc_s = 1;
  for (int j = n_ol - 1; j >= 0; j--) stride[ol[j]] = acc_s, acc_s *= pl->tile[ol[j]];
  for (int vi = 0; vi < I->s->n_vops; vi++) {
    const map_vop *vo = &I->s->vops[vi];
    float *dst = vo->kind == MAP_VOP_ROW_REDUCE ? I->rows[vo->dst] : I->regs[vo->dst];
    if (vo->kind == MAP_VOP_ROW_REDUCE) {
      float init = vo->op == COV_OP_MAX ? -INFINITY : 0.0f;
      for (int64_t pt = 0; pt < npts; pt++) dst[pt] = init;
    }
    float *tmp = I->regs[MAP_MAX_VREGS - 1];
    if (vo->kind == MAP_VOP_POOL)
      for (int64_t pt = 0; pt < npts; pt++) tmp[pt] = -INFINITY;
    for (int64_t pt = 0; pt < npts; pt++) {
      int64_t r = pt;
      for (int j = n_ol - 1; j >= 0; j--) k[j] = r % pl->tile[ol[j]], r /= pl->tile[ol[j]];
      float a = 0, b = 0;
      const map_vsrc *srcs[2] = {&vo->a, &vo->b};
      float *vals[2] = {&a, &b};
      for (int q = 0; q < 2; q++) {
        const map_vsrc *sv = srcs[q];
        if (sv->kind == MAP_VS_REG) *vals[q] = I->regs[sv->index][pt];
        else if (sv->kind == MAP_VS_SCALAR) *vals[q] = (float)sv->value;
        else if (sv->kind == MAP_VS_ROW) {
          int64_t key = pt - k[0] * 0;
          for (int j = 0; j < n_ol; j++)
            if (ol[j] == vo->loop) key = pt - k[j] * stride[ol[j]];
          *vals[q] = I->rows[sv->index][key];
        } else if (sv->kind == MAP_VS_VEC) {
          for (int l = 0; l < p->n_loops; l++) v[l] = origin[l];
          for (int j = 0; j < n_ol; j++) v[ol[j]] += k[j];
          int vo_i = sv->index, lv = 1;
          int64_t vidx[COV_MAX_RANK];
          index_of(&p->operands[vo_i], v, p->n_loops, vidx);
          int64_t off = local_offset(I, vo_i, lv, vidx);
          uint8_t *vp = place_ptr(I, vo_i, lv);
          if (off < 0 || !vp) return;
          *vals[q] = load_el(vp, I->s->place[vo_i][lv].dtype, off);
        }
      }
      if (vo->kind == MAP_VOP_MAP) {
        dst[pt] = apply(vo->op, a, b);
      } else if (vo->kind == MAP_VOP_ROW_REDUCE) {
        int64_t key = pt;
        for (int j = 0; j < n_ol; j++)
          if (ol[j] == vo->loop) key = pt - k[j] * stride[ol[j]];
        dst[key] = apply(vo->op, dst[key], a);
      } else {
        int64_t key = pt;
        for (int j = 0; j < n_ol; j++)
          for (int w = 0; w < 2; w++)
            if (ol[j] == vo->pool_loop[w]) key -= (k[j] % vo->window[w]) * stride[ol[j]];
        tmp[key] = apply(vo->op, tmp[key], a);
      }
    }
    if (vo->kind == MAP_VOP_POOL) memcpy(I->regs[vo->dst], tmp, sizeof(float) * (size_t)npts);
  }
  /* store to DRAM */
  float *outp = I->out->data;
  for (int64_t pt = 0; pt < npts; pt++) {
    int64_t r = pt;
    for (int j = n_ol - 1; j >= 0; j--) k[j] = r % pl->tile[ol[j]], r /= pl->tile[ol[j]];
    for (int l = 0; l < p->n_loops; l++) v[l] = origin[l];
    for (int j = 0; j < n_ol; j++) v[ol[j]] += k[j];
    index_of(op, v, p->n_loops, idx);
    bool skip = false;
    for (int w = 0; w < 2; w++)
      if (I->pool_dim[w] >= 0) {
        if (idx[I->pool_dim[w]] % I->pool_win[w]) skip = true;
        idx[I->pool_dim[w]] /= I->pool_win[w];
      }
    if (skip) continue;
    int64_t off = 0;
    for (int d = 0; d < I->out->rank; d++) {
      if (idx[d] < 0 || idx[d] >= I->out->shape[d]) {
        if (!I->err)
          I->err = cov_error(COV_INTERNAL, NULL, "interp %s: output index outside the tensor",
                             p->layer);
        return;
      }
      off = off * I->out->shape[d] + idx[d];
    }
    outp[off] = I->regs[0][pt];
  }
}

static void transfers_at(interp *I, int pos, bool top) {
  const map_schedule *s = I->s;
  /* loads outer level first; stores inner level first */
  for (int lv = top ? 1 : s->n_levels - 1; top ? lv < s->n_levels : lv >= 1; lv += top ? 1 : -1)
    for (int i = 0; i < s->n_xfers && !I->err; i++) {
      const map_xfer *x = &s->xfers[i];
      if (x->after != pos || x->level != lv) continue;
      bool out = I->p->operands[x->operand].role == MAP_ROLE_OUTPUT;
      if (top && x->dir == MAP_LOAD) do_load(I, x->operand, lv, 0);
      if (top && out && x->dir == MAP_STORE) {
        /* an output tile starts from init unless a partial-sum load brings it */
        bool has_load = false;
        for (int j = 0; j < s->n_xfers; j++)
          if (s->xfers[j].operand == x->operand && s->xfers[j].level == lv && s->xfers[j].dir == MAP_LOAD)
            has_load = true;
        if (!has_load) do_load(I, x->operand, lv, 1);
      }
      if (!top && x->dir == MAP_STORE) {
        if (lv == 1) store_final(I, x->operand);
        else do_store_partial(I, x->operand, lv);
      }
    }
}

static int deepest(const map_schedule *s, int o) {
  int lv = s->n_levels - 1;
  while (lv > 0 && !s->place[o][lv].present) lv--;
  return lv;
}

static void leaf(interp *I) {
  const map_problem *p = I->p;
  int64_t v[MAP_MAX_LOOPS], idx[COV_MAX_RANK];
  values(I, MAP_MAX_LEVELS + 1, v);
  float a[4] = {0};
  for (int o = 0; o < p->n_inputs; o++) {
    int lv = deepest(I->s, o);
    index_of(&p->operands[o], v, p->n_loops, idx);
    int64_t off = local_offset(I, o, lv, idx);
    uint8_t *b = place_ptr(I, o, lv);
    if (off < 0 || !b) return;
    a[o] = load_el(b, I->s->place[o][lv].dtype, off);
  }
  int o = p->output, lv = deepest(I->s, o);
  index_of(&p->operands[o], v, p->n_loops, idx);
  int64_t off = local_offset(I, o, lv, idx);
  uint8_t *b = place_ptr(I, o, lv);
  if (off < 0 || !b) return;
  cov_dtype dt = I->s->place[o][lv].dtype;
  float cur = load_el(b, dt, off), r;
  if (p->kind == MAP_MAIN_MAC) r = cur + a[0] * a[1];
  else if (p->kind == MAP_MAIN_REDUCE) r = apply(p->op, cur, a[0]);
  else r = p->n_inputs > 1 ? apply(p->op, a[0], a[1]) : apply(p->op, a[0], 0);
  store_el(b, dt, off, r);
}

static void run(interp *I, int i) {
  if (I->err) return;
  if (i == I->s->n_sloops) {
    leaf(I);
    return;
  }
  for (int64_t it = 0; it < I->s->sloops[i].trips && !I->err; it++) {
    I->iter[i] = it;
    transfers_at(I, i, true);
    run(I, i + 1);
    transfers_at(I, i, false);
  }
  I->iter[i] = 0;
}

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
      return cov_error(COV_INVALID_ARGUMENT, NULL, "interp: operand %s has no input", op->name);
    const cov_tensor *t = &inputs[op->layer_input];
    if (t->dtype != COV_F32 || t->rank != op->rank)
      return cov_error(COV_INVALID_ARGUMENT, NULL, "interp: input %s must be f32 of rank %d",
                       op->name, op->rank);
    for (int d = 0; d < op->rank; d++)
      if (t->shape[d] != op->shape[d])
        return cov_error(COV_INVALID_ARGUMENT, NULL, "interp: input %s has the wrong shape",
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
  COV_RETURN_IF_ERROR(cov_tensor_alloc(out, COV_F32, oo->rank, shape));
  /* buffers of the ACG capacities */
  cov_status st = NULL;
  const cov_acg *g = s->acg;
  for (int n = 0; n < g->n_storage && n < 256; n++) {
    if (g->storage[n].kind == ACG_DRAM || g->storage[n].kind == ACG_CACHE) continue;
    if (g->storage[n].capacity_bytes > ((uint64_t)1 << 30)) {
      st = cov_error(COV_OUT_OF_RANGE, NULL, "interp: %s is too large to simulate", g->storage[n].name);
      break;
    }
    I.buf[n] = malloc(g->storage[n].capacity_bytes);
    if (!I.buf[n]) st = cov_error(COV_OUT_OF_MEMORY, NULL, "out of memory");
  }
  I.n_pts_max = s->place[I.p->output][1].elems;
  for (int r = 0; r < MAP_MAX_VREGS && !st; r++) {
    I.regs[r] = calloc((size_t)I.n_pts_max + 1, sizeof(float));
    if (!I.regs[r]) st = cov_error(COV_OUT_OF_MEMORY, NULL, "out of memory");
  }
  for (int r = 0; r < 2 && !st; r++) {
    I.rows[r] = calloc((size_t)I.n_pts_max + 1, sizeof(float));
    if (!I.rows[r]) st = cov_error(COV_OUT_OF_MEMORY, NULL, "out of memory");
  }
  if (!st) {
    transfers_at(&I, -1, true);
    run(&I, 0);
    transfers_at(&I, -1, false);
    st = I.err;
  }
  for (int n = 0; n < 256; n++) free(I.buf[n]);
  for (int r = 0; r < MAP_MAX_VREGS; r++) free(I.regs[r]);
  for (int r = 0; r < 2; r++) free(I.rows[r]);
  if (st) cov_tensor_release(out);
  return st;
}
