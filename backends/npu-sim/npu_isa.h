/* backends/npu-sim/npu_isa.h: the NPU instruction set in memory.
 *
 * One struct per instruction (npu_insn, a tagged record with every field an
 * opcode may use) and the program that holds them (npu_prog). ISA.md gives the
 * binary encoding that npu_encode.c reads and writes; both must change
 * together. Nothing here knows a target: buffer and unit numbers are ACG node
 * ids, sizes are checked against the ACG by npu_verify.c. */
#ifndef NPU_ISA_H
#define NPU_ISA_H

#include <stdbool.h>
#include <stdint.h>

#include "covenant/arena.h"
#include "covenant/types.h"

#define NPU_MAGIC "CNPU"
#define NPU_VERSION 1
/* A program of several cores (ISA.md "Cores"): the header's version, and
 * after the tensor table a core table of n_cores x NPU_CORE_BYTES */
#define NPU_VERSION_CORES 2
#define NPU_CORE_BYTES 8
#define NPU_MAX_CORES 16
#define NPU_HEADER_BYTES 80
#define NPU_TENSOR_BYTES 80
#define NPU_INSN_HEAD_BYTES 8
#define NPU_NAME_MAX 32       /* NUL-padded name fields (ACG name, tensor names) */
#define NPU_NREGS 16          /* address registers; r0 reads as 0 */
#define NPU_MAX_LOOP_DEPTH 8
#define NPU_DMA_MAX_RANK 4
#define NPU_TENSOR_MAX_RANK 6
#define NPU_MAX_INSNS (1u << 24)
#define NPU_MAX_TENSORS 4096
#define NPU_MAX_SEGMENTS 4096
#define NPU_MAX_DRAM_BYTES ((uint64_t)1 << 32)
/* Default limit on the dynamic instructions a program may run, checked
 * arithmetically from its loop nest before the dry run (a loop nest asking
 * for 10^9 gemms would simulate for hours). Compiled programs run far
 * fewer: the largest of mobilenet_v2 on npu-16x16 runs 3,421. Raised per
 * simulator with cov_npu_sim_set_max_insns (--max-insns). */
#define NPU_MAX_DYN_INSNS ((uint64_t)1 << 24)
/* Default limit on a program's element work, likewise from its loop nest:
 * a gemm's m x n x k multiply-adds, a dma's or vop's elements, summed over
 * the dynamic instructions (one gemm of 2^32 rows is one instruction). The
 * simulator does about 10^8..10^9 of them a second; the largest program of
 * mobilenet_v2 on npu-16x16 does 1.0e6. Raised with
 * cov_npu_sim_set_max_work (--max-work). */
#define NPU_MAX_DYN_WORK ((uint64_t)1 << 34)
#define NPU_IMM_BUF 0xFF /* VOP src2 buffer value meaning "immediate scalar" */

typedef enum npu_opcode {
  NPU_OP_NOP = 0x01,
  NPU_OP_BARRIER = 0x02, /* later instructions start after all earlier ones end */
  NPU_OP_SYNC = 0x03,    /* a barrier across every core of the program */
  NPU_OP_SETR = 0x10,    /* r[reg] = imm */
  NPU_OP_ADDR = 0x11,    /* r[reg] += imm (signed) */
  NPU_OP_LOOP = 0x12,    /* run the next `body` instructions `count` times */
  NPU_OP_DMA = 0x20,     /* strided/padded copy along a DRAM edge */
  NPU_OP_GEMM = 0x30,    /* systolic array: C (+)= A x B (+ bias) */
  NPU_OP_VOP = 0x40,     /* SIMD element-wise op or row reduction */
} npu_opcode;

/* GEMM flags */
#define NPU_GEMM_ACC 0x1  /* C += A x B (otherwise C = A x B) */
#define NPU_GEMM_BIAS 0x2 /* C = bias (row vector, broadcast over M) + A x B */
/* Chaining (ISA.md "Chained gemms"). Functionally no-ops: every gemm still
 * leaves C in its buffer; they only tell the timing what the array keeps.
 * Output-stationary arrays: */
