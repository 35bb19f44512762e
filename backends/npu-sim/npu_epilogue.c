/* backends/npu-sim/npu_epilogue.c: the epilogue of a schedule (map_ir.h
 * vops: bias, activations, pooling, softmax rows) on the level-1 output tile
 * and the tile's store to DRAM.
 *
 * Each vector op becomes one VOP per row-block of the tile, in a buffer the
 * SIMD unit can read, write and store from (cg.reg_buf, the area above every
 * place the schedule put there); registers live in up to SLOTS slots, reused
 * when dead; pooling shrinks the tile before the store. When the registers do
 * not fit, the tile is processed in chunks along a dim no pool window or row
 * reduction spans. An element-wise epilogue on an output-stationary array
 * runs in place on each accumulator tile as it is drained into the level-1
 * tile (map_epi_per_subtile), which is then only stored.
 */
#include <string.h>

#include "backends/npu-sim/npu_codegen.h"

/* Out dim driven by problem loop l (coefficient +-1), or -1. */
int npu_cg_out_dim_of_loop(const map_operand *out, int l) {
  for (int d = 0; d < out->rank; d++)
    if (out->acc.coef[d][l] == 1 || out->acc.coef[d][l] == -1) return d;
  return -1;
}

static uint64_t area_alloc(cg *c, uint64_t *bump, uint64_t bytes) {
  uint64_t a = (*bump + 63) / 64 * 64;
  if (a + bytes > c->area_hi) {
    CG_FAIL(c, COV_UNSUPPORTED,
            "codegen %s: the epilogue needs %llu more bytes in %s than the schedule leaves free "
            "(%llu)",
            c->p->layer, (unsigned long long)(a + bytes - c->area_lo),
            c->g->storage[c->reg_buf].name, (unsigned long long)(c->area_hi - c->area_lo));
    return 0;
  }
  *bump = a + bytes;
  return a;
}

/* A register of one value per row along dim `dim` of the tile shape
 * (stride 0 there, row-major over the other dims), allocated in the
 * register area: a row reduction's result, or a fused op's row sums. */
static rloc row_reg(cg *c, uint64_t *bump, int rank, const int64_t *shape, int dim) {
  rloc r = {true, c->reg_buf, 0, {0}};
  int64_t s = 1;
  for (int k = rank - 1; k >= 0; k--) {
    r.stride[k] = k == dim ? 0 : s;
    s *= k == dim ? 1 : shape[k];
  }
  r.addr = area_alloc(c, bump, (uint64_t)s * 4);
  return r;
}

static bool reg_read_later(const map_schedule *s, int from, int reg) {
  for (int i = from; i < s->n_vops; i++) {
    if (s->vops[i].a.kind == MAP_VS_REG && s->vops[i].a.index == reg) return true;
    if (s->vops[i].b.kind == MAP_VS_REG && s->vops[i].b.index == reg) return true;
    if (s->vops[i].dst == reg && (s->vops[i].kind == MAP_VOP_MAP || s->vops[i].kind == MAP_VOP_POOL))
      return false;
  }
  return reg == 0;
}

/* Element t (row-major over the window) of every pool window of the tile
 * viewed by v, pooling dims pd[0], pd[1] by win[0] x win[1]. */
static vopnd pool_elem(const vopnd *v, const int *pd, const int *win, int t) {
  vopnd sv = *v;
  int i = t / win[1], j = t % win[1];
  sv.addr += (uint64_t)(i * sv.st[pd[0]] + j * sv.st[pd[1]]) * 4;
  sv.st[pd[0]] *= win[0];
  sv.st[pd[1]] *= win[1];
  return sv;
}

/* One chunk's epilogue in progress: the chunk's box of the level-1 output
 * tile and where each register and row register lives. */
typedef struct epi_chunk {
  int o, rank;
  const int64_t *off;
  const map_operand *op;
  const map_place *pl;
  int64_t shape[COV_MAX_RANK], base[COV_MAX_RANK];
  int64_t origin[MAP_MAX_LOOPS];
  rloc reg[MAP_MAX_VREGS], row[2];
  rloc home; /* the output tile itself, where register 0 is planned in place */
  uint64_t bump; /* the register area's next free byte */
  uint64_t slot_addr[SLOTS], slot_bytes[SLOTS];
  int n_slots;
} epi_chunk;

