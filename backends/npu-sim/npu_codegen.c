/* backends/npu-sim/npu_codegen.c: scheduled IR (mapper/map_ir.h) -> NPU
 * program.
 *
 * The schedule is walked like mapper/map_interp.c walks it (same loop
 * values, same transfer positions, same double-buffer parities), emitting
 * instructions instead of doing the work:
 *   - loads from DRAM become strided/padded DMAs of each tile box;
 *   - on-chip transfers (the output between two on-chip levels) become SIMD
 *     copies, when the ACG gives the SIMD unit a path between the buffers;
 *   - the innermost scheduled loops become GEMM instructions: the array's
 *     rows loop is GEMM k, its columns loop GEMM n, the innermost temporal
 *     loop GEMM m (the streamed dimension), each operand a 2-D strided view of
 *     its tile (the strides are the loops' steps through the tile layout);
 *     every other loop is unrolled into separate GEMMs, accumulating (acc
 *     flag) unless this is the first reduction step into the output tile;
 *   - the epilogue (npu_epilogue.c) runs on the level-1 output tile: each vector op becomes
 *     one VOP per row-block of the tile, in a SIMD-accessible buffer, and the
 *     result is stored to DRAM by DMA (pooled outputs shrink).
 * Program tensors are named in0, in1, ... (the layer's inputs, in the dtype
 * of their level-1 tile: f16 when the schedule narrows) and out.
 */
#include <string.h>

#include "backends/npu-sim/npu_codegen.h"
#include "common/loc.h"

void npu_cg_emit(cg *c, const npu_insn *in) {
  if (c->err) return;
  c->err = npu_prog_add(c->prog, in);
}

/* Element strides of operand o's tile at level lv: the mapper's layout
 * (map_gemm_tile_strides: an array operand's dimension read in one cycle
 * innermost, for distinct banks). Every access to a tile goes through here,
 * so any layout is consistent by construction. */
void npu_cg_layout_strides(const cg *c, int o, int lv, int64_t *st) {
  if (map_walk_in_rect(c->s, o, lv)) { /* a rectangle's tile: dense in its own box (map_ir.h) */
    int64_t box[COV_MAX_RANK], e = 1;
    map_walk_box(&c->w, o, lv, box);
    for (int d = c->p->operands[o].rank - 1; d >= 0; d--) {
      st[d] = e;
      e *= box[d];
    }
    return;
  }
  map_gemm_tile_strides(c->s, c->p->kind == MAP_MAIN_MAC ? &c->gp : NULL, o, lv, st);
}

/* Element offset of global index idx inside operand o's level-lv tile. */
int64_t npu_cg_local_offset(cg *c, int o, int lv, const int64_t *idx) {
  const map_operand *op = &c->p->operands[o];
  int64_t base[COV_MAX_RANK], st[COV_MAX_RANK], box[COV_MAX_RANK], off = 0;
  map_walk_tile_base(&c->w, o, lv, base);
  map_walk_box(&c->w, o, lv, box);
  npu_cg_layout_strides(c, o, lv, st);
  for (int d = 0; d < op->rank; d++) {
    int64_t k = idx[d] - base[d];
    if (k < 0 || k >= box[d]) {
      CG_FAIL(c, COV_INTERNAL, "codegen %s: %s index %lld (dim %d) outside its L%d tile", c->p->layer,
              op->name, (long long)idx[d], d, lv);
      return 0;
    }
    off += k * st[d];
  }
  return off;
}

int npu_cg_find_cap(const cov_acg *g, int unit, cov_op op, cov_dtype in, cov_dtype out) {
  const acg_compute *cu = &g->compute[unit];
  for (int k = 0; k < cu->n_caps; k++)
    if (cu->caps[k].op == op && cu->caps[k].in[0] == in && cu->caps[k].out == out) return k;
  return -1;
}

/* ---- DMA between DRAM and a tile ---- */

int npu_cg_dram_edge(const cg *c, int buf, bool store) {
  const cov_acg *g = c->g;
  for (int e = 0; e < g->n_edges; e++) {
    const acg_edge *ed = &g->edges[e];
    if (!store && ed->from == c->t.dram && ed->to == buf) return e;
    if (store && ed->from == buf && ed->to == c->t.dram) return e;
  }
  for (int e = 0; e < g->n_edges; e++) {
    const acg_edge *ed = &g->edges[e];
    if (ed->bidirectional && (ed->from == buf || ed->to == buf) &&
        (ed->from == c->t.dram || ed->to == c->t.dram))
      return e;
  }
  return -1;
}

/* A box of `shape` at tensor coordinates `base` (dims `rank`) between DRAM
 * tensor o and buffer `buf` at `addr` with element strides `lst`. */
