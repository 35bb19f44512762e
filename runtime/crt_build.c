/* runtime/crt_build.c: building artifacts (crt_builder, see crt.h): items
 * are collected in order, intermediates are placed in the arena by their
 * lifetimes, and the file is written as header + manifest + data.
 * size: one builder for every item of the format, with the manifest writer
 * that must write each as the reader (crt_artifact.c) reads it. */
#include <inttypes.h>
#include <stdarg.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/c_locale.h"
#include "runtime/crt.h"
#include "common/loc.h"
#include "common/fileio.h"
#include "covenant/model.h" /* COV_MODEL_MAX_FILE_BYTES */

typedef struct bblob {
  char *name;
  uint8_t *data;
  size_t bytes;
  int shared; /* its bytes are an earlier blob's (place_blobs) */
} bblob;

struct crt_builder {
  cov_status err;
  char *target, *backend, *arch, *model;
  bblob *blobs;
  int n_blobs, cap_blobs;
  crt_module *modules;
  int n_modules, cap_modules;
  crt_buffer *buffers;
  int n_buffers, cap_buffers;
  crt_io *ios[2];
  int n_ios[2], cap_ios[2];
  crt_step *steps;
  int n_steps, cap_steps;
  char **missing;
  int n_missing, cap_missing;
  unsigned version; /* the format the items need (tensor maps: 2, an ACG: 3), else 1 */
  int acg_blob;     /* the embedded ACG's blob, or -1 */
  int codelets_blob; /* the codelets host steps call (version 5), or -1 */
  int onnx_blob;     /* the model part steps run (version 5), or -1 */
};

static char *dup_str(crt_builder *b, const char *s) {
  if (!s) s = "";
  size_t n = strlen(s) + 1;
  char *d = malloc(n);
  if (!d) {
    if (!b->err) b->err = cov_error(COV_OUT_OF_MEMORY, NULL, "out of memory building an artifact");
    return NULL;
  }
  memcpy(d, s, n);
  return d;
}

/* Grows *arr (element size es) to hold one more; returns the new slot's index or -1. */
static int grow(crt_builder *b, void **arr, int *n, int *cap, size_t es) {
  if (b->err) return -1;
  if (*n >= CRT_MAX_ITEMS) {
    b->err = cov_error(COV_OUT_OF_RANGE, COV_AT_FILE(b->model), "an artifact holds at most %d items of a kind", CRT_MAX_ITEMS);
    return -1;
  }
  if (*n == *cap) {
    int nc = *cap ? *cap * 2 : 16;
    void *na = realloc(*arr, (size_t)nc * es);
    if (!na) {
      b->err = cov_error(COV_OUT_OF_MEMORY, NULL, "out of memory building an artifact");
      return -1;
    }
    *arr = na, *cap = nc;
  }
  memset((char *)*arr + (size_t)*n * es, 0, es);
  return (*n)++;
}
#define GROW(b, field, count, cap) grow((b), (void **)&(b)->field, &(b)->count, &(b)->cap, sizeof *(b)->field)

