/* backends/npu-sim/npu_disasm.c: the program as text, one line per
 * instruction, in the syntax ISA.md uses. With an ACG, buffers, units and
 * capabilities are printed by name; without one, by number. */
#include <string.h>

#include "backends/npu-sim/npu_internal.h"
#include "common/c_locale.h"
#include "common/loc.h"

static const char *buf_name(const cov_acg *g, uint8_t b, char *tmp, size_t n) {
  if (b == NPU_IMM_BUF) return "imm";
  if (g && b < g->n_storage) return g->storage[b].name;
  snprintf(tmp, n, "buf%u", b);
  return tmp;
}

static void mem(FILE *out, const cov_acg *g, const char *label, const npu_mem *m, bool cols) {
  char tmp[16];
  fprintf(out, " %s=%s[", label, buf_name(g, m->buf, tmp, sizeof tmp));
  if (m->reg) fprintf(out, "r%u+", m->reg);
  fprintf(out, "%u", m->off);
  if (cols) fprintf(out, ", %d, %d]", m->row_stride, m->col_stride);
  else fprintf(out, ", %d]", m->row_stride);
}

static const char *dt(uint8_t d) {
  return d > COV_DTYPE_INVALID && d < COV_DTYPE_COUNT ? cov_dtype_name(d) : "?";
}

void npu_disasm_insn(FILE *out, const npu_insn *in, const cov_acg *g) {
  fprintf(out, "%-7s", npu_opcode_name(in->op));
  switch (in->op) {
    case NPU_OP_SETR:
    case NPU_OP_ADDR:
      fprintf(out, " r%u, %lld", in->u.r.reg, (long long)in->u.r.imm);
      break;
    case NPU_OP_LOOP: fprintf(out, " x%u, body %u", in->u.loop.count, in->u.loop.body); break;
    case NPU_OP_DMA: {
      if (g && in->unit < g->n_edges) {
        /* Name the direction the data flows (a store on a bidirectional
         * edge runs against the edge's written order). */
        int a = g->edges[in->unit].from, b = g->edges[in->unit].to;
        bool store = in->flags & NPU_DMA_STORE;
        bool swap = store ? acg_is_storage(g, a) && g->storage[a].kind == ACG_DRAM
                          : acg_is_storage(g, b) && g->storage[b].kind == ACG_DRAM;
        fprintf(out, " %s %s->%s", store ? "store" : "load", acg_node_name(g, swap ? b : a),
                acg_node_name(g, swap ? a : b));
      }
      else
        fprintf(out, " %s edge%u", (in->flags & NPU_DMA_STORE) ? "store" : "load", in->unit);
      fprintf(out, " %s dram[", dt(in->u.dma.dtype));
      if (in->u.dma.dram_reg) fprintf(out, "r%u+", in->u.dma.dram_reg);
      fprintf(out, "%llu] local[", (unsigned long long)in->u.dma.dram_off);
      if (in->u.dma.local_reg) fprintf(out, "r%u+", in->u.dma.local_reg);
      fprintf(out, "%u]", in->u.dma.local_off);
      for (int d = 0; d < in->u.dma.rank && d < NPU_DMA_MAX_RANK; d++) {
        const npu_dma_dim *dd = &in->u.dma.dim[d];
        fprintf(out, " {n=%u at %d%+d*i <%u ds=%u ls=%u}", dd->count, dd->start, dd->step,
                dd->extent, dd->dram_stride, dd->local_stride);
      }
      break;
    }
    case NPU_OP_GEMM: {
      char ub[16];
      snprintf(ub, sizeof ub, "unit%u", in->unit);
      const char *unit = g && in->unit < g->n_compute ? g->compute[in->unit].name : ub;
      fprintf(out, " %s cap%u m=%u k=%u n=%u%s%s%s%s%s", unit, in->u.gemm.cap, in->u.gemm.m,
              in->u.gemm.k, in->u.gemm.n, (in->flags & NPU_GEMM_ACC) ? " acc" : "",
              (in->flags & NPU_GEMM_BIAS) ? " bias" : "",
              (in->flags & NPU_GEMM_CHAIN) ? " chain" : "",
              (in->flags & NPU_GEMM_HOLD) ? " hold" : "",
              (in->flags & NPU_GEMM_WKEEP) ? " wkeep" : "");
      mem(out, g, "a", &in->u.gemm.a, true);
      mem(out, g, "b", &in->u.gemm.b, true);
      mem(out, g, "c", &in->u.gemm.c, true);
      if (in->flags & NPU_GEMM_BIAS) mem(out, g, "bias", &in->u.gemm.bias, true);
      if (in->flags & NPU_GEMM_KDIG)
        fprintf(out, " kdig k0=%u radix=%ux%u a.k=%d,%d b.k=%d,%d", in->u.gemm.k0, in->u.gemm.krad[1],
                in->u.gemm.krad[0], in->u.gemm.ka[1], in->u.gemm.ka[0], in->u.gemm.kb[1], in->u.gemm.kb[0]);
      if (in->flags & NPU_GEMM_MDIG)
        fprintf(out, " mdig radix=%u a.m=%d c.m=%d", in->u.gemm.mrad, in->u.gemm.ma, in->u.gemm.mc);
      break;
    }
    case NPU_OP_VOP: {
      char ub[16];
      snprintf(ub, sizeof ub, "unit%u", in->unit);
      const char *unit = g && in->unit < g->n_compute ? g->compute[in->unit].name : ub;
      fprintf(out, " %s %s%s%s%s%s cap%u %s->%s %ux%u", unit,
              in->u.vop.vop < COV_OP_COUNT ? common_op_name((cov_op)in->u.vop.vop) : "?",
              (in->flags & NPU_VOP_REDUCE) ? ".reduce" : "", (in->flags & NPU_VOP_BIAS) ? ".bias" : "",
              (in->flags & NPU_VOP_RSUM) ? ".rsum" : "", (in->flags & NPU_VOP_RMAX) ? ".rmax" : "",
              in->u.vop.cap, dt(in->u.vop.dtype_in),
              dt(in->u.vop.dtype_out), in->u.vop.rows, in->u.vop.cols);
      mem(out, g, "dst", &in->u.vop.dst, true);
      mem(out, g, "src1", &in->u.vop.src1, true);
      if (in->u.vop.src2.buf == NPU_IMM_BUF) common_fprintf(out, " src2=%.9g", (double)in->u.vop.imm);
      else if (in->u.vop.src2.buf || in->u.vop.src2.off || in->u.vop.src2.row_stride ||
               (in->flags & NPU_VOP_BIAS))
        mem(out, g, "src2", &in->u.vop.src2, true);
      if (in->flags & NPU_VOP_ROWRED) mem(out, g, "sum", &in->u.vop.sum, true);
      break;
    }
    default: break;
  }
  fputc('\n', out);
}