void npu_cg_emit_dma(cg *c, int o, bool store, int buf, uint64_t addr, cov_dtype dt, int rank,
                     const int64_t *base, const int64_t *shape, const int64_t *lst) {
  if (c->err) return;
  int e = npu_cg_dram_edge(c, buf, store);
  if (e < 0) {
    CG_FAIL(c, COV_UNSUPPORTED, "codegen: the ACG has no DMA path %s %s DRAM",
            c->g->storage[buf].name, store ? "to" : "from");
    return;
  }
  /* Drop unit dimensions so that up to 4 remain. */
  int dims[COV_MAX_RANK], nd = 0;
  for (int d = 0; d < rank; d++)
    if (shape[d] > 1 || (d == rank - 1 && nd == 0)) dims[nd++] = d;
  if (nd > NPU_DMA_MAX_RANK) {
    CG_FAIL(c, COV_UNSUPPORTED, "codegen: a tile of %d non-unit dimensions (DMA has %d)", nd,
            NPU_DMA_MAX_RANK);
    return;
  }
  int64_t tstride[COV_MAX_RANK], s = 1;
  for (int d = rank - 1; d >= 0; d--) {
    tstride[d] = s;
    s *= c->dshape[o][d];
  }
  npu_insn in = {.op = NPU_OP_DMA, .unit = (uint8_t)e, .flags = store ? NPU_DMA_STORE : 0};
  if (!store && c->p->operands[o].pad_value < -1e308 && cov_dtype_is_float(dt))
    in.flags |= NPU_DMA_PAD_NEGINF; /* max pooling's padding */
  for (int d = 0; d < rank && !store && c->p->operands[o].pad_value < -1e308 &&
                  !cov_dtype_is_float(dt); d++)
    if (base[d] < 0 || base[d] + shape[d] > c->dshape[o][d]) {
      CG_FAIL(c, COV_UNSUPPORTED, "codegen %s: an integer max pooling window reaches the "
              "padding, which DMA fills with zeros, not the dtype's minimum", c->p->layer);
      return;
    }
  in.u.dma.dtype = (uint8_t)dt;
  in.u.dma.rank = (uint8_t)nd;
  in.u.dma.dram_off = c->dram[o];
  in.u.dma.local_off = (uint32_t)addr;
  int k = 0;
  int64_t extra = 0;
  bool pad_all = false;
  for (int d = 0; d < rank; d++) {
    bool listed = false;
    for (int j = 0; j < nd; j++) listed |= dims[j] == d;
    if (!listed) {
      if (base[d] < 0 || base[d] >= c->dshape[o][d]) pad_all = true;
      else extra += base[d] * tstride[d];
      continue;
    }
    in.u.dma.dim[k++] = (npu_dma_dim){(uint32_t)shape[d], 1, (int32_t)base[d],
                                      (uint32_t)c->dshape[o][d], (uint32_t)tstride[d],
                                      (uint32_t)lst[d]};
  }
  /* Runs that continue in the next dimension out, in DRAM and in the tile
   * alike (a filter's c x r x s in the tensor's order), become one
   * dimension: DRAM serves the innermost dimension as one run of bursts
   * (ISA.md "Timing"), so a contiguous region is not charged per row. */
  while (k > 1) {
    npu_dma_dim *in_ = &in.u.dma.dim[k - 1], *out = &in.u.dma.dim[k - 2];
    uint64_t cnt = (uint64_t)out->count * in_->count, ext = (uint64_t)out->extent * in_->extent;
    if (pad_all || in_->start != 0 || in_->count != in_->extent || in_->step != 1 || out->start < 0 ||
        (uint64_t)out->start + out->count > out->extent ||
        (uint64_t)out->dram_stride != (uint64_t)in_->dram_stride * in_->extent ||
        (uint64_t)out->local_stride != (uint64_t)in_->local_stride * in_->count || ext > UINT32_MAX ||
        (uint64_t)out->start * in_->count > INT32_MAX)
      break;
    *out = (npu_dma_dim){(uint32_t)cnt, 1, (int32_t)((uint64_t)out->start * in_->count), (uint32_t)ext,
                         in_->dram_stride, in_->local_stride};
    k--;
  }
  in.u.dma.rank = (uint8_t)k;
  if (pad_all) { /* every element is padding: an empty window */
    if (store) return;
    in.u.dma.dim[k - 1].start = -(int32_t)in.u.dma.dim[k - 1].count;
  }
  in.u.dma.dram_off += (uint64_t)extra * cov_dtype_size(dt);
  npu_cg_emit(c, &in);
}

/* ---- SIMD operations over a tile ---- */


/* One VOP per combination of the dims other than the two innermost non-unit
 * ones (or with `cdim` as the reduced column dimension). */
void npu_cg_emit_vops(cg *c, cov_op op, int cap, bool reduce, int cdim, int rank,
                      const int64_t *shape, const vopnd *dst, const vopnd *a, const vopnd *b) {
  npu_cg_emit_vops_fl(c, op, cap, reduce ? NPU_VOP_REDUCE : 0, cdim, rank, shape, dst, a, b, NULL);
}