/* The chunk [off, off + len) of the level-1 output tile (off NULL: the
 * whole tile): its box, register 0 on the tile, the area's first byte. */
static void chunk_init(cg *c, int o, const int64_t *off, const int64_t *len, epi_chunk *E) {
  memset(E, 0, sizeof *E);
  E->o = o;
  E->off = off;
  E->op = &c->p->operands[o];
  E->pl = &c->s->place[o][1];
  E->rank = E->op->rank;
  for (int d = 0; d < E->rank; d++) E->shape[d] = E->pl->shape[d];
  map_walk_tile_base(&c->w, o, 1, E->base);
  E->reg[0].valid = true;
  E->reg[0].buf = E->pl->node;
  E->reg[0].addr = map_walk_place_addr(&c->w, o, 1);
  npu_cg_layout_strides(c, o, 1, E->reg[0].stride);
  for (int d = 0; d < E->rank && off; d++) {
    E->shape[d] = len[d];
    E->base[d] += off[d];
    E->reg[0].addr += (uint64_t)(off[d] * E->reg[0].stride[d]) * cov_dtype_size(E->pl->dtype);
  }
  /* The output tile itself, where the mapper planned register 0 in place
   * (map_epi_plan: no slot reserved for it): an op writing register 0 in
   * the tile's dtype writes there once nothing still needed lives there. */
  E->home = E->reg[0];
  E->home.valid = c->s->epi_in_place && E->pl->node == c->reg_buf;
  map_walk_values(&c->w, 1, E->origin);
  E->bump = c->area_lo;
  /* Two tiles' registers fit: alternate halves, so that this tile's
   * epilogue need not wait for the previous tile's store to read them
   * (the array's next tile then overlaps this one's epilogue and store). */
  if (c->epi_half && (c->epi_tiles++ & 1)) E->bump = c->area_lo + c->epi_half;
}

/* The vector operand vo_i as strides over the output tile's dims: its
 * offset changes along out dim d as the loop driving d moves. */
static void vec_operand(cg *c, const epi_chunk *E, int vo_i, vopnd *x) {
  const map_problem *p = c->p;
  const map_operand *vop = &p->operands[vo_i];
  int64_t vidx[COV_MAX_RANK];
  map_walk_index_of(vop, E->origin, p->n_loops, vidx);
  int64_t off0 = npu_cg_local_offset(c, vo_i, 1, vidx);
  x->buf = c->s->place[vo_i][1].node;
  x->addr = map_walk_place_addr(&c->w, vo_i, 1) + (uint64_t)off0 * cov_dtype_size(c->s->place[vo_i][1].dtype);
  for (int d = 0; d < E->rank; d++) {
    x->st[d] = 0;
    if (E->pl->shape[d] <= 1) continue; /* the full tile: chunks shift by these strides */
    int lp = -1;
    for (int l = 0; l < p->n_loops; l++)
      if (!p->reduction[l] && E->op->acc.coef[d][l] && E->pl->tile[l] > 1) lp = l;
    if (lp < 0 || (E->op->acc.coef[d][lp] != 1 && E->op->acc.coef[d][lp] != -1)) {
      CG_FAIL(c, COV_UNSUPPORTED, "codegen %s: output dim %d is not driven by one loop", p->layer, d);
      break;
    }
    int64_t v2[MAP_MAX_LOOPS];
    memcpy(v2, E->origin, sizeof v2);
    v2[lp] += E->op->acc.coef[d][lp];
    map_walk_index_of(vop, v2, p->n_loops, vidx);
    bool inside = true;
    for (int e = 0; e < vop->rank; e++) inside &= vidx[e] >= 0 && vidx[e] < vop->shape[e];
    x->st[d] = inside ? npu_cg_local_offset(c, vo_i, 1, vidx) - off0 : 0;
  }
  for (int d = 0; d < E->rank && E->off; d++)
    x->addr += (uint64_t)(E->off[d] * x->st[d]) * cov_dtype_size(c->s->place[vo_i][1].dtype);
  if (c->pool_dim[0] >= 0)
    for (int w = 0; w < 2; w++)
      if (c->pool_dim[w] >= 0 && x->st[c->pool_dim[w]])
        CG_FAIL(c, COV_UNSUPPORTED, "codegen %s: a vector operand after pooling", p->layer);
}

