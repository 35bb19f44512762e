/* backends/npu-sim/npu_verify.c: the static half of the program verifier.
 *
 * Everything that can be checked without running: the tensor table and
 * segments against the DRAM size, every instruction's fields against the ACG
 * (units exist and are of the right kind, buffers are on-chip storage joined
 * to the unit by an ACG edge, capabilities offer the op and dtypes, array
 * shapes fit the capability tile), and loop nesting. Addresses that depend on
 * registers are checked by npu_exec's dry run (the dynamic half). Every error
 * names the instruction index and the field. */
#include <string.h>

#include "backends/npu-sim/npu_internal.h"

#define FAIL(...) return cov_error(COV_INVALID_INPUT, &loc, __VA_ARGS__)

static bool dtype_ok(uint8_t d) { return d > COV_DTYPE_INVALID && d < COV_DTYPE_COUNT; }

/* A buffer operand names an on-chip storage node joined to node `unit` by an
 * edge in the direction of the data. */
static cov_status check_buf(const npu_target *t, const cov_loc *lp, uint32_t i, const char *field,
                            const npu_mem *m, int unit_node, bool to_unit) {
  const cov_acg *g = t->acg;
  cov_loc loc = *lp;
  if (m->buf >= g->n_storage)
    FAIL("instruction %u: field %s.buf: %u is not a storage node (the ACG has %d)", i, field,
         m->buf, g->n_storage);
  if (g->storage[m->buf].kind == ACG_DRAM || g->storage[m->buf].kind == ACG_CACHE)
    FAIL("instruction %u: field %s.buf: '%s' is %s, not an on-chip buffer", i, field,
         g->storage[m->buf].name, acg_storage_kind_name(g->storage[m->buf].kind));
  if (m->reg >= NPU_NREGS)
    FAIL("instruction %u: field %s.reg: r%u, registers are r0..r%d", i, field, m->reg,
         NPU_NREGS - 1);
  int e = to_unit ? npu_find_edge(g, m->buf, unit_node) : npu_find_edge(g, unit_node, m->buf);
  if (e < 0)
    FAIL("instruction %u: field %s.buf: the ACG has no path %s -> %s", i, field,
         to_unit ? g->storage[m->buf].name : acg_node_name(g, unit_node),
         to_unit ? acg_node_name(g, unit_node) : g->storage[m->buf].name);
  return NULL;
}

static cov_status check_dma(const npu_target *t, const cov_loc *lp, uint32_t i,
                            const npu_insn *in) {
  const cov_acg *g = t->acg;
  cov_loc loc = *lp;
  if (in->unit >= g->n_edges)
    FAIL("instruction %u (dma): field unit: edge %u, the ACG has %d edges", i, in->unit,
         g->n_edges);
  const acg_edge *e = &g->edges[in->unit];
  bool store = in->flags & NPU_DMA_STORE;
  if (in->flags & ~(NPU_DMA_STORE | NPU_DMA_PAD_NEGINF))
    FAIL("instruction %u (dma): field flags: unknown bits 0x%x", i,
         in->flags & ~(NPU_DMA_STORE | NPU_DMA_PAD_NEGINF));
  int local = -1;
  bool ok = false;
  if (e->from == t->dram) {
    local = e->to;
    ok = !store || e->bidirectional;
  } else if (e->to == t->dram) {
    local = e->from;
    ok = store || e->bidirectional;
  }
  if (local < 0 || !acg_is_storage(g, local) || g->storage[local].kind == ACG_DRAM)
    FAIL("instruction %u (dma): field unit: edge %s -> %s does not join DRAM and an on-chip "
         "buffer",
         i, acg_node_name(g, e->from), acg_node_name(g, e->to));
  if (!ok)
    FAIL("instruction %u (dma): field flags: edge %s -> %s cannot carry a %s", i,
         acg_node_name(g, e->from), acg_node_name(g, e->to), store ? "store" : "load");
  if (!dtype_ok(in->u.dma.dtype) || cov_dtype_size(in->u.dma.dtype) == 0)
    FAIL("instruction %u (dma): field dtype: %u is not a dtype", i, in->u.dma.dtype);
  if ((in->flags & NPU_DMA_PAD_NEGINF) &&
      (store || !cov_dtype_is_float(in->u.dma.dtype) || cov_dtype_size(in->u.dma.dtype) < 2))
    FAIL("instruction %u (dma): field flags: -inf padding needs a load of f16, bf16 or f32", i);
  if (in->u.dma.rank < 1 || in->u.dma.rank > NPU_DMA_MAX_RANK)
    FAIL("instruction %u (dma): field rank: %u, expected 1..%d", i, in->u.dma.rank,
         NPU_DMA_MAX_RANK);
  if (in->u.dma.dram_reg >= NPU_NREGS || in->u.dma.local_reg >= NPU_NREGS)
    FAIL("instruction %u (dma): field %s: registers are r0..r%d", i,
         in->u.dma.dram_reg >= NPU_NREGS ? "dram_reg" : "local_reg", NPU_NREGS - 1);
  for (int d = 0; d < in->u.dma.rank; d++) {
    const npu_dma_dim *dd = &in->u.dma.dim[d];
    if (dd->count == 0) FAIL("instruction %u (dma): field dim[%d].count: must be >= 1", i, d);
    if (dd->extent == 0) FAIL("instruction %u (dma): field dim[%d].extent: must be >= 1", i, d);
    if (dd->local_stride == 0)
      FAIL("instruction %u (dma): field dim[%d].local_stride: must be >= 1", i, d);
  }
  /* The tile must fit the buffer; this also bounds the work of one DMA. */
  uint64_t cap = g->storage[local].capacity_bytes, bytes = cov_dtype_size(in->u.dma.dtype);
  for (int d = 0; d < in->u.dma.rank; d++) {
    bytes *= in->u.dma.dim[d].count;
    if (bytes > cap)
      FAIL("instruction %u (dma): field dim[%d].count: the tile exceeds buffer '%s' (%llu bytes)",
           i, d, g->storage[local].name, (unsigned long long)cap);
  }
  return NULL;
}

