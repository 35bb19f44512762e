/* mapper/map_dram.c: what a transfer costs the DRAM interface, as the NPU
 * simulator charges it (backends/npu-sim/ISA.md "Timing", dma): whole
 * bursts of the DRAM node's width per contiguous run, so that tiles with
 * short innermost runs cost what they cost there. The cost model
 * (map_cost.c), the weights' channel-major layout decision (map_gemm.c
 * chan_major) and rectangular pixel tiles' stores (map_rect.c) read it. */
#include <math.h>
#include <string.h>

#include "mapper/map_internal.h"

/* DRAM bytes one execution of transfer x costs: the valid elements of its
 * tile in contiguous runs (the innermost non-unit dimension when it is
 * contiguous in DRAM, else single elements), each rounded up to whole
 * bursts of the DRAM node's width; a load's run continues into the next
 * dimension out where the code generator merges them (npu_cg_emit_dma). */
double map_dram_cost_bytes(const map_schedule *s, const map_xfer *x) {
  const map_problem *p = &s->prob;
  if (s->n_rects > 0 && x->operand == p->output && x->dir == MAP_STORE && x->level == 1) {
    /* each rectangle stores its own box (map_ir.h) */
    double sum = 0;
    for (int r = 0; r < s->n_rects; r++) sum += map_dram_cost_rect(s, x, r);
    return sum;
  }
  return map_dram_cost_layout(s, x, NULL, NULL);
}

double map_dram_cost_rect(const map_schedule *s, const map_xfer *x, int r) {
  int64_t box[COV_MAX_RANK];
  map_rect_box(s, x->operand, x->level, r, box);
  return map_dram_cost_layout(s, x, box, NULL);
}

/* The tile (box, or the place's shape) and tensor extents a transfer moves
 * in DRAM, both shrunk by pooling for the output; the element size. */
static double dram_extents(const map_schedule *s, const map_xfer *x, const int64_t *box, int64_t *tile,
                           int64_t *ten) {
  const map_problem *p = &s->prob;
  const map_operand *op = &p->operands[x->operand];
  const map_place *pl = &s->place[x->operand][x->level];
  bool out = op->role == MAP_ROLE_OUTPUT;
  for (int d = 0; d < op->rank; d++) {
    tile[d] = box ? box[d] : pl->shape[d];
    ten[d] = op->shape[d];
  }
  if (out) /* pooling shrinks the stored tile and tensor */
    for (int v = 0; v < s->n_vops; v++) {
      if (s->vops[v].kind != MAP_VOP_POOL) continue;
      for (int w = 0; w < 2; w++)
        for (int d = 0; d < op->rank; d++)
          if (op->acc.coef[d][s->vops[v].pool_loop[w]] == 1 && s->vops[v].window[w] > 0) {
            tile[d] = tile[d] / s->vops[v].window[w] > 0 ? tile[d] / s->vops[v].window[w] : 1;
            ten[d] /= s->vops[v].window[w];
          }
    }
  return (double)cov_dtype_size(out ? COV_F32 : pl->dtype);
}

static double valid_elems(int rank, const int64_t *tile, const int64_t *ten) {
  double valid = 1;
  for (int d = 0; d < rank; d++) valid *= (double)(tile[d] < ten[d] ? tile[d] : ten[d]);
  return valid;
}

double map_dram_valid_bytes(const map_schedule *s, const map_xfer *x) {
  const map_problem *p = &s->prob;
  int rank = p->operands[x->operand].rank;
  int64_t tile[COV_MAX_RANK], ten[COV_MAX_RANK], box[COV_MAX_RANK];
  if (s->n_rects > 0 && x->operand == p->output && x->dir == MAP_STORE && x->level == 1) {
    double sum = 0;
    for (int r = 0; r < s->n_rects; r++) {
      map_rect_box(s, x->operand, x->level, r, box);
      double es = dram_extents(s, x, box, tile, ten);
      sum += valid_elems(rank, tile, ten) * es;
    }
    return sum;
  }
  double es = dram_extents(s, x, NULL, tile, ten);
  return valid_elems(rank, tile, ten) * es;
}

double map_dram_cost_layout(const map_schedule *s, const map_xfer *x, const int64_t *box, const int64_t *lst) {
  const cov_acg *g = s->acg;
  const map_problem *p = &s->prob;
  int dram = g->storage[x->src].kind == ACG_DRAM ? x->src : x->dst;
  const acg_storage *ds = &g->storage[dram];
  double burst = ds->width_bits >= 8 ? (double)(ds->width_bits / 8) : 1;
  const map_operand *op = &p->operands[x->operand];
  bool out = op->role == MAP_ROLE_OUTPUT;
  int64_t tile[COV_MAX_RANK], ten[COV_MAX_RANK];
  double es = dram_extents(s, x, box, tile, ten);
  double valid = valid_elems(op->rank, tile, ten);
  /* a chunked epilogue stores each chunk on its own (map_epi_chunk_plan):
   * a run ends at the chunk's edge */
  if (out && x->dir == MAP_STORE && map_epi_chunks(s) > 1) tile[s->epi_chunk_dim] /= map_epi_chunks(s);
  int inner = op->rank - 1;
  while (inner > 0 && tile[inner] <= 1) inner--;
  int64_t below = 1;
  for (int d = inner + 1; d < op->rank; d++) below *= ten[d];
  double run = below == 1 ? (double)(tile[inner] < ten[inner] ? tile[inner] : ten[inner]) * es : es;
  /* A run continues into the next tile dimension out where the inner ones
   * are whole and the tile's layout is the tensor's there, as the code
   * generator merges the DMA's dimensions (npu_cg_emit_dma), for loads and
   * stores alike. A padded dimension (an access offset: a convolution's
   * halo) starts its tiles off the tensor's first element, or before it,
   * and a tile larger than the tensor in a dimension (a banded depthwise
   * weight's rows, map_depthwise.c) reaches past it: the code generator
   * keeps those dimensions apart. */
  if (below == 1 && tile[inner] == ten[inner] && op->acc.off[inner] == 0 && inner > 0) {
    int64_t st[COV_MAX_RANK], len = tile[inner];
    if (out && x->dir == MAP_STORE) {
      /* a store leaves from the epilogue's registers, or from the output's
       * tile: both dense, row-major in the (pooled) tile's box */
      int64_t e = 1;
      for (int d = op->rank - 1; d >= 0; d--) {
        st[d] = e;
        e *= tile[d];
      }
    } else if (lst) {
      memcpy(st, lst, sizeof st[0] * (size_t)op->rank);
    } else {
      map_gemm_plan gp;
      bool mac = p->kind == MAP_MAIN_MAC;
      if (mac) map_gemm_plan_make(s, &gp);
      map_gemm_tile_strides(s, mac ? &gp : NULL, x->operand, x->level, st);
    }
    for (int d = inner - 1, whole = 1; d >= 0 && whole; d--) {
      if (tile[d] <= 1) {
        if (ten[d] != 1) break;
        continue;
      }
      if (st[d] != st[inner] * len || op->acc.off[d] != 0 || tile[d] > ten[d]) break;
      len *= tile[d];
      whole = tile[d] == ten[d];
    }
    run = (double)len * es;
  }
  if (run <= 0) return 0;
  double runs = valid * es / run;
  return runs * ceil(run / burst) * burst;
}


