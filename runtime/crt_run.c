/* runtime/crt_run.c: running an artifact (crt_session, see crt.h).
 *
 * GPU artifacts run through the CUDA driver (nvptx) or HIP (amdgpu), both
 * dlopen'ed: at open the code is loaded, one allocation holds every weight
 * (uploaded once), one the arena of intermediates, and each input and
 * output its own; every buffer's device address is fixed then, so a run
 * is: upload the inputs, issue the steps (on one CUDA stream, no host
 * synchronisation between them), download the outputs. Intermediates never
 * leave the device. NPU artifacts run their programs in the simulator
 * (crt_npu.c, in the full build only), buffers in host memory. */
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "runtime/crt_hip.h"
#include "common/loc.h"
#include "common/text.h"
#include "runtime/crt_cuda.h"
#ifdef CRT_WITH_NPU
#include "covenant/acg.h"
#endif
#include "runtime/crt.h"
#include "runtime/crt_internal.h"
#include "runtime/crt_npu.h"
#include "runtime/crt_host.h"

enum { DEV_CUDA = CRT_DEV_CUDA, DEV_HIP = CRT_DEV_HIP, DEV_NPU = CRT_DEV_NPU };

struct crt_session {
  const crt_artifact *a;
  const crt_options *opts;
  int dev;
  crt_cuda *cu;
  crt_hip *hip;
  crt_npu *npu;
  crt_host *hs;       /* host steps and control (format version 5) */
  crt_cuda_stream *stream;
  crt_cuda_graph *graph;
  void **mods;        /* per module */
  void **fns;         /* per step (CUDA launches) */
  uint64_t *addr;     /* per buffer: device address (or host address for NPU) */
  uint64_t arena, weights, *io_mem; /* allocations; io_mem per buffer (inputs/outputs) */
  uint64_t tmaps;       /* the tensor maps of CRT_ARG_TMAP arguments, 128 bytes each (CUDA) */
  uint64_t *argv_store; /* 8 bytes per argument of every launch */
  void **argv;          /* pointers into argv_store */
  size_t *argv_first;   /* per step: index of its first argument */
  uint8_t *host;        /* NPU: one host block for every buffer; GPU: the host copies host steps work on */
  uint64_t *haddr;      /* GPU with host steps: per buffer, its host copy's address */
  crt_cuda_graph **seg_graphs; /* CUDA, timed with graphs: per first step of a straight segment, its graph */
  char device[200];
};

const char *crt_session_device(const crt_session *s) { return s->device; }