static cov_status check_gemm(const npu_target *t, const cov_loc *lp, uint32_t i,
                             const npu_insn *in) {
  const cov_acg *g = t->acg;
  cov_loc loc = *lp;
  if (in->unit >= g->n_compute || g->compute[in->unit].kind != ACG_SYSTOLIC)
    FAIL("instruction %u (gemm): field unit: %u is not a systolic compute node", i, in->unit);
  const acg_compute *c = &g->compute[in->unit];
  if (in->u.gemm.cap >= c->n_caps || c->caps[in->u.gemm.cap].op != COV_OP_MAC ||
      c->caps[in->u.gemm.cap].n_in != 2)
    FAIL("instruction %u (gemm): field cap: %u is not a mac capability of '%s'", i,
         in->u.gemm.cap, c->name);
  const acg_capability *cap = &c->caps[in->u.gemm.cap];
  cov_dtype a = cap->in[0], b = cap->in[1], o = cap->out;
  bool fl = (a == COV_F16 || a == COV_BF16 || a == COV_F32) &&
            (b == COV_F16 || b == COV_BF16 || b == COV_F32) && o == COV_F32;
  bool in8 = a == COV_I8 && b == COV_I8 && o == COV_I32;
  if (!fl && !in8)
    return cov_error(COV_UNSUPPORTED, &loc,
                     "instruction %u (gemm): field cap: %s x %s -> %s is not simulated", i,
                     cov_dtype_name(a), cov_dtype_name(b), cov_dtype_name(o));
  if (in->flags & ~NPU_GEMM_FLAGS)
    FAIL("instruction %u (gemm): field flags: unknown bits 0x%x", i, in->flags & ~NPU_GEMM_FLAGS);
  if ((in->flags & NPU_GEMM_ACC) && (in->flags & NPU_GEMM_BIAS))
    FAIL("instruction %u (gemm): field flags: acc and bias exclude each other", i);
  /* Chaining flags follow the dataflow: partial sums stay in an
   * output-stationary array, weights in a weight-stationary one. Which gemm
   * a chained one continues is a dynamic property: the dry run checks it. */
  if ((in->flags & (NPU_GEMM_HOLD | NPU_GEMM_CHAIN)) && !t->output_stationary)
    FAIL("instruction %u (gemm): field flags: hold/chain need an output-stationary array ('%s' "
         "is weight-stationary)", i, c->name);
  if ((in->flags & NPU_GEMM_WKEEP) && t->output_stationary)
    FAIL("instruction %u (gemm): field flags: wkeep needs a weight-stationary array ('%s' is "
         "output-stationary)", i, c->name);
  if ((in->flags & NPU_GEMM_KDIG) && (in->u.gemm.krad[0] == 0 || in->u.gemm.krad[1] == 0))
    FAIL("instruction %u (gemm): field krad: k digit radices must be >= 1 (%u, %u)", i,
         in->u.gemm.krad[0], in->u.gemm.krad[1]);
  if ((in->flags & NPU_GEMM_MDIG) && (in->u.gemm.mrad == 0 || in->u.gemm.m % in->u.gemm.mrad))
    FAIL("instruction %u (gemm): field mrad: %u must be >= 1 and divide m (%u)", i, in->u.gemm.mrad,
         in->u.gemm.m);
  if ((in->flags & NPU_GEMM_CHAIN) && !(in->flags & NPU_GEMM_ACC))
    FAIL("instruction %u (gemm): field flags: chain accumulates into the held tile, so it needs acc",
         i);
  uint32_t rows = cap->tile_rank > 0 ? cap->tile[0] : c->dims[0];
  uint32_t cols = cap->tile_rank > 1 ? cap->tile[1] : c->dims[1];
  const char *df = t->output_stationary ? "output-stationary" : "weight-stationary";
  if (in->u.gemm.m == 0 || in->u.gemm.k == 0 || in->u.gemm.n == 0)
    FAIL("instruction %u (gemm): field %s: must be >= 1", i,
         in->u.gemm.m == 0 ? "m" : in->u.gemm.k == 0 ? "k" : "n");
  if (t->output_stationary) {
    if (in->u.gemm.m > rows)
      FAIL("instruction %u (gemm): field m: %u > %u array rows (%s)", i, in->u.gemm.m, rows, df);
  } else if (in->u.gemm.k > rows) {
    FAIL("instruction %u (gemm): field k: %u > %u array rows (%s)", i, in->u.gemm.k, rows, df);
  }
  if (in->u.gemm.n > cols)
    FAIL("instruction %u (gemm): field n: %u > %u array columns (%s)", i, in->u.gemm.n, cols, df);
  int un = npu_node_of_compute(g, in->unit);
  COV_RETURN_IF_ERROR(check_buf(t, lp, i, "a", &in->u.gemm.a, un, true));
  COV_RETURN_IF_ERROR(check_buf(t, lp, i, "b", &in->u.gemm.b, un, true));
  COV_RETURN_IF_ERROR(check_buf(t, lp, i, "c", &in->u.gemm.c, un, false));
  if (in->flags & NPU_GEMM_ACC) COV_RETURN_IF_ERROR(check_buf(t, lp, i, "c", &in->u.gemm.c, un, true));
  if (in->flags & NPU_GEMM_BIAS)
    COV_RETURN_IF_ERROR(check_buf(t, lp, i, "bias", &in->u.gemm.bias, un, true));
  return NULL;
}