void npu_cg_emit_vops_fl(cg *c, cov_op op, int cap, uint16_t flags, int cdim, int rank,
                         const int64_t *shape, const vopnd *dst, const vopnd *a, const vopnd *b,
                         const vopnd *sum) {
  if (c->err) return;
  bool reduce = flags & NPU_VOP_REDUCE;
  const acg_capability *cp = &c->g->compute[c->simd].caps[cap];
  int cd = cdim >= 0 ? cdim : map_vop_cols_dim(rank, shape), rd = -1;
  for (int d = rank - 1; d >= 0 && rd < 0; d--)
    if (d != cd && shape[d] > 1) rd = d;
  /* rows per instruction: all, or blocks of c->vop_rows (the last shorter) */
  int64_t rblk = rd >= 0 ? shape[rd] : 1;
  if (rd >= 0 && c->vop_rows > 0 && !reduce && rblk > c->vop_rows) rblk = c->vop_rows;
  int64_t idx[COV_MAX_RANK] = {0};
  for (;;) {
    int64_t oa = 0, ob = 0, od = 0, os = 0;
    for (int d = 0; d < rank; d++) {
      oa += idx[d] * a->st[d];
      if (b && b->buf >= 0) ob += idx[d] * b->st[d];
      od += idx[d] * dst->st[d];
      if (sum) os += idx[d] * sum->st[d];
    }
    npu_insn in = {.op = NPU_OP_VOP, .unit = (uint8_t)c->simd, .flags = flags};
    in.u.vop.vop = (uint8_t)op;
    in.u.vop.cap = (uint8_t)cap;
    in.u.vop.dtype_in = (uint8_t)cp->in[0];
    in.u.vop.dtype_out = (uint8_t)cp->out;
    in.u.vop.rows = rd >= 0 ? (uint32_t)(shape[rd] - idx[rd] < rblk ? shape[rd] - idx[rd] : rblk) : 1;
    in.u.vop.cols = (uint32_t)shape[cd];
    size_t ei = cov_dtype_size(cp->in[0]), eo = cov_dtype_size(cp->out);
    in.u.vop.src1 = (npu_mem){(uint8_t)a->buf, 0, (uint32_t)(a->addr + (uint64_t)oa * ei),
                              rd >= 0 ? (int32_t)a->st[rd] : 0, (int32_t)a->st[cd]};
    if (b && b->buf >= 0)
      in.u.vop.src2 = (npu_mem){(uint8_t)b->buf, 0, (uint32_t)(b->addr + (uint64_t)ob * ei),
                                rd >= 0 ? (int32_t)b->st[rd] : 0, (int32_t)b->st[cd]};
    else if (b) {
      in.u.vop.src2.buf = NPU_IMM_BUF;
      in.u.vop.imm = b->imm;
    }
    in.u.vop.dst = (npu_mem){(uint8_t)dst->buf, 0, (uint32_t)(dst->addr + (uint64_t)od * eo),
                             rd >= 0 ? (int32_t)dst->st[rd] : 0, reduce ? 0 : (int32_t)dst->st[cd]};
    if (sum)
      in.u.vop.sum = (npu_mem){(uint8_t)sum->buf, 0, (uint32_t)(sum->addr + (uint64_t)os * eo),
                               rd >= 0 ? (int32_t)sum->st[rd] : 0, 0};
    npu_cg_emit(c, &in);
    if (c->err) return;
    int d = rank - 1;
    for (; d >= 0; d--) {
      if (d == cd) continue;
      if ((idx[d] += d == rd ? rblk : 1) < shape[d]) break;
      idx[d] = 0;
    }
    if (d < 0) break;
  }
}

/* A tile copy between on-chip levels through the SIMD unit. */
static void onchip_copy(cg *c, int o, int from_lv, int to_lv) {
  const map_operand *op = &c->p->operands[o];
  const map_place *src = &c->s->place[o][from_lv], *dst = &c->s->place[o][to_lv];
  int inner = from_lv > to_lv ? from_lv : to_lv;
  int64_t box[COV_MAX_RANK];
  map_walk_box(&c->w, o, inner, box);
  /* the mapper's own test of the hop (map_onchip_mover), which its path
   * search applies: one rule for what is bound and what is emitted */
  int cap = -1;
  int mover = map_onchip_mover(c->g, src->node, dst->node, src->dtype, dst->dtype, &cap);
  if (mover < 0 || mover != c->simd) {
    CG_FAIL(c, COV_UNSUPPORTED, "codegen %s: no instruction moves %s from %s to %s (no SIMD unit "
            "reads one, writes the other and copies %s -> %s)", c->p->layer, op->name,
            c->g->storage[src->node].name, c->g->storage[dst->node].name, cov_dtype_name(src->dtype),
            cov_dtype_name(dst->dtype));
    return;
  }
  int64_t base[COV_MAX_RANK];
  map_walk_tile_base(&c->w, o, inner, base);
  vopnd s = {src->node, map_walk_place_addr(&c->w, o, from_lv), {0}, 0}, d = {dst->node, map_walk_place_addr(&c->w, o, to_lv), {0}, 0};
  int64_t so = npu_cg_local_offset(c, o, from_lv, base), dof = npu_cg_local_offset(c, o, to_lv, base);
  s.addr += (uint64_t)so * cov_dtype_size(src->dtype);
  d.addr += (uint64_t)dof * cov_dtype_size(dst->dtype);
  npu_cg_layout_strides(c, o, from_lv, s.st);
  npu_cg_layout_strides(c, o, to_lv, d.st);
  if (o == c->p->output && from_lv == 2 && to_lv == 1 && c->pmax_n > 0) {
    /* a drain that also writes its rows' maxes, at its chunk of each row
     * (map_epi_drain_max) */
    int64_t b1[COV_MAX_RANK];
    map_walk_tile_base(&c->w, o, 1, b1);
    int dl = c->pmax_dim;
    vopnd m = {c->reg_buf, c->pmax_addr, {0}, 0};
    int64_t at = 0;
    for (int k = 0; k < op->rank; k++) {
      int64_t off = base[k] - b1[k];
      at += k == dl ? off / box[dl] * c->pmax_st[k] : off * c->pmax_st[k];
      m.st[k] = k == dl ? 0 : c->pmax_st[k];
    }
    m.addr += (uint64_t)at * 4;
    npu_cg_emit_vops_fl(c, COV_OP_COPY, cap, NPU_VOP_RMAX, dl, op->rank, box, &d, &s, NULL, &m);
    return;
  }
  npu_cg_emit_vops(c, src->dtype == dst->dtype ? COV_OP_COPY : COV_OP_CAST, cap, false, -1, op->rank,
            box, &d, &s, NULL);
}