/* A vector op's source as an instruction operand (buf -1: an immediate). */
static void src_operand(cg *c, const epi_chunk *E, const map_vsrc *sv, vopnd *x) {
  memset(x, 0, sizeof *x);
  x->buf = -1;
  const rloc *r = sv->kind == MAP_VS_REG ? &E->reg[sv->index] : sv->kind == MAP_VS_ROW ? &E->row[sv->index] : NULL;
  if (sv->kind == MAP_VS_REG && !r->valid) CG_FAIL(c, COV_INTERNAL, "codegen: register %d unset", sv->index);
  if (r) {
    x->buf = r->buf;
    x->addr = r->addr;
    memcpy(x->st, r->stride, sizeof x->st);
  } else if (sv->kind == MAP_VS_SCALAR) {
    x->imm = (float)sv->value;
  } else if (sv->kind == MAP_VS_VEC) {
    vec_operand(c, E, sv->index, x);
  }
}

/* The register slot an element-wise op vi of s elements writes: one whose
 * registers are all dead after it (its own sources included: each element
 * is read before it is written), else a new one; -1 when none is left. */
static int pick_slot(cg *c, epi_chunk *E, int vi, int64_t s) {
  const map_vop *vo = &c->s->vops[vi];
  int pick = -1;
  for (int k = 0; k < E->n_slots && pick < 0; k++) {
    if (E->slot_bytes[k] < (uint64_t)s * 4) continue;
    bool free_slot = true;
    for (int r = 0; r < MAP_MAX_VREGS; r++)
      if (E->reg[r].valid && E->reg[r].buf == c->reg_buf && E->reg[r].addr == E->slot_addr[k] &&
          r != vo->dst && reg_read_later(c->s, vi + 1, r))
        free_slot = false;
    if (free_slot) pick = k;
  }
  if (pick < 0 && E->n_slots < SLOTS) {
    pick = E->n_slots++;
    E->slot_bytes[pick] = (uint64_t)s * 4;
    E->slot_addr[pick] = area_alloc(c, &E->bump, E->slot_bytes[pick]);
  }
  return pick;
}

/* An element-wise op (MAP_VOP_MAP): into the output tile itself where
 * register 0 is planned there and free, else into a register slot. */
static void emit_map(cg *c, epi_chunk *E, int vi, const vopnd *ops, bool has_b, uint16_t vfl, int vcd,
                     const vopnd *sump) {
  const map_vop *vo = &c->s->vops[vi];
  rloc d = {true, c->reg_buf, 0, {0}};
  int64_t s = 1;
  for (int k = E->rank - 1; k >= 0; k--) {
    d.stride[k] = s;
    s *= E->shape[k];
  }
  if (vo->dst == 0 && E->home.valid && vo->dout == E->pl->dtype) {
    bool free_home = true;
    for (int r = 1; r < MAP_MAX_VREGS; r++)
      if (E->reg[r].valid && E->reg[r].buf == E->home.buf && E->reg[r].addr == E->home.addr &&
          reg_read_later(c->s, vi + 1, r))
        free_home = false;
    if (free_home) {
      vopnd hv = {E->home.buf, E->home.addr, {0}, 0};
      memcpy(hv.st, E->home.stride, sizeof hv.st);
      npu_cg_emit_vops_fl(c, vo->op, vo->cap, vfl, vcd, E->rank, E->shape, &hv, &ops[0], has_b ? &ops[1] : NULL,
                          sump);
      E->reg[0] = E->home;
      return;
    }
  }
  int pick = pick_slot(c, E, vi, s);
  if (pick < 0) {
    CG_FAIL(c, COV_UNSUPPORTED, "codegen %s: the epilogue needs more than %d registers", c->p->layer, SLOTS);
    return;
  }
  d.addr = E->slot_addr[pick];
  vopnd dv = {d.buf, d.addr, {0}, 0};
  memcpy(dv.st, d.stride, sizeof dv.st);
  npu_cg_emit_vops_fl(c, vo->op, vo->cap, vfl, vcd, E->rank, E->shape, &dv, &ops[0], has_b ? &ops[1] : NULL, sump);
  E->reg[vo->dst] = d;
}