static bool vop_binary(uint8_t op) {
  return op == COV_OP_ADD || op == COV_OP_SUB || op == COV_OP_MUL || op == COV_OP_DIV ||
         op == COV_OP_MAX || op == COV_OP_MIN || op == COV_OP_POW || op == COV_OP_RELU_MIN;
}
static bool vop_unary(uint8_t op) {
  return op == COV_OP_EXP || op == COV_OP_LOG || op == COV_OP_SQRT || op == COV_OP_RSQRT ||
         op == COV_OP_NEG || op == COV_OP_ABS || op == COV_OP_TANH || op == COV_OP_ERF ||
         op == COV_OP_SIGMOID || op == COV_OP_RELU || op == COV_OP_CAST || op == COV_OP_COPY ||
         op == COV_OP_ROUND;
}

static cov_status check_vop(const npu_target *t, const cov_loc *lp, uint32_t i,
                            const npu_insn *in) {
  const cov_acg *g = t->acg;
  cov_loc loc = *lp;
  if (in->unit >= g->n_compute || g->compute[in->unit].kind != ACG_SIMD)
    FAIL("instruction %u (vop): field unit: %u is not a SIMD compute node", i, in->unit);
  const acg_compute *c = &g->compute[in->unit];
  uint8_t op = in->u.vop.vop;
  if (!vop_binary(op) && !vop_unary(op))
    FAIL("instruction %u (vop): field op: %u (%s) is not a vector operation", i, op,
         op < COV_OP_COUNT ? common_op_name((cov_op)op) : "?");
  if (in->u.vop.cap >= c->n_caps || c->caps[in->u.vop.cap].op != op)
    FAIL("instruction %u (vop): field cap: %u is not a '%s' capability of '%s'", i, in->u.vop.cap,
         common_op_name((cov_op)op), c->name);
  const acg_capability *cap = &c->caps[in->u.vop.cap];
  if (in->u.vop.dtype_in != cap->in[0] || in->u.vop.dtype_out != cap->out)
    FAIL("instruction %u (vop): field dtype: %s -> %s, capability %u takes %s -> %s", i,
         dtype_ok(in->u.vop.dtype_in) ? cov_dtype_name(in->u.vop.dtype_in) : "?",
         dtype_ok(in->u.vop.dtype_out) ? cov_dtype_name(in->u.vop.dtype_out) : "?",
         in->u.vop.cap, cov_dtype_name(cap->in[0]), cov_dtype_name(cap->out));
  if (!cov_dtype_is_float(cap->in[0]) && cap->in[0] != COV_I32 && cap->in[0] != COV_I8 &&
      cap->in[0] != COV_U8)
    return cov_error(COV_UNSUPPORTED, &loc, "instruction %u (vop): field dtype: %s not simulated",
                     i, cov_dtype_name(cap->in[0]));
  if (in->flags & ~NPU_VOP_FLAGS)
    FAIL("instruction %u (vop): field flags: unknown bits 0x%x", i, in->flags & ~NPU_VOP_FLAGS);
  /* the fused forms: a unary op with what its capability lists */
  static const struct { uint16_t flag; uint32_t form; const char *name; } fused[] = {
      {NPU_VOP_BIAS, ACG_FUSE_BIAS, "bias"}, {NPU_VOP_RSUM, ACG_FUSE_ROW_SUM, "row_sum"},
      {NPU_VOP_RMAX, ACG_FUSE_ROW_MAX, "row_max"}};
  if ((in->flags & NPU_VOP_ROWRED) == NPU_VOP_ROWRED)
    FAIL("instruction %u (vop): field flags: rsum and rmax together (one row reduction to sum)", i);
  for (int f = 0; f < 3; f++) {
    if (!(in->flags & fused[f].flag)) continue;
    if ((in->flags & NPU_VOP_REDUCE) || !vop_unary(op) || op == COV_OP_CAST)
      FAIL("instruction %u (vop): field flags: %s needs a unary op without reduce, not %s%s", i,
           fused[f].name, common_op_name((cov_op)op), (in->flags & NPU_VOP_REDUCE) ? ".reduce" : "");
    if (!(cap->fused & fused[f].form))
      FAIL("instruction %u (vop): field flags: %s, but capability %u (%s of '%s') does not list "
           "the fused form '%s' (ACG \"fused\")",
           i, fused[f].name, in->u.vop.cap, common_op_name((cov_op)op), c->name, fused[f].name);
  }
  if ((in->flags & NPU_VOP_ROWRED) && in->u.vop.sum.col_stride != 0)
    FAIL("instruction %u (vop): field sum.col_stride: %d, must be 0 (one value per row)", i,
         in->u.vop.sum.col_stride);
  if ((in->flags & NPU_VOP_REDUCE) && op != COV_OP_ADD && op != COV_OP_MAX)
    FAIL("instruction %u (vop): field flags: reduce needs op add or max, not %s", i,
         common_op_name((cov_op)op));
  if (in->u.vop.rows == 0 || in->u.vop.cols == 0)
    FAIL("instruction %u (vop): field %s: must be >= 1", i, in->u.vop.rows ? "cols" : "rows");
  int un = npu_node_of_compute(g, in->unit);
  COV_RETURN_IF_ERROR(check_buf(t, lp, i, "src1", &in->u.vop.src1, un, true));
  if (npu_vop_reads_src2(in)) COV_RETURN_IF_ERROR(check_buf(t, lp, i, "src2", &in->u.vop.src2, un, true));
  COV_RETURN_IF_ERROR(check_buf(t, lp, i, "dst", &in->u.vop.dst, un, false));
  if (in->flags & NPU_VOP_ROWRED) COV_RETURN_IF_ERROR(check_buf(t, lp, i, "sum", &in->u.vop.sum, un, false));
  return NULL;
}

