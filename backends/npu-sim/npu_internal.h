/* backends/npu-sim/npu_internal.h: what the npu-sim files share.
 *
 * npu_target: the NPU an ACG describes (which node is DRAM, the array and
 * its dataflow, the SIMD unit, and the digest a program records).
 * npu_prog_*: building programs (npu_prog.c); npu_encode/npu_decode: the
 * binary format (npu_encode.c); npu_verify: static checks (npu_verify.c);
 * npu_exec: the functional + timing simulator (npu_exec.c), whose dry mode is
 * the dynamic half of the verifier. */
#ifndef NPU_INTERNAL_H
#define NPU_INTERNAL_H

#include <stdio.h>

#include "acg/acg_ir.h"
#include "backends/npu-sim/npu_isa.h"
#include "covenant/npu.h"
#include "covenant/status.h"

typedef struct npu_target {
  const cov_acg *acg;
  int dram;               /* storage index of the (first) DRAM node */
  int array;              /* compute index of the systolic array, -1 if none */
  int simd;               /* compute index of the SIMD unit, -1 if none */
  bool output_stationary; /* the systolic array accumulates in a register file next to it */
  uint32_t cores;         /* the array's (else the mac unit's) instances (ISA.md "Cores") */
  uint64_t digest;
} npu_target;
/* Whether compute unit u runs gemm instructions as tiles (a matrix, SIMD or
 * scalar unit with a mac capability; acg_mac_form_of), not as a systolic array. */
static inline bool npu_unit_tiles(const cov_acg *g, int u, int cap, acg_mac_form *f) {
  acg_mac_form tmp;
  if (!f) f = &tmp;
  return acg_mac_form_of(g, u, cap, f, NULL, 0) && f->kind == ACG_MAC_TILES;
}

/* Derives the NPU from an ACG; COV_UNSUPPORTED when it is not one
 * (no DRAM, no unit that runs a mac). */
cov_status npu_target_init(const cov_acg *g, npu_target *t);
/* FNV-1a over every ACG parameter that code generation or timing reads. */
uint64_t npu_acg_digest(const cov_acg *g);
/* Index of the edge from node a to node b (either direction when
 * bidirectional), or -1. */
int npu_find_edge(const cov_acg *g, int from, int to);
static inline int npu_node_of_compute(const cov_acg *g, int c) { return g->n_storage + c; }

/* Program building (arena-owned). */
cov_status npu_prog_create(npu_prog **out);
void npu_prog_free(npu_prog *p);
void npu_prog_set_target(npu_prog *p, const npu_target *t);
cov_status npu_prog_add(npu_prog *p, const npu_insn *in);
cov_status npu_prog_add_tensor(npu_prog *p, const npu_tensor *t);
cov_status npu_prog_add_segment(npu_prog *p, uint64_t addr, const void *data, uint64_t bytes);
/* Index of the tensor with this name, or -1. */
int npu_prog_find_tensor(const npu_prog *p, const char *name);

cov_status npu_encode(const npu_prog *p, uint8_t **out, size_t *out_size); /* free() *out */
cov_status npu_decode(const uint8_t *data, size_t size, const char *file, npu_prog **out);

/* Structural checks that need no execution: opcodes' fields, units and
 * buffers against the ACG, loop nesting, the tensor table and segments. */
cov_status npu_verify_static(const npu_prog *p, const npu_target *t, const char *file);
/* The instructions p runs and their element work (a gemm's multiply-adds,
 * a dma's or vop's elements), from its loop nest (saturating; after
 * npu_verify_static). */
void npu_dyn_count(const npu_prog *p, uint64_t *insns, uint64_t *work);

/* Scheduled IR -> program (npu_codegen.c). */
struct map_schedule;
cov_status npu_codegen(const struct map_schedule *s, npu_prog **out);
/* npu_cores.c: one program of n cores from n single-core programs of the
 * same tensors (core c runs part[c]'s instructions); refuses a part that
 * uses an on-chip buffer the cores share (instances 1), whose addresses
 * the parts do not divide among them. */
