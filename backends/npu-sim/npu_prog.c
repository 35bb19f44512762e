/* backends/npu-sim/npu_prog.c: building programs in memory. Arrays grow in
 * the program's arena; segments' bytes are copied into it. */
#include <string.h>

#include "backends/npu-sim/npu_internal.h"
#include "common/loc.h"

cov_status npu_prog_create(npu_prog **out) {
  *out = NULL;
  cov_arena *a = cov_arena_create();
  npu_prog *p = a ? cov_arena_alloc(a, sizeof *p) : NULL;
  if (!p) {
    cov_arena_destroy(a);
    return cov_error(COV_OUT_OF_MEMORY, NULL, "out of memory creating an NPU program");
  }
  p->arena = a;
  *out = p;
  return NULL;
}

void npu_prog_free(npu_prog *p) {
  if (p) cov_arena_destroy(p->arena);
}

void npu_prog_set_target(npu_prog *p, const npu_target *t) {
  memset(p->acg_name, 0, sizeof p->acg_name);
  snprintf(p->acg_name, sizeof p->acg_name, "%s", t->acg->name ? t->acg->name : "");
  p->acg_digest = t->digest;
}

#define GROW(p, arr, n, cap, limit, what)                                              \
  do {                                                                                 \
    if ((n) >= (limit))                                                                \
      return cov_error(COV_OUT_OF_RANGE, COV_AT(NULL, p->acg_name), "program has more than %u %s", \
                       (unsigned)(limit), what);                                       \
    if ((n) == (cap)) {                                                                \
      uint32_t nc = (cap) ? (cap) * 2 : 64;                                            \
      void *g_ = cov_arena_grow((p)->arena, (arr), (cap), nc, sizeof *(arr));          \
      if (!g_) return cov_error(COV_OUT_OF_MEMORY, NULL, "out of memory (%s)", what); \
      (arr) = g_;                                                                      \
      (cap) = nc;                                                                      \
    }                                                                                  \
  } while (0)

cov_status npu_prog_add(npu_prog *p, const npu_insn *in) {
  GROW(p, p->insns, p->n_insns, p->cap_insns, NPU_MAX_INSNS, "instructions");
  p->insns[p->n_insns++] = *in;
  return NULL;
}

cov_status npu_prog_add_tensor(npu_prog *p, const npu_tensor *t) {
  GROW(p, p->tensors, p->n_tensors, p->cap_tensors, NPU_MAX_TENSORS, "tensors");
  p->tensors[p->n_tensors++] = *t;
  return NULL;
}

cov_status npu_prog_add_segment(npu_prog *p, uint64_t addr, const void *data, uint64_t bytes) {
  GROW(p, p->segs, p->n_segs, p->cap_segs, NPU_MAX_SEGMENTS, "segments");
  uint8_t *copy = cov_arena_alloc(p->arena, bytes ? (size_t)bytes : 1);
  if (!copy) return cov_error(COV_OUT_OF_MEMORY, NULL, "out of memory (segment data)");
  if (bytes) memcpy(copy, data, (size_t)bytes);
  p->segs[p->n_segs++] = (npu_segment){addr, bytes, copy};
  return NULL;
}

int npu_prog_find_tensor(const npu_prog *p, const char *name) {
  for (uint32_t i = 0; i < p->n_tensors; i++)
    if (strcmp(p->tensors[i].name, name) == 0) return (int)i;
  return -1;
}