/* ---- transfers and the loop walk ---- */

/* The walk's transfers (mapper/map_walk.h): DMAs for level 1, on-chip
 * copies between deeper levels, the epilogue and store for the output. */
static void w_load(map_walk *w, int o, int lv) {
  cg *c = w->ctx;
  const map_place *pl = &c->s->place[o][lv];
  if (lv == 1 && c->p->operands[o].role != MAP_ROLE_OUTPUT) {
    int64_t base[COV_MAX_RANK], st[COV_MAX_RANK];
    map_walk_tile_base(w, o, lv, base);
    npu_cg_layout_strides(c, o, lv, st);
    npu_cg_emit_dma(c, o, false, pl->node, map_walk_place_addr(w, o, lv), pl->dtype, c->p->operands[o].rank,
                    base, pl->shape, st);
  } else if (lv >= 2) {
    onchip_copy(c, o, lv - 1, lv);
  } else {
    CG_FAIL(c, COV_UNSUPPORTED, "codegen %s: loading the output from DRAM", c->p->layer);
  }
}

/* (a fresh output tile needs no code: the first GEMM initialises it) */

static void w_store(map_walk *w, int o, int lv) {
  cg *c = w->ctx;
  bool rect = c->s->n_rects > 0 && o == c->p->output; /* map_ir.h "Rectangular pixel tiles" */
  if (lv == 1) {
    if (!rect) npu_cg_store_final(c, o); /* each rectangle stored its own part */
  } else {
    onchip_copy(c, o, lv, lv - 1);
    if (lv == 2 && o == c->p->output && map_epi_per_subtile(c->s)) npu_cg_epilogue_subtile(c, o);
    if (rect && lv == 2) npu_cg_store_subtile(c, o);
  }
}

/* Strides (in elements of the tile) of operand o at level lv along
 * scheduled loop i: one iteration adds step to its problem loop. */
static int64_t loop_stride(const cg *c, int o, int lv, int i) {
  if (i < 0) return 0;
  const map_operand *op = &c->p->operands[o];
  int64_t st[COV_MAX_RANK], r = 0;
  npu_cg_layout_strides(c, o, lv, st);
  int l = c->s->sloops[i].loop;
  for (int d = 0; d < op->rank; d++) r += op->acc.coef[d][l] * c->s->sloops[i].step * st[d];
  return r;
}

static int64_t trips(const cg *c, int i) { return i < 0 ? 1 : map_walk_trips(&c->w, i); }

/* A bias the array preloads (map_bias.c) at the loop values v: a row vector
 * over n, the same for every streamed row (the mapper keeps only such
 * schedules). *col_bytes: its byte step per column. */
static bool bias_operand(cg *c, const int64_t *v, npu_mem *bias, int64_t *col_bytes) {
  const map_problem *p = c->p;
  int bo = p->bias_op, lb = map_walk_deepest(c->s, bo);
  int64_t idx[COV_MAX_RANK];
  map_walk_index_of(&p->operands[bo], v, p->n_loops, idx);
  int64_t ob = npu_cg_local_offset(c, bo, lb, idx), sbn = loop_stride(c, bo, lb, c->nl);
  if (loop_stride(c, bo, lb, c->ml) || loop_stride(c, bo, lb, c->ml2)) {
    CG_FAIL(c, COV_INTERNAL, "codegen %s: the preloaded bias varies along a streamed loop", p->layer);
    return false;
  }
  size_t eo = cov_dtype_size(c->s->place[bo][lb].dtype);
  *bias = (npu_mem){(uint8_t)c->s->place[bo][lb].node, 0,
                    (uint32_t)(map_walk_place_addr(&c->w, bo, lb) + (uint64_t)ob * eo), 0, (int32_t)sbn};
  *col_bytes = sbn * (int64_t)eo;
  return !c->err;
}

/* A k-digit gemm's digit fields (ISA.md "k digits"): radices are the trips
 * of the inner digits, strides each digit loop's step through A's and B's
 * tiles (digit 0's are the operands' own column / row strides). */