static void fail(crt_builder *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void fail(crt_builder *b, const char *fmt, ...) {
  if (b->err) return;
  char msg[512];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  b->err = cov_error(COV_INVALID_ARGUMENT, COV_AT_FILE(b->model), "artifact: %s", msg);
}

cov_status crt_builder_new(const char *target, const char *backend, const char *arch, const char *model,
                           crt_builder **out) {
  *out = NULL;
  crt_builder *b = calloc(1, sizeof *b);
  if (!b) return cov_error(COV_OUT_OF_MEMORY, NULL, "out of memory");
  /* the model's file name without directories: the same bytes wherever it is compiled from */
  const char *slash = model ? strrchr(model, '/') : NULL;
  b->target = dup_str(b, target);
  b->backend = dup_str(b, backend);
  b->arch = dup_str(b, arch);
  b->model = dup_str(b, slash ? slash + 1 : model);
  b->version = CRT_FORMAT_VERSION_MIN;
  b->acg_blob = -1;
  b->codelets_blob = -1;
  b->onnx_blob = -1;
  if (b->err) {
    cov_status st = b->err;
    b->err = NULL;
    crt_builder_free(b);
    return st;
  }
  *out = b;
  return NULL;
}

void crt_builder_free(crt_builder *b) {
  if (!b) return;
  for (int i = 0; i < b->n_blobs; i++) free(b->blobs[i].name), free(b->blobs[i].data);
  for (int i = 0; i < b->n_modules; i++) free((char *)b->modules[i].name), free((char *)b->modules[i].format);
  for (int i = 0; i < b->n_buffers; i++) free((char *)b->buffers[i].name);
  for (int k = 0; k < 2; k++) {
    for (int i = 0; i < b->n_ios[k]; i++) free((char *)b->ios[k][i].name);
    free(b->ios[k]);
  }
  for (int i = 0; i < b->n_steps; i++) {
    crt_step *s = &b->steps[i];
    free((char *)s->label), free((char *)s->kernel), free(s->args);
    for (int k = 0; k < s->n_binds; k++) free((char *)s->binds[k].tensor);
    free(s->binds);
    for (int k = 0; k < s->n_attrs; k++) free((char *)s->attrs[k].name);
    free(s->attrs), free(s->refs), free(s->views), free((char *)s->codelet);
    for (int k = 0; s->values && k < s->n_refs; k++) free((char *)s->values[k]);
    free(s->values);
  }
  for (int i = 0; i < b->n_missing; i++) free(b->missing[i]);
  free(b->blobs), free(b->modules), free(b->buffers), free(b->steps), free(b->missing);
  free(b->target), free(b->backend), free(b->arch), free(b->model);
  cov_status_free(b->err);
  free(b);
}

void crt_builder_fail(crt_builder *b, cov_status st) {
  if (!st) return;
  if (b->err)
    cov_status_free(st);
  else
    b->err = st;
}
cov_status crt_builder_status(const crt_builder *b) { return b->err; }
int crt_builder_num_buffers(const crt_builder *b) { return b->n_buffers; }

int crt_add_blob(crt_builder *b, const char *name, const void *data, size_t bytes) {
  int i = GROW(b, blobs, n_blobs, cap_blobs);
  if (i < 0) return -1;
  bblob *x = &b->blobs[i];
  x->name = dup_str(b, name);
  x->data = malloc(bytes ? bytes : 1);
  x->bytes = bytes;
  if (!x->data) {
    fail(b, "out of memory for blob '%s' (%zu bytes)", name, bytes);
    return -1;
  }
  if (bytes) memcpy(x->data, data, bytes);
  return b->err ? -1 : i;
}

int crt_add_module(crt_builder *b, const char *name, const char *format, const void *code, size_t bytes) {
  int blob = crt_add_blob(b, name, code, bytes);
  int i = blob < 0 ? -1 : GROW(b, modules, n_modules, cap_modules);
  if (i < 0) return -1;
  b->modules[i].name = dup_str(b, name);
  b->modules[i].format = dup_str(b, format);
  b->modules[i].blob = blob;
  return b->err ? -1 : i;
}

static int check_shape(crt_builder *b, const char *name, cov_dtype dtype, int rank, const int64_t *shape,
                       uint64_t bytes) {
  if (rank < 0 || rank > COV_MAX_RANK || (rank && !shape) || cov_dtype_size(dtype) == 0) {
    fail(b, "buffer '%s': bad dtype or rank", name);
    return 0;
  }
  uint64_t n = 1;
  for (int d = 0; d < rank; d++) {
    if (shape[d] < 0) {
      fail(b, "buffer '%s': negative dimension", name);
      return 0;
    }
    n *= (uint64_t)shape[d];
  }
  if (n * cov_dtype_size(dtype) != bytes) {
    fail(b, "buffer '%s': %" PRIu64 " %s elements are not %" PRIu64 " bytes", name, n, cov_dtype_name(dtype), bytes);
    return 0;
  }
  return 1;
}

static int add_buf(crt_builder *b, const char *name, crt_buf_kind kind, cov_dtype dtype, int rank,
                   const int64_t *shape, uint64_t bytes) {
  if (b->err || !check_shape(b, name, dtype, rank, shape, bytes)) return -1;
  int i = GROW(b, buffers, n_buffers, cap_buffers);
  if (i < 0) return -1;
  crt_buffer *x = &b->buffers[i];
  x->name = dup_str(b, name);
  x->kind = kind, x->dtype = dtype, x->rank = rank, x->bytes = bytes;
  if (rank) memcpy(x->shape, shape, (size_t)rank * sizeof *shape);
  x->blob = x->of = x->first = x->last = -1;
  return b->err ? -1 : i;
}

int crt_add_buffer(crt_builder *b, const char *name, crt_buf_kind kind, cov_dtype dtype, int rank,
                   const int64_t *shape, uint64_t bytes) {
  if (kind == CRT_BUF_WEIGHT || kind == CRT_BUF_VIEW) {
    fail(b, "buffer '%s': weights and views have their own calls", name);
    return -1;
  }
  return add_buf(b, name, kind, dtype, rank, shape, bytes);
}

int crt_add_weight(crt_builder *b, const char *name, cov_dtype dtype, int rank, const int64_t *shape,
                   const void *data, uint64_t bytes) {
  int i = add_buf(b, name, CRT_BUF_WEIGHT, dtype, rank, shape, bytes);
  int blob = i < 0 ? -1 : crt_add_blob(b, name, data, (size_t)bytes);
  if (blob < 0) return -1;
  b->buffers[i].blob = blob;
  return i;
}

int crt_add_view(crt_builder *b, const char *name, int of, uint64_t offset, cov_dtype dtype, int rank,
                 const int64_t *shape, uint64_t bytes) {
  if (!b->err && (of < 0 || of >= b->n_buffers || offset > b->buffers[of].bytes ||
                  bytes > b->buffers[of].bytes - offset)) {
    fail(b, "view '%s': outside buffer %d", name, of);
    return -1;
  }
  int i = add_buf(b, name, CRT_BUF_VIEW, dtype, rank, shape, bytes);
  if (i < 0) return -1;
  b->buffers[i].of = of, b->buffers[i].offset = offset;
  return i;
}

static int add_io(crt_builder *b, int out, const char *name, cov_dtype dtype, int rank, const int64_t *shape,
                  int buffer) {
  if (b->err) return -1;
  if (buffer < 0 || buffer >= b->n_buffers || b->buffers[buffer].kind != (out ? CRT_BUF_OUTPUT : CRT_BUF_INPUT)) {
    fail(b, "%s '%s': buffer %d is not an %s buffer", out ? "output" : "input", name, buffer, out ? "output" : "input");
    return -1;
  }
  if (rank < 0 || rank > COV_MAX_RANK) {
    fail(b, "'%s': bad rank", name);
    return -1;
  }
  int i = grow(b, (void **)&b->ios[out], &b->n_ios[out], &b->cap_ios[out], sizeof **b->ios);
  if (i < 0) return -1;
  crt_io *x = &b->ios[out][i];
  x->name = dup_str(b, name);
  x->dtype = dtype, x->rank = rank, x->buffer = buffer;
  if (rank) memcpy(x->shape, shape, (size_t)rank * sizeof *shape);
  return b->err ? -1 : i;
}
int crt_add_input(crt_builder *b, const char *name, cov_dtype dtype, int rank, const int64_t *shape, int buffer) {
  return add_io(b, 0, name, dtype, rank, shape, buffer);
}
void crt_set_symbolic(crt_builder *b, int input, unsigned mask) {
  if (b->err || input < 0 || input >= b->n_ios[0]) return;
  mask &= (1u << b->ios[0][input].rank) - 1u;
  b->ios[0][input].symbolic = mask;
  if (mask && b->version < CRT_FORMAT_VERSION_SYMBOLIC) b->version = CRT_FORMAT_VERSION_SYMBOLIC;
}
void crt_set_range(crt_builder *b, int input, int64_t lo, int64_t hi) {
  if (b->err || input < 0 || input >= b->n_ios[0]) return;
  crt_io *x = &b->ios[0][input];
  if (lo > hi || cov_dtype_is_float(x->dtype)) {
    b->err = cov_error(COV_INTERNAL, COV_AT_FILE(b->model), "input '%s': range [%lld, %lld] of a %s input", x->name, (long long)lo,
                       (long long)hi, cov_dtype_name(x->dtype));
    return;
  }
  x->has_range = 1, x->lo = lo, x->hi = hi;
  if (b->version < CRT_FORMAT_VERSION_SYMBOLIC) b->version = CRT_FORMAT_VERSION_SYMBOLIC;
}
int crt_add_output(crt_builder *b, const char *name, cov_dtype dtype, int rank, const int64_t *shape, int buffer) {
  return add_io(b, 1, name, dtype, rank, shape, buffer);
}

static int new_step(crt_builder *b, crt_step_op op, int group, const char *label) {
  int i = GROW(b, steps, n_steps, cap_steps);
  if (i < 0) return -1;
  crt_step *s = &b->steps[i];
  s->op = op, s->group = group < 0 ? -1 : group;
  s->label = dup_str(b, label);
  s->module = s->buffer = s->blob = -1;
  return b->err ? -1 : i;
}

int crt_add_launch(crt_builder *b, int group, const char *label, int module, const char *kernel,
                   const uint32_t grid[3], const uint32_t block[3], uint32_t shared_bytes, const crt_arg *args,
                   int n_args) {
  if (b->err) return -1;
  if (module < 0 || module >= b->n_modules || n_args < 0 || n_args > 4096) {
    fail(b, "launch of '%s': bad module or argument count", kernel);
    return -1;
  }
  for (int d = 0; d < 3; d++)
    if (!grid[d] || !block[d] || grid[d] > INT32_MAX || block[d] > INT32_MAX) {
      fail(b, "launch of '%s': grid and block dimensions are in [1, 2^31)", kernel);
      return -1;
    }
  for (int k = 0; k < n_args; k++) {
    const crt_arg *x = &args[k];
    if (x->kind == CRT_ARG_BUFFER &&
        (x->buffer < 0 || x->buffer >= b->n_buffers || x->offset > b->buffers[x->buffer].bytes)) {
      fail(b, "launch of '%s': argument %d names buffer %d at offset %" PRIu64, kernel, k, x->buffer, x->offset);
      return -1;
    }
    if (x->kind == CRT_ARG_F32 && !isfinite(x->f)) {
      fail(b, "launch of '%s': argument %d is not finite", kernel, k);
      return -1;
    }
    if (x->kind == CRT_ARG_I32 && (x->i < INT32_MIN || x->i > INT32_MAX)) {
      fail(b, "launch of '%s': argument %d does not fit i32", kernel, k);
      return -1;
    }
    if (x->kind == CRT_ARG_TMAP) {
      const char *why = x->buffer < 0 || x->buffer >= b->n_buffers
                            ? "no such buffer"
                            : crt_tmap_problem(x, b->buffers[x->buffer].bytes,
                                               (int)cov_dtype_size(b->buffers[x->buffer].dtype));
      if (why) {
        fail(b, "launch of '%s': argument %d, a tensor map over buffer %d: %s", kernel, k, x->buffer, why);
        return -1;
      }
      if (b->version < CRT_FORMAT_VERSION_TMAP) b->version = CRT_FORMAT_VERSION_TMAP;
    }
  }
  int i = new_step(b, CRT_STEP_LAUNCH, group, label);
  if (i < 0) return -1;
  crt_step *s = &b->steps[i];
  s->module = module;
  s->kernel = dup_str(b, kernel);
  memcpy(s->grid, grid, sizeof s->grid);
  memcpy(s->block, block, sizeof s->block);
  s->shared_bytes = shared_bytes;
  s->args = malloc((size_t)(n_args ? n_args : 1) * sizeof *s->args);
  if (!s->args) {
    fail(b, "out of memory");
    return -1;
  }
  if (n_args) memcpy(s->args, args, (size_t)n_args * sizeof *args);
  s->n_args = n_args;
  return b->err ? -1 : i;
}

int crt_add_fill(crt_builder *b, int group, const char *label, int buffer, uint64_t offset, uint64_t bytes,
                 unsigned value) {
  if (b->err) return -1;
  if (buffer < 0 || buffer >= b->n_buffers || offset > b->buffers[buffer].bytes ||
      bytes > b->buffers[buffer].bytes - offset || value > 255 || b->buffers[buffer].kind == CRT_BUF_WEIGHT) {
    fail(b, "fill: bad buffer %d, range or value", buffer);
    return -1;
  }
  int i = new_step(b, CRT_STEP_FILL, group, label);
  if (i < 0) return -1;
  crt_step *s = &b->steps[i];
  s->buffer = buffer, s->offset = offset, s->bytes = bytes, s->value = value;
  return i;
}

int crt_add_acg(crt_builder *b, const char *json, size_t bytes) {
  if (b->err) return -1;
  if (b->acg_blob >= 0) {
    fail(b, "an artifact embeds one ACG");
    return -1;
  }
  int blob = crt_add_blob(b, "acg.json", json, bytes);
  if (blob < 0) return -1;
  b->acg_blob = blob;
  if (b->version < CRT_FORMAT_VERSION_ACG) b->version = CRT_FORMAT_VERSION_ACG;
  return blob;
}

static void need_control(crt_builder *b) {
  if (b->version < CRT_FORMAT_VERSION_CONTROL) b->version = CRT_FORMAT_VERSION_CONTROL;
}

int crt_add_codelets(crt_builder *b, const char *text, size_t bytes) {
  if (b->err) return -1;
  if (b->codelets_blob >= 0) {
    fail(b, "the codelets are added once");
    return -1;
  }
  int blob = crt_add_blob(b, "codelets.cdl", text, bytes);
  if (blob < 0) return -1;
  b->codelets_blob = blob;
  need_control(b);
  return blob;
}

static int buffer_ok(const crt_builder *b, int buf) { return buf >= 0 && buf < b->n_buffers; }

int crt_add_copy(crt_builder *b, int group, const char *label, int from, int to) {
  if (b->err) return -1;
  if (!buffer_ok(b, from) || !buffer_ok(b, to) || b->buffers[from].bytes != b->buffers[to].bytes ||
      b->buffers[to].kind == CRT_BUF_WEIGHT || b->buffers[to].kind == CRT_BUF_INPUT) {
    if (buffer_ok(b, from) && buffer_ok(b, to))
      fail(b, "copy '%s': buffer %d ('%s', %" PRIu64 " bytes) into buffer %d ('%s', %s, %" PRIu64 " bytes)", label,
           from, b->buffers[from].name, b->buffers[from].bytes, to, b->buffers[to].name,
           crt_buf_kind_name(b->buffers[to].kind), b->buffers[to].bytes);
    else
      fail(b, "copy '%s': buffer %d into buffer %d", label, from, to);
    return -1;
  }
  int refs[2] = {from, to};
  return crt_add_control(b, CRT_STEP_COPY, group, label, refs, 2);
}

int crt_add_host(crt_builder *b, int group, const char *label, const char *codelet, const crt_attr *attrs,
                 int n_attrs, const crt_view *views, int n_views) {
  if (b->err) return -1;
  if (n_views < 1 || n_views > 64 || n_attrs < 0 || n_attrs > 64) {
    fail(b, "host step '%s': %d operands, %d attributes", label, n_views, n_attrs);
    return -1;
  }
  for (int k = 0; k < n_views; k++) {
    cov_tensor t = {.dtype = views[k].dtype, .rank = views[k].rank};
    memcpy(t.shape, views[k].shape, sizeof t.shape);
    int64_t n = cov_tensor_numel(&t);
    if (!buffer_ok(b, views[k].buffer) || n < 0 || views[k].dtype != b->buffers[views[k].buffer].dtype ||
        (uint64_t)n * cov_dtype_size(views[k].dtype) != b->buffers[views[k].buffer].bytes) {
      fail(b, "host step '%s': operand %d does not fit buffer %d", label, k, views[k].buffer);
      return -1;
    }
  }
  int i = new_step(b, CRT_STEP_HOST, group, label);
  if (i < 0) return -1;
  crt_step *s = &b->steps[i];
  s->codelet = dup_str(b, codelet);
  s->views = malloc((size_t)n_views * sizeof *s->views);
  s->attrs = calloc((size_t)(n_attrs ? n_attrs : 1), sizeof *s->attrs);
  if (!s->views || !s->attrs) {
    fail(b, "out of memory");
    return -1;
  }
  memcpy(s->views, views, (size_t)n_views * sizeof *s->views);
  s->n_views = n_views;
  for (int k = 0; k < n_attrs; k++) s->attrs[k] = attrs[k], s->attrs[k].name = dup_str(b, attrs[k].name);
  s->n_attrs = n_attrs;
  need_control(b);
  return b->err ? -1 : i;
}

int crt_add_control(crt_builder *b, crt_step_op op, int group, const char *label, const int *refs, int n_refs) {
  if (b->err) return -1;
  for (int k = 0; k < n_refs; k++)
    if (refs[k] < -1 || refs[k] >= b->n_buffers) {
      fail(b, "step '%s': buffer %d", label, refs[k]);
      return -1;
    }
  int i = new_step(b, op, group, label);
  if (i < 0) return -1;
  crt_step *s = &b->steps[i];
  s->target = -1;
  s->refs = malloc((size_t)(n_refs ? n_refs : 1) * sizeof *s->refs);
  if (!s->refs) {
    fail(b, "out of memory");
    return -1;
  }
  if (n_refs) memcpy(s->refs, refs, (size_t)n_refs * sizeof *refs);
  s->n_refs = n_refs;
  s->n_carry = op == CRT_STEP_NEXT ? (n_refs - 1) / 2 : 0;
  need_control(b);
  return i;
}

int crt_add_onnx(crt_builder *b, const void *bytes, size_t n) {
  if (b->err) return -1;
  if (b->onnx_blob >= 0) {
    fail(b, "the model is added once");
    return -1;
  }
  b->onnx_blob = crt_add_blob(b, "model.onnx", bytes, n);
  need_control(b);
  return b->onnx_blob;
}

int crt_add_part(crt_builder *b, int group, const char *label, const char *const *values, const int *buffers,
                 int n_in, int n_out) {
  if (b->err) return -1;
  for (int k = 0; k < n_in + n_out; k++)
    if (!buffer_ok(b, buffers[k]) || (k >= n_in && (b->buffers[buffers[k]].kind == CRT_BUF_INPUT ||
                                                    b->buffers[buffers[k]].kind == CRT_BUF_WEIGHT))) {
      fail(b, "part step '%s': buffer %d of value '%s'", label, buffers[k], values[k]);
      return -1;
    }
  int i = n_in < 0 || n_out < 1 || n_in + n_out > CRT_MAX_PART_VALUES ? -1 : crt_add_control(b, CRT_STEP_PART, group, label, buffers, n_in + n_out);
  if (i < 0) {
    if (!b->err) fail(b, "part step '%s': %d inputs and %d outputs", label, n_in, n_out);
    return -1;
  }
  crt_step *s = &b->steps[i];
  s->n_in = n_in;
  s->values = calloc((size_t)(n_in + n_out), sizeof *s->values);
  if (!s->values) {
    fail(b, "out of memory");
    return -1;
  }
  for (int k = 0; k < n_in + n_out; k++) s->values[k] = dup_str(b, values[k]);
  return b->err ? -1 : i;
}

cov_status crt_add_model_part(crt_builder *b, const char *model_path, int group, const char *label,
                              const char *const *values, const int *buffers, int n_in, int n_out) {
  if (b->err) return NULL;
  if (b->onnx_blob < 0) {
    char *bytes = NULL;
    size_t n = 0;
    COV_RETURN_IF_ERROR(common_read_file(model_path, COV_MODEL_MAX_FILE_BYTES, &bytes, &n));
    crt_add_onnx(b, bytes, n);
    free(bytes);
  }
  crt_add_part(b, group, label, values, buffers, n_in, n_out);
  return NULL;
}

void crt_set_dynamic(crt_builder *b, int buffer, unsigned mask) {
  if (b->err) return;
  if (!buffer_ok(b, buffer) || (b->buffers[buffer].rank < 32 && mask >> b->buffers[buffer].rank))
    return fail(b, "buffer %d: dynamic dims %#x", buffer, mask);
  b->buffers[buffer].dynamic = mask;
  if (mask) need_control(b);
}

void crt_set_target(crt_builder *b, int step, int target) {
  if (b->err) return;
  if (step < 0 || step >= b->n_steps || target < 0 || target > b->n_steps) return fail(b, "step %d: target %d", step, target);
  b->steps[step].target = target;
}

void crt_set_carried(crt_builder *b, int step, int n_carry) {
  if (b->err) return;
  if (step < 0 || step >= b->n_steps || b->steps[step].op != CRT_STEP_NEXT || n_carry < 0 ||
      1 + 2 * n_carry > b->steps[step].n_refs)
    return fail(b, "step %d: %d carried values", step, n_carry);
  for (int k = 1 + 2 * n_carry; k + 1 < b->steps[step].n_refs; k += 2) {
    uint64_t slice = b->buffers[b->steps[step].refs[k]].bytes, all = b->buffers[b->steps[step].refs[k + 1]].bytes;
    if (!slice || all % slice) return fail(b, "step %d: a scan output of %" PRIu64 " bytes stacks slices of %" PRIu64, step, all, slice);
  }
  b->steps[step].n_carry = n_carry;
}

int crt_builder_num_steps(const crt_builder *b) { return b->n_steps; }

int crt_add_npu(crt_builder *b, int group, const char *label, int blob, const crt_bind *binds, int n_binds) {
  if (b->err) return -1;
  if (blob < 0 || blob >= b->n_blobs || n_binds < 0 || n_binds > 4096) {
    fail(b, "npu step: bad blob or bindings");
    return -1;
  }
  for (int k = 0; k < n_binds; k++)
    if (binds[k].buffer < 0 || binds[k].buffer >= b->n_buffers) {
      fail(b, "npu step: tensor '%s' bound to buffer %d", binds[k].tensor, binds[k].buffer);
      return -1;
    }
  int i = new_step(b, CRT_STEP_NPU, group, label);
  if (i < 0) return -1;
  crt_step *s = &b->steps[i];
  s->blob = blob;
  s->binds = calloc((size_t)(n_binds ? n_binds : 1), sizeof *s->binds);
  if (!s->binds) {
    fail(b, "out of memory");
    return -1;
  }
  s->n_binds = n_binds;
  for (int k = 0; k < n_binds; k++) {
    s->binds[k].tensor = dup_str(b, binds[k].tensor);
    s->binds[k].buffer = binds[k].buffer;
  }
  return b->err ? -1 : i;
}

void crt_add_missing(crt_builder *b, const char *why) {
  int i = GROW(b, missing, n_missing, cap_missing);
  if (i >= 0) b->missing[i] = dup_str(b, why);
}

/* ---- the arena ---------------------------------------------------------- */

static void use(crt_builder *b, int i, int s) {
  while (b->buffers[i].kind == CRT_BUF_VIEW) i = b->buffers[i].of;
  crt_buffer *x = &b->buffers[i];
  if (x->first < 0) x->first = s;
  x->last = s;
}

static uint64_t align_up(uint64_t v) { return (v + CRT_ALIGN - 1) / CRT_ALIGN * CRT_ALIGN; }

/* Greedy by size: each intermediate, largest first, goes to the lowest
 * aligned offset where it overlaps (in bytes) no placed buffer that is
 * alive (first..last) at the same time. Returns the arena size. */
static uint64_t plan_arena(crt_builder *b) {
  for (int i = 0; i < b->n_buffers; i++) b->buffers[i].first = b->buffers[i].last = -1;
  for (int s = 0; s < b->n_steps; s++) {
    const crt_step *st = &b->steps[s];
    for (int k = 0; k < st->n_args; k++)
      if (st->args[k].kind == CRT_ARG_BUFFER || st->args[k].kind == CRT_ARG_TMAP) use(b, st->args[k].buffer, s);
    if (st->op == CRT_STEP_FILL) use(b, st->buffer, s);
    for (int k = 0; k < st->n_binds; k++) use(b, st->binds[k].buffer, s);
    for (int k = 0; k < st->n_refs; k++)
      if (st->refs[k] >= 0) use(b, st->refs[k], s);
    for (int k = 0; k < st->n_views; k++) use(b, st->views[k].buffer, s);
  }
  /* a buffer alive when a loop begins stays alive to its last iteration's
   * end: the next iteration reads it again (inner loops first: ascending
   * next steps would miss an outer loop's extension, so repeat to a fixed
   * point, at most the nesting depth) */
  for (int changed = 1; changed;) {
    changed = 0;
    for (int s = 0; s < b->n_steps; s++) {
      const crt_step *st = &b->steps[s];
      /* a scan output is written row by row, one per iteration: alive from the loop's start */
      for (int k = 1 + 2 * st->n_carry; st->op == CRT_STEP_NEXT && k + 1 < st->n_refs; k += 2) {
        int r = st->refs[k + 1];
        while (b->buffers[r].kind == CRT_BUF_VIEW) r = b->buffers[r].of;
        if (b->buffers[r].first > st->target) b->buffers[r].first = st->target, changed = 1;
      }
      if (st->op != CRT_STEP_LOOP || st->target <= s) continue;
      for (int i = 0; i < b->n_buffers; i++) {
        crt_buffer *x = &b->buffers[i];
        if (x->first >= 0 && x->first <= s && x->last >= s && x->last < st->target) x->last = st->target, changed = 1;
      }
    }
  }
  int n = 0;
  int *order = malloc((size_t)(b->n_buffers ? b->n_buffers : 1) * sizeof *order);
  if (!order) {
    fail(b, "out of memory");
    return 0;
  }
  for (int i = 0; i < b->n_buffers; i++)
    if (b->buffers[i].kind == CRT_BUF_INTERMEDIATE) {
      if (b->buffers[i].first < 0) {
        fail(b, "intermediate '%s' is used by no step", b->buffers[i].name);
        free(order);
        return 0;
      }
      order[n++] = i;
    }
  /* insertion sort: size descending, then index (deterministic) */
  for (int i = 1; i < n; i++) {
    int v = order[i], j = i;
    while (j > 0 && (b->buffers[order[j - 1]].bytes < b->buffers[v].bytes)) order[j] = order[j - 1], j--;
    order[j] = v;
  }
  uint64_t arena = 0;
  for (int i = 0; i < n; i++) {
    crt_buffer *x = &b->buffers[order[i]];
    uint64_t off = 0;
    for (int moved = 1; moved;) {
      moved = 0;
      for (int j = 0; j < i; j++) {
        const crt_buffer *y = &b->buffers[order[j]];
        int live = x->first <= y->last && y->first <= x->last;
        int bytes = off < y->offset + y->bytes && y->offset < off + x->bytes;
        if (live && bytes) off = align_up(y->offset + y->bytes), moved = 1;
      }
    }
    x->offset = off;
    if (off + x->bytes > arena) arena = off + x->bytes;
  }
  free(order);
  return align_up(arena);
}

/* ---- the manifest ------------------------------------------------------- */

typedef struct sbuf {
  char *s;
  size_t n, cap;
  int oom;
} sbuf;

static void put(sbuf *o, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void put(sbuf *o, const char *fmt, ...) {
  if (o->oom) return;
  va_list ap;
  va_start(ap, fmt);
  /* the manifest is JSON: '.' whatever the caller's locale */
  int k = common_vsnprintf(o->s ? o->s + o->n : NULL, o->s ? o->cap - o->n : 0, fmt, ap);
  va_end(ap);
  if (k < 0) return;
  if (o->n + (size_t)k + 1 > o->cap) {
    size_t cap = (o->cap ? o->cap * 2 : 4096) + (size_t)k;
    char *ns = realloc(o->s, cap);
    if (!ns) {
      o->oom = 1;
      return;
    }
    o->s = ns, o->cap = cap;
    va_start(ap, fmt);
    vsnprintf(o->s + o->n, o->cap - o->n, fmt, ap);
    va_end(ap);
  }
  o->n += (size_t)k;
}

static void put_str(sbuf *o, const char *s) {
  put(o, "\"");
  for (; s && *s; s++) {
    unsigned char c = (unsigned char)*s;
    if (c == '"' || c == '\\')
      put(o, "\\%c", c);
    else if (c < 0x20)
      put(o, "\\u%04x", c);
    else
      put(o, "%c", c);
  }
  put(o, "\"");
}

static void put_shape(sbuf *o, int rank, const int64_t *shape) {
  put(o, "[");
  for (int d = 0; d < rank; d++) put(o, "%s%" PRId64, d ? ", " : "", shape[d]);
  put(o, "]");
}

static void put_head(sbuf *o, int group, const char *label, const char *op) {
  put(o, "{\"op\": \"%s\", \"group\": %d, \"label\": ", op, group);
  put_str(o, label);
}

/* The inputs and outputs: name, dtype, shape, an input's symbolic dims and
 * value range (version 4), buffer. */
static void put_ios(sbuf *o, const crt_builder *b) {
  for (int k = 0; k < 2; k++) {
    put(o, "],\n\"%s\": [", k ? "outputs" : "inputs");
    for (int i = 0; i < b->n_ios[k]; i++) {
      const crt_io *x = &b->ios[k][i];
      put(o, "%s\n  {\"name\": ", i ? "," : "");
      put_str(o, x->name);
      put(o, ", \"dtype\": \"%s\", \"shape\": ", cov_dtype_name(x->dtype));
      put_shape(o, x->rank, x->shape);
      if (x->symbolic) {
        put(o, ", \"symbolic\": [");
        for (int d = 0, first = 1; d < x->rank; d++)
          if (x->symbolic >> d & 1u) put(o, "%s%d", first ? "" : ", ", d), first = 0;
        put(o, "]");
      }
      if (x->has_range) put(o, ", \"range\": [%" PRId64 ", %" PRId64 "]", x->lo, x->hi);
      put(o, ", \"buffer\": %d}", x->buffer);
    }
  }
}

static const char *const control_names[] = {"copy", "host", "loop", "next", "if", "jump", "part"};

static void put_refs(sbuf *o, const crt_step *s, const char *const *keys, int n_keys) {
  for (int k = 0; k < n_keys && k < s->n_refs; k++) put(o, ", \"%s\": %d", keys[k], s->refs[k]);
}

/* a part step's "in" and "out": [{"value": name, "buffer": b}, ...] */
static void put_part(sbuf *o, const crt_step *s) {
  for (int half = 0; half < 2; half++) {
    int lo = half ? s->n_in : 0, hi = half ? s->n_refs : s->n_in;
    put(o, ", \"%s\": [", half ? "out" : "in");
    for (int k = lo; k < hi; k++) {
      put(o, "%s{\"value\": ", k > lo ? ", " : "");
      put_str(o, s->values[k]);
      put(o, ", \"buffer\": %d}", s->refs[k]);
    }
    put(o, "]");
  }
}

/* copy, host and control steps (format version 5) */
static void put_control(sbuf *o, const crt_step *s) {
  put_head(o, s->group, s->label, control_names[s->op - CRT_STEP_COPY]);
  static const char *const copy_keys[] = {"from", "to"}, *const loop_keys[] = {"trip", "cond", "iter", "cond_in"};
  if (s->op == CRT_STEP_COPY) put_refs(o, s, copy_keys, 2);
  if (s->op == CRT_STEP_LOOP) put_refs(o, s, loop_keys, 4);
  if (s->op == CRT_STEP_IF) put_refs(o, s, loop_keys + 1, 1);
  if (s->op == CRT_STEP_NEXT) {
    put(o, ", \"cond\": %d, \"carry\": [", s->refs[0]);
    for (int k = 1; k + 1 < s->n_refs; k += 2) {
      if (k == 1 + 2 * s->n_carry) put(o, "], \"scan\": [");
      put(o, "%s[%d, %d]", k > 1 && k != 1 + 2 * s->n_carry ? ", " : "", s->refs[k], s->refs[k + 1]);
    }
    put(o, "]");
  }
  if (s->op >= CRT_STEP_LOOP && s->op != CRT_STEP_PART) put(o, ", \"target\": %d", s->target);
  if (s->op == CRT_STEP_PART) put_part(o, s);
  if (s->op == CRT_STEP_HOST) {
    put(o, ", \"codelet\": ");
    put_str(o, s->codelet);
    put(o, ", \"attrs\": [");
    for (int k = 0; k < s->n_attrs; k++) {
      put(o, "%s{\"name\": ", k ? ", " : "");
      put_str(o, s->attrs[k].name);
      if (s->attrs[k].is_float) put(o, ", \"f\": %.17g}", s->attrs[k].f);
      else put(o, ", \"i\": %" PRId64 "}", s->attrs[k].i);
    }
    put(o, "], \"operands\": [");
    for (int k = 0; k < s->n_views; k++) {
      put(o, "%s{\"buffer\": %d, \"dtype\": \"%s\", \"shape\": ", k ? ", " : "", s->views[k].buffer,
          cov_dtype_name(s->views[k].dtype));
      put_shape(o, s->views[k].rank, s->views[k].shape);
      put(o, "}");
    }
    put(o, "]");
  }
  put(o, "}");
}

static void write_manifest(crt_builder *b, sbuf *o, const uint64_t *blob_off, uint64_t arena, uint64_t weights) {
  put(o, "{\n\"format\": \"covenant-artifact\",\n\"version\": %u,\n\"target\": ", b->version);
  put_str(o, b->target);
  put(o, ",\n\"backend\": ");
  put_str(o, b->backend);
  put(o, ",\n\"arch\": ");
  put_str(o, b->arch);
  put(o, ",\n\"model\": ");
  put_str(o, b->model);
  if (b->acg_blob >= 0) put(o, ",\n\"acg\": %d", b->acg_blob);
  if (b->codelets_blob >= 0) put(o, ",\n\"codelets\": %d", b->codelets_blob);
  if (b->onnx_blob >= 0) put(o, ",\n\"onnx\": %d", b->onnx_blob);
  put(o, ",\n\"producer\": \"covenant %s\",\n\"missing\": [", COV_VERSION);
  for (int i = 0; i < b->n_missing; i++) {
    put(o, "%s\n  ", i ? "," : "");
    put_str(o, b->missing[i]);
  }
  put(o, "],\n\"arena_bytes\": %" PRIu64 ",\n\"weight_bytes\": %" PRIu64 ",\n\"blobs\": [", arena, weights);
  for (int i = 0; i < b->n_blobs; i++) {
    put(o, "%s\n  {\"name\": ", i ? "," : "");
    put_str(o, b->blobs[i].name);
    put(o, ", \"offset\": %" PRIu64 ", \"bytes\": %zu, \"fnv1a64\": \"%016" PRIx64 "\"}", blob_off[i],
        b->blobs[i].bytes, crt_fnv1a64(b->blobs[i].data, b->blobs[i].bytes));
  }
  put(o, "],\n\"modules\": [");
  for (int i = 0; i < b->n_modules; i++) {
    put(o, "%s\n  {\"name\": ", i ? "," : "");
    put_str(o, b->modules[i].name);
    put(o, ", \"format\": ");
    put_str(o, b->modules[i].format);
    put(o, ", \"blob\": %d}", b->modules[i].blob);
  }
  put(o, "],\n\"buffers\": [");
  for (int i = 0; i < b->n_buffers; i++) {
    const crt_buffer *x = &b->buffers[i];
    put(o, "%s\n  {\"name\": ", i ? "," : "");
    put_str(o, x->name);
    put(o, ", \"kind\": \"%s\", \"dtype\": \"%s\", \"shape\": ", crt_buf_kind_name(x->kind), cov_dtype_name(x->dtype));
    put_shape(o, x->rank, x->shape);
    if (x->dynamic) {
      put(o, ", \"dynamic\": [");
      for (int d = 0, first = 1; d < x->rank; d++)
        if (x->dynamic >> d & 1u) put(o, "%s%d", first ? "" : ", ", d), first = 0;
      put(o, "]");
    }
    put(o, ", \"bytes\": %" PRIu64, x->bytes);
    if (x->kind == CRT_BUF_WEIGHT) put(o, ", \"blob\": %d", x->blob);
    if (x->kind == CRT_BUF_INTERMEDIATE) put(o, ", \"offset\": %" PRIu64, x->offset);
    if (x->kind == CRT_BUF_VIEW) put(o, ", \"of\": %d, \"offset\": %" PRIu64, x->of, x->offset);
    put(o, "}");
  }
  put_ios(o, b);
  put(o, "],\n\"steps\": [");
  for (int i = 0; i < b->n_steps; i++) {
    const crt_step *s = &b->steps[i];
    put(o, "%s\n  ", i ? "," : "");
    if (s->op == CRT_STEP_LAUNCH) {
      put_head(o, s->group, s->label, "launch");
      put(o, ", \"module\": %d, \"kernel\": ", s->module);
      put_str(o, s->kernel);
      put(o, ",\n   \"grid\": [%u, %u, %u], \"block\": [%u, %u, %u], \"shared_bytes\": %u,\n   \"args\": [", s->grid[0],
          s->grid[1], s->grid[2], s->block[0], s->block[1], s->block[2], s->shared_bytes);
      for (int k = 0; k < s->n_args; k++) {
        const crt_arg *x = &s->args[k];
        put(o, "%s", k ? ", " : "");
        if (x->kind == CRT_ARG_BUFFER)
          put(o, "{\"buffer\": %d, \"offset\": %" PRIu64 "}", x->buffer, x->offset);
        else if (x->kind == CRT_ARG_TMAP)
          put(o,
              "{\"tmap\": {\"buffer\": %d, \"offset\": %" PRIu64 ", \"rows\": %" PRIu64 ", \"cols\": %" PRIu64
              ", \"box_rows\": %u, \"box_cols\": %u, \"swizzle\": %u}}",
              x->buffer, x->offset, x->rows, x->cols, x->box_rows, x->box_cols, x->swizzle);
        else if (x->kind == CRT_ARG_F32)
          put(o, "{\"f32\": %.9g}", (double)x->f);
        else
          put(o, "{\"%s\": %" PRId64 "}", x->kind == CRT_ARG_I32 ? "i32" : "i64", x->i);
      }
      put(o, "]}");
    } else if (s->op == CRT_STEP_FILL) {
      put_head(o, s->group, s->label, "fill");
      put(o, ", \"buffer\": %d, \"offset\": %" PRIu64 ", \"bytes\": %" PRIu64 ", \"value\": %u}", s->buffer, s->offset,
          s->bytes, s->value);
    } else if (s->op >= CRT_STEP_COPY) {
      put_control(o, s);
    } else {
      put_head(o, s->group, s->label, "npu");
      put(o, ", \"blob\": %d, \"binds\": [", s->blob);
      for (int k = 0; k < s->n_binds; k++) {
        put(o, "%s{\"tensor\": ", k ? ", " : "");
        put_str(o, s->binds[k].tensor);
        put(o, ", \"buffer\": %d}", s->binds[k].buffer);
      }
      put(o, "]}");
    }
  }
  put(o, "]\n}\n");
}

static void wr64(uint8_t *p, uint64_t v) {
  for (int i = 0; i < 8; i++) p[i] = (uint8_t)(v >> (8 * i));
}
static void wr32(uint8_t *p, uint32_t v) {
  for (int i = 0; i < 4; i++) p[i] = (uint8_t)(v >> (8 * i));
}

typedef struct blob_key {
  uint64_t hash, bytes;
  int i;
} blob_key;

static int blob_key_cmp(const void *pa, const void *pb) {
  const blob_key *a = pa, *b = pb;
  if (a->hash != b->hash) return a->hash < b->hash ? -1 : 1;
  if (a->bytes != b->bytes) return a->bytes < b->bytes ? -1 : 1;
  return (a->i > b->i) - (a->i < b->i);
}

/* Data-section offsets of the blobs: a blob byte-identical to an earlier
 * one (a weight two layers share, the same index table of two
 * transposes) points at the earlier one's bytes instead of a second
 * copy; the reader allows blobs to overlap. Candidates are found by
 * sorting on (checksum, size), so the work is n log n plus one memcmp per
 * equal checksum. Sets *data to the section's size; non-zero when out
 * of memory. */
static int place_blobs(crt_builder *b, uint64_t *blob_off, uint64_t *data) {
  blob_key *k = malloc(((size_t)b->n_blobs + 1) * sizeof *k);
  int *first = malloc(((size_t)b->n_blobs + 1) * sizeof *first);
  if (!k || !first) {
    free(k), free(first);
    return 1;
  }
  for (int i = 0; i < b->n_blobs; i++)
    k[i] = (blob_key){crt_fnv1a64(b->blobs[i].data, b->blobs[i].bytes), b->blobs[i].bytes, i}, first[i] = i;
  qsort(k, (size_t)b->n_blobs, sizeof *k, blob_key_cmp);
  for (int s = 0, t = 1; t < b->n_blobs; t++) { /* s: the group's first blob in index order */
    if (k[t].hash != k[s].hash || k[t].bytes != k[s].bytes || !k[t].bytes) {
      s = t;
      continue;
    }
    const bblob *x = &b->blobs[k[t].i], *y = &b->blobs[k[s].i];
    if (!memcmp(x->data, y->data, x->bytes)) first[k[t].i] = k[s].i;
  }
  *data = 0;
  for (int i = 0; i < b->n_blobs; i++) {
    b->blobs[i].shared = first[i] != i;
    if (b->blobs[i].shared) blob_off[i] = blob_off[first[i]];
    else blob_off[i] = *data, *data = align_up(*data + b->blobs[i].bytes);
  }
  free(k), free(first);
  return 0;
}

cov_status crt_builder_finish(crt_builder *b, uint8_t **out, size_t *size) {
  *out = NULL;
  *size = 0;
  cov_status st = NULL;
  uint64_t arena = b->err ? 0 : plan_arena(b);
  if (b->err) { /* the caller owns the error now */
    st = b->err, b->err = NULL;
    return st;
  }
  uint64_t weights = 0, data = 0;
  uint64_t *blob_off = calloc((size_t)b->n_blobs + 1, sizeof *blob_off);
  if (!blob_off) return cov_error(COV_OUT_OF_MEMORY, NULL, "out of memory");
  for (int i = 0; i < b->n_buffers; i++)
    if (b->buffers[i].kind == CRT_BUF_WEIGHT) weights += align_up(b->buffers[i].bytes);
  if (place_blobs(b, blob_off, &data)) {
    free(blob_off);
    return cov_error(COV_OUT_OF_MEMORY, NULL, "out of memory placing the blobs");
  }
  sbuf m = {0};
  write_manifest(b, &m, blob_off, arena, weights);
  if (m.oom) {
    free(m.s), free(blob_off);
    return cov_error(COV_OUT_OF_MEMORY, NULL, "out of memory writing the manifest");
  }
  uint64_t doff = align_up(CRT_HEADER_BYTES + m.n), total = doff + data;
  uint8_t *f = calloc(1, (size_t)total);
  if (!f) {
    free(m.s), free(blob_off);
    return cov_error(COV_OUT_OF_MEMORY, NULL, "out of memory for a %" PRIu64 "-byte artifact", total);
  }
  memcpy(f, CRT_MAGIC, 8);
  wr32(f + 8, b->version);
  wr32(f + 12, CRT_HEADER_BYTES);
  wr64(f + 16, total);
  wr64(f + 24, CRT_HEADER_BYTES);
  wr64(f + 32, m.n);
  wr64(f + 40, crt_fnv1a64(m.s, m.n));
  wr64(f + 48, doff);
  wr64(f + 56, data);
  memcpy(f + CRT_HEADER_BYTES, m.s, m.n);
  for (int i = 0; i < b->n_blobs; i++)
    if (!b->blobs[i].shared) memcpy(f + doff + blob_off[i], b->blobs[i].data, b->blobs[i].bytes);
  free(m.s), free(blob_off);
  *out = f;
  *size = (size_t)total;
  return NULL;
}

cov_status crt_builder_write(crt_builder *b, const char *path) {
  uint8_t *bytes;
  size_t n;
  COV_RETURN_IF_ERROR(crt_builder_finish(b, &bytes, &n));
  cov_status st = common_write_file(path, bytes, n);
  free(bytes);
  return st;
}