cov_status npu_cores_join(npu_prog *const *part, uint32_t n, const npu_target *t, npu_prog **out);
/* Sets the gemm chaining flags (hold/chain, wkeep) where consecutive gemms
 * continue the same output tile or reuse the same weights (npu_codegen does
 * this on every program it emits). */
cov_status npu_chain_gemms(npu_prog *p, const npu_target *t);
/* npu_hoist.c: moves each DRAM load up past the earlier instructions that
 * neither touch the bytes it writes nor write the DRAM bytes it reads, so
 * that double-buffered tiles load while the previous tile computes (units
 * and the DRAM interface run in program order). */
cov_status npu_hoist_loads(npu_prog *p, const npu_target *t);
/* npu_head.c: each load the first gemm reads only a part of, issued as
 * pieces along its outermost dimension, so that the array starts on the
 * first piece (npu_codegen does this last, on every program it emits). */
cov_status npu_split_head(npu_prog *p, const npu_target *t);

void npu_disasm_insn(FILE *out, const npu_insn *in, const cov_acg *g);
cov_status npu_disasm(const npu_prog *p, const cov_acg *g, FILE *out);

/* Execution. */
typedef struct npu_exec_opts {
  bool dry;          /* check addresses and control flow only: no data, no timing */
  FILE *trace;       /* Chrome trace output, or NULL */
  /* Part of a longer trace (npu_trace.c: a whole model): no header or
   * closing of its own, every event after one already written, and shifted
   * by trace_offset cycles (where this program starts in the run). */
  bool trace_fragment;
  uint64_t trace_offset;
  uint64_t max_dyn;  /* dynamic instruction limit; 0 = NPU_MAX_DYN_INSNS */
  uint64_t start;    /* the cycle its cores start at (npu_run_begin; 0 otherwise) */
} npu_exec_opts;

/* What the energy accounting (npu_energy.c) counts beyond the per-unit and
 * per-storage statistics, with the ACG's per-access energies copied in at
 * creation (the statistics outlive no ACG, but need none to print). */
typedef struct npu_energy_counts {
  int n_compute, n_caps;
  int *cap_base;        /* per compute node: its first capability's index */
  uint64_t *cap_ops;    /* per capability: MACs (mac) or elements (vector ops) */
  uint64_t *edge_bytes; /* per edge: bytes moved over it, either direction */
  double *cap_pj, *edge_pj, *read_pj, *write_pj; /* the ACG's energies, 0 where not given */
  bool any;             /* the ACG gives at least one energy */
} npu_energy_counts;

/* npu_energy.c: sizes the counts for the ACG and copies its energies in;
 * counts bytes moved between two nodes (the edge npu_find_edge finds; none
 * where there is no edge) and ops run on a compute node's capability. */
cov_status npu_energy_init(npu_energy_counts *e, const cov_acg *g, cov_arena *a);
void npu_energy_move(npu_energy_counts *e, const cov_acg *g, int from, int to, uint64_t bytes);
void npu_energy_ops(npu_energy_counts *e, int compute, int cap, uint64_t ops);
/* The energy as a Chrome-trace "args" object: {"total_pj": ..., node: pJ, ...}. */
void npu_energy_trace_args(FILE *f, const struct cov_npu_stats *s);

/* Per-unit statistics; units are ACG edges (DMA engines) then compute nodes. */
typedef struct npu_unit_stats {
  uint64_t insns, busy, stall_dep, stall_bank, stall_bw;
  uint64_t macs, elems, bytes;
} npu_unit_stats;

struct cov_npu_stats {
  uint64_t cycles, dyn_insns, macs;
  uint32_t cores; /* the target's (ISA.md "Cores"): units' figures are summed over them */
  double clock_mhz, peak_macs_per_cycle;
  double ideal_cycles; /* sum over gemms of MACs / their capability's throughput */
  int n_units, n_edges;
  npu_unit_stats *unit;   /* n_edges + n_compute */
  const char **unit_name; /* names for printing */
  int n_storage;
  uint64_t *bytes_read, *bytes_written; /* per storage node */
  const char **storage_name;
  npu_energy_counts energy;
  cov_arena *arena;
};