/* A row reduction (MAP_VOP_ROW_REDUCE) into a row register; the first
 * op of a softmax whose drains wrote chunk maxes reduces those instead. */
static void emit_row_reduce(cg *c, epi_chunk *E, int vi, const vopnd *ops) {
  const map_vop *vo = &c->s->vops[vi];
  int red_dim = npu_cg_out_dim_of_loop(E->op, vo->loop);
  if (red_dim < 0) {
    CG_FAIL(c, COV_UNSUPPORTED, "codegen %s: reduction over a loop that drives no output dim", c->p->layer);
    return;
  }
  rloc r = row_reg(c, &E->bump, E->rank, E->shape, red_dim);
  vopnd dv = {r.buf, r.addr, {0}, 0};
  memcpy(dv.st, r.stride, sizeof dv.st);
  if (vi == 0 && c->pmax_n > 0) {
    /* the row max over the chunk maxes the drains wrote
     * (map_epi_drain_max): one value per chunk of each row */
    if (red_dim != c->pmax_dim) {
      CG_FAIL(c, COV_INTERNAL, "codegen %s: the drains' row maxes are along another dim", c->p->layer);
      return;
    }
    vopnd mv = {c->reg_buf, c->pmax_addr, {0}, 0};
    for (int k = 0; k < E->rank; k++) {
      mv.st[k] = c->pmax_st[k];
      if (E->off && k != red_dim) mv.addr += (uint64_t)(E->off[k] * c->pmax_st[k]) * 4;
    }
    int64_t mshape[COV_MAX_RANK];
    memcpy(mshape, E->shape, sizeof mshape);
    mshape[red_dim] = c->pmax_n;
    npu_cg_emit_vops(c, vo->op, vo->cap, true, red_dim, E->rank, mshape, &dv, &mv, NULL);
  } else {
    npu_cg_emit_vops(c, vo->op, vo->cap, true, red_dim, E->rank, E->shape, &dv, &ops[0], NULL);
  }
  E->row[vo->dst] = r;
}

/* A per-row op (MAP_VOP_ROW_MAP): one value per row, in place in the row
 * register it reads. */
static void emit_row_map(cg *c, epi_chunk *E, const map_vop *vo, const vopnd *ops, bool has_b) {
  int rd = npu_cg_out_dim_of_loop(E->op, vo->loop);
  if (rd < 0 || vo->a.kind != MAP_VS_ROW || !E->row[vo->a.index].valid) {
    CG_FAIL(c, COV_UNSUPPORTED, "codegen %s: a row op on no row register", c->p->layer);
    return;
  }
  int64_t rshape[COV_MAX_RANK];
  memcpy(rshape, E->shape, sizeof rshape);
  rshape[rd] = 1;
  rloc r = E->row[vo->a.index];
  vopnd dv = {r.buf, r.addr, {0}, 0};
  memcpy(dv.st, r.stride, sizeof dv.st);
  npu_cg_emit_vops(c, vo->op, vo->cap, false, -1, E->rank, rshape, &dv, &ops[0], has_b ? &ops[1] : NULL);
  E->row[vo->dst] = r;
}

/* Pooling (MAP_VOP_POOL: window == stride over two output dims) into a
 * register of the pooled shape, which the chunk then has. */
