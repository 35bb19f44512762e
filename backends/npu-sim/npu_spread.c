/* backends/npu-sim/npu_spread.c: a tile's epilogue spread over the next
 * tile's accumulator drains on the SIMD unit, run on every program
 * npu_codegen emits (after npu_hoist_loads).
 *
 * On an output-stationary array the SIMD unit also drains each accumulator
 * tile (a copy from the register file into the level-1 output tile), and the
 * array's next drain into that register file waits for the copy to have read
 * it. The code generator emits a level-1 tile's epilogue (pool, bias, ReLU)
 * after the tile's last drain, so the SIMD unit, which runs in program
 * order, did the whole epilogue before the next tile's first drain copy: the
 * array waited for it (convnet_layer1 on npu-16x16-os: 86 cycles of
 * epilogue per 4 drains, about 50 of them idle array cycles per tile).
 * Here the epilogue's vector ops are dealt out, in order, between the next
 * drains (one share where they were, one after each drain up to the next
 * epilogue), and the tile's store follows its last op. Results are those of
 * program order: an instruction moves only past instructions that touch none
 * of its bytes (a run whose ops cannot all move stays as it was), and the
 * runs keep their order. Straight-line programs only. */
#include <stdlib.h>

#include "backends/npu-sim/npu_internal.h"
#include "mapper/map_ir.h"

static bool touches(const npu_insn *a, const npu_insn *b, const npu_target *t) {
  npu_brange ra[5], rb[5];
  int na = npu_insn_ranges(a, t, ra), nb = npu_insn_ranges(b, t, rb);
  for (int i = 0; i < na; i++)
    for (int j = 0; j < nb; j++)
      if (npu_brange_overlap(&ra[i], &rb[j])) return true;
  return false;
}

/* A drain: a vop on the SIMD unit reading the array's register file. */
static bool is_drain(const npu_insn *in, const npu_target *t) {
  const cov_acg *g = t->acg;
  return in->op == NPU_OP_VOP && t->simd >= 0 && in->unit == t->simd &&
         in->u.vop.src1.buf < g->n_storage && g->storage[in->u.vop.src1.buf].kind == ACG_REGFILE;
}
static bool is_epi(const npu_insn *in, const npu_target *t) {
  return in->op == NPU_OP_VOP && in->unit == t->simd && !is_drain(in, t);
}
static bool is_store(const npu_insn *in) {
  return in->op == NPU_OP_DMA && (in->flags & NPU_DMA_STORE);
}

/* The run of epilogue ops and stores between drain groups j and j + 1
 * (gend[j] ends one, gbeg[j + 1] starts the next): each member's target
 * drain (-1: stays), when every move is safe. */
static void plan_run(const npu_prog *p, const npu_target *t, const uint32_t *gbeg,
                     const uint32_t *gend, uint32_t ng, uint32_t j, int64_t *target) {
  uint32_t lo = gend[j] + 1, hi = gbeg[j + 1];
  uint32_t nops = 0, n = 1;
  for (uint32_t i = lo; i < hi; i++) nops += is_epi(&p->insns[i], t);
  if (!nops) return;
  /* drain groups up to the next epilogue (or the program's end) */
  while (j + n + 1 < ng) {
    bool epi = false;
    for (uint32_t i = gend[j + n] + 1; i < gbeg[j + n + 1] && !epi; i++) epi = is_epi(&p->insns[i], t);
    if (epi) break;
    n++;
  }
  if (n < MAP_EPI_SPREAD_DRAINS) return; /* as map_epi_spread decides for a schedule */
  uint32_t v = 0;
  int64_t slot = 0;
  for (uint32_t i = lo; i < hi; i++) {
    const npu_insn *in = &p->insns[i];
    if (is_epi(in, t)) slot = (int64_t)v++ * (int64_t)(n + 1) / (int64_t)nops;
    else if (!is_store(in)) continue;
    target[i] = slot == 0 ? -1 : (int64_t)gend[j + (uint32_t)slot];
  }
  /* every moved member must be independent of what it passes (the other
   * members keep their order) */
  for (uint32_t i = lo; i < hi; i++) {
    if (target[i] < 0) continue;
    for (uint32_t q = i + 1; q <= (uint32_t)target[i]; q++) {
      bool member = q < hi && (is_epi(&p->insns[q], t) || is_store(&p->insns[q]));
      if (!member && touches(&p->insns[i], &p->insns[q], t)) {
        for (uint32_t k = lo; k < hi; k++) target[k] = -1;
        return;
      }
    }
  }
}

cov_status npu_spread_epilogue(npu_prog *p, const npu_target *t) {
  if (p->n_insns < 3 || t->simd < 0 || !npu_straight_line(p)) return NULL;
  uint32_t n = p->n_insns, nd = 0;
  uint32_t *drn = malloc(sizeof *drn * 2 * n); /* group starts, then ends */
  int64_t *target = malloc(sizeof *target * n);
  npu_insn *out = malloc(sizeof *out * n);
  if (!drn || !target || !out) {
    free(drn);
    free(target);
    free(out);
    return cov_error(COV_OUT_OF_MEMORY, NULL, "out of memory");
  }
  /* drain groups: drains with no gemm and no epilogue op between them
   * (one accumulator tile drained by several copies) */
  uint32_t *gend = drn + n;
  bool open = false;
  for (uint32_t i = 0; i < n; i++) {
    const npu_insn *in = &p->insns[i];
    target[i] = -1;
    if (is_drain(in, t)) {
      if (!open) drn[nd++] = i;
      gend[nd - 1] = i;
      open = true;
    } else if (in->op == NPU_OP_GEMM || is_epi(in, t)) {
      open = false;
    }
  }
  for (uint32_t j = 0; j + 1 < nd; j++) plan_run(p, t, drn, gend, nd, j, target);
  /* each drain is followed by the members sent to it, in program order;
   * they come from the one run before it */
  uint32_t len = 0, from = 0;
  for (uint32_t i = 0; i < n; i++) {
    if (target[i] >= 0) continue;
    out[len++] = p->insns[i];
    if (!is_drain(&p->insns[i], t)) continue;
    for (uint32_t k = from; k < i; k++)
      if (target[k] == (int64_t)i) {
        out[len++] = p->insns[k];
        from = k;
      }
  }
  for (uint32_t i = 0; i < n; i++) p->insns[i] = out[i];
  free(drn);
  free(target);
  free(out);
  return NULL;
}
