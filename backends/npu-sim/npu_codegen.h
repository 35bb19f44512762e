/* backends/npu-sim/npu_codegen.h: what the code generator's files share.
 *
 * npu_codegen.c walks the schedule and emits DMAs, on-chip copies and GEMMs
 * (or VOPs for SIMD main statements); npu_epilogue.c runs the epilogue on the
 * level-1 output tile and stores it; npu_chain.c marks gemms that continue
 * each other (npu_chain_gemms, declared in npu_internal.h). The state of one
 * code generation is a `cg`; the helpers below address tiles through the
 * schedule's places and layouts, so every file computes the same addresses. */
#ifndef NPU_CODEGEN_H
#define NPU_CODEGEN_H

#include "backends/npu-sim/npu_internal.h"
#include "common/loc.h"
#include "mapper/map_ir.h"
#include "mapper/map_walk.h"

#define SLOTS MAP_EPI_SLOTS /* the epilogue's register slots (map_epi_half counts them) */

typedef struct rloc { /* where an epilogue register lives */
  bool valid;
  int buf;
  uint64_t addr;                /* byte address of element (0, ..., 0) */
  int64_t stride[COV_MAX_RANK]; /* elements, over the current tile dims */
} rloc;

typedef struct cg {
  const map_schedule *s;
  const map_problem *p;
  const cov_acg *g;
  npu_target t;
  npu_prog *prog;
  map_walk w; /* the schedule walk (loop iterations, buffer halves) */
  uint64_t dram[MAP_MAX_OPERANDS];
  int64_t dshape[MAP_MAX_OPERANDS][COV_MAX_RANK];
  int array, simd; /* compute indices */
  /* GEMM plan: scheduled loops absorbed into one instruction, -1 if none */
  int ml, kl, nl;
  int ml2; /* a second streamed loop outside ml (map_gemm_plan) */
  map_gemm_plan gp; /* the mapper's plan (mac statements): tile layouts */
  int a_op, b_op;
  uint32_t mmax, kmax, nmax;
  int out_lv;          /* deepest level of the output */
  int out_init_after;  /* the output's deepest tile restarts at this loop */
  bool out_acc_load;   /* ... or is loaded with partial sums */
  /* epilogue */
  int reg_buf;
  uint64_t area_lo, area_hi;
  int64_t epi_tiles;  /* epilogues emitted: alternates the register area's halves */
  uint64_t epi_half;  /* offset of the second half (0: one tile's registers only) */
  /* the drains' chunk row maxes (map_epi_drain_max): chunks per row (0:
   * none), their buffer (in reg_buf, above area_hi), the row's output dim
   * and the buffer's strides over the level-1 tile's dims (the row dim's
   * the chunk's) */
  /* rows per instruction of an element-wise op, 0: all (an epilogue the
   * mapper spreads between drains, map_epi_spread: map_epi_vop_rows) */
  int64_t vop_rows;
  int64_t pmax_n;
  uint64_t pmax_addr;
  int pmax_dim;
  int64_t pmax_st[COV_MAX_RANK];
  int pool_dim[2], pool_win[2];
  cov_status err;
} cg;

#define CG_FAIL(c, code, ...)                                      \
  do {                                                            \
    if (!(c)->err) (c)->err = cov_error(code, COV_AT(NULL, (c)->p->layer), __VA_ARGS__); \
  } while (0)
/* An operand of a VOP: a buffer region with strides over a tile, or an
 * immediate. */
typedef struct vopnd {
  int buf; /* -1: immediate */
  uint64_t addr;
  int64_t st[COV_MAX_RANK];
  float imm;
} vopnd;

void npu_cg_emit(cg *c, const npu_insn *in);
/* Element strides of o's level-lv tile (the one layout every access uses). */
void npu_cg_layout_strides(const cg *c, int o, int lv, int64_t *st);
/* Element offset of global index idx inside o's level-lv tile. */
int64_t npu_cg_local_offset(cg *c, int o, int lv, const int64_t *idx);
/* Capability index of unit for op in -> out, or -1. */
int npu_cg_find_cap(const cov_acg *g, int unit, cov_op op, cov_dtype in, cov_dtype out);
/* The DMA edge between DRAM and buf (a store when `store`), or -1. */
int npu_cg_dram_edge(const cg *c, int buf, bool store);
/* A box of `shape` at tensor coordinates `base` between DRAM tensor o and
 * buffer buf at addr with element strides lst. */
void npu_cg_emit_dma(cg *c, int o, bool store, int buf, uint64_t addr, cov_dtype dt, int rank,
                     const int64_t *base, const int64_t *shape, const int64_t *lst);
/* VOPs over a tile of `shape` (see npu_codegen.c). */
void npu_cg_emit_vops(cg *c, cov_op op, int cap, bool reduce, int cdim, int rank,
                      const int64_t *shape, const vopnd *dst, const vopnd *a, const vopnd *b);
/* The same with vop flags (NPU_VOP_*: reduce, the fused bias and row sum)
 * and, with NPU_VOP_RSUM, the row sum's operand (its stride along cdim 0). */
void npu_cg_emit_vops_fl(cg *c, cov_op op, int cap, uint16_t flags, int cdim, int rank,
                         const int64_t *shape, const vopnd *dst, const vopnd *a, const vopnd *b,
                         const vopnd *sum);
/* Output dim driven by problem loop l (coefficient +-1), or -1. */
int npu_cg_out_dim_of_loop(const map_operand *out, int l);
/* The epilogue of the level-1 output tile o and its store to DRAM
 * (npu_epilogue.c). */
void npu_cg_store_final(cg *c, int o);
void npu_cg_epilogue_subtile(cg *c, int o);
/* The drained level-2 output tile's box stored from the level-1 tile to
 * DRAM (rectangular pixel tiles, map_ir.h). */
void npu_cg_store_subtile(cg *c, int o);

#endif
