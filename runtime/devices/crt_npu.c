/* runtime/devices/crt_npu.c: an artifact's NPU programs in the simulator (see
 * crt_npu.h). Each npu step loads its program (decoded once at open),
 * writes the bound input buffers into the program's DRAM tensors, runs,
 * and reads its outputs back into their buffers. */
#include "runtime/crt_npu.h"
#include "runtime/crt_internal.h"
#include "common/loc.h"
#include "common/text.h"

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

/* The ACG the programs were compiled for: the one the artifact embeds, or
 * (artifacts without one) a shipped target named by the manifest's arch,
 * resolved as a name only: the arch is input and never opened as a path.
 * Either way it must be the artifact's target and an npu-sim ACG. */
static cov_status load_acg(const crt_artifact *a, cov_acg **out) {
  char where[600], e1[256], e2[256];
  if (a->acg_blob >= 0) {
    snprintf(where, sizeof where, "%s: blob '%s'", a->file, common_escape(a->blobs[a->acg_blob].name, e1, sizeof e1));
    COV_RETURN_IF_ERROR(cov_acg_load_buffer((const char *)crt_blob_data(a, a->acg_blob),
                                            (size_t)a->blobs[a->acg_blob].bytes, where, out));
  } else {
    COV_RETURN_IF_ERROR(cov_status_annotate(cov_acg_load_named(a->arch, out), "%s: arch: ", a->file));
  }
  const char *name = cov_acg_name(*out), *backend = cov_acg_backend(*out);
  const char *npu = crt_device_backend(CRT_DEV_NPU);
  if (strcmp(name ? name : "", a->target) || strcmp(backend ? backend : "", npu)) {
    cov_status st = cov_error(COV_INVALID_INPUT, COV_AT(a->file, "target"),
                              "the artifact's target is '%s' (%s), its ACG is '%s' (backend %s)",
                              common_escape(a->target, e1, sizeof e1), npu, common_escape(name, e2, sizeof e2),
                              backend ? backend : "none");
    cov_acg_free(*out);
    *out = NULL;
    return st;
  }
  return NULL;
}

/* A name and its index, sorted by name then index: binds and program
 * tensors are matched by binary search, so a step's checks cost
 * n log n (a hostile manifest may bind thousands of tensors). */
typedef struct named {
  const char *name;
  int i;
} named;

static int named_cmp(const void *x, const void *y) {
  const named *a = x, *b = y;
  int c = strcmp(a->name, b->name);
  return c ? c : (a->i > b->i) - (a->i < b->i);
}

static const named *find(const named *v, int n, const char *name) {
  named key = {name, -1};
  int lo = 0, hi = n;
  while (lo < hi) { /* the first entry >= key: the lowest index of that name */
    int mid = lo + (hi - lo) / 2;
    if (named_cmp(&v[mid], &key) < 0) lo = mid + 1;
    else hi = mid;
  }
  return lo < n && !strcmp(v[lo].name, name) ? &v[lo] : NULL;
}

/* Each bind names a tensor of the program, once. binds[] and tensors[]
 * are filled sorted. */
static cov_status check_names(const crt_artifact *a, int s, const cov_npu_program *p, named *binds, named *tensors) {
  const crt_step *x = &a->steps[s];
  int count = cov_npu_program_tensor_count(p);
  char path[64], e1[256];
  snprintf(path, sizeof path, "steps[%d].binds", s);
  if (x->n_binds > count)
    return cov_error(COV_INVALID_INPUT, COV_AT(a->file, path), "step %d binds %d tensors; its program has %d", s,
                     x->n_binds, count);
  for (int t = 0; t < count; t++) cov_npu_program_tensor(p, t, &tensors[t].name, NULL, NULL, NULL), tensors[t].i = t;
  for (int k = 0; k < x->n_binds; k++) binds[k] = (named){x->binds[k].tensor, k};
  qsort(tensors, (size_t)count, sizeof *tensors, named_cmp);
  qsort(binds, (size_t)x->n_binds, sizeof *binds, named_cmp);
  for (int k = 0; k < x->n_binds; k++) {
    snprintf(path, sizeof path, "steps[%d].binds[%d]", s, binds[k].i);
    if (k > 0 && !strcmp(binds[k - 1].name, binds[k].name))
      return cov_error(COV_INVALID_INPUT, COV_AT(a->file, path), "tensor '%s' is bound twice (binds[%d])",
                       common_escape(binds[k].name, e1, sizeof e1), binds[k - 1].i);
    if (!find(tensors, count, binds[k].name))
      return cov_error(COV_INVALID_INPUT, COV_AT(a->file, path),
                       "step %d binds tensor '%s', which the program does not have", s,
                       common_escape(binds[k].name, e1, sizeof e1));
  }
  return NULL;
}