#define NPU_GEMM_HOLD 0x4  /* keep the partial sums in the PEs, do not drain: the
                            * next gemm on this array continues the tile (CHAIN) */
#define NPU_GEMM_CHAIN 0x8 /* with ACC: the tile is already in the PEs (the previous
                            * gemm on this array set HOLD): no preload of C */
/* Weight-stationary arrays: */
#define NPU_GEMM_WKEEP 0x10 /* the weights are already in the PEs (the previous gemm
                             * on this array used the same b, k, n): no weight load */
/* Several reduction loops in one k (ISA.md "k digits"): column j of A and
 * row j of B are at the digits of J = k0 + j in the radices krad (the
 * instruction carries 24 more bytes) */
#define NPU_GEMM_KDIG 0x20
#define NPU_GEMM_KDIG_BYTES 24
/* Two streamed loops in one m (ISA.md "m digits"): row i of A and of C at
 * (i % mrad) row_stride + (i / mrad) ma / mc (16 more bytes) */
#define NPU_GEMM_MDIG 0x40
#define NPU_GEMM_MDIG_BYTES 16
#define NPU_GEMM_FLAGS                                                                       \
  (NPU_GEMM_ACC | NPU_GEMM_BIAS | NPU_GEMM_HOLD | NPU_GEMM_CHAIN | NPU_GEMM_WKEEP | NPU_GEMM_KDIG | \
   NPU_GEMM_MDIG)
/* VOP flags */
#define NPU_VOP_REDUCE 0x1 /* dst[r] = reduce(op, src1[r, 0..cols)) with op add or max */
/* Fused forms of a unary op (ISA.md "vop"; only where its ACG capability
 * lists them, acg_capability.fused): */
#define NPU_VOP_BIAS 0x2 /* dst = op(src1 + src2): src2 (or imm) a bias, e.g. one value per row */
#define NPU_VOP_RSUM 0x4 /* also sum[r] = sum over j of dst[r, j] (16 more bytes: operand sum) */
#define NPU_VOP_RMAX 0x8 /* also sum[r] = max over j of dst[r, j] (the same operand) */
#define NPU_VOP_RSUM_BYTES 16
#define NPU_VOP_FLAGS (NPU_VOP_REDUCE | NPU_VOP_BIAS | NPU_VOP_RSUM | NPU_VOP_RMAX)
/* a row reduction of the results to the 4th operand */
#define NPU_VOP_ROWRED (NPU_VOP_RSUM | NPU_VOP_RMAX)
/* DMA flags */
#define NPU_DMA_STORE 0x1 /* on a bidirectional edge: local -> DRAM */
#define NPU_DMA_PAD_NEGINF 0x2 /* loads: padding is -infinity (float dtypes), not 0 */

/* A buffer operand: storage node id, base register, byte offset, strides in
 * elements (rows, then elements within a row). */
typedef struct npu_mem {
  uint8_t buf, reg;
  uint32_t off;
  int32_t row_stride, col_stride;
} npu_mem;

typedef struct npu_dma_dim {
  uint32_t count;       /* elements along this dimension of the tile */
  int32_t step;         /* tensor coordinate advance per element */
  int32_t start;        /* tensor coordinate of element 0 (may be negative) */
  uint32_t extent;      /* tensor size along the axis: coordinates outside are padding */
  uint32_t dram_stride; /* elements between tensor coordinates c and c+1 */
  uint32_t local_stride;/* elements between tile elements i and i+1 in the buffer */
} npu_dma_dim;