/* Statistics sized for the ACG (unit and storage names filled in). */
cov_status npu_stats_create(const cov_acg *g, cov_npu_stats **out);
/* Trace tracks: core c's unit u is track u + c * NPU_TRACE_CORE_TIDS (the
 * units of an ACG and a model trace's two tracks of its own are fewer) */
#define NPU_TRACE_CORE_TIDS (ACG_MAX_EDGES + ACG_MAX_NODES + 2)
/* The trace's opening: the JSON header and one thread name per unit (per
 * core's unit on an NPU of several cores). */
void npu_trace_header(FILE *f, const cov_acg *g, const cov_npu_stats *names);

/* Runs p on the simulator's memories (already loaded). stats may be NULL in
 * dry mode. */
cov_status npu_exec(cov_npu_sim *sim, const npu_prog *p, const npu_exec_opts *o,
                    cov_npu_stats *stats);

/* Programs of several tenants at once (npu_exec.c; npu_cosim.c drives
 * it): each run is one program on its own simulator (memories, cores), and
 * every run draws on one DRAM interface (npu_dram_if), so that two models
 * co-scheduled on disjoint cores of one NPU contend for DRAM's bandwidth as
 * the cores of one program do (ISA.md "Cores", "Co-scheduled models"). */
typedef struct npu_dram_if npu_dram_if;
typedef struct npu_run npu_run;
cov_status npu_dram_if_create(npu_dram_if **out);
void npu_dram_if_free(npu_dram_if *d);
/* Starts sim's loaded (and verified) program at cycle o->start on the
 * interface d; stats (sized for sim's ACG) receives its figures, its
 * cycles from o->start to its end. */
cov_status npu_run_begin(cov_npu_sim *sim, const npu_exec_opts *o, cov_npu_stats *stats, npu_dram_if *d,
                         npu_run **out);
/* When the run's next unit instruction issues (its earliest core's latest
 * start), UINT64_MAX once every core has ended. */
uint64_t npu_run_next(npu_run *r);
/* Runs that core's next instruction. */
cov_status npu_run_step(npu_run *r);
/* After the last step: the end checks, the statistics; *end: the cycle the
 * program's last result is ready. Frees r (also after a failed step). */
cov_status npu_run_finish(npu_run *r, uint64_t *end);
void npu_run_free(npu_run *r);

/* What a model run records beyond its report for the co-scheduler
 * (npu_corun.c; npu_model.c fills it). */
typedef struct npu_tape_entry {
  npu_prog *prog;      /* owned */
  uint8_t *dram;       /* the DRAM image it started on (inputs written): prog->dram_bytes */
  uint64_t digest;     /* FNV-1a of its DRAM image after the run */
  uint64_t cycles;     /* alone */
} npu_tape_entry;
typedef struct npu_tape {
  npu_tape_entry *e;   /* every NPU program the run ran, in order */
  size_t n, cap;
} npu_tape;
void npu_tape_clear(npu_tape *t);
uint64_t npu_fnv1a(const uint8_t *p, uint64_t n);
typedef struct npu_model_rec {
  npu_tape *tape;               /* NULL, or where to record */
  const cov_acg *const *est;    /* ACGs every layer run on the NPU is also mapped on */
  int n_est;
  double *est_cycles;           /* per est ACG: the mapper's estimates summed; -1 once a layer did not map */
} npu_model_rec;
/* cov_npu_run_model_with, recording into rec (may be NULL). */
cov_status npu_run_model_rec(const cov_model *m, const cov_acg *acg, const cov_tensor *inputs, size_t n_inputs,
                             cov_tensor *outputs, size_t n_outputs, const cov_npu_run_options *opts,
                             npu_model_rec *rec, cov_npu_report **out_report);

/* npu_cosim.c: the tapes run at once, tenant i on acgs[i] (the design of
 * its cores), all on one DRAM interface; latency[i]: when tenant i's last
 * program ended. */