cov_status npu_disasm(const npu_prog *p, const cov_acg *g, FILE *out) {
  fprintf(out, "; npu program for ACG '%s' (digest %016llx), %u instructions, DRAM %llu bytes\n",
          p->acg_name, (unsigned long long)p->acg_digest, p->n_insns,
          (unsigned long long)p->dram_bytes);
  if (npu_prog_cores(p) > 1) fprintf(out, "; %u cores\n", npu_prog_cores(p));
  for (uint32_t i = 0; i < p->n_tensors; i++) {
    const npu_tensor *t = &p->tensors[i];
    fprintf(out, "; tensor %-8s %-24s %s[", npu_role_name(t->role), t->name, dt(t->dtype));
    for (int d = 0; d < t->rank && d < NPU_TENSOR_MAX_RANK; d++)
      fprintf(out, "%s%u", d ? "," : "", t->dims[d]);
    fprintf(out, "] at %llu (%llu bytes)\n", (unsigned long long)t->addr,
            (unsigned long long)t->bytes);
  }
  for (uint32_t i = 0; i < p->n_segs; i++)
    fprintf(out, "; segment %u: %llu bytes at %llu\n", i, (unsigned long long)p->segs[i].bytes,
            (unsigned long long)p->segs[i].addr);
  int depth = 0;
  uint32_t ends[NPU_MAX_LOOP_DEPTH + 1];
  uint32_t cores = npu_prog_cores(p), core = 0;
  for (uint32_t i = 0; i < p->n_insns; i++) {
    while (depth > 0 && i >= ends[depth - 1]) depth--;
    for (; cores > 1 && core < cores && p->core_first[core] == i; core++) {
      uint32_t lo, hi;
      npu_core_range(p, core, &lo, &hi);
      fprintf(out, "; core %u: %u instructions\n", core, hi - lo);
    }
    fprintf(out, "%6u  %*s", i, 2 * depth, "");
    npu_disasm_insn(out, &p->insns[i], g);
    if (p->insns[i].op == NPU_OP_LOOP && depth < NPU_MAX_LOOP_DEPTH)
      ends[depth++] = i + 1 + p->insns[i].u.loop.body;
  }
  return ferror(out) ? cov_error(COV_IO_ERROR, COV_AT_CALL("npu_disasm"), "write error") : NULL;
}