static void kdig_fields(cg *c, const int *lvs, uint32_t k0, npu_insn *in) {
  const map_gemm_plan *gp = &c->gp;
  int nd = gp->n_kd, ops[2] = {c->a_op, c->b_op};
  in->flags |= NPU_GEMM_KDIG;
  in->u.gemm.k0 = (uint16_t)k0;
  in->u.gemm.krad[0] = (uint16_t)trips(c, gp->kd[nd - 1]);
  in->u.gemm.krad[1] = (uint16_t)trips(c, gp->kd[nd - 2]);
  for (int k = 0; k < 2; k++) {
    int32_t *st = k == 0 ? in->u.gemm.ka : in->u.gemm.kb;
    st[0] = (int32_t)loop_stride(c, ops[k], lvs[k], gp->kd[nd - 2]);
    st[1] = nd > 2 ? (int32_t)loop_stride(c, ops[k], lvs[k], gp->kd[nd - 3]) : 0;
  }
}

static void leaf(cg *c) {
  const map_problem *p = c->p;
  int64_t v[MAP_MAX_LOOPS], idx[COV_MAX_RANK];
  map_walk_values(&c->w, MAP_MAX_LEVELS + 1, v);
  int ops[3] = {c->a_op, c->b_op, p->output};
  int64_t off[3];
  uint64_t addr[3];
  int lvs[3];
  for (int k = 0; k < 3; k++) {
    lvs[k] = map_walk_deepest(c->s, ops[k]);
    map_walk_index_of(&p->operands[ops[k]], v, p->n_loops, idx);
    off[k] = npu_cg_local_offset(c, ops[k], lvs[k], idx);
    addr[k] = map_walk_place_addr(&c->w, ops[k], lvs[k]);
  }
  if (c->err) return;
  /* First step into the output tile: no reduction loop inside its lifetime
   * has moved yet. */
  bool first = !c->out_acc_load;
  for (int i = c->out_init_after + 1; i < c->s->n_sloops && first; i++)
    if (p->reduction[c->s->sloops[i].loop] && c->w.iter[i] != 0) first = false;
  int64_t sm[3], sk[3], sn[3];
  for (int k = 0; k < 3; k++) {
    sm[k] = loop_stride(c, ops[k], lvs[k], c->ml);
    sk[k] = loop_stride(c, ops[k], lvs[k], c->kl);
    sn[k] = loop_stride(c, ops[k], lvs[k], c->nl);
  }
  int64_t M = trips(c, c->ml) * trips(c, c->ml2), K = map_gemm_k(c->s, &c->gp), N = trips(c, c->nl);
  /* k digits (map_gemm.c k_digits): k runs over several reduction loops,
   * each operand addressed per digit; the innermost digit's stride is A's
   * column / B's row stride, and the gemm's k0 picks the fold */
  const map_gemm_plan *gp = &c->gp;
  bool kdig = gp->n_kd > 1;
  if (kdig)
    for (int k = 0; k < 2; k++) sk[k] = loop_stride(c, ops[k], lvs[k], gp->kd[gp->n_kd - 1]);
  size_t ea = cov_dtype_size(c->s->place[ops[0]][lvs[0]].dtype);
  size_t eb = cov_dtype_size(c->s->place[ops[1]][lvs[1]].dtype);
  size_t ec = cov_dtype_size(c->s->place[ops[2]][lvs[2]].dtype);
  npu_mem bias = {0};
  int64_t sbn = 0; /* bytes between the biases of columns n and n+1 */
  if (p->bias_init && !bias_operand(c, v, &bias, &sbn)) return;
  for (int64_t k0 = 0; k0 < K; k0 += c->kmax)
    for (int64_t m0 = 0; m0 < M; m0 += c->mmax)
      for (int64_t n0 = 0; n0 < N; n0 += c->nmax) {
        int64_t m = M - m0 < c->mmax ? M - m0 : c->mmax;
        int64_t kk = K - k0 < c->kmax ? K - k0 : c->kmax;
        int64_t n = N - n0 < c->nmax ? N - n0 : c->nmax;
        bool init = first && k0 == 0;
        npu_insn in = {.op = NPU_OP_GEMM, .unit = (uint8_t)c->array,
                       .flags = init ? (p->bias_init ? NPU_GEMM_BIAS : 0) : NPU_GEMM_ACC};
        in.u.gemm.cap = (uint8_t)c->s->cap;
        in.u.gemm.m = (uint32_t)m;
        in.u.gemm.k = (uint16_t)kk;
        in.u.gemm.n = (uint16_t)n;
        int64_t oa = off[0] + m0 * sm[0] + (kdig ? 0 : k0 * sk[0]);
        int64_t ob = off[1] + (kdig ? 0 : k0 * sk[1]) + n0 * sn[1];
        int64_t oc = off[2] + m0 * sm[2] + n0 * sn[2];
        in.u.gemm.a = (npu_mem){(uint8_t)c->s->place[ops[0]][lvs[0]].node, 0,
                                (uint32_t)(addr[0] + (uint64_t)oa * ea), (int32_t)sm[0], (int32_t)sk[0]};
        in.u.gemm.b = (npu_mem){(uint8_t)c->s->place[ops[1]][lvs[1]].node, 0,
                                (uint32_t)(addr[1] + (uint64_t)ob * eb), (int32_t)sk[1], (int32_t)sn[1]};
        in.u.gemm.c = (npu_mem){(uint8_t)c->s->place[ops[2]][lvs[2]].node, 0,
                                (uint32_t)(addr[2] + (uint64_t)oc * ec), (int32_t)sm[2], (int32_t)sn[2]};
        if (kdig) kdig_fields(c, lvs, (uint32_t)k0, &in);
        if (gp->m_dig) { /* m digits: rows of ml inside, of ml2 outside */
          in.flags |= NPU_GEMM_MDIG;
          in.u.gemm.mrad = (uint16_t)trips(c, c->ml);
          in.u.gemm.ma = (int32_t)loop_stride(c, ops[0], lvs[0], c->ml2);
          in.u.gemm.mc = (int32_t)loop_stride(c, ops[2], lvs[2], c->ml2);
        }
        if (init && p->bias_init) {
          in.u.gemm.bias = bias;
          in.u.gemm.bias.off += (uint32_t)(n0 * sbn);
        }
        npu_cg_emit(c, &in);
      }
}