cov_status npu_cosim(const npu_tape *const *tapes, const cov_acg *const *acgs, size_t n, uint64_t *latency);
/* The general form: tenant i runs its jobs (recorded programs) in order
 * on ACG acg, a job with dep_tenant >= 0 not before that tenant's job
 * dep_job has ended (a pipeline's stage waits for the stage before);
 * done_at[j]: when job j ended. */
typedef struct npu_cojob {
  const npu_tape_entry *e;
  int dep_tenant;
  size_t dep_job;
} npu_cojob;
typedef struct npu_cotenant {
  const cov_acg *acg;
  const npu_cojob *jobs;
  size_t n;
  uint64_t *done_at;
} npu_cotenant;
cov_status npu_cosim_jobs(const npu_cotenant *ts, size_t n);
/* npu_corun.c: the ACG of k of g's C cores (every compute node and
 * on-chip buffer of C instances gets k; named NAME-kc). */
cov_status npu_acg_with_cores(const cov_acg *g, uint32_t C, uint32_t k, cov_acg **out);

struct cov_npu_sim {
  const cov_acg *acg;
  npu_target tgt;
  uint8_t **buf;     /* per storage node: on-chip memory (NULL for DRAM) */
  /* per core c, per storage node s: cbuf[c * n_storage + s], core 0's the
   * buf above, a node the cores share (instances 1) core 0's for all */
  uint8_t **cbuf;
  uint8_t *dram;
  uint64_t dram_bytes;
  const npu_prog *prog; /* loaded program (not owned) */
  float *scratch;       /* GEMM operand staging, grown as needed */
  float *f16;           /* f16 bit pattern -> value, 65536 entries */
  size_t scratch_n;
  uint64_t max_dyn;  /* dynamic instructions a program may run (cov_npu_sim_set_max_insns) */
  uint64_t max_work; /* element work a program may do (cov_npu_sim_set_max_work) */
};

/* The bytes an operand touches in one storage node, [lo, hi); buf -1: no
 * storage (an immediate, or nothing yet). Shared by the passes that reorder
 * or chain instructions (npu_chain.c, npu_hoist.c) to tell whether two
 * instructions touch the same bytes. */
typedef struct npu_brange {
  int buf;
  int64_t lo, hi;
} npu_brange;

static inline npu_brange npu_mem_bytes(const npu_mem *m, uint64_t rows, uint64_t cols, uint64_t es) {
  int64_t lo = m->off, hi = m->off;
  int64_t dr = (int64_t)(rows - 1) * m->row_stride * (int64_t)es;
  int64_t dc = (int64_t)(cols - 1) * m->col_stride * (int64_t)es;
  if (dr < 0) lo += dr; else hi += dr;
  if (dc < 0) lo += dc; else hi += dc;
  return (npu_brange){m->buf, lo, hi + (int64_t)es};
}

/* Smallest and largest of f(i) over i < n (offsets of digit rows/columns). */
static inline void npu_span(const npu_insn *in, bool a, uint32_t n, bool krows, int64_t *lo, int64_t *hi) {
  *lo = *hi = 0;
  for (uint32_t i = 0; i < n; i++) {
    int64_t o = krows ? npu_gemm_koff(in, a, i) : npu_gemm_moff(in, a, i);
    if (i == 0 || o < *lo) *lo = o;
    if (i == 0 || o > *hi) *hi = o;
  }
}

/* Bytes gemm operand 0 (a), 1 (b) or 2 (c) touches: a plain gemm's rows x
 * cols box, or with k / m digits (NPU_GEMM_KDIG, NPU_GEMM_MDIG) the span of
 * every row and column offset. */
