/* runtime/crt_npu.c: an artifact's NPU programs in the simulator (see
 * crt_npu.h). Each npu step loads its program (decoded once at open),
 * writes the bound input buffers into the program's DRAM tensors, runs,
 * and reads its outputs back into their buffers. */
#include "runtime/crt_npu.h"
#include "common/loc.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifdef CRT_WITH_NPU
#include "covenant/acg.h"
#include "covenant/npu.h"

struct crt_npu {
  cov_acg *acg;
  cov_npu_sim *sim;
  cov_npu_program **progs; /* per step (npu steps only) */
  int n;
};

cov_status crt_npu_open(const crt_artifact *a, crt_npu **out, char *device, size_t device_size) {
  *out = NULL;
  crt_npu *n = calloc(1, sizeof *n);
  if (!n) return cov_error(COV_OUT_OF_MEMORY, NULL, "out of memory");
  n->n = a->n_steps;
  n->progs = calloc((size_t)a->n_steps + 1, sizeof *n->progs);
  cov_status st = n->progs ? cov_acg_load_target(a->arch, &n->acg) : cov_error(COV_OUT_OF_MEMORY, NULL, "out of memory");
  if (!st) st = cov_npu_sim_create(n->acg, &n->sim);
  for (int i = 0; i < a->n_steps && !st; i++) {
    const crt_step *x = &a->steps[i];
    if (x->op != CRT_STEP_NPU) continue;
    char name[300];
    snprintf(name, sizeof name, "%s: blob '%s'", a->file, a->blobs[x->blob].name);
    st = cov_npu_program_decode(crt_blob_data(a, x->blob), (size_t)a->blobs[x->blob].bytes, name, &n->progs[i]);
    if (!st && strcmp(cov_npu_program_acg_name(n->progs[i]), a->arch))
      st = cov_error(COV_INVALID_INPUT, COV_AT(a->file, a->blobs[x->blob].name), "the program is for %s, the artifact for %s",
                     cov_npu_program_acg_name(n->progs[i]), a->arch);
    for (int k = 0; k < x->n_binds && !st; k++) {
      int t = 0, count = cov_npu_program_tensor_count(n->progs[i]);
      const char *tn = NULL;
      for (; t < count; t++) {
        cov_npu_program_tensor(n->progs[i], t, &tn, NULL, NULL, (int64_t[COV_MAX_RANK]){0});
        if (!strcmp(tn, x->binds[k].tensor)) break;
      }
      if (t == count)
        st = cov_error(COV_INVALID_INPUT, COV_AT(a->file, x->binds[k].tensor),
                       "step %d binds tensor '%s', which the program does not have", i, x->binds[k].tensor);
    }
  }
  if (st) {
    crt_npu_close(n);
    return st;
  }
  snprintf(device, device_size, "npu-sim simulator of %s", a->arch);
  *out = n;
  return NULL;
}

cov_status crt_npu_step(crt_npu *n, const crt_artifact *a, int step, const uint64_t *addr) {
  const crt_step *x = &a->steps[step];
  cov_npu_program *p = n->progs[step];
  COV_RETURN_IF_ERROR(cov_npu_sim_load(n->sim, p));
  int count = cov_npu_program_tensor_count(p);
  /* inputs in, run, outputs out; the program's shape, the buffer's bytes */
  for (int pass = 0; pass < 2; pass++) {
    if (pass == 1) {
      cov_npu_stats *stats = NULL;
      COV_RETURN_IF_ERROR(cov_npu_sim_run(n->sim, NULL, &stats));
      cov_npu_stats_free(stats);
    }
    for (int k = 0; k < x->n_binds; k++) {
      const crt_buffer *b = &a->buffers[x->binds[k].buffer];
      for (int t = 0; t < count; t++) {
        const char *tn, *role;
        cov_dtype dt;
        int64_t shape[COV_MAX_RANK];
        int rank = cov_npu_program_tensor(p, t, &tn, &role, &dt, shape);
        if (strcmp(tn, x->binds[k].tensor)) continue;
        int is_out = !strcmp(role, "output");
        if (is_out != pass) break;
        cov_tensor v = {.dtype = b->dtype, .rank = rank, .data = (void *)(uintptr_t)addr[x->binds[k].buffer]};
        memcpy(v.shape, shape, sizeof shape);
        if ((uint64_t)cov_tensor_numel(&v) * cov_dtype_size(b->dtype) != b->bytes)
          return cov_error(COV_INVALID_INPUT, COV_AT(a->file, tn), "tensor '%s' has %" PRId64 " elements, buffer '%s' %" PRIu64 " bytes",
                           tn, cov_tensor_numel(&v), b->name, b->bytes);
        if (!is_out) {
          COV_RETURN_IF_ERROR(cov_npu_sim_write(n->sim, tn, &v));
        } else {
          cov_tensor got = {0};
          COV_RETURN_IF_ERROR(cov_npu_sim_read(n->sim, tn, &got));
          if (got.dtype != b->dtype || (uint64_t)cov_tensor_numel(&got) * cov_dtype_size(got.dtype) != b->bytes) {
            cov_tensor_release(&got);
            return cov_error(COV_INVALID_INPUT, COV_AT(a->file, tn), "output tensor '%s' does not fit buffer '%s'", tn, b->name);
          }
          memcpy(v.data, got.data, (size_t)b->bytes);
          cov_tensor_release(&got);
        }
        break;
      }
    }
  }
  return NULL;
}

void crt_npu_close(crt_npu *n) {
  if (!n) return;
  for (int i = 0; n->progs && i < n->n; i++) cov_npu_program_free(n->progs[i]);
  free(n->progs);
  cov_npu_sim_free(n->sim);
  if (n->acg) cov_acg_free(n->acg);
  free(n);
}

#else /* the standalone runtime: no simulator */

cov_status crt_npu_open(const crt_artifact *a, crt_npu **out, char *device, size_t device_size) {
  (void)device, (void)device_size;
  *out = NULL;
  cov_loc loc = {a->file, 0, 0, NULL};
  return cov_error(COV_UNSUPPORTED, &loc,
                   "an npu-sim artifact (%s) runs in the NPU simulator, which this standalone runtime does not "
                   "have; run it with the full build's covenant-run",
                   a->arch);
}
cov_status crt_npu_step(crt_npu *n, const crt_artifact *a, int step, const uint64_t *addr) {
  (void)n, (void)a, (void)step, (void)addr;
  return cov_error(COV_INTERNAL, COV_AT_FILE(a->file), "no NPU simulator in this build");
}
void crt_npu_close(crt_npu *n) { (void)n; }

#endif
