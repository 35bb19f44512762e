/* backends/npu-sim/npu_cores.c: programs of several cores (ISA.md "Cores").
 *
 * An NPU whose array has `instances: N` has N cores, each with its own
 * array, SIMD unit, DMA engines and on-chip buffers, all on one DRAM. The
 * mapper spreads a layer's output loops over them (its workgroup loops,
 * MAP_AX_WORKGROUP), the code generator emits each core's share as one
 * single-core program (the same tensors, each core's tiles at the same
 * addresses of its own buffers), and npu_cores_join puts them together:
 * one tensor table, one instruction stream per core. */
#include <string.h>

#include "backends/npu-sim/npu_internal.h"
#include "common/loc.h"

static bool same_tensors(const npu_prog *a, const npu_prog *b) {
  if (a->n_tensors != b->n_tensors || a->dram_bytes != b->dram_bytes || a->n_segs != b->n_segs) return false;
  for (uint32_t i = 0; i < a->n_tensors; i++) {
    const npu_tensor *x = &a->tensors[i], *y = &b->tensors[i];
    if (strcmp(x->name, y->name) != 0 || x->addr != y->addr || x->bytes != y->bytes) return false;
  }
  return true;
}

/* An instruction that touches an on-chip buffer of one instance, which
 * every core would address alike. */
static cov_status check_private(const npu_prog *p, const npu_target *t, uint32_t core, uint32_t i) {
  const cov_acg *g = t->acg;
  npu_brange r[8];
  int n = npu_insn_ranges(&p->insns[i], t, r);
  for (int k = 0; k < n; k++) {
    if (r[k].buf < 0 || r[k].buf == t->dram || r[k].buf >= g->n_storage) continue;
    if (g->storage[r[k].buf].instances <= 1)
      return cov_error(COV_UNSUPPORTED, COV_AT(NULL, p->acg_name),
                       "core %u, instruction %u (%s): buffer '%s' is one the cores share "
                       "(instances 1); a layer spread over cores needs a buffer of its own per core",
                       core, i, npu_opcode_name(p->insns[i].op), g->storage[r[k].buf].name);
  }
  return NULL;
}

cov_status npu_cores_join(npu_prog *const *part, uint32_t n, const npu_target *t, npu_prog **out) {
  *out = NULL;
  if (n < 2 || n > NPU_MAX_CORES || n > t->cores)
    return cov_error(COV_INTERNAL, COV_AT(NULL, part[0]->acg_name), "%u cores (2 to %u)", n, t->cores);
  for (uint32_t c = 0; c < n; c++)
    for (uint32_t i = 0; i < part[c]->n_insns; i++) COV_RETURN_IF_ERROR(check_private(part[c], t, c, i));
  cov_status st = NULL;
  npu_prog *p = NULL;
  COV_RETURN_IF_ERROR(npu_prog_create(&p));
  memcpy(p->acg_name, part[0]->acg_name, sizeof p->acg_name);
  p->acg_digest = part[0]->acg_digest;
  p->dram_bytes = part[0]->dram_bytes;
  p->n_cores = n;
  for (uint32_t i = 0; i < part[0]->n_tensors && !st; i++) st = npu_prog_add_tensor(p, &part[0]->tensors[i]);
  for (uint32_t i = 0; i < part[0]->n_segs && !st; i++)
    st = npu_prog_add_segment(p, part[0]->segs[i].addr, part[0]->segs[i].data, part[0]->segs[i].bytes);
  for (uint32_t c = 0; c < n && !st; c++) {
    if (!same_tensors(part[0], part[c])) {
      st = cov_error(COV_INTERNAL, COV_AT(NULL, p->acg_name), "core %u's program has other tensors than core 0's", c);
      break;
    }
    p->core_first[c] = p->n_insns;
    for (uint32_t i = 0; i < part[c]->n_insns && !st; i++) st = npu_prog_add(p, &part[c]->insns[i]);
  }
  p->core_first[n] = p->n_insns;
  if (st) {
    npu_prog_free(p);
    return st;
  }
  *out = p;
  return NULL;
}