typedef struct npu_insn {
  uint8_t op;    /* npu_opcode */
  uint8_t unit;  /* DMA: ACG edge index; GEMM/VOP: ACG compute index */
  uint16_t flags;
  union {
    struct { uint8_t reg; int64_t imm; } r;                /* SETR, ADDR */
    struct { uint32_t count, body; } loop;                 /* LOOP */
    struct {
      uint8_t dtype, rank, dram_reg, local_reg;
      uint64_t dram_off;
      uint32_t local_off;
      npu_dma_dim dim[NPU_DMA_MAX_RANK]; /* dim[rank-1] is innermost */
    } dma;
    struct {
      uint8_t cap;
      uint32_t m;
      uint16_t k, n;
      npu_mem a, b, c, bias; /* strides: row_stride only; elements are contiguous */
      /* KDIG: J = k0 + j has digits d0 = J % krad[0], d1 = J / krad[0] %
       * krad[1], d2 = J / (krad[0] krad[1]); A's column j is at d0 *
       * a.col_stride + d1 * ka[0] + d2 * ka[1], B's row j likewise with
       * b.row_stride and kb (elements) */
      uint16_t k0, krad[2];
      int32_t ka[2], kb[2];
      /* MDIG: row i of A at (i % mrad) a.row_stride + (i / mrad) ma, of C
       * likewise with c.row_stride and mc (elements; m a multiple of mrad) */
      uint16_t mrad;
      int32_t ma, mc;
    } gemm;
    struct {
      uint8_t vop, cap, dtype_in, dtype_out;
      uint32_t rows, cols;
      npu_mem dst, src1, src2;
      npu_mem sum; /* RSUM, RMAX: one value per row (col_stride must be 0) */
      float imm; /* src2 when src2.buf == NPU_IMM_BUF */
    } vop;
  } u;
} npu_insn;

typedef enum npu_role { NPU_ROLE_INPUT = 1, NPU_ROLE_OUTPUT, NPU_ROLE_WEIGHT, NPU_ROLE_SCRATCH } npu_role;

typedef struct npu_tensor {
  char name[NPU_NAME_MAX];
  uint64_t addr, bytes;
  uint8_t dtype, role, rank;
  uint32_t dims[NPU_TENSOR_MAX_RANK];
} npu_tensor;

typedef struct npu_segment { /* initial DRAM contents (weights, constants) */
  uint64_t addr, bytes;
  const uint8_t *data;
} npu_segment;

typedef struct cov_npu_program {
  cov_arena *arena; /* owns everything below */
  char acg_name[NPU_NAME_MAX];
  uint64_t acg_digest;
  uint64_t dram_bytes;
  npu_insn *insns;
  uint32_t n_insns, cap_insns;
  npu_tensor *tensors;
  uint32_t n_tensors, cap_tensors;
  npu_segment *segs;
  uint32_t n_segs, cap_segs;
  /* Cores (ISA.md "Cores"): core c runs instructions [core_first[c],
   * core_first[c + 1]); n_cores 0 or 1: one core runs them all */
  uint32_t n_cores;
  uint32_t core_first[NPU_MAX_CORES + 1];
} npu_prog;

/* The program's cores (at least 1) and core c's instructions [*lo, *hi). */
static inline uint32_t npu_prog_cores(const npu_prog *p) { return p->n_cores > 1 ? p->n_cores : 1; }
static inline void npu_core_range(const npu_prog *p, uint32_t c, uint32_t *lo, uint32_t *hi) {
  *lo = p->n_cores > 1 ? p->core_first[c] : 0;
  *hi = p->n_cores > 1 ? p->core_first[c + 1] : p->n_insns;
}

/* Encoded size of an instruction with this opcode; 0 for an unknown one. */
uint32_t npu_insn_size(uint8_t op);
/* Encoded size of this instruction (a KDIG gemm carries its digits). */
uint32_t npu_insn_bytes(const npu_insn *in);
/* Element offset of column j of a KDIG gemm's A (a = true) or row j of its B
 * (ISA.md "k digits"); a plain gemm's j * col_stride / row_stride. */
int64_t npu_gemm_koff(const npu_insn *in, bool a, uint32_t j);
/* Element offset of row i of a gemm's A (a = true) or C (ISA.md "m
 * digits"); without MDIG i * row_stride. */
int64_t npu_gemm_moff(const npu_insn *in, bool a, uint32_t i);
const char *npu_opcode_name(uint8_t op);
const char *npu_role_name(uint8_t role);

#endif