/* One core's instructions [lo, hi): fields, and loops whose bodies stay
 * inside the core's stream. */
static cov_status verify_stream(const npu_prog *p, const npu_target *t, const cov_loc *lp, uint32_t lo,
                                uint32_t hi) {
  cov_loc loc = *lp;
  uint32_t loop_end[NPU_MAX_LOOP_DEPTH];
  int depth = 0;
  for (uint32_t i = lo; i < hi; i++) {
    while (depth > 0 && i >= loop_end[depth - 1]) depth--;
    const npu_insn *in = &p->insns[i];
    switch (in->op) {
      case NPU_OP_NOP:
      case NPU_OP_BARRIER:
      case NPU_OP_SYNC: break;
      case NPU_OP_SETR:
      case NPU_OP_ADDR:
        if (in->u.r.reg == 0 || in->u.r.reg >= NPU_NREGS)
          FAIL("instruction %u (%s): field reg: r%u, writable registers are r1..r%d", i,
               npu_opcode_name(in->op), in->u.r.reg, NPU_NREGS - 1);
        break;
      case NPU_OP_LOOP: {
        if (in->u.loop.count == 0) FAIL("instruction %u (loop): field count: must be >= 1", i);
        if (in->u.loop.body == 0) FAIL("instruction %u (loop): field body: must be >= 1", i);
        uint64_t end = (uint64_t)i + 1 + in->u.loop.body;
        if (end > hi)
          FAIL("instruction %u (loop): field body: %u instructions, only %u follow%s", i,
               in->u.loop.body, hi - i - 1, hi < p->n_insns ? " in its core's stream" : "");
        if (depth > 0 && end > loop_end[depth - 1])
          FAIL("instruction %u (loop): field body: ends at %llu, after its enclosing loop (%u)", i,
               (unsigned long long)end, loop_end[depth - 1]);
        if (depth == NPU_MAX_LOOP_DEPTH)
          FAIL("instruction %u (loop): loops nested deeper than %d", i, NPU_MAX_LOOP_DEPTH);
        loop_end[depth++] = (uint32_t)end;
        break;
      }
      case NPU_OP_DMA: COV_RETURN_IF_ERROR(check_dma(t, &loc, i, in)); break;
      case NPU_OP_GEMM: COV_RETURN_IF_ERROR(check_gemm(t, &loc, i, in)); break;
      case NPU_OP_VOP: COV_RETURN_IF_ERROR(check_vop(t, &loc, i, in)); break;
      default: FAIL("instruction %u: field opcode: unknown opcode 0x%02x", i, in->op);
    }
  }
  return NULL;
}