/* One npu step's binds against its program (decoded): check_names; every
 * input and output tensor is bound; an input reads a buffer some earlier
 * step (or the caller, or the weights) wrote; an output writes no model
 * input or weight. written[] is per root buffer (crt_buffer_root). */
static cov_status check_binds(const crt_artifact *a, int s, const cov_npu_program *p, char *written) {
  const crt_step *x = &a->steps[s];
  int count = cov_npu_program_tensor_count(p);
  named *binds = malloc(((size_t)x->n_binds + (size_t)count + 1) * sizeof *binds), *tensors = binds + x->n_binds;
  if (!binds) return cov_error(COV_OUT_OF_MEMORY, NULL, "out of memory");
  cov_status st = check_names(a, s, p, binds, tensors);
  char path[64], e1[256], e2[256];
  for (int pass = 0; pass < 2 && !st; pass++) /* reads, then writes */
    for (int t = 0; t < count && !st; t++) {
      const char *tn, *role;
      cov_npu_program_tensor(p, t, &tn, &role, NULL, NULL);
      int is_in = !strcmp(role, "input"), is_out = !strcmp(role, "output");
      if (!is_in && !is_out) continue;
      const named *k = find(binds, x->n_binds, tn);
      snprintf(path, sizeof path, k ? "steps[%d].binds[%d]" : "steps[%d].binds", s, k ? k->i : 0);
      if (!k) { /* (an input the program holds the contents of, a constant, takes none) */
        if (pass == 0 && !(is_in && cov_npu_program_tensor_has_data(p, t)))
          st = cov_error(COV_INVALID_INPUT, COV_AT(a->file, path), "the program's %s tensor '%s' is bound to no buffer",
                         role, common_escape(tn, e1, sizeof e1));
        continue;
      }
      int b = x->binds[k->i].buffer, r = crt_buffer_root(a, b);
      const crt_buffer *buf = &a->buffers[b];
      crt_buf_kind rk = a->buffers[r].kind;
      cov_dtype dt = COV_DTYPE_INVALID;
      cov_tensor shape = {0};
      shape.rank = cov_npu_program_tensor(p, t, NULL, NULL, &dt, shape.shape);
      int64_t numel = cov_tensor_numel(&shape);
      /* element counts agree (the simulator converts dtypes as it copies) */
      if (pass == 0 && (numel < 0 || (uint64_t)numel * cov_dtype_size(buf->dtype) != buf->bytes))
        st = cov_error(COV_INVALID_INPUT, COV_AT(a->file, path),
                       "the program's tensor '%s' (%s, %" PRId64 " elements) does not fit buffer %d ('%s', %s, %" PRIu64
                       " bytes)",
                       common_escape(tn, e2, sizeof e2), cov_dtype_name(dt), numel, b,
                       common_escape(buf->name, e1, sizeof e1), cov_dtype_name(buf->dtype), buf->bytes);
      else if (pass == 0 && is_in && !written[r])
        st = cov_error(COV_INVALID_INPUT, COV_AT(a->file, path),
                       "step %d reads buffer %d ('%s', %s) into '%s' before any step writes it", s, b,
                       common_escape(buf->name, e1, sizeof e1), crt_buf_kind_name(buf->kind),
                       common_escape(tn, e2, sizeof e2));
      else if (pass == 1 && is_out && (rk == CRT_BUF_INPUT || rk == CRT_BUF_WEIGHT))
        st = cov_error(COV_INVALID_INPUT, COV_AT(a->file, path), "step %d writes '%s' into %s buffer %d ('%s')", s,
                       common_escape(tn, e2, sizeof e2), crt_buf_kind_name(rk), b,
                       common_escape(buf->name, e1, sizeof e1));
      else if (pass == 1 && is_out)
        written[r] = 1;
    }
  free(binds);
  return st;
}

/* A host or control step's reads come after writes; what it writes is
 * written from then on (in step order: a loop body's reads of carried
 * values follow the copies that set them up). */