static inline npu_brange npu_gemm_bytes(const npu_insn *in, int which, uint64_t es) {
  const npu_mem *m = which == 0 ? &in->u.gemm.a : which == 1 ? &in->u.gemm.b : &in->u.gemm.c;
  uint32_t M = in->u.gemm.m, K = in->u.gemm.k, N = in->u.gemm.n;
  bool kd = in->flags & NPU_GEMM_KDIG, md = in->flags & NPU_GEMM_MDIG;
  if (which == 2 && !md) return npu_mem_bytes(m, M, N, es);
  if (which == 1 && !kd) return npu_mem_bytes(m, K, N, es);
  if (which == 0 && !kd && !md) return npu_mem_bytes(m, M, K, es);
  int64_t rlo, rhi, clo, chi; /* element offsets of rows, of columns */
  if (which == 1) npu_span(in, false, K, true, &rlo, &rhi);
  else npu_span(in, which == 0, M, false, &rlo, &rhi);
  if (which == 0) npu_span(in, true, K, true, &clo, &chi);
  else {
    clo = chi = (int64_t)(N - 1) * m->col_stride;
    if (clo < 0) chi = 0; else clo = 0;
  }
  int64_t lo = m->off + (rlo + clo) * (int64_t)es, hi = m->off + (rhi + chi) * (int64_t)es;
  return (npu_brange){m->buf, lo, hi + (int64_t)es};
}

/* Whether two gemms read B at the same rows: same k digits, or none. */
static inline bool npu_gemm_same_kdig(const npu_insn *p, const npu_insn *q) {
  if ((p->flags & NPU_GEMM_KDIG) != (q->flags & NPU_GEMM_KDIG)) return false;
  if (!(p->flags & NPU_GEMM_KDIG)) return true;
  return p->u.gemm.k0 == q->u.gemm.k0 && p->u.gemm.krad[0] == q->u.gemm.krad[0] &&
         p->u.gemm.krad[1] == q->u.gemm.krad[1] && p->u.gemm.kb[0] == q->u.gemm.kb[0] &&
         p->u.gemm.kb[1] == q->u.gemm.kb[1];
}

/* Whether two gemms address C's rows alike: same m digits, or none (an
 * output-stationary chain keeps the tile where C's rows are). */
static inline bool npu_gemm_same_mdig(const npu_insn *p, const npu_insn *q) {
  if ((p->flags & NPU_GEMM_MDIG) != (q->flags & NPU_GEMM_MDIG)) return false;
  if (!(p->flags & NPU_GEMM_MDIG)) return true;
  return p->u.gemm.mrad == q->u.gemm.mrad && p->u.gemm.mc == q->u.gemm.mc;
}

/* Whether a vop's op reads src2 (ISA.md "vop": the two-operand ops). */
static inline bool npu_vop_binary(uint8_t op) {
  return op == COV_OP_ADD || op == COV_OP_SUB || op == COV_OP_MUL || op == COV_OP_DIV ||
         op == COV_OP_MAX || op == COV_OP_MIN || op == COV_OP_POW || op == COV_OP_RELU_MIN;
}

/* Whether a vop reads its src2 operand from a buffer: a two-operand op
 * (not a reduction), or a unary op's bias (flag bias), and not the
 * immediate. */
static inline bool npu_vop_reads_src2(const npu_insn *in) {
  if (in->u.vop.src2.buf == NPU_IMM_BUF) return false;
  if (in->flags & NPU_VOP_BIAS) return true;
  return npu_vop_binary(in->u.vop.vop) && !(in->flags & NPU_VOP_REDUCE);
}

static inline bool npu_brange_overlap(const npu_brange *a, const npu_brange *b) {
  return a->buf >= 0 && a->buf == b->buf && a->lo < b->hi && b->lo < a->hi;
}

/* npu_hoist.c: the byte ranges an instruction touches, reads and writes
 * alike (a DMA: its on-chip range, then its DRAM range); how many. */
int npu_insn_ranges(const npu_insn *in, const npu_target *t, npu_brange *r);
/* Whether p is straight-line code over r0 only (what npu_codegen emits). */
bool npu_straight_line(const npu_prog *p);
/* npu_spread.c: spreads a tile's epilogue over the accumulator drains of
 * the next tile on the SIMD unit (see there). */
cov_status npu_spread_epilogue(npu_prog *p, const npu_target *t);

#endif