cov_status npu_verify_static(const npu_prog *p, const npu_target *t, const char *file) {
  const cov_acg *g = t->acg;
  cov_loc loc = {file, 0, 0, NULL};
  if (p->acg_digest != t->digest || strcmp(p->acg_name, g->name ? g->name : "") != 0)
    FAIL("program was compiled for ACG '%s' (digest %016llx), but the simulator's ACG is '%s' "
         "(digest %016llx); recompile for this target",
         p->acg_name, (unsigned long long)p->acg_digest, g->name,
         (unsigned long long)t->digest);
  uint64_t dram_cap = g->storage[t->dram].capacity_bytes;
  if (p->dram_bytes > dram_cap)
    FAIL("field dram_bytes: %llu exceeds DRAM '%s' capacity %llu",
         (unsigned long long)p->dram_bytes, g->storage[t->dram].name,
         (unsigned long long)dram_cap);
  for (uint32_t i = 0; i < p->n_tensors; i++) {
    const npu_tensor *tn = &p->tensors[i];
    if (!tn->name[0]) FAIL("tensor %u: field name: empty", i);
    if (!dtype_ok(tn->dtype)) FAIL("tensor %u ('%s'): field dtype: %u", i, tn->name, tn->dtype);
    if (tn->role < NPU_ROLE_INPUT || tn->role > NPU_ROLE_SCRATCH)
      FAIL("tensor %u ('%s'): field role: %u", i, tn->name, tn->role);
    if (tn->rank > NPU_TENSOR_MAX_RANK)
      FAIL("tensor %u ('%s'): field rank: %u > %d", i, tn->name, tn->rank, NPU_TENSOR_MAX_RANK);
    uint64_t n = cov_dtype_size(tn->dtype);
    for (int d = 0; d < tn->rank; d++) {
      if (tn->dims[d] == 0 || n > NPU_MAX_DRAM_BYTES / tn->dims[d])
        FAIL("tensor %u ('%s'): field dims[%d]: %u", i, tn->name, d, tn->dims[d]);
      n *= tn->dims[d];
    }
    if (n != tn->bytes)
      FAIL("tensor %u ('%s'): field bytes: %llu, its shape needs %llu", i, tn->name,
           (unsigned long long)tn->bytes, (unsigned long long)n);
    if (tn->addr > p->dram_bytes || tn->bytes > p->dram_bytes - tn->addr)
      FAIL("tensor %u ('%s'): field addr: [%llu, +%llu) outside DRAM of %llu bytes", i, tn->name,
           (unsigned long long)tn->addr, (unsigned long long)tn->bytes,
           (unsigned long long)p->dram_bytes);
    for (uint32_t j = 0; j < i; j++)
      if (strcmp(p->tensors[j].name, tn->name) == 0)
        FAIL("tensor %u: field name: '%s' repeats tensor %u", i, tn->name, j);
  }
  for (uint32_t i = 0; i < p->n_segs; i++)
    if (p->segs[i].addr > p->dram_bytes || p->segs[i].bytes > p->dram_bytes - p->segs[i].addr)
      FAIL("segment %u: field addr: [%llu, +%llu) outside DRAM of %llu bytes", i,
           (unsigned long long)p->segs[i].addr, (unsigned long long)p->segs[i].bytes,
           (unsigned long long)p->dram_bytes);
  uint32_t cores = npu_prog_cores(p);
  if (cores > t->cores)
    FAIL("field n_cores: the program runs on %u cores, '%s' has %u (the instances of its array)",
         cores, g->name, t->cores);
  for (uint32_t c = 0; c < cores; c++) {
    uint32_t lo, hi;
    npu_core_range(p, c, &lo, &hi);
    if (lo > hi || hi > p->n_insns)
      FAIL("core %u: its instructions [%u, %u) are not within the program's %u", c, lo, hi, p->n_insns);
    COV_RETURN_IF_ERROR(verify_stream(p, t, &loc, lo, hi));
  }
  return NULL;
}