static cov_status check_host_flow(const crt_artifact *a, int s, char *written) {
  const crt_step *x = &a->steps[s];
  int reads[4] = {-1, -1, -1, -1}, writes[2] = {-1, -1}, n_views_read = 0;
  if (x->op == CRT_STEP_COPY) reads[0] = x->refs[0], writes[0] = x->refs[1];
  if (x->op == CRT_STEP_LOOP) reads[0] = x->refs[0], reads[1] = x->refs[1], writes[0] = x->refs[2], writes[1] = x->refs[3];
  if (x->op == CRT_STEP_IF || x->op == CRT_STEP_NEXT) reads[0] = x->refs[0];
  if (x->op == CRT_STEP_HOST) n_views_read = x->n_views - 1;
  if (x->op == CRT_STEP_PART) n_views_read = x->n_in;
  for (int k = 0; k < 4 + n_views_read; k++) {
    int b = k < 4 ? reads[k] : x->op == CRT_STEP_PART ? x->refs[k - 4] : x->views[k - 4].buffer;
    if (b < 0 || written[crt_buffer_root(a, b)]) continue;
    char path[64], e1[256];
    snprintf(path, sizeof path, "steps[%d]", s);
    return cov_error(COV_INVALID_INPUT, COV_AT(a->file, path), "step %d reads buffer %d ('%s', %s) before any step writes it",
                     s, b, common_escape(a->buffers[b].name, e1, sizeof e1), crt_buf_kind_name(a->buffers[b].kind));
  }
  for (int k = 0; k < 2; k++)
    if (writes[k] >= 0) written[crt_buffer_root(a, writes[k])] = 1;
  if (x->op == CRT_STEP_HOST) written[crt_buffer_root(a, x->views[x->n_views - 1].buffer)] = 1;
  for (int k = 1; x->op == CRT_STEP_NEXT && k + 1 < x->n_refs; k += 2) written[crt_buffer_root(a, x->refs[k + 1])] = 1;
  for (int k = x->n_in; x->op == CRT_STEP_PART && k < x->n_refs; k++) written[crt_buffer_root(a, x->refs[k])] = 1;
  /* (a scan output is written row by row: by the loop's end, whole) */
  return NULL;
}

/* The plan's dataflow, step by step in order (runtime/README.md, "The
 * plan's dataflow"): what the reader could not check without the programs'
 * tensor roles. Then every output has been written. */
static cov_status check_dataflow(const crt_artifact *a, cov_npu_program *const *progs) {
  char *written = calloc((size_t)a->n_buffers + 1, 1);
  if (!written) return cov_error(COV_OUT_OF_MEMORY, NULL, "out of memory");
  for (int i = 0; i < a->n_buffers; i++)
    written[i] = a->buffers[i].kind == CRT_BUF_INPUT || a->buffers[i].kind == CRT_BUF_WEIGHT;
  cov_status st = NULL;
  for (int s = 0; s < a->n_steps && !st; s++) {
    const crt_step *x = &a->steps[s];
    if (x->op == CRT_STEP_FILL) written[crt_buffer_root(a, x->buffer)] = 1;
    else if (x->op == CRT_STEP_NPU) st = check_binds(a, s, progs[s], written);
    else if (x->op >= CRT_STEP_COPY) st = check_host_flow(a, s, written);
  }
  for (int i = 0; i < a->n_outputs && !st; i++) {
    int r = crt_buffer_root(a, a->outputs[i].buffer);
    char path[64], e1[256];
    snprintf(path, sizeof path, "outputs[%d]", i);
    if (!written[r])
      st = cov_error(COV_INVALID_INPUT, COV_AT(a->file, path), "output '%s' is written by no step",
                     common_escape(a->outputs[i].name, e1, sizeof e1));
  }
  free(written);
  return st;
}