/* A map or reduction main statement on the SIMD unit: one VOP over the
 * rows loop x the columns (lanes) loop, reading and writing the deepest
 * tiles; a reduction's first step copies, later steps combine. */
static void leaf_simd(cg *c) {
  const map_problem *p = c->p;
  int64_t v[MAP_MAX_LOOPS], idx[COV_MAX_RANK];
  map_walk_values(&c->w, MAP_MAX_LEVELS + 1, v);
  bool first = !c->out_acc_load;
  for (int i = c->out_init_after + 1; i < c->s->n_sloops && first; i++)
    if (p->reduction[c->s->sloops[i].loop] && c->w.iter[i] != 0) first = false;
  vopnd o[3];
  int opi[3] = {p->output, 0, p->n_inputs > 1 ? 1 : -1};
  for (int k = 0; k < 3; k++) {
    memset(&o[k], 0, sizeof o[k]);
    o[k].buf = -1;
    if (opi[k] < 0) continue;
    int lv = map_walk_deepest(c->s, opi[k]);
    const map_place *pl = &c->s->place[opi[k]][lv];
    map_walk_index_of(&p->operands[opi[k]], v, p->n_loops, idx);
    int64_t off = npu_cg_local_offset(c, opi[k], lv, idx);
    o[k].buf = pl->node;
    o[k].addr = map_walk_place_addr(&c->w, opi[k], lv) + (uint64_t)off * cov_dtype_size(pl->dtype);
    o[k].st[0] = loop_stride(c, opi[k], lv, c->ml);
    o[k].st[1] = loop_stride(c, opi[k], lv, c->nl);
  }
  if (c->err) return;
  int64_t shape[2] = {trips(c, c->ml), trips(c, c->nl)};
  const acg_capability *cap = &c->g->compute[c->simd].caps[c->s->cap];
  if (p->kind == MAP_MAIN_REDUCE) {
    if (first) {
      int copy = npu_cg_find_cap(c->g, c->simd, COV_OP_COPY, cap->in[0], cap->out);
      if (copy < 0) {
        CG_FAIL(c, COV_UNSUPPORTED, "codegen %s: the SIMD unit has no copy", p->layer);
        return;
      }
      npu_cg_emit_vops(c, COV_OP_COPY, copy, false, 1, 2, shape, &o[0], &o[1], NULL);
    } else {
      npu_cg_emit_vops(c, p->op, c->s->cap, false, 1, 2, shape, &o[0], &o[0], &o[1]);
    }
  } else {
    npu_cg_emit_vops(c, p->op, c->s->cap, false, 1, 2, shape, &o[0], &o[1], p->n_inputs > 1 ? &o[2] : NULL);
  }
}

static bool absorbed(const cg *c, int i) {
  if (c->p->kind == MAP_MAIN_MAC) return map_gemm_absorbs(&c->gp, i);
  return i == c->ml || i == c->ml2 || i == c->kl || i == c->nl;
}

static void w_leaf(map_walk *w) {
  cg *c = w->ctx;
  if (c->p->kind == MAP_MAIN_MAC) leaf(c);
  else leaf_simd(c);
}

static bool w_folded(const map_walk *w, int i) { return absorbed(w->ctx, i); }

/* Which scheduled loops one GEMM covers, and which input is A (indexed by
 * m and k) and which B (by k and n): the mapper's plan (map_gemm.c), which
 * its cost model charges instruction by instruction. */
static void plan_gemm(cg *c) {
  map_gemm_plan gp;
  map_gemm_plan_make(c->s, &gp);
  c->gp = gp;
  c->ml = gp.ml;
  c->ml2 = gp.ml2;
  c->kl = gp.kl;
  c->nl = gp.nl;
  c->a_op = gp.a_op;
  c->b_op = gp.b_op;
  c->kmax = gp.kmax;
  c->mmax = gp.mmax;
  c->nmax = gp.nmax;
}

/* SIMD main statement: the VOP's rows and columns loops (map_simd.c, the
 * cost model's too). */
static void plan_simd(cg *c) {
  c->kl = c->ml2 = -1;
  map_simd_vop_loops(c->s, &c->ml, &c->nl);
}

/* The program's DRAM tensors: the operands in order (the output as the
 * epilogue leaves it, pooled), each on a 64-byte boundary; c->dram. */