static void emit_pool(cg *c, epi_chunk *E, const map_vop *vo, const vopnd *ops, bool has_b) {
  int pd[2], win[2] = {vo->window[0], vo->window[1]}, cap = vo->cap;
  for (int w = 0; w < 2; w++) {
    pd[w] = npu_cg_out_dim_of_loop(E->op, vo->pool_loop[w]);
    if (pd[w] < 0 || E->shape[pd[w]] % win[w] || E->base[pd[w]] % win[w]) {
      CG_FAIL(c, COV_UNSUPPORTED, "codegen %s: pooling window not aligned with the tile", c->p->layer);
      return;
    }
  }
  int rank = E->rank;
  int64_t pshape[COV_MAX_RANK];
  memcpy(pshape, E->shape, sizeof pshape);
  pshape[pd[0]] /= win[0];
  pshape[pd[1]] /= win[1];
  rloc r = {true, c->reg_buf, 0, {0}};
  int64_t s = 1;
  for (int k = rank - 1; k >= 0; k--) {
    r.stride[k] = s;
    s *= pshape[k];
  }
  r.addr = area_alloc(c, &E->bump, (uint64_t)s * 4);
  int copy = npu_cg_find_cap(c->g, c->simd, COV_OP_COPY, COV_F32, COV_F32);
  if (copy < 0) {
    CG_FAIL(c, COV_UNSUPPORTED, "codegen: the SIMD unit has no f32 copy");
    return;
  }
  vopnd dv = {r.buf, r.addr, {0}, 0};
  memcpy(dv.st, r.stride, sizeof dv.st);
  /* The window's elements in order, each a strided view of the tile.
   * The first step takes the op of the first two elements (no copy of
   * the first: a window of W costs W - 1 two-operand steps, as
   * map_epilogue_cycles charges), or of the first and the starting
   * value (a folded ReLU: map_fold_relu_into_pool); a 1x1 window
   * copies. */
  int nw = win[0] * win[1];
  for (int t = 0; t < nw; t++) {
    vopnd sv = pool_elem(&ops[0], pd, win, t);
    if (t > 0) {
      npu_cg_emit_vops(c, vo->op, cap, false, -1, rank, pshape, &dv, &dv, &sv);
    } else if (has_b) {
      npu_cg_emit_vops(c, vo->op, cap, false, -1, rank, pshape, &dv, &sv, &ops[1]);
    } else if (nw == 1) {
      npu_cg_emit_vops(c, COV_OP_COPY, copy, false, -1, rank, pshape, &dv, &sv, NULL);
    } else {
      vopnd sv1 = pool_elem(&ops[0], pd, win, ++t);
      npu_cg_emit_vops(c, vo->op, cap, false, -1, rank, pshape, &dv, &sv, &sv1);
    }
  }
  memcpy(E->shape, pshape, sizeof pshape);
  for (int w = 0; w < 2; w++) E->base[pd[w]] /= win[w];
  E->reg[vo->dst] = r;
}

/* A fused op (map_epilogue.c fuse_bias_row_sum): op(a + b) per row, with
 * the row's sum written to a row register of its own; its instructions'
 * columns are the row so that each sums whole rows. Sets *vcd, *sum. */
static bool fused_row_sum(cg *c, epi_chunk *E, const map_vop *vo, int *vcd, vopnd *sum) {
  *vcd = npu_cg_out_dim_of_loop(E->op, vo->loop);
  if (*vcd < 0 || vo->sum_row < 0 || vo->sum_row >= 2) {
    CG_FAIL(c, COV_UNSUPPORTED, "codegen %s: a row sum over a loop that drives no output dim", c->p->layer);
    return false;
  }
  rloc r = row_reg(c, &E->bump, E->rank, E->shape, *vcd);
  if (c->err) return false;
  E->row[vo->sum_row] = r;
  *sum = (vopnd){r.buf, r.addr, {0}, 0};
  memcpy(sum->st, r.stride, sizeof sum->st);
  return true;
}

/* The epilogue of the box [off, off + len) of the level-1 output tile (off
 * NULL: the whole tile), then, with `dma`, its store. */