/* Decodes step i's program and checks it is for the artifact's ACG. */
static cov_status decode_step(const crt_artifact *a, int i, cov_npu_program **out) {
  const crt_step *x = &a->steps[i];
  char name[600], e1[256];
  snprintf(name, sizeof name, "%s: blob '%s'", a->file, common_escape(a->blobs[x->blob].name, e1, sizeof e1));
  COV_RETURN_IF_ERROR(cov_npu_program_decode(crt_blob_data(a, x->blob), (size_t)a->blobs[x->blob].bytes, name, out));
  if (strcmp(cov_npu_program_acg_name(*out), a->arch)) {
    char e2[256], path[64];
    snprintf(path, sizeof path, "steps[%d].blob", i);
    return cov_error(COV_INVALID_INPUT, COV_AT(a->file, path), "the program is for %s, the artifact for %s",
                     common_escape(cov_npu_program_acg_name(*out), e1, sizeof e1), common_escape(a->arch, e2, sizeof e2));
  }
  return NULL;
}

cov_status crt_npu_open(const crt_artifact *a, const crt_options *o, crt_npu **out, char *device, size_t device_size) {
  *out = NULL;
  crt_npu *n = calloc(1, sizeof *n);
  if (!n) return cov_error(COV_OUT_OF_MEMORY, NULL, "out of memory");
  n->n = a->n_steps;
  n->progs = calloc((size_t)a->n_steps + 1, sizeof *n->progs);
  cov_status st = n->progs ? load_acg(a, &n->acg) : cov_error(COV_OUT_OF_MEMORY, NULL, "out of memory");
  if (!st) st = cov_npu_sim_create(n->acg, &n->sim);
  if (!st) cov_npu_sim_set_max_insns(n->sim, o->max_npu_insns), cov_npu_sim_set_max_work(n->sim, o->max_npu_work);
  for (int i = 0; i < a->n_steps && !st; i++)
    if (a->steps[i].op == CRT_STEP_NPU) st = decode_step(a, i, &n->progs[i]);
  if (!st) st = check_dataflow(a, n->progs);
  /* every program verified now (loop counts, addresses), before any runs */
  for (int i = 0; i < a->n_steps && !st; i++)
    if (n->progs[i]) {
      char path[64];
      snprintf(path, sizeof path, "steps[%d]", i);
      st = cov_npu_sim_verify(n->sim, n->progs[i]);
      if (st) st = cov_status_annotate(st, "%s: %s: ", a->file, path);
    }
  if (st) {
    crt_npu_close(n);
    return st;
  }
  char e1[256];
  snprintf(device, device_size, "%s simulator of %s", crt_device_backend(CRT_DEV_NPU),
           common_escape(a->arch, e1, sizeof e1));
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
        char e1[256], e2[256];
        if ((uint64_t)cov_tensor_numel(&v) * cov_dtype_size(b->dtype) != b->bytes)
          return cov_error(COV_INVALID_INPUT, COV_AT(a->file, tn), "tensor '%s' has %" PRId64 " elements, buffer '%s' %" PRIu64 " bytes",
                           common_escape(tn, e1, sizeof e1), cov_tensor_numel(&v), common_escape(b->name, e2, sizeof e2), b->bytes);
        if (!is_out) {
          COV_RETURN_IF_ERROR(cov_npu_sim_write(n->sim, tn, &v));
        } else {
          cov_tensor got = {0};
          COV_RETURN_IF_ERROR(cov_npu_sim_read(n->sim, tn, &got));
          if (got.dtype != b->dtype || (uint64_t)cov_tensor_numel(&got) * cov_dtype_size(got.dtype) != b->bytes) {
            cov_tensor_release(&got);
            return cov_error(COV_INVALID_INPUT, COV_AT(a->file, tn), "output tensor '%s' does not fit buffer '%s'",
                             common_escape(tn, e1, sizeof e1), common_escape(b->name, e2, sizeof e2));
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

cov_status crt_npu_open(const crt_artifact *a, const crt_options *o, crt_npu **out, char *device, size_t device_size) {
  (void)device, (void)device_size, (void)o;
  *out = NULL;
  cov_loc loc = {a->file, 0, 0, NULL};
  return cov_error(COV_UNSUPPORTED, &loc,
                   "an %s artifact (%s) runs in the NPU simulator, which this standalone runtime does not "
                   "have; run it with the full build's covenant-run",
                   crt_device_backend(CRT_DEV_NPU), a->arch);
}
cov_status crt_npu_step(crt_npu *n, const crt_artifact *a, int step, const uint64_t *addr) {
  (void)n, (void)a, (void)step, (void)addr;
  return cov_error(COV_INTERNAL, COV_AT_FILE(a->file), "no NPU simulator in this build");
}
void crt_npu_close(crt_npu *n) { (void)n; }

#endif