static cov_status dram_tensors(cg *c) {
  const map_schedule *s = c->s;
  const map_problem *p = c->p;
  uint64_t addr = 0;
  const map_operand *oo = &p->operands[p->output];
  for (int o = 0; o < p->n_operands; o++) {
    const map_operand *op = &p->operands[o];
    npu_tensor t = {0};
    if (op->role == MAP_ROLE_OUTPUT) snprintf(t.name, sizeof t.name, "out");
    else snprintf(t.name, sizeof t.name, "in%d", op->layer_input);
    /* the result leaves as the epilogue leaves it: f32, i32 from an integer
     * array (i8 x i8 -> i32), i8/u8 after requantisation */
    cov_dtype out_dt = map_epi_out_dtype(s);
    t.dtype = (uint8_t)(op->role == MAP_ROLE_OUTPUT ? out_dt : s->place[o][1].dtype);
    t.role = op->role == MAP_ROLE_OUTPUT ? NPU_ROLE_OUTPUT
             : op->layer_input == 0      ? NPU_ROLE_INPUT
                                         : NPU_ROLE_WEIGHT;
    t.rank = (uint8_t)op->rank;
    for (int d = 0; d < op->rank; d++) c->dshape[o][d] = op->shape[d];
    if (op->role == MAP_ROLE_OUTPUT)
      for (int v = 0; v < s->n_vops; v++)
        if (s->vops[v].kind == MAP_VOP_POOL)
          for (int w = 0; w < 2; w++) {
            int d = npu_cg_out_dim_of_loop(oo, s->vops[v].pool_loop[w]);
            if (d >= 0) c->dshape[o][d] /= s->vops[v].window[w];
          }
    if (op->rank > NPU_TENSOR_MAX_RANK)
      return cov_error(COV_UNSUPPORTED, COV_AT(NULL, p->layer), "codegen: rank %d tensor", op->rank);
    t.bytes = cov_dtype_size(t.dtype);
    for (int d = 0; d < op->rank; d++) {
      t.dims[d] = (uint32_t)c->dshape[o][d];
      t.bytes *= (uint64_t)c->dshape[o][d];
    }
    t.addr = (addr + 63) / 64 * 64;
    addr = t.addr + t.bytes;
    c->dram[o] = t.addr;
    COV_RETURN_IF_ERROR(npu_prog_add_tensor(c->prog, &t));
  }
  c->prog->dram_bytes = addr;
  return NULL;
}

/* The epilogue's buffer (c->reg_buf): one the SIMD unit reads and writes
 * and DMA stores to DRAM from, where the mapper reserved the temporaries
 * first; its free area above the places, below the drains' row maxima. */
static cov_status epilogue_buffer(cg *c) {
  const map_schedule *s = c->s;
  const map_problem *p = c->p;
  if (c->simd < 0)
    return cov_error(COV_UNSUPPORTED, COV_AT(NULL, p->layer), "codegen %s: an epilogue but no SIMD unit", p->layer);
  int sn = npu_node_of_compute(c->g, c->simd);
  /* where the mapper reserved the epilogue's temporaries (map_ir.h) */
  int cand[2] = {s->epi_node >= 0 ? s->epi_node : s->place[p->output][1].node, -1};
  for (int b = 0; b < c->g->n_storage; b++)
    if (c->g->storage[b].kind == ACG_SCRATCHPAD && cand[1] < 0 && b != cand[0] &&
        npu_find_edge(c->g, sn, b) >= 0 && npu_find_edge(c->g, b, sn) >= 0 && npu_cg_dram_edge(c, b, true) >= 0)
      cand[1] = b;
  for (int k = 0; k < 2 && c->reg_buf < 0; k++) {
    int b = cand[k];
    if (b >= 0 && npu_find_edge(c->g, sn, b) >= 0 && npu_find_edge(c->g, b, sn) >= 0 &&
        npu_cg_dram_edge(c, b, true) >= 0)
      c->reg_buf = b;
  }
  if (c->reg_buf < 0)
    return cov_error(COV_UNSUPPORTED, COV_AT(NULL, p->layer), "codegen %s: no buffer the SIMD unit can read, write "
                     "and store to DRAM from", p->layer);
  uint64_t lo = 0;
  for (int o = 0; o < p->n_operands; o++)
    for (int lv = 1; lv < s->n_levels; lv++) {
      const map_place *pl = &s->place[o][lv];
      if (!pl->present || pl->node != c->reg_buf) continue;
      uint64_t end = pl->addr + pl->bytes * (pl->double_buffered ? 2 : 1);
      if (end > lo) lo = end;
    }
  c->area_lo = lo;
  c->area_hi = c->g->storage[c->reg_buf].capacity_bytes;
  c->pmax_n = map_epi_drain_max(s);
  if (c->pmax_n > 0) { /* the chunk maxes take the area's top */
    uint64_t bytes;
    map_epi_pmax(s, &c->pmax_addr, &bytes);
    const map_operand *outop = &p->operands[p->output];
    const map_place *pl = &s->place[p->output][1];
    c->pmax_dim = npu_cg_out_dim_of_loop(outop, s->vops[0].loop);
    if (c->reg_buf != pl->node || c->pmax_addr < lo || c->pmax_dim < 0)
      return cov_error(COV_INTERNAL, COV_AT(NULL, p->layer), "codegen %s: the drains' row maxes have no "
                       "place in %s (map_epi_drain_max)", p->layer, c->g->storage[pl->node].name);
    c->area_hi = c->pmax_addr;
    int64_t st = 1;
    for (int d = outop->rank - 1; d >= 0; d--) {
      c->pmax_st[d] = st;
      st *= d == c->pmax_dim ? c->pmax_n : pl->shape[d];
    }
  }
  return NULL;
}