static cov_status loc_error(const crt_artifact *a, cov_code code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* One line whose names come from the artifact: escaped whole (common/text.h). */
static cov_status loc_error(const crt_artifact *a, cov_code code, const char *fmt, ...) {
  char msg[1200], shown[4096];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  cov_loc loc = {a->file, 0, 0, NULL};
  return cov_error(code, &loc, "%s", common_escape(msg, shown, sizeof shown));
}

/* ---- device memory behind one face ---- */

static cov_status d_alloc(crt_session *s, uint64_t bytes, uint64_t *out) {
  if (s->dev == DEV_CUDA) {
    crt_devptr p = 0;
    COV_RETURN_IF_ERROR(crt_cuda_alloc(s->cu, (size_t)bytes, &p));
    *out = p;
    return NULL;
  }
  void *p = NULL;
  COV_RETURN_IF_ERROR(crt_hip_alloc(s->hip, (size_t)(bytes ? bytes : 1), &p));
  *out = (uint64_t)(uintptr_t)p;
  return NULL;
}
static void d_free(crt_session *s, uint64_t p) {
  if (!p) return;
  if (s->dev == DEV_CUDA) cov_status_free(crt_cuda_free(s->cu, p));
  if (s->dev == DEV_HIP) crt_hip_free(s->hip, (void *)(uintptr_t)p);
}
static cov_status d_upload(crt_session *s, uint64_t dst, const void *src, size_t n) {
  if (!n) return NULL;
  if (s->dev == DEV_NPU) {
    memcpy((void *)(uintptr_t)dst, src, n);
    return NULL;
  }
  return s->dev == DEV_CUDA ? crt_cuda_upload(s->cu, dst, src, n)
                            : crt_hip_upload(s->hip, (void *)(uintptr_t)dst, src, n);
}
static cov_status d_download(crt_session *s, void *dst, uint64_t src, size_t n) {
  if (!n) return NULL;
  if (s->dev == DEV_NPU) {
    memcpy(dst, (const void *)(uintptr_t)src, n);
    return NULL;
  }
  return s->dev == DEV_CUDA ? crt_cuda_download(s->cu, dst, src, n)
                            : crt_hip_download(s->hip, dst, (const void *)(uintptr_t)src, n);
}

/* "sm_90a" -> 90, 'a' */
static int parse_sm(const char *arch, int *cc, int *specific) {
  int v = 0, n = 0;
  if (sscanf(arch, "sm_%d%n", &v, &n) != 1) return 0;
  *cc = v;
  *specific = arch[n] == 'a';
  return arch[n] == '\0' || (arch[n] == 'a' && arch[n + 1] == '\0');
}

static cov_status open_gpu(crt_session *s) {
  const crt_artifact *a = s->a;
  cov_status st;
  if (s->dev == DEV_CUDA) {
    int want = 0, specific = 0, major = 0, minor = 0;
    if (!parse_sm(a->arch, &want, &specific))
      return loc_error(a, COV_INVALID_INPUT, "arch '%s' is not an NVIDIA sm_XY[a]", a->arch);
    if ((st = crt_cuda_open(&s->cu))) return st;
    crt_cuda_capability(s->cu, &major, &minor);
    int have = major * 10 + minor;
    snprintf(s->device, sizeof s->device, "%s", crt_cuda_device_name(s->cu));
    /* sm_XYa code uses features of exactly that architecture (wgmma) */
    if (specific ? have != want : have < want)
      return loc_error(a, COV_UNSUPPORTED, "compiled for %s (%s); this device is %s", a->arch, a->target, s->device);
    if ((st = crt_cuda_stream_create(s->cu, &s->stream))) return st;
  } else {
    if ((st = crt_hip_open(&s->hip))) return st;
    snprintf(s->device, sizeof s->device, "%s", crt_hip_device_name(s->hip));
  }
  s->mods = calloc((size_t)a->n_modules + 1, sizeof *s->mods);
  s->fns = calloc((size_t)a->n_steps + 1, sizeof *s->fns);
  if (!s->mods || !s->fns) return cov_error(COV_OUT_OF_MEMORY, NULL, "out of memory");
  for (int i = 0; i < a->n_modules; i++) {
    const uint8_t *code = crt_blob_data(a, a->modules[i].blob);
    st = s->dev == DEV_CUDA ? crt_cuda_load(s->cu, (const char *)code, (crt_cuda_module **)&s->mods[i])
                            : crt_hip_load(s->hip, code, (crt_hip_module **)&s->mods[i]);
    if (st) {
      char e1[512], e2[512];
      return cov_status_annotate(st, "%s: module '%s' (compiled for %s): ", a->file,
                                 common_escape(a->modules[i].name, e1, sizeof e1), common_escape(a->arch, e2, sizeof e2));
    }
  }
  for (int i = 0; i < a->n_steps && s->dev == DEV_CUDA; i++) {
    const crt_step *x = &a->steps[i];
    if (x->op != CRT_STEP_LAUNCH) continue;
    if ((st = crt_cuda_function(s->cu, s->mods[x->module], x->kernel, x->shared_bytes, &s->fns[i])))
      return cov_status_annotate(st, "%s: step %d (%s): ", a->file, i, x->label);
  }
  /* memory: arena, weights (uploaded now, once), inputs and outputs */
  if ((st = d_alloc(s, a->arena_bytes, &s->arena)) || (st = d_alloc(s, a->weight_bytes, &s->weights)))
    return st;
  for (int i = 0; i < a->n_buffers; i++) {
    const crt_buffer *b = &a->buffers[i];
    switch (b->kind) {
      case CRT_BUF_INPUT:
      case CRT_BUF_OUTPUT:
        if ((st = d_alloc(s, b->bytes, &s->io_mem[i]))) return st;
        s->addr[i] = s->io_mem[i];
        break;
      case CRT_BUF_WEIGHT:
        s->addr[i] = s->weights + crt_weight_offset(a, i);
        if ((st = d_upload(s, s->addr[i], crt_blob_data(a, b->blob), (size_t)b->bytes))) return st;
        break;
      case CRT_BUF_INTERMEDIATE: s->addr[i] = s->arena + b->offset; break;
      case CRT_BUF_VIEW: s->addr[i] = s->addr[b->of] + b->offset; break;
    }
  }
  return NULL;
}

static cov_status open_npu(crt_session *s) {
  const crt_artifact *a = s->a;
  /* the ACG, the programs and the plan first: a bad artifact is refused
   * before its buffers are allocated */
  COV_RETURN_IF_ERROR(crt_npu_open(a, s->opts, &s->npu, s->device, sizeof s->device));
  /* host memory laid out like the device's: arena, weights, then io */
  uint64_t total = a->arena_bytes + a->weight_bytes, *io_off = s->io_mem;
  for (int i = 0; i < a->n_buffers; i++)
    if (a->buffers[i].kind == CRT_BUF_INPUT || a->buffers[i].kind == CRT_BUF_OUTPUT)
      io_off[i] = total, total += (a->buffers[i].bytes + CRT_ALIGN - 1) / CRT_ALIGN * CRT_ALIGN;
  s->host = calloc(1, (size_t)total + 1);
  if (!s->host) return cov_error(COV_OUT_OF_MEMORY, NULL, "out of memory (%" PRIu64 " bytes of buffers)", total);
  uint64_t base = (uint64_t)(uintptr_t)s->host;
  for (int i = 0; i < a->n_buffers; i++) {
    const crt_buffer *b = &a->buffers[i];
    switch (b->kind) {
      case CRT_BUF_INPUT:
      case CRT_BUF_OUTPUT: s->addr[i] = base + io_off[i]; break;
      case CRT_BUF_WEIGHT:
        s->addr[i] = base + a->arena_bytes + crt_weight_offset(a, i);
        memcpy((void *)(uintptr_t)s->addr[i], crt_blob_data(a, b->blob), (size_t)b->bytes);
        break;
      case CRT_BUF_INTERMEDIATE: s->addr[i] = base + b->offset; break;
      case CRT_BUF_VIEW: s->addr[i] = s->addr[b->of] + b->offset; break;
    }
  }
  for (int i = 0; i < a->n_buffers; i++) io_off[i] = 0; /* nothing to free on a device */
  return NULL;
}

/* The tensor maps of the launches' CRT_ARG_TMAP arguments, built by the
 * driver over the buffers' device addresses (fixed for the session) and
 * uploaded once, 128 bytes each in argument order; *n_out counts them. */
static cov_status build_tmaps(crt_session *s, size_t *n_out) {
  const crt_artifact *a = s->a;
  size_t n = 0;
  for (int i = 0; i < a->n_steps; i++)
    for (int j = 0; j < a->steps[i].n_args; j++) n += a->steps[i].args[j].kind == CRT_ARG_TMAP;
  *n_out = n;
  if (!n) return NULL;
  if (s->dev != DEV_CUDA)
    return loc_error(a, COV_UNSUPPORTED, "tensor-map arguments need the CUDA driver (backend %s), not %s",
                     crt_device_backend(CRT_DEV_CUDA), a->backend);
  uint8_t *host = calloc(n, 128);
  if (!host) return cov_error(COV_OUT_OF_MEMORY, NULL, "out of memory");
  cov_status st = NULL;
  size_t k = 0;
  for (int i = 0; i < a->n_steps && !st; i++)
    for (int j = 0; j < a->steps[i].n_args && !st; j++) {
      const crt_arg *x = &a->steps[i].args[j];
      if (x->kind != CRT_ARG_TMAP) continue;
      const crt_buffer *b = &a->buffers[x->buffer];
      st = crt_cuda_tensor_map_2d(s->cu, host + 128 * k++, s->addr[x->buffer] + x->offset, b->dtype == COV_BF16,
                                  x->rows, x->cols, x->box_rows, x->box_cols);
      if (st) st = cov_status_annotate(st, "%s: step %d (%s), argument %d: ", a->file, i, a->steps[i].label, j);
    }
  if (!st) st = d_alloc(s, 128 * n, &s->tmaps);
  if (!st) st = d_upload(s, s->tmaps, host, 128 * n);
  free(host);
  return st;
}

/* Launch arguments: 8 bytes of storage each, pointed to from argv. */
static cov_status build_args(crt_session *s) {
  const crt_artifact *a = s->a;
  size_t n = 0, n_tmaps = 0, t = 0;
  COV_RETURN_IF_ERROR(build_tmaps(s, &n_tmaps));
  for (int i = 0; i < a->n_steps; i++) n += (size_t)a->steps[i].n_args;
  s->argv_store = calloc(n + 1, sizeof *s->argv_store);
  s->argv = calloc(n + 1, sizeof *s->argv);
  s->argv_first = calloc((size_t)a->n_steps + 1, sizeof *s->argv_first);
  if (!s->argv_store || !s->argv || !s->argv_first) return cov_error(COV_OUT_OF_MEMORY, NULL, "out of memory");
  size_t k = 0;
  for (int i = 0; i < a->n_steps; i++) {
    s->argv_first[i] = k;
    for (int j = 0; j < a->steps[i].n_args; j++, k++) {
      const crt_arg *x = &a->steps[i].args[j];
      uint64_t *slot = &s->argv_store[k];
      if (x->kind == CRT_ARG_BUFFER) {
        *slot = s->addr[x->buffer] + x->offset;
      } else if (x->kind == CRT_ARG_TMAP) {
        *slot = s->tmaps + 128 * t++;
      } else if (x->kind == CRT_ARG_I32) {
        int32_t v = (int32_t)x->i;
        memcpy(slot, &v, 4);
      } else if (x->kind == CRT_ARG_I64) {
        memcpy(slot, &x->i, 8);
      } else {
        memcpy(slot, &x->f, 4);
      }
      s->argv[k] = slot;
    }
  }
  return NULL;
}

/* A GPU artifact's target against its backend: a shipped target of that
 * name (looked up by name only, never as a path) must be an ACG of the
 * backend. A name that is no shipped target (a user's ACG) passes: the
 * device check (arch against the device) still holds. The standalone
 * runtime has no ACGs and checks the device only. NPU artifacts are
 * checked against their ACG when it is loaded (crt_npu.c). */
static cov_status check_target(const crt_artifact *a) {
#ifdef CRT_WITH_NPU
  cov_acg *g = NULL;
  cov_status st = cov_acg_load_named(a->target, &g);
  if (st) {
    cov_status_free(st); /* no shipped target of that name */
    return NULL;
  }
  const char *backend = cov_acg_backend(g);
  if (!backend || strcmp(backend, a->backend))
    st = loc_error(a, COV_INVALID_INPUT, "the artifact's target %s is an ACG of backend %s, not of its backend %s",
                   a->target, backend ? backend : "(none)", a->backend);
  cov_acg_free(g);
  return st;
#else
  (void)a;
  return NULL;
#endif
}

/* Host steps and control read and write buffers in host memory: the
 * npu-sim device's own. On a GPU each buffer gets a host copy laid out
 * like the device's (arena, weights, then inputs and outputs), which a
 * host step works on (crt_host.c, device-neutral): the buffers it reads
 * are downloaded after the device finished the segment before it, the
 * ones it writes uploaded after it. */
static cov_status open_host(crt_session *s) {
  const crt_artifact *a = s->a;
  int any = 0;
  for (int i = 0; i < a->n_steps; i++) any |= a->steps[i].op >= CRT_STEP_COPY;
  if (s->dev != DEV_NPU && any) {
    uint64_t total = a->arena_bytes + a->weight_bytes, *off = calloc((size_t)a->n_buffers + 1, sizeof *off);
    s->haddr = calloc((size_t)a->n_buffers + 1, sizeof *s->haddr);
    if (!off || !s->haddr) {
      free(off);
      return cov_error(COV_OUT_OF_MEMORY, NULL, "out of memory");
    }
    for (int i = 0; i < a->n_buffers; i++)
      if (a->buffers[i].kind == CRT_BUF_INPUT || a->buffers[i].kind == CRT_BUF_OUTPUT)
        off[i] = total, total += (a->buffers[i].bytes + CRT_ALIGN - 1) / CRT_ALIGN * CRT_ALIGN;
    s->host = total < CRT_MAX_BYTES ? calloc(1, (size_t)total + 1) : NULL;
    uint64_t base = (uint64_t)(uintptr_t)s->host;
    for (int i = 0; s->host && i < a->n_buffers; i++) {
      const crt_buffer *b = &a->buffers[i];
      s->haddr[i] = b->kind == CRT_BUF_INPUT || b->kind == CRT_BUF_OUTPUT ? base + off[i]
                    : b->kind == CRT_BUF_WEIGHT                           ? base + a->arena_bytes + crt_weight_offset(a, i)
                    : b->kind == CRT_BUF_VIEW                             ? s->haddr[b->of] + b->offset
                                                                          : base + b->offset;
    }
    free(off);
    if (!s->host) return cov_error(COV_OUT_OF_MEMORY, NULL, "out of memory (%" PRIu64 " bytes of host copies)", total);
  }
  COV_RETURN_IF_ERROR(crt_host_open(a, &s->hs));
  crt_host_set_max_dynamic(s->hs, s->opts->max_dynamic_elems);
  return NULL;
}

/* Buffer b between the device and its host copy (b < 0: none). */
static cov_status host_xfer(crt_session *s, int b, int up) {
  if (b < 0) return NULL;
  size_t n = (size_t)s->a->buffers[b].bytes;
  void *h = (void *)(uintptr_t)s->haddr[b];
  return up ? d_upload(s, s->addr[b], h, n) : d_download(s, h, s->addr[b], n);
}

/* The buffers host step i reads (up == 0: downloaded before it runs)
 * or writes (up == 1: uploaded after it), as the executor lists them. */
static cov_status host_io(crt_session *s, int i, int up) {
  int n_read = 0, n = crt_host_step_buffers(s->a, i, NULL, 0, &n_read);
  int *bufs = malloc(((size_t)n + 1) * sizeof *bufs);
  if (!bufs) return cov_error(COV_OUT_OF_MEMORY, NULL, "out of memory");
  crt_host_step_buffers(s->a, i, bufs, n, &n_read);
  cov_status st = NULL;
  for (int k = up ? n_read : 0; k < (up ? n : n_read) && !st; k++) st = host_xfer(s, bufs[k], up);
  free(bufs);
  return st;
}

/* Host step i of a GPU artifact: the segment before it finished, what it
 * reads brought to the host, run there, what it writes sent back. */
static cov_status device_host_step(crt_session *s, int i, int *next) {
  cov_status st = s->dev == DEV_CUDA ? crt_cuda_stream_sync(s->cu, s->stream) : NULL;
  if (!st) st = host_io(s, i, 0);
  if (!st) st = crt_host_step(s->hs, s->a, i, s->haddr, next);
  if (!st) st = host_io(s, i, 1);
  return st;
}

cov_status crt_session_open(const crt_artifact *a, const crt_options *opts, crt_session **out) {
  *out = NULL;
  static const crt_options none;
  if (!opts) opts = &none;
  /* checks that need no device come first */
  if (opts->expect_target && strcmp(opts->expect_target, a->target))
    return loc_error(a, COV_INVALID_ARGUMENT, "the artifact is for target %s, not %s", a->target,
                     opts->expect_target);
  if (crt_device_of(a->backend) != CRT_DEV_NPU) COV_RETURN_IF_ERROR(check_target(a));
  COV_RETURN_IF_ERROR(crt_host_check(a));
  if (a->n_missing) {
    char list[1024] = "";
    size_t k = 0;
    for (int i = 0; i < a->n_missing && k < sizeof list; i++)
      k += (size_t)snprintf(list + k, sizeof list - k, "%s%s", i ? "; " : "", a->missing[i]);
    return loc_error(a, COV_UNSUPPORTED,
                     "the artifact is incomplete: %d layer group(s) were not compiled for %s, so it cannot run: %s",
                     a->n_missing, a->target, list);
  }
  crt_session *s = calloc(1, sizeof *s);
  if (!s) return cov_error(COV_OUT_OF_MEMORY, NULL, "out of memory");
  s->a = a, s->opts = opts;
  crt_device dev = crt_device_of(a->backend); /* one the reader accepted */
  s->dev = dev == CRT_DEV_NONE ? DEV_NPU : (int)dev;
  s->addr = calloc((size_t)a->n_buffers + 1, sizeof *s->addr);
  s->io_mem = calloc((size_t)a->n_buffers + 1, sizeof *s->io_mem);
  cov_status st = !s->addr || !s->io_mem ? cov_error(COV_OUT_OF_MEMORY, NULL, "out of memory")
                  : s->dev == DEV_NPU    ? open_npu(s)
                                         : open_gpu(s);
  if (!st && a->version >= CRT_FORMAT_VERSION_CONTROL) st = open_host(s);
  if (!st) st = build_args(s);
  if (st) {
    crt_session_close(s);
    char e1[512];
    return cov_status_annotate(st, "cannot run %s on %s: ", a->file, common_escape(a->target, e1, sizeof e1));
  }
  *out = s;
  return NULL;
}

void crt_session_close(crt_session *s) {
  if (!s) return;
  const crt_artifact *a = s->a;
  if (s->dev != DEV_NPU && (s->cu || s->hip)) {
    crt_cuda_graph_destroy(s->cu, s->graph);
    for (int i = 0; s->seg_graphs && i < a->n_steps; i++) crt_cuda_graph_destroy(s->cu, s->seg_graphs[i]);
    for (int i = 0; s->io_mem && i < a->n_buffers; i++) d_free(s, s->io_mem[i]);
    d_free(s, s->arena), d_free(s, s->weights), d_free(s, s->tmaps);
    for (int i = 0; s->mods && i < a->n_modules; i++)
      if (s->mods[i]) {
        if (s->dev == DEV_CUDA) crt_cuda_unload(s->cu, s->mods[i]);
        else crt_hip_unload(s->hip, s->mods[i]);
      }
    if (s->stream) crt_cuda_stream_destroy(s->cu, s->stream);
  }
  crt_npu_close(s->npu);
  crt_host_close(s->hs);
  crt_cuda_close(s->cu);
  crt_hip_close(s->hip);
  free(s->mods), free(s->fns), free(s->addr), free(s->io_mem), free(s->argv_store), free(s->argv);
  free(s->argv_first), free(s->host), free(s->haddr), free(s->seg_graphs);
  free(s);
}

/* Device step i (a launch, a fill, an NPU program); on CUDA without
 * waiting. */
static cov_status issue_one(crt_session *s, int i) {
  const crt_artifact *a = s->a;
  const crt_step *x = &a->steps[i];
  cov_status st = NULL;
  if (x->op == CRT_STEP_LAUNCH) {
    void **args = &s->argv[s->argv_first[i]];
    st = s->dev == DEV_CUDA
             ? crt_cuda_launch_async(s->cu, s->fns[i], x->grid, x->block, x->shared_bytes, s->stream, args)
             : crt_hip_launch(s->hip, s->mods[x->module], x->kernel, x->grid, x->block, x->shared_bytes, args, NULL);
  } else if (x->op == CRT_STEP_FILL) {
    uint64_t p = s->addr[x->buffer] + x->offset;
    if (s->dev == DEV_CUDA) {
      st = crt_cuda_memset_async(s->cu, p, (unsigned char)x->value, (size_t)x->bytes, s->stream);
    } else if (s->dev == DEV_NPU) {
      memset((void *)(uintptr_t)p, (int)x->value, (size_t)x->bytes);
    } else {
      uint8_t *tmp = malloc((size_t)x->bytes + 1);
      if (!tmp) return cov_error(COV_OUT_OF_MEMORY, NULL, "out of memory");
      memset(tmp, (int)x->value, (size_t)x->bytes);
      st = d_upload(s, p, tmp, (size_t)x->bytes);
      free(tmp);
    }
  } else {
    st = crt_npu_step(s->npu, a, i, s->addr);
  }
  return st ? cov_status_annotate(st, "%s: step %d (%s, group %d): ", a->file, i, x->label, x->group) : NULL;
}

/* The device steps from i to the next host step (*end): one straight
 * segment, replayed from its CUDA graph where the session times with
 * graphs (captured the first time it runs). */
static cov_status issue_segment(crt_session *s, int i, int *end) {
  const crt_artifact *a = s->a;
  int j = i;
  while (j < a->n_steps && a->steps[j].op < CRT_STEP_COPY) j++;
  *end = j;
  if (!s->seg_graphs) {
    for (int k = i; k < j; k++) COV_RETURN_IF_ERROR(issue_one(s, k));
    return NULL;
  }
  if (!s->seg_graphs[i]) {
    COV_RETURN_IF_ERROR(crt_cuda_capture_begin(s->cu, s->stream));
    cov_status ist = NULL;
    for (int k = i; k < j && !ist; k++) ist = issue_one(s, k);
    cov_status est = crt_cuda_capture_end(s->cu, s->stream, &s->seg_graphs[i]);
    if (ist) cov_status_free(est);
    if (ist || est) return cov_status_annotate(ist ? ist : est, "capturing steps %d to %d in a CUDA graph: ", i, j - 1);
  }
  return crt_cuda_graph_launch(s->cu, s->seg_graphs[i], s->stream);
}

/* A profiled segment (crt_session_profile): each device step from i to
 * the next host step (*end) issued once as the run has it, then
 * CRT_PROFILE_REPEATS times back to back between two events (so its time
 * is the kernel's, not a wait's), the mean added to step_ms[k]. A step
 * repeated reads what it wrote where it works in place: the values change,
 * not the work. */
enum { CRT_PROFILE_REPEATS = 10 };
static cov_status profile_segment(crt_session *s, int i, int *end, double *step_ms) {
  int j = i;
  while (j < s->a->n_steps && s->a->steps[j].op < CRT_STEP_COPY) j++;
  *end = j;
  for (int k = i; k < j; k++) {
    void *start = NULL;
    float t = 0;
    cov_status st = issue_one(s, k);
    if (!st) st = crt_cuda_mark(s->cu, s->stream, &start);
    for (int r = 0; r < CRT_PROFILE_REPEATS && !st; r++) st = issue_one(s, k);
    cov_status et = start ? crt_cuda_elapsed(s->cu, s->stream, start, &t) : NULL;
    if (st) {
      cov_status_free(et);
      return st;
    }
    COV_RETURN_IF_ERROR(et);
    step_ms[k] += t / CRT_PROFILE_REPEATS;
  }
  return NULL;
}

/* Issues every step: straight segments of device steps, on CUDA without
 * waiting (the caller synchronises), and host steps between them; with
 * step_ms, each device step timed alone (profile_segment). */
static cov_status issue_steps(crt_session *s, double *step_ms) {
  const crt_artifact *a = s->a;
  cov_status st = NULL;
  int64_t budget = CRT_MAX_RUN_STEPS;
  for (int i = 0, next = 1; i < a->n_steps && !st; i = next) {
    const crt_step *x = &a->steps[i];
    if (x->op < CRT_STEP_COPY) {
      st = step_ms ? profile_segment(s, i, &next, step_ms) : issue_segment(s, i, &next);
      budget -= next - i;
    } else {
      st = s->dev == DEV_NPU ? crt_host_step(s->hs, a, i, s->addr, &next) : device_host_step(s, i, &next);
      if (st) st = cov_status_annotate(st, "%s: step %d (%s, group %d): ", a->file, i, x->label, x->group);
      budget--;
    }
    if (!st && budget < 0)
      return loc_error(a, COV_OUT_OF_RANGE, "a run would execute more than %" PRId64 " steps (loops)",
                       (int64_t)CRT_MAX_RUN_STEPS);
  }
  return st;
}
static cov_status issue(crt_session *s) { return issue_steps(s, NULL); }

static int same_shape(const cov_tensor *t, const crt_io *io) {
  if (t->rank != io->rank) return 0;
  for (int d = 0; d < t->rank; d++)
    if (t->shape[d] != io->shape[d]) return 0;
  return 1;
}

/* Host <-> buffer conversion: same dtype (a copy), or f32 <-> f16/bf16. */
static void convert(const void *src, cov_dtype from, void *dst, cov_dtype to, size_t n) {
  if (from == to) {
    memcpy(dst, src, n * cov_dtype_size(from));
  } else if (from == COV_F32) {
    const float *f = src;
    uint16_t *h = dst;
    for (size_t i = 0; i < n; i++) h[i] = to == COV_F16 ? cov_f32_to_f16(f[i]) : cov_f32_to_bf16(f[i]);
  } else {
    const uint16_t *h = src;
    float *f = dst;
    for (size_t i = 0; i < n; i++) f[i] = from == COV_F16 ? cov_f16_to_f32(h[i]) : cov_bf16_to_f32(h[i]);
  }
}

static void shape_str(int rank, const int64_t *shape, char *buf, size_t n) {
  size_t k = (size_t)snprintf(buf, n, "[");
  for (int d = 0; d < rank && k < n; d++) k += (size_t)snprintf(buf + k, n - k, "%s%" PRId64, d ? ", " : "", shape[d]);
  if (k < n) snprintf(buf + k, n - k, "]");
}

/* An input of another dtype or shape than compiled; where the model left
 * the differing dims symbolic, how to compile for the shape given. */
static cov_status shape_error(const crt_artifact *a, const crt_io *io, const cov_tensor *t) {
  char want[128], got[128], dims[128] = "", hint[512] = "";
  shape_str(io->rank, io->shape, want, sizeof want);
  shape_str(t->rank, t->shape, got, sizeof got);
  int only_symbolic = t->dtype == io->dtype && t->rank == io->rank && io->symbolic;
  size_t k = 0;
  for (int d = 0; d < io->rank && only_symbolic; d++) {
    if (t->shape[d] == io->shape[d]) continue;
    only_symbolic = (io->symbolic >> d & 1u) != 0;
    k += (size_t)snprintf(dims + k, k < sizeof dims ? sizeof dims - k : 0, "%s%d", k ? ", " : "", d);
  }
  if (only_symbolic) {
    char at[128] = "";
    size_t h = 0;
    for (int d = 0; d < io->rank; d++)
      if (t->shape[d] != io->shape[d])
        h += (size_t)snprintf(at + h, h < sizeof at ? sizeof at - h : 0, "%s%" PRId64, h ? ", " : "", io->shape[d]);
    int many = strchr(dims, ',') != NULL;
    h = (size_t)snprintf(hint, sizeof hint,
                         "; the model leaves dim%s %s symbolic and this artifact was compiled at %s (covenant "
                         "compile --shape %s=",
                         many ? "s" : "", dims, at, io->name);
    for (int d = 0; d < t->rank && h < sizeof hint; d++)
      h += (size_t)snprintf(hint + h, sizeof hint - h, "%s%" PRId64, d ? "x" : "", t->shape[d]);
    if (h < sizeof hint) snprintf(hint + h, sizeof hint - h, " compiles it for this shape)");
  }
  return loc_error(a, COV_INVALID_ARGUMENT, "input '%s' must be %s%s, not %s%s%s", io->name, cov_dtype_name(io->dtype),
                   want, cov_dtype_name(t->dtype), got, hint);
}

cov_status crt_check_inputs(const crt_artifact *a, const cov_tensor *inputs, size_t n_inputs) {
  if (n_inputs != (size_t)a->n_inputs)
    return loc_error(a, COV_INVALID_ARGUMENT, "the model takes %d input(s), not %zu", a->n_inputs, n_inputs);
  for (int k = 0; k < a->n_inputs; k++)
    if (inputs[k].dtype != a->inputs[k].dtype || !same_shape(&inputs[k], &a->inputs[k]))
      return shape_error(a, &a->inputs[k], &inputs[k]);
  return NULL;
}

cov_status crt_session_run(crt_session *s, const cov_tensor *inputs, size_t n_inputs, cov_tensor *outputs,
                           size_t n_outputs) {
  const crt_artifact *a = s->a;
  if (n_inputs != (size_t)a->n_inputs || n_outputs != (size_t)a->n_outputs)
    return loc_error(a, COV_INVALID_ARGUMENT, "the model takes %d input(s) and gives %d output(s), not %zu and %zu",
                     a->n_inputs, a->n_outputs, n_inputs, n_outputs);
  COV_RETURN_IF_ERROR(crt_check_inputs(a, inputs, n_inputs));
  cov_status st = NULL;
  for (int k = 0; k < a->n_inputs && !st; k++) {
    const crt_io *io = &a->inputs[k];
    const crt_buffer *b = &a->buffers[io->buffer];
    size_t n = (size_t)(b->bytes / cov_dtype_size(b->dtype));
    void *tmp = malloc((size_t)b->bytes + 1);
    if (!tmp) return cov_error(COV_OUT_OF_MEMORY, NULL, "out of memory");
    convert(inputs[k].data, io->dtype, tmp, b->dtype, n);
    st = d_upload(s, s->addr[io->buffer], tmp, (size_t)b->bytes);
    free(tmp);
  }
  if (!st) st = issue(s);
  if (!st && s->dev == DEV_CUDA) st = crt_cuda_stream_sync(s->cu, s->stream);
  for (int k = 0; k < a->n_outputs && !st; k++) {
    const crt_io *io = &a->outputs[k];
    const crt_buffer *b = &a->buffers[io->buffer];
    int rank = io->rank;
    int64_t shape[COV_MAX_RANK];
    memcpy(shape, io->shape, sizeof shape);
    if (b->dynamic) crt_host_shape(s->hs, a, io->buffer, &rank, shape); /* the part step's */
    cov_tensor t = {.dtype = b->dtype, .rank = rank};
    memcpy(t.shape, shape, sizeof shape);
    size_t n = (size_t)cov_tensor_numel(&t), bytes = n * cov_dtype_size(b->dtype);
    void *tmp = malloc(bytes + 1);
    if (!tmp) return cov_error(COV_OUT_OF_MEMORY, NULL, "out of memory");
    st = d_download(s, tmp, s->addr[io->buffer], bytes);
    if (!st) st = cov_tensor_alloc(&outputs[k], io->dtype, rank, shape);
    if (!st) convert(tmp, b->dtype, outputs[k].data, io->dtype, n);
    free(tmp);
  }
  if (st) {
    for (int k = 0; k < a->n_outputs; k++) cov_tensor_release(&outputs[k]);
    return cov_status_annotate(st, "running %s on %s: ", a->file, s->device);
  }
  return NULL;
}

static double now_ms(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec * 1e3 + (double)t.tv_nsec / 1e6;
}

cov_status crt_session_time(crt_session *s, int warmup, int iters, double *ms, const char **how) {
  if (iters < 1 || warmup < 0)
    return cov_error(COV_INVALID_ARGUMENT, COV_AT_CALL("crt_session_time"), "timing needs at least one iteration");
  cov_status st = NULL;
  if (s->dev != DEV_CUDA) {
    *how = s->dev == DEV_NPU ? "host wall clock of the simulator" : "host wall clock, a wait after each launch";
    for (int i = 0; i < warmup && !st; i++) st = issue(s);
    double t0 = now_ms();
    for (int i = 0; i < iters && !st; i++) st = issue(s);
    *ms = (now_ms() - t0) / iters;
    return st;
  }
  int graph = !s->opts->no_graph;
  *how = graph ? "CUDA events around replays of one CUDA graph of every step" : "CUDA events around plain launches";
  if (graph && s->haddr) { /* host steps: each straight segment its own graph, host steps between */
    *how = "CUDA events around runs replaying one CUDA graph per straight segment, host steps between them";
    if (!s->seg_graphs && !(s->seg_graphs = calloc((size_t)s->a->n_steps + 1, sizeof *s->seg_graphs)))
      return cov_error(COV_OUT_OF_MEMORY, NULL, "out of memory");
    graph = 0; /* issue() replays the segments' graphs */
  }
  if (graph && !s->graph) {
    /* captured once: the same launches, replayed without host work */
    st = crt_cuda_capture_begin(s->cu, s->stream);
    if (!st) {
      cov_status ist = issue(s);
      cov_status est = crt_cuda_capture_end(s->cu, s->stream, &s->graph);
      st = ist ? ist : est;
      if (ist) cov_status_free(est);
    }
    if (st) return cov_status_annotate(st, "capturing %s in a CUDA graph: ", s->a->file);
  }
  for (int i = 0; i < warmup && !st; i++)
    st = graph ? crt_cuda_graph_launch(s->cu, s->graph, s->stream) : issue(s);
  if (!st) st = crt_cuda_stream_sync(s->cu, s->stream);
  void *start = NULL;
  if (!st) st = crt_cuda_mark(s->cu, s->stream, &start);
  for (int i = 0; i < iters && !st; i++)
    st = graph ? crt_cuda_graph_launch(s->cu, s->graph, s->stream) : issue(s);
  float t = 0;
  if (start) {
    cov_status et = crt_cuda_elapsed(s->cu, s->stream, start, &t);
    if (!st) st = et;
    else cov_status_free(et);
  }
  *ms = (double)t / iters;
  return st;
}

cov_status crt_session_profile(crt_session *s, int iters, double *step_ms) {
  if (iters < 1)
    return cov_error(COV_INVALID_ARGUMENT, COV_AT_CALL("crt_session_profile"), "profiling needs at least one run");
  if (s->dev != DEV_CUDA)
    return loc_error(s->a, COV_UNSUPPORTED, "per-step profiles need the CUDA device (this session runs on %s)",
                     s->device);
  for (int i = 0; i < s->a->n_steps; i++) step_ms[i] = 0;
  COV_RETURN_IF_ERROR(issue_steps(s, step_ms)); /* warm-up, discarded */
  for (int i = 0; i < s->a->n_steps; i++) step_ms[i] = 0;
  for (int k = 0; k < iters; k++) COV_RETURN_IF_ERROR(issue_steps(s, step_ms));
  for (int i = 0; i < s->a->n_steps; i++) step_ms[i] /= iters;
  return NULL;
}