/* saturating a * b */
static uint64_t sat_mul(uint64_t a, uint64_t b) {
  uint64_t r;
  return __builtin_mul_overflow(a, b, &r) ? UINT64_MAX : r;
}

/* The elements one instruction moves or computes: a gemm's m x n x k
 * multiply-adds, a dma's tile, a vop's rows x cols; 1 for the rest. What a
 * simulation of it costs, whatever its cycles. */
static uint64_t insn_work(const npu_insn *in) {
  switch (in->op) {
    case NPU_OP_GEMM: return sat_mul(sat_mul(in->u.gemm.m, in->u.gemm.n), in->u.gemm.k);
    case NPU_OP_VOP: return sat_mul(in->u.vop.rows, in->u.vop.cols);
    case NPU_OP_DMA: {
      uint64_t w = 1;
      for (int d = 0; d < in->u.dma.rank && d < NPU_DMA_MAX_RANK; d++) w = sat_mul(w, in->u.dma.dim[d].count);
      return w;
    }
    default: return 1;
  }
}

/* The dynamic instruction count and element work (npu_insn_work summed),
 * multiplied out from the loop nest: each instruction runs the product of
 * its enclosing loops' counts, a loop instruction once per entry;
 * saturating at UINT64_MAX. Arithmetic on the static program, so a program
 * asking for 10^15 instructions, or one gemm of 2^32 rows, is refused at
 * once instead of after walking it. Needs the nesting that
 * npu_verify_static checks. */
void npu_dyn_count(const npu_prog *p, uint64_t *insns, uint64_t *work) {
  uint32_t end[NPU_MAX_LOOP_DEPTH];
  uint64_t mult[NPU_MAX_LOOP_DEPTH + 1] = {1};
  int depth = 0;
  *insns = *work = 0;
  for (uint32_t i = 0; i < p->n_insns; i++) {
    while (depth > 0 && i >= end[depth - 1]) depth--;
    const npu_insn *in = &p->insns[i];
    if (__builtin_add_overflow(*insns, mult[depth], insns)) *insns = UINT64_MAX;
    if (__builtin_add_overflow(*work, sat_mul(mult[depth], insn_work(in)), work)) *work = UINT64_MAX;
    if (in->op != NPU_OP_LOOP || depth == NPU_MAX_LOOP_DEPTH) continue;
    end[depth] = i + 1 + in->u.loop.body;
    mult[depth + 1] = sat_mul(mult[depth], in->u.loop.count);
    depth++;
  }
}