static void store_chunk(cg *c, int o, const int64_t *off, const int64_t *len, bool dma) {
  epi_chunk E;
  chunk_init(c, o, off, len, &E);
  for (int vi = 0; vi < c->s->n_vops && !c->err; vi++) {
    const map_vop *vo = &c->s->vops[vi];
    vopnd ops[2];
    bool has_b = vo->b.kind != MAP_VS_NONE;
    src_operand(c, &E, &vo->a, &ops[0]);
    src_operand(c, &E, &vo->b, &ops[1]);
    if (c->err) return;
    if (ops[0].buf < 0) { /* scalar first: swap when the op commutes */
      if (vo->op != COV_OP_ADD && vo->op != COV_OP_MUL && vo->op != COV_OP_MAX && vo->op != COV_OP_MIN) {
        CG_FAIL(c, COV_UNSUPPORTED, "codegen %s: %s with a scalar first operand", c->p->layer,
                common_op_name(vo->op));
        return;
      }
      vopnd tmp = ops[0];
      ops[0] = ops[1];
      ops[1] = tmp;
    }
    uint16_t vfl = vo->bias ? NPU_VOP_BIAS : 0;
    int vcd = -1;
    vopnd sumv, *sump = NULL;
    if (vo->kind == MAP_VOP_MAP && vo->row_sum) {
      if (!fused_row_sum(c, &E, vo, &vcd, &sumv)) return;
      sump = &sumv;
      vfl |= NPU_VOP_RSUM;
    }
    c->vop_rows = map_epi_vop_rows(c->s, vo);
    if (vo->kind == MAP_VOP_MAP) emit_map(c, &E, vi, ops, has_b, vfl, vcd, sump);
    else if (vo->kind == MAP_VOP_ROW_REDUCE) emit_row_reduce(c, &E, vi, ops);
    else if (vo->kind == MAP_VOP_ROW_MAP) emit_row_map(c, &E, vo, ops, has_b);
    else emit_pool(c, &E, vo, ops, has_b);
  }
  c->vop_rows = 0;
  if (c->err || !dma) return;
  npu_cg_emit_dma(c, o, true, E.reg[0].buf, E.reg[0].addr, map_epi_out_dtype(c->s), E.rank, E.base, E.shape,
                  E.reg[0].stride);
}

/* The epilogue of the level-2 output tile just drained into the level-1
 * tile, in place there (map_epi_per_subtile): its box inside that tile. */
void npu_cg_epilogue_subtile(cg *c, int o) {
  const map_operand *op = &c->p->operands[o];
  int64_t b1[COV_MAX_RANK], b2[COV_MAX_RANK], off[COV_MAX_RANK], len[COV_MAX_RANK];
  map_walk_tile_base(&c->w, o, 1, b1);
  map_walk_tile_base(&c->w, o, 2, b2);
  map_walk_box(&c->w, o, 2, len);
  for (int d = 0; d < op->rank; d++) off[d] = b2[d] - b1[d];
  if (c->epi_tiles == 0) c->epi_half = map_epi_half(c->s, c->area_hi - c->area_lo);
  store_chunk(c, o, off, len, false);
}

/* The level-2 output tile just drained (and its epilogue run) stored from
 * its box in the level-1 tile to DRAM: a rectangle's (map_ir.h), so that
 * after the last GEMM only the last rectangle's store remains. */
void npu_cg_store_subtile(cg *c, int o) {
  const map_operand *op = &c->p->operands[o];
  const map_place *pl = &c->s->place[o][1];
  int64_t b2[COV_MAX_RANK], len[COV_MAX_RANK], st[COV_MAX_RANK];
  map_walk_tile_base(&c->w, o, 2, b2);
  map_walk_box(&c->w, o, 2, len);
  npu_cg_layout_strides(c, o, 1, st);
  int64_t at = npu_cg_local_offset(c, o, 1, b2);
  cov_dtype dt = map_epi_out_dtype(c->s);
  if (dt != pl->dtype) {
    CG_FAIL(c, COV_INTERNAL, "codegen %s: a rectangle's store would convert %s to %s", c->p->layer,
            cov_dtype_name(pl->dtype), cov_dtype_name(dt));
    return;
  }
  npu_cg_emit_dma(c, o, true, pl->node, map_walk_place_addr(&c->w, o, 1) + (uint64_t)at * cov_dtype_size(dt), dt,
                  op->rank, b2, len, st);
}