/* Core `core` of `cores` (the schedule's workgroup loops, map_walk_cores):
 * the program of that core's share of the schedule, as one stream. */
static cov_status codegen_core(const map_schedule *s, int64_t core, int64_t cores, npu_prog **out) {
  *out = NULL;
  cg c;
  memset(&c, 0, sizeof c);
  c.s = s;
  c.p = &s->prob;
  c.g = s->acg;
  COV_RETURN_IF_ERROR(npu_target_init(c.g, &c.t));
  const map_problem *p = c.p;
  int unit = s->node - c.g->n_storage;
  bool mac = p->kind == MAP_MAIN_MAC;
  /* a mac runs on any unit whose capability acg_mac_form_of accepts (the
   * check the mapper's binding applies: it never binds another) */
  acg_mac_form form;
  char why[200] = "";
  bool runs = unit >= 0 && unit < c.g->n_compute && p->n_inputs <= 2 &&
              (mac ? p->n_inputs == 2 && acg_mac_form_of(c.g, unit, s->cap, &form, why, sizeof why)
                   : c.g->compute[unit].kind == ACG_SIMD);
  if (!runs)
    return cov_error(COV_UNSUPPORTED, COV_AT(NULL, p->layer),
                     "codegen %s: a %s statement with %d inputs bound to %s is not lowered (%s)",
                     p->layer, mac ? "mac" : p->kind == MAP_MAIN_REDUCE ? "reduction" : "map",
                     p->n_inputs, acg_node_name(c.g, s->node),
                     why[0] ? why : mac ? "a mac needs two inputs" : "maps and reductions run on a SIMD unit");
  c.array = mac ? unit : c.t.array;
  c.simd = mac ? c.t.simd : unit;
  c.pool_dim[0] = c.pool_dim[1] = -1;
  /* The output's deepest tile: where it restarts, whether partial sums come back. */
  c.out_lv = map_walk_deepest(s, p->output);
  c.out_init_after = -1;
  for (int i = 0; i < s->n_xfers; i++) {
    const map_xfer *x = &s->xfers[i];
    if (x->operand != p->output || x->level != c.out_lv) continue;
    if (x->dir == MAP_STORE) c.out_init_after = x->after;
    if (x->dir == MAP_LOAD) c.out_acc_load = true;
  }
  if (mac) plan_gemm(&c);
  else plan_simd(&c);
  /* DRAM tensors. */
  COV_RETURN_IF_ERROR(npu_prog_create(&c.prog));
  npu_prog_set_target(c.prog, &c.t);
  cov_status ds = dram_tensors(&c);
  /* The epilogue's buffer: SIMD reads and writes it and DMA stores from it. */
  c.reg_buf = -1;
  if (!ds && s->n_vops > 0) ds = epilogue_buffer(&c);
  if (ds) {
    npu_prog_free(c.prog);
    return ds;
  }
  static const map_walk_ops ops = {.load = w_load, .store = w_store, .leaf = w_leaf, .folded = w_folded};
  map_walk_init(&c.w, s, &ops, &c, &c.err);
  if (cores > 1) map_walk_set_core(&c.w, core);
  map_walk_run(&c.w);
  if (c.err) {
    npu_prog_free(c.prog);
    return c.err;
  }
  npu_chain_gemms(c.prog, &c.t);
  cov_status hs = npu_hoist_loads(c.prog, &c.t);
  if (!hs && map_epi_spread(s)) hs = npu_spread_epilogue(c.prog, &c.t);
  if (!hs) hs = npu_split_head(c.prog, &c.t);
  if (hs) {
    npu_prog_free(c.prog);
    return hs;
  }
  *out = c.prog;
  return NULL;
}

cov_status npu_codegen(const map_schedule *s, npu_prog **out) {
  *out = NULL;
  int64_t cores = map_walk_cores(s);
  if (cores <= 1) return codegen_core(s, 0, 1, out);
  if (cores > NPU_MAX_CORES)
    return cov_error(COV_UNSUPPORTED, COV_AT(NULL, s->prob.layer),
                     "codegen %s: the schedule spreads over %lld workgroups; npu-sim runs at most %d cores",
                     s->prob.layer, (long long)cores, NPU_MAX_CORES);
  npu_target t;
  COV_RETURN_IF_ERROR(npu_target_init(s->acg, &t));
  if ((uint64_t)cores > t.cores)
    return cov_error(COV_UNSUPPORTED, COV_AT(NULL, s->prob.layer),
                     "codegen %s: the schedule spreads over %lld workgroups, %s has %u cores",
                     s->prob.layer, (long long)cores, s->acg->name, t.cores);
  npu_prog *part[NPU_MAX_CORES] = {0};
  cov_status st = NULL;
  for (int64_t c = 0; c < cores && !st; c++) st = codegen_core(s, c, cores, &part[c]);
  if (!st) st = npu_cores_join(part, (uint32_t)cores, &t, out);
  for (int64_t c = 0; c < cores; c++) npu_prog_free(part[c]);
  return st;
}