/* Splits the epilogue into chunks along the outermost non-unit dim when its
 * registers would not fit the free part of the register buffer. */
void npu_cg_store_final(cg *c, int o) {
  const map_problem *p = c->p;
  const map_operand *op = &p->operands[o];
  const map_place *pl = &c->s->place[o][1];
  if (c->s->n_vops == 0) {
    store_chunk(c, o, NULL, NULL, true);
    return;
  }
  if (map_epi_per_subtile(c->s)) { /* the sub-tiles' epilogues left it final */
    int64_t b1[COV_MAX_RANK];
    map_walk_tile_base(&c->w, o, 1, b1);
    int64_t st[COV_MAX_RANK];
    npu_cg_layout_strides(c, o, 1, st);
    npu_cg_emit_dma(c, o, true, pl->node, map_walk_place_addr(&c->w, o, 1), map_epi_out_dtype(c->s), op->rank,
                    b1, pl->shape, st);
    return;
  }
  int64_t elems = 1;
  for (int d = 0; d < op->rank; d++) elems *= pl->shape[d];
  uint64_t need = (uint64_t)elems * 4 * (uint64_t)(c->s->n_vregs + c->s->n_rows + 2);
  uint64_t have = c->area_hi - c->area_lo;
  c->epi_half = map_epi_half(c->s, have);
  /* The mapper's chunks (map_epi_chunk_plan): each chunk's epilogue and
   * store on its own, so that the SIMD unit starts on the first rows the
   * GEMMs finish (the tile's layout makes each chunk one range). */
  if (map_epi_chunks(c->s) > 1 && need <= have) {
    int64_t off[COV_MAX_RANK] = {0}, box[COV_MAX_RANK];
    int d0 = c->s->epi_chunk_dim;
    for (int d = 0; d < op->rank; d++) box[d] = pl->shape[d];
    box[d0] = c->s->epi_chunk;
    for (int64_t st = 0; st < pl->shape[d0] && !c->err; st += c->s->epi_chunk) {
      off[d0] = st;
      store_chunk(c, o, off, box, true);
    }
    return;
  }
  if (need <= have) {
    store_chunk(c, o, NULL, NULL, true);
    return;
  }
  /* Chunk along a dim that no pool window or row reduction spans. */
  int d0 = -1;
  for (int d = 0; d < op->rank && d0 < 0; d++) {
    if (pl->shape[d] <= 1) continue;
    bool spanned = false;
    for (int v = 0; v < c->s->n_vops; v++) {
      const map_vop *vo = &c->s->vops[v];
      if (vo->kind == MAP_VOP_ROW_REDUCE && npu_cg_out_dim_of_loop(op, vo->loop) == d) spanned = true;
      if (vo->kind == MAP_VOP_POOL &&
          (npu_cg_out_dim_of_loop(op, vo->pool_loop[0]) == d || npu_cg_out_dim_of_loop(op, vo->pool_loop[1]) == d))
        spanned = true;
    }
    if (!spanned) d0 = d;
  }
  int64_t len = d0 >= 0 ? (int64_t)((double)pl->shape[d0] * (double)have / (double)need) : 0;
  if (d0 < 0 || len < 1) {
    store_chunk(c, o, NULL, NULL, true); /* reports what does not fit */
    return;
  }
  int64_t off[COV_MAX_RANK] = {0}, box[COV_MAX_RANK];
  for (int d = 0; d < op->rank; d++) box[d] = pl->shape[d];
  for (int64_t st = 0; st < pl->shape[d0] && !c->err; st += len) {
    off[d0] = st;
    box[d0] = pl->shape[d0] - st < len ? pl->shape[d0] - st : len;
    store_chunk(c, o, off, box, true);
  }
}
