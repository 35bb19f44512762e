/* runtime/crt_artifact.c: reading and validating artifacts (see crt.h and
 * runtime/README.md for the format). Everything the manifest says is
 * checked before anything is run: references between items, sizes against
 * shapes, ranges against their regions, blob checksums.
 * size: one reader for the whole manifest: every section (and each kind of
 * step, host steps and control included) goes through the same located
 * error state and checked accessors (rd, member, int_of, ref_of), which a
 * split would have to export from the runtime's one hostile-input parser */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/fileio.h"
#include "common/text.h"
#include "runtime/crt.h"
#include "runtime/crt_internal.h"
#include "runtime/crt_json.h"

uint64_t crt_fnv1a64(const void *data, size_t n) {
  const unsigned char *p = data;
  uint64_t h = 0xcbf29ce484222325ull;
  for (size_t i = 0; i < n; i++) h = (h ^ p[i]) * 0x100000001b3ull;
  return h;
}

uint64_t crt_rd64(const uint8_t *p) {
  uint64_t v = 0;
  for (int i = 7; i >= 0; i--) v = v << 8 | p[i];
  return v;
}
uint32_t crt_rd32(const uint8_t *p) { return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24; }

const char *crt_buf_kind_name(crt_buf_kind k) {
  static const char *names[] = {"input", "output", "weight", "intermediate", "view"};
  return (unsigned)k < 5 ? names[k] : "?";
}

/* ---- the reader's state ------------------------------------------------ */

typedef struct priv {
  uint8_t *bytes; /* the whole file */
  crt_json_doc *doc;
  uint64_t *weight_off;
  int *root; /* per buffer: itself, or for a view the buffer it views at the end of its chain */
  /* every array and string the artifact points to */
  void **allocs;
  size_t n_allocs, cap_allocs;
} priv;

typedef struct rd {
  crt_artifact *a;
  priv *pv;
  const char *file;
  cov_status err;
  char path[256];
} rd;

static void *rd_alloc(rd *r, size_t n) {
  priv *pv = r->pv;
  if (pv->n_allocs == pv->cap_allocs) {
    size_t cap = pv->cap_allocs ? pv->cap_allocs * 2 : 64;
    void **na = realloc(pv->allocs, cap * sizeof *na);
    if (!na) return NULL;
    pv->allocs = na, pv->cap_allocs = cap;
  }
  void *p = calloc(1, n ? n : 1);
  if (p) pv->allocs[pv->n_allocs++] = p;
  return p;
}

/* An error at node `at` (line:col) with the JSON path of the item. The
 * message is one line whose names come from the file: escaped whole
 * (common/text.h), so a name cannot break the line or drive a terminal. */
static void bad(rd *r, const crt_json *at, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void bad(rd *r, const crt_json *at, const char *fmt, ...) {
  if (r->err) return;
  char msg[512], shown[2048];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  cov_loc loc = {r->file, at ? at->line : 0, at ? at->col : 0, r->path[0] ? r->path : NULL};
  r->err = cov_error(COV_INVALID_INPUT, &loc, "manifest: %s", common_escape(msg, shown, sizeof shown));
}

static void set_path(rd *r, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void set_path(rd *r, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(r->path, sizeof r->path, fmt, ap);
  va_end(ap);
}

static const crt_json *member(rd *r, const crt_json *obj, const char *key, crt_json_kind kind, int required) {
  const crt_json *v = crt_json_get(obj, key);
  if (!v) {
    if (required) bad(r, obj, "missing member '%s'", key);
    return NULL;
  }
  if (v->kind != kind) {
    bad(r, v, "'%s' must be %s, not %s", key, crt_json_kind_name(kind), crt_json_kind_name(v->kind));
    return NULL;
  }
  return v;
}

static const char *str_of(rd *r, const crt_json *obj, const char *key, int required) {
  const crt_json *v = member(r, obj, key, CRT_JSON_STRING, required);
  return v ? v->str : NULL;
}

/* An integer in [lo, hi]. */
static int64_t int_of(rd *r, const crt_json *obj, const char *key, int64_t lo, int64_t hi, int required,
                      int64_t dflt) {
  const crt_json *v = member(r, obj, key, CRT_JSON_NUMBER, required);
  if (!v) return dflt;
  if (!v->is_int || v->i < lo || v->i > hi) {
    bad(r, v, "'%s' must be an integer in [%" PRId64 ", %" PRId64 "]", key, lo, hi);
    return dflt;
  }
  return v->i;
}

static const crt_json *array_of(rd *r, const crt_json *obj, const char *key, int required) {
  const crt_json *v = member(r, obj, key, CRT_JSON_ARRAY, required);
  if (v && v->n > CRT_MAX_ITEMS) {
    bad(r, v, "'%s' has %zu items (limit %d)", key, v->n, CRT_MAX_ITEMS);
    return NULL;
  }
  return v;
}

static void check_keys(rd *r, const crt_json *obj, const char *const *allowed) {
  for (size_t i = 0; i < obj->n && !r->err; i++) {
    int ok = 0;
    for (const char *const *k = allowed; *k && !ok; k++) ok = !strcmp(*k, obj->keys[i]);
    if (!ok) bad(r, obj->items[i], "unknown member '%s'", obj->keys[i]);
  }
}

static int obj_item(rd *r, const crt_json *arr, size_t i, const crt_json **out) {
  *out = arr->items[i];
  if ((*out)->kind != CRT_JSON_OBJECT) {
    bad(r, *out, "expected an object, not %s", crt_json_kind_name((*out)->kind));
    return 0;
  }
  return 1;
}

static cov_dtype dtype_of(rd *r, const crt_json *obj) {
  const char *s = str_of(r, obj, "dtype", 1);
  if (!s) return COV_DTYPE_INVALID;
  cov_dtype d = cov_dtype_from_name(s);
  if (d == COV_DTYPE_INVALID) bad(r, crt_json_get(obj, "dtype"), "unknown dtype '%s'", s);
  return d;
}

/* shape: array of rank <= COV_MAX_RANK non-negative ints; returns the element count (or -1). */
static int64_t shape_of(rd *r, const crt_json *obj, int *rank, int64_t *shape) {
  const crt_json *s = array_of(r, obj, "shape", 1);
  if (!s) return -1;
  if (s->n > COV_MAX_RANK) {
    bad(r, s, "shape has rank %zu (limit %d)", s->n, COV_MAX_RANK);
    return -1;
  }
  int64_t n = 1;
  for (size_t i = 0; i < s->n; i++) {
    const crt_json *d = s->items[i];
    if (d->kind != CRT_JSON_NUMBER || !d->is_int || d->i < 0 || d->i > (int64_t)CRT_MAX_BYTES) {
      bad(r, d, "shape dimensions are integers in [0, 2^40]");
      return -1;
    }
    shape[i] = d->i;
    if (d->i && n > (int64_t)CRT_MAX_BYTES / d->i) {
      bad(r, s, "shape has more than 2^40 elements");
      return -1;
    }
    n *= d->i;
  }
  *rank = (int)s->n;
  return n;
}

/* ---- sections ----------------------------------------------------------- */

static void read_blobs(rd *r, const crt_json *root) {
  crt_artifact *a = r->a;
  const crt_json *arr = array_of(r, root, "blobs", 1);
  if (!arr) return;
  a->n_blobs = (int)arr->n;
  a->blobs = rd_alloc(r, arr->n * sizeof *a->blobs);
  if (!a->blobs) return bad(r, arr, "out of memory");
  static const char *keys[] = {"name", "offset", "bytes", "fnv1a64", NULL};
  for (size_t i = 0; i < arr->n && !r->err; i++) {
    const crt_json *o;
    set_path(r, "blobs[%zu]", i);
    if (!obj_item(r, arr, i, &o)) break;
    check_keys(r, o, keys);
    crt_blob *b = &a->blobs[i];
    b->name = str_of(r, o, "name", 1);
    b->offset = (uint64_t)int_of(r, o, "offset", 0, (int64_t)CRT_MAX_BYTES, 1, 0);
    b->bytes = (uint64_t)int_of(r, o, "bytes", 0, (int64_t)CRT_MAX_BYTES, 1, 0);
    const char *h = str_of(r, o, "fnv1a64", 1);
    if (r->err) break;
    char *end = NULL;
    errno = 0;
    b->fnv1a64 = strtoull(h, &end, 16);
    if (strlen(h) != 16 || *end || errno) {
      bad(r, crt_json_get(o, "fnv1a64"), "fnv1a64 must be 16 hexadecimal digits");
      break;
    }
    if (b->offset % CRT_ALIGN || b->offset > a->data_bytes || b->bytes > a->data_bytes - b->offset) {
      bad(r, o, "blob '%s' (bytes %" PRIu64 "..%" PRIu64 ") is not a %d-aligned range of the %" PRIu64
                "-byte data section (truncated?)",
          b->name, b->offset, b->offset + b->bytes, CRT_ALIGN, a->data_bytes);
      break;
    }
    uint64_t got = crt_fnv1a64(a->data + b->offset, (size_t)b->bytes);
    if (got != b->fnv1a64) {
      bad(r, o, "blob '%s' (bytes %" PRIu64 "..%" PRIu64 " of the data section): checksum %016" PRIx64
                ", the manifest says %016" PRIx64 " (the file is corrupt)",
          b->name, b->offset, b->offset + b->bytes, got, b->fnv1a64);
      break;
    }
  }
}

static int blob_ref(rd *r, const crt_json *o, const char *key, int required) {
  int64_t i = int_of(r, o, key, 0, r->a->n_blobs - 1, required, -1);
  if (r->err && required) return -1;
  return (int)i;
}

static void read_modules(rd *r, const crt_json *root) {
  crt_artifact *a = r->a;
  const crt_json *arr = array_of(r, root, "modules", 1);
  if (!arr) return;
  a->n_modules = (int)arr->n;
  a->modules = rd_alloc(r, arr->n * sizeof *a->modules);
  if (!a->modules) return bad(r, arr, "out of memory");
  static const char *keys[] = {"name", "format", "blob", NULL};
  const char *want = crt_device_code_format(crt_device_of(a->backend));
  for (size_t i = 0; i < arr->n && !r->err; i++) {
    const crt_json *o;
    set_path(r, "modules[%zu]", i);
    if (!obj_item(r, arr, i, &o)) break;
    check_keys(r, o, keys);
    crt_module *m = &a->modules[i];
    m->name = str_of(r, o, "name", 1);
    m->format = str_of(r, o, "format", 1);
    m->blob = blob_ref(r, o, "blob", 1);
    if (r->err) break;
    if (!want || strcmp(m->format, want))
      bad(r, crt_json_get(o, "format"), "module format '%s' on backend '%s' (expected %s)", m->format, a->backend,
          want ? want : "no modules: NPU artifacts hold programs");
    /* PTX is text the driver reads up to its NUL */
    else if (!strcmp(m->format, "ptx") &&
             (a->blobs[m->blob].bytes == 0 || a->data[a->blobs[m->blob].offset + a->blobs[m->blob].bytes - 1] != 0))
      bad(r, o, "PTX module '%s' does not end with a NUL byte", m->name);
  }
}

/* A list of dims of a shape of rank `rank`, ascending and each once, from
 * format version `version` on: an input's "symbolic" (the dims the model
 * left symbolic, version 4), a buffer's "dynamic" (those a part step sets
 * at run time, version 5). */
static unsigned dims_of(rd *r, const crt_json *o, int rank, const char *key, unsigned version) {
  const crt_json *s = array_of(r, o, key, 0);
  if (!s) return 0;
  if (r->a->version < version) {
    bad(r, s, "'%s' needs format version %u; the artifact says %u", key, version, r->a->version);
    return 0;
  }
  unsigned mask = 0;
  for (size_t i = 0; i < s->n; i++) {
    const crt_json *d = s->items[i];
    if (d->kind != CRT_JSON_NUMBER || !d->is_int || d->i < 0 || d->i >= rank || (mask >> d->i) != 0) {
      bad(r, d, "'%s' lists dims of the shape (rank %d), ascending, each once", key, rank);
      return 0;
    }
    mask |= 1u << d->i;
  }
  return mask;
}

static void read_buffers(rd *r, const crt_json *root) {
  crt_artifact *a = r->a;
  const crt_json *arr = array_of(r, root, "buffers", 1);
  if (!arr) return;
  a->n_buffers = (int)arr->n;
  a->buffers = rd_alloc(r, arr->n * sizeof *a->buffers);
  r->pv->weight_off = rd_alloc(r, arr->n * sizeof *r->pv->weight_off);
  r->pv->root = rd_alloc(r, arr->n * sizeof *r->pv->root);
  if (!a->buffers || !r->pv->weight_off || !r->pv->root) return bad(r, arr, "out of memory");
  static const char *keys[] = {"name", "kind", "dtype", "shape", "dynamic", "bytes", "blob", "offset", "of", NULL};
  static const char *kinds[] = {"input", "output", "weight", "intermediate", "view"};
  uint64_t woff = 0;
  for (size_t i = 0; i < arr->n && !r->err; i++) {
    const crt_json *o;
    set_path(r, "buffers[%zu]", i);
    if (!obj_item(r, arr, i, &o)) break;
    check_keys(r, o, keys);
    crt_buffer *b = &a->buffers[i];
    b->blob = b->of = -1;
    b->first = b->last = -1;
    r->pv->root[i] = (int)i;
    b->name = str_of(r, o, "name", 1);
    const char *kind = str_of(r, o, "kind", 1);
    b->dtype = dtype_of(r, o);
    int64_t numel = shape_of(r, o, &b->rank, b->shape);
    b->bytes = (uint64_t)int_of(r, o, "bytes", 0, (int64_t)CRT_MAX_BYTES, 1, 0);
    if (r->err) break;
    int k = 0;
    while (k < 5 && strcmp(kinds[k], kind)) k++;
    if (k == 5) {
      bad(r, crt_json_get(o, "kind"), "unknown buffer kind '%s' (input, output, weight, intermediate, view)", kind);
      break;
    }
    b->kind = (crt_buf_kind)k;
    b->dynamic = dims_of(r, o, b->rank, "dynamic", CRT_FORMAT_VERSION_CONTROL);
    if (b->dynamic && b->kind != CRT_BUF_OUTPUT && b->kind != CRT_BUF_INTERMEDIATE)
      bad(r, crt_json_get(o, "dynamic"), "only outputs and intermediates have dims set at run time, not %s '%s'",
          kind, b->name);
    if (r->err) break;
    uint64_t need = 0;
    if (__builtin_mul_overflow((uint64_t)numel, (uint64_t)cov_dtype_size(b->dtype), &need) || need != b->bytes) {
      bad(r, o, "buffer '%s': %" PRId64 " %s elements are %" PRIu64 " bytes, not %" PRIu64, b->name, numel,
          cov_dtype_name(b->dtype), need, b->bytes);
      break;
    }
    const crt_json *jb = crt_json_get(o, "blob"), *jo = crt_json_get(o, "offset"), *jf = crt_json_get(o, "of");
    if (b->kind == CRT_BUF_WEIGHT) {
      b->blob = blob_ref(r, o, "blob", 1);
      if (r->err) break;
      if (a->blobs[b->blob].bytes != b->bytes) {
        bad(r, jb, "weight '%s' is %" PRIu64 " bytes, its blob %d holds %" PRIu64, b->name, b->bytes, b->blob,
            a->blobs[b->blob].bytes);
        break;
      }
      r->pv->weight_off[i] = woff;
      if (__builtin_add_overflow(woff, (b->bytes + CRT_ALIGN - 1) / CRT_ALIGN * CRT_ALIGN, &woff) ||
          woff > CRT_MAX_BYTES) {
        bad(r, o, "the weights take more than 2^40 bytes");
        break;
      }
    } else if (jb) {
      bad(r, jb, "only weights have a blob");
    }
    if (b->kind == CRT_BUF_INTERMEDIATE) {
      b->offset = (uint64_t)int_of(r, o, "offset", 0, (int64_t)CRT_MAX_BYTES, 1, 0);
      if (!r->err && (b->offset % CRT_ALIGN || b->offset > a->arena_bytes || b->bytes > a->arena_bytes - b->offset))
        bad(r, jo, "intermediate '%s' (bytes %" PRIu64 "..%" PRIu64 ") is not a %d-aligned range of the %" PRIu64
                   "-byte arena",
            b->name, b->offset, b->offset + b->bytes, CRT_ALIGN, a->arena_bytes);
    } else if (b->kind == CRT_BUF_VIEW) {
      /* a view of an earlier buffer (so views never form cycles) */
      b->of = (int)int_of(r, o, "of", 0, (int64_t)i - 1, 1, -1);
      if (b->of >= 0) r->pv->root[i] = r->pv->root[b->of]; /* one step: chains of views cost no walk */
      b->offset = (uint64_t)int_of(r, o, "offset", 0, (int64_t)CRT_MAX_BYTES, 1, 0);
      if (!r->err && (b->offset > a->buffers[b->of].bytes || b->bytes > a->buffers[b->of].bytes - b->offset))
        bad(r, jo, "view '%s' (bytes %" PRIu64 "..%" PRIu64 ") lies outside buffer %d ('%s', %" PRIu64 " bytes)",
            b->name, b->offset, b->offset + b->bytes, b->of, a->buffers[b->of].name, a->buffers[b->of].bytes);
    } else if (jo) {
      bad(r, jo, "only intermediates and views have an offset");
    }
    if (b->kind != CRT_BUF_VIEW && jf) bad(r, jf, "only views have 'of'");
  }
  if (!r->err && woff != a->weight_bytes) {
    set_path(r, "weight_bytes");
    bad(r, crt_json_get(root, "weight_bytes"), "weight_bytes is %" PRIu64 ", the weights take %" PRIu64,
        a->weight_bytes, woff);
  }
}

/* An integer input's "range": [lo, hi], lo <= hi (format version 4). */
static void range_of(rd *r, const crt_json *o, crt_io *io) {
  const crt_json *s = array_of(r, o, "range", 0);
  if (!s) return;
  if (r->a->version < CRT_FORMAT_VERSION_SYMBOLIC)
    return bad(r, s, "'range' needs format version %d; the artifact says %u", CRT_FORMAT_VERSION_SYMBOLIC,
               r->a->version);
  if (cov_dtype_is_float(io->dtype)) return bad(r, s, "'range' is for integer inputs; '%s' is %s", io->name,
                                                cov_dtype_name(io->dtype));
  const crt_json *lo = s->n == 2 ? s->items[0] : NULL, *hi = s->n == 2 ? s->items[1] : NULL;
  if (!lo || lo->kind != CRT_JSON_NUMBER || !lo->is_int || hi->kind != CRT_JSON_NUMBER || !hi->is_int || lo->i > hi->i)
    return bad(r, s, "'range' is [lo, hi], two integers with lo <= hi");
  io->has_range = 1, io->lo = lo->i, io->hi = hi->i;
}

static void read_ios(rd *r, const crt_json *root, int outputs) {
  crt_artifact *a = r->a;
  const char *key = outputs ? "outputs" : "inputs";
  const crt_json *arr = array_of(r, root, key, 1);
  if (!arr) return;
  crt_io *ios = rd_alloc(r, arr->n * sizeof *ios);
  if (!ios) return bad(r, arr, "out of memory");
  if (outputs)
    a->outputs = ios, a->n_outputs = (int)arr->n;
  else
    a->inputs = ios, a->n_inputs = (int)arr->n;
  static const char *keys[] = {"name", "dtype", "shape", "buffer", NULL};
  static const char *in_keys[] = {"name", "dtype", "shape", "symbolic", "range", "buffer", NULL};
  for (size_t i = 0; i < arr->n && !r->err; i++) {
    const crt_json *o;
    set_path(r, "%s[%zu]", key, i);
    if (!obj_item(r, arr, i, &o)) break;
    check_keys(r, o, outputs ? keys : in_keys);
    crt_io *io = &ios[i];
    io->name = str_of(r, o, "name", 1);
    io->dtype = dtype_of(r, o);
    int64_t numel = shape_of(r, o, &io->rank, io->shape);
    if (!outputs && !r->err) io->symbolic = dims_of(r, o, io->rank, "symbolic", CRT_FORMAT_VERSION_SYMBOLIC);
    if (!outputs && !r->err) range_of(r, o, io);
    io->buffer = (int)int_of(r, o, "buffer", 0, a->n_buffers - 1, 1, -1);
    if (r->err) break;
    const crt_buffer *b = &a->buffers[io->buffer];
    crt_buf_kind want = outputs ? CRT_BUF_OUTPUT : CRT_BUF_INPUT;
    int64_t bnumel = (int64_t)(b->bytes / cov_dtype_size(b->dtype));
    /* the host converts f32 <-> f16 / bf16 either way: f32 values into
     * 16-bit kernel operands, or a 16-bit model's values computed in f32 */
    int half_io = io->dtype == COV_F16 || io->dtype == COV_BF16, half_buf = b->dtype == COV_F16 || b->dtype == COV_BF16;
    int conv = io->dtype == b->dtype || (io->dtype == COV_F32 && half_buf) || (half_io && b->dtype == COV_F32);
    if (b->kind != want)
      bad(r, crt_json_get(o, "buffer"), "%s '%s' names buffer %d ('%s'), a %s buffer", outputs ? "output" : "input",
          io->name, io->buffer, b->name, crt_buf_kind_name(b->kind));
    else if (bnumel != numel || !conv)
      bad(r, o, "%s '%s' (%s, %" PRId64 " elements) does not match its buffer '%s' (%s, %" PRId64 " elements)",
          outputs ? "output" : "input", io->name, cov_dtype_name(io->dtype), numel, b->name,
          cov_dtype_name(b->dtype), bnumel);
  }
}

/* A use of buffer i by step s: intermediates' lifetimes, through views. */
static void use_buffer(crt_artifact *a, int i, int s) {
  crt_buffer *b = &a->buffers[crt_buffer_root(a, i)];
  if (b->first < 0) b->first = s;
  b->last = s;
}

const char *crt_tmap_problem(const crt_arg *x, uint64_t bytes, int esize) {
  if (esize != 2) return "a tensor map is over a 16-bit buffer (f16 or bf16)";
  if (x->swizzle != 128) return "the swizzle is 128 (bytes)";
  if (x->rows < 1 || x->cols < 1 || x->rows > 0xffffffffu || x->cols > 0xffffffffu)
    return "rows and cols are in [1, 2^32)";
  if ((x->cols * 2) % 16 || x->offset % 16) return "rows and the offset are whole 16-byte units";
  if (x->box_rows < 1 || x->box_rows > 256 || x->box_cols < 1 || x->box_cols * 2 > x->swizzle)
    return "a box is 1 to 256 rows of at most the swizzle's 128 bytes";
  uint64_t matrix = 0;
  if (x->offset > bytes || __builtin_mul_overflow(x->rows, x->cols, &matrix) ||
      __builtin_mul_overflow(matrix, (uint64_t)esize, &matrix) || matrix > bytes - x->offset)
    return "the matrix runs past the buffer's end";
  return NULL;
}

/* {"tmap": {"buffer", "offset", "rows", "cols", "box_rows", "box_cols", "swizzle"}} (format version 2) */
static void read_tmap(rd *r, const crt_json *g, crt_arg *x, int s) {
  crt_artifact *a = r->a;
  static const char *outer[] = {"tmap", NULL}, *keys[] = {"buffer", "offset", "rows", "cols", "box_rows",
                                                          "box_cols", "swizzle", NULL};
  check_keys(r, g, outer);
  const crt_json *m = member(r, g, "tmap", CRT_JSON_OBJECT, 1);
  if (r->err) return;
  if (a->version < CRT_FORMAT_VERSION_TMAP)
    return bad(r, m, "a tensor-map argument needs format version %d; the artifact says %u", CRT_FORMAT_VERSION_TMAP,
               a->version);
  check_keys(r, m, keys);
  x->kind = CRT_ARG_TMAP;
  x->buffer = (int)int_of(r, m, "buffer", 0, a->n_buffers - 1, 1, 0);
  x->offset = (uint64_t)int_of(r, m, "offset", 0, (int64_t)CRT_MAX_BYTES, 1, 0);
  x->rows = (uint64_t)int_of(r, m, "rows", 1, 0xffffffffLL, 1, 1);
  x->cols = (uint64_t)int_of(r, m, "cols", 1, 0xffffffffLL, 1, 1);
  x->box_rows = (uint32_t)int_of(r, m, "box_rows", 1, 256, 1, 1);
  x->box_cols = (uint32_t)int_of(r, m, "box_cols", 1, 256, 1, 1);
  x->swizzle = (uint32_t)int_of(r, m, "swizzle", 0, 1024, 1, 128);
  if (r->err) return;
  const crt_buffer *b = &a->buffers[x->buffer];
  const char *why = crt_tmap_problem(x, b->bytes, (int)cov_dtype_size(b->dtype));
  if (why)
    return bad(r, m, "tensor map over buffer %d ('%s', %s, %" PRIu64 " bytes): %s", x->buffer, b->name,
               cov_dtype_name(b->dtype), b->bytes, why);
  use_buffer(a, x->buffer, s);
}

static void read_args(rd *r, const crt_json *o, crt_step *st, int s) {
  crt_artifact *a = r->a;
  const crt_json *arr = array_of(r, o, "args", 1);
  if (!arr) return;
  st->n_args = (int)arr->n;
  st->args = rd_alloc(r, arr->n * sizeof *st->args);
  if (!st->args) return bad(r, arr, "out of memory");
  for (size_t i = 0; i < arr->n && !r->err; i++) {
    const crt_json *g;
    set_path(r, "steps[%d].args[%zu]", s, i);
    if (!obj_item(r, arr, i, &g)) break;
    crt_arg *x = &st->args[i];
    if (crt_json_get(g, "buffer")) {
      static const char *keys[] = {"buffer", "offset", NULL};
      check_keys(r, g, keys);
      x->kind = CRT_ARG_BUFFER;
      x->buffer = (int)int_of(r, g, "buffer", 0, a->n_buffers - 1, 1, 0);
      x->offset = (uint64_t)int_of(r, g, "offset", 0, (int64_t)CRT_MAX_BYTES, 0, 0);
      if (!r->err && x->offset > a->buffers[x->buffer].bytes)
        bad(r, g, "offset %" PRIu64 " is past the end of buffer %d ('%s', %" PRIu64 " bytes)", x->offset,
            x->buffer, a->buffers[x->buffer].name, a->buffers[x->buffer].bytes);
      if (!r->err) use_buffer(a, x->buffer, s);
    } else if (g->n == 1 && (!strcmp(g->keys[0], "i32") || !strcmp(g->keys[0], "i64"))) {
      int is32 = !strcmp(g->keys[0], "i32");
      x->kind = is32 ? CRT_ARG_I32 : CRT_ARG_I64;
      x->i = int_of(r, g, g->keys[0], is32 ? INT32_MIN : INT64_MIN, is32 ? INT32_MAX : INT64_MAX, 1, 0);
    } else if (crt_json_get(g, "tmap")) {
      read_tmap(r, g, x, s);
    } else if (g->n == 1 && !strcmp(g->keys[0], "f32")) {
      const crt_json *v = member(r, g, "f32", CRT_JSON_NUMBER, 1);
      x->kind = CRT_ARG_F32;
      if (v) x->f = (float)v->d;
    } else {
      bad(r, g, "an argument is {\"buffer\": B, \"offset\": O}, {\"tmap\": {...}} or one of {\"i32\": V}, "
                "{\"i64\": V}, {\"f32\": V}");
    }
  }
}

/* A buffer reference of a control step: -1 (none, where `optional`) or a
 * buffer; `dtype`/`bytes` (when set) what it must hold; `written`: a step
 * writes it, so it is no model input or weight. */
static int ref_of(rd *r, const crt_json *o, const char *key, int optional, cov_dtype dtype, uint64_t bytes,
                  int written, int s) {
  crt_artifact *a = r->a;
  int b = (int)int_of(r, o, key, optional ? -1 : 0, a->n_buffers - 1, 1, -1);
  if (r->err || b < 0) return -1;
  const crt_buffer *x = &a->buffers[b];
  crt_buf_kind root = a->buffers[crt_buffer_root(a, b)].kind;
  if (dtype != COV_DTYPE_INVALID && (x->dtype != dtype || x->bytes != bytes))
    bad(r, crt_json_get(o, key), "'%s' is buffer %d ('%s', %s, %" PRIu64 " bytes); it must be one %s", key, b, x->name,
        cov_dtype_name(x->dtype), x->bytes, cov_dtype_name(dtype));
  else if (written && (root == CRT_BUF_INPUT || root == CRT_BUF_WEIGHT))
    bad(r, crt_json_get(o, key), "'%s' writes %s buffer %d ('%s')", key, crt_buf_kind_name(root), b, x->name);
  else
    use_buffer(a, b, s);
  return b;
}

static int *refs_alloc(rd *r, crt_step *st, size_t n) {
  st->refs = rd_alloc(r, (n ? n : 1) * sizeof *st->refs);
  if (!st->refs) bad(r, NULL, "out of memory");
  st->n_refs = st->refs ? (int)n : 0;
  return st->refs;
}

/* A host step's attributes and operands (views of buffers). */
static void read_host(rd *r, const crt_json *o, crt_step *st, int s) {
  crt_artifact *a = r->a;
  st->codelet = str_of(r, o, "codelet", 1);
  const crt_json *at = array_of(r, o, "attrs", 1), *ops = array_of(r, o, "operands", 1);
  if (r->err) return;
  if (at->n > 64 || ops->n < 1 || ops->n > 64) return bad(r, o, "a host step has 1 to 64 operands and at most 64 attributes");
  st->attrs = rd_alloc(r, at->n * sizeof *st->attrs);
  st->views = rd_alloc(r, ops->n * sizeof *st->views);
  if (!st->attrs || !st->views) return bad(r, o, "out of memory");
  st->n_attrs = (int)at->n, st->n_views = (int)ops->n;
  static const char *akeys[] = {"name", "i", "f", NULL}, *vkeys[] = {"buffer", "dtype", "shape", NULL};
  for (size_t k = 0; k < at->n && !r->err; k++) {
    const crt_json *g;
    set_path(r, "steps[%d].attrs[%zu]", s, k);
    if (!obj_item(r, at, k, &g)) break;
    check_keys(r, g, akeys);
    st->attrs[k].name = str_of(r, g, "name", 1);
    const crt_json *f = member(r, g, "f", CRT_JSON_NUMBER, 0);
    if (f) st->attrs[k].is_float = 1, st->attrs[k].f = f->d;
    else st->attrs[k].i = int_of(r, g, "i", INT64_MIN, INT64_MAX, 1, 0);
  }
  for (size_t k = 0; k < ops->n && !r->err; k++) {
    const crt_json *g;
    set_path(r, "steps[%d].operands[%zu]", s, k);
    if (!obj_item(r, ops, k, &g)) break;
    check_keys(r, g, vkeys);
    crt_view *v = &st->views[k];
    v->dtype = dtype_of(r, g);
    int64_t numel = shape_of(r, g, &v->rank, v->shape);
    v->buffer = ref_of(r, g, "buffer", 0, COV_DTYPE_INVALID, 0, k + 1 == ops->n, s);
    if (r->err) break;
    const crt_buffer *b = &a->buffers[v->buffer];
    uint64_t bytes = 0;
    if (v->dtype != b->dtype || numel < 0 || __builtin_mul_overflow((uint64_t)numel, cov_dtype_size(v->dtype), &bytes) ||
        bytes != b->bytes)
      bad(r, g, "operand %s[%" PRId64 " elements] does not fit buffer %d ('%s', %s, %" PRIu64 " bytes)",
          cov_dtype_name(v->dtype), numel, v->buffer, b->name, cov_dtype_name(b->dtype), b->bytes);
  }
}

/* A next step's [from, to] pairs: carried values (the same size) or scan
 * outputs (`to` stacks whole slices of `from`'s size). */
static void read_pairs(rd *r, const crt_json *c, int *x, int s, const char *key, int scan) {
  crt_artifact *a = r->a;
  for (size_t j = 0; j < c->n && !r->err; j++) {
    const crt_json *pr = c->items[j];
    set_path(r, "steps[%d].%s[%zu]", s, key, j);
    if (pr->kind != CRT_JSON_ARRAY || pr->n != 2 || pr->items[0]->kind != CRT_JSON_NUMBER ||
        pr->items[1]->kind != CRT_JSON_NUMBER || !pr->items[0]->is_int || !pr->items[1]->is_int ||
        pr->items[0]->i < 0 || pr->items[1]->i < 0 || pr->items[0]->i >= a->n_buffers ||
        pr->items[1]->i >= a->n_buffers)
      return bad(r, pr, "a pair is [from, to], two buffer indices");
    int f = (int)pr->items[0]->i, t = (int)pr->items[1]->i;
    uint64_t fb = a->buffers[f].bytes, tb = a->buffers[t].bytes;
    crt_buf_kind root = a->buffers[crt_buffer_root(a, t)].kind;
    if ((scan ? !fb || tb % fb : fb != tb) || root == CRT_BUF_INPUT || root == CRT_BUF_WEIGHT)
      return bad(r, pr, "buffer %d (%" PRIu64 " bytes) cannot %s buffer %d (%s, %" PRIu64 " bytes)", f, fb,
                 scan ? "stack into" : "carry into", t, crt_buf_kind_name(root), tb);
    x[2 * j] = f, x[2 * j + 1] = t;
    use_buffer(a, f, s), use_buffer(a, t, s);
  }
}

/* A part step's "in" and "out": [{"value": name, "buffer": b}, ...], at
 * most CRT_MAX_PART_VALUES in all; what it writes is no model input or
 * weight. */
static void read_part(rd *r, const crt_json *o, crt_step *st, int s) {
  const crt_json *in = array_of(r, o, "in", 1), *out = array_of(r, o, "out", 1);
  if (r->err) return;
  if (!out->n || in->n + out->n > CRT_MAX_PART_VALUES)
    return bad(r, o, "a part step names at most %d values, at least one out", CRT_MAX_PART_VALUES);
  int *x = refs_alloc(r, st, in->n + out->n);
  st->values = rd_alloc(r, (in->n + out->n) * sizeof *st->values);
  if (!x || !st->values) return bad(r, o, "out of memory");
  st->n_in = (int)in->n;
  static const char *keys[] = {"value", "buffer", NULL};
  for (size_t k = 0; k < in->n + out->n && !r->err; k++) {
    int w = k >= in->n;
    const crt_json *g;
    set_path(r, "steps[%d].%s[%zu]", s, w ? "out" : "in", w ? k - in->n : k);
    if (!obj_item(r, w ? out : in, w ? k - in->n : k, &g)) break;
    check_keys(r, g, keys);
    st->values[k] = str_of(r, g, "value", 1);
    x[k] = ref_of(r, g, "buffer", 0, COV_DTYPE_INVALID, 0, w, s);
  }
}

/* copy, host, loop, next, if, jump, part (format version 5). */
static void read_control(rd *r, const crt_json *o, crt_step *st, int s, const char *op) {
  crt_artifact *a = r->a;
  static const char *const names[] = {"copy", "host", "loop", "next", "if", "jump", "part", NULL};
  static const char *const keys[][9] = {
      {"op", "group", "label", "from", "to", NULL},
      {"op", "group", "label", "codelet", "attrs", "operands", NULL},
      {"op", "group", "label", "trip", "cond", "iter", "cond_in", "target", NULL},
      {"op", "group", "label", "cond", "carry", "scan", "target", NULL},
      {"op", "group", "label", "cond", "target", NULL},
      {"op", "group", "label", "target", NULL},
      {"op", "group", "label", "in", "out", NULL}};
  int k = 0;
  while (names[k] && strcmp(names[k], op)) k++;
  if (!names[k]) return bad(r, crt_json_get(o, "op"), "unknown step op '%s' (launch, fill, npu, copy, host, loop, next, if, jump, part)", op);
  if (a->version < CRT_FORMAT_VERSION_CONTROL)
    return bad(r, crt_json_get(o, "op"), "a '%s' step needs format version %d; the artifact says %u", op,
               CRT_FORMAT_VERSION_CONTROL, a->version);
  check_keys(r, o, keys[k]);
  st->op = (crt_step_op)(CRT_STEP_COPY + k);
  st->target = st->op >= CRT_STEP_LOOP && st->op != CRT_STEP_PART ? (int)int_of(r, o, "target", 0, a->n_steps, 1, 0) : -1;
  if (st->op == CRT_STEP_COPY) {
    int *x = refs_alloc(r, st, 2);
    if (!x) return;
    x[0] = ref_of(r, o, "from", 0, COV_DTYPE_INVALID, 0, 0, s);
    x[1] = ref_of(r, o, "to", 0, COV_DTYPE_INVALID, 0, 1, s);
    if (!r->err && a->buffers[x[0]].bytes != a->buffers[x[1]].bytes)
      bad(r, o, "a copy from %" PRIu64 " bytes to %" PRIu64, a->buffers[x[0]].bytes, a->buffers[x[1]].bytes);
  } else if (st->op == CRT_STEP_HOST) {
    read_host(r, o, st, s);
  } else if (st->op == CRT_STEP_LOOP) {
    int *x = refs_alloc(r, st, 4);
    if (!x) return;
    x[0] = ref_of(r, o, "trip", 1, COV_I64, 8, 0, s);
    x[1] = ref_of(r, o, "cond", 1, COV_BOOL, 1, 0, s);
    x[2] = ref_of(r, o, "iter", 1, COV_I64, 8, 1, s);
    x[3] = ref_of(r, o, "cond_in", 1, COV_BOOL, 1, 1, s);
  } else if (st->op == CRT_STEP_NEXT) {
    const crt_json *c = array_of(r, o, "carry", 1), *sc = crt_json_get(o, "scan") ? array_of(r, o, "scan", 1) : NULL;
    size_t n = c ? c->n + (sc ? sc->n : 0) : 0;
    int *x = c && !r->err ? refs_alloc(r, st, 1 + 2 * n) : NULL;
    if (!x) return;
    x[0] = ref_of(r, o, "cond", 1, COV_BOOL, 1, 0, s);
    st->n_carry = (int)c->n;
    read_pairs(r, c, x + 1, s, "carry", 0);
    if (sc) read_pairs(r, sc, x + 1 + 2 * c->n, s, "scan", 1);
  } else if (st->op == CRT_STEP_IF) {
    int *x = refs_alloc(r, st, 1);
    if (x) x[0] = ref_of(r, o, "cond", 0, COV_BOOL, 1, 0, s);
  } else if (st->op == CRT_STEP_PART) {
    read_part(r, o, st, s);
  }
  if (!r->err && st->op >= CRT_STEP_LOOP && st->op != CRT_STEP_NEXT && st->op != CRT_STEP_PART && st->target <= s)
    bad(r, crt_json_get(o, "target"), "step %d's target %d is not after it", s, st->target);
}

/* A buffer whose dims are set at run time is named by part steps only
 * (which run at the actual shape) or read back as an output: every other
 * step works at its full, fixed size. */
static void no_dynamic(rd *r, int s, int buf) {
  const crt_artifact *a = r->a;
  if (r->err || buf < 0 || !(a->buffers[buf].dynamic || a->buffers[crt_buffer_root(a, buf)].dynamic)) return;
  set_path(r, "steps[%d]", s);
  bad(r, NULL, "step %d names buffer %d ('%s'), whose size is set at run time; only part steps do", s, buf,
      a->buffers[buf].name);
}

static void check_dynamic(rd *r) {
  crt_artifact *a = r->a;
  for (int s = 0; s < a->n_steps && !r->err; s++) {
    const crt_step *x = &a->steps[s];
    for (int k = 0; k < x->n_args; k++)
      if (x->args[k].kind == CRT_ARG_BUFFER || x->args[k].kind == CRT_ARG_TMAP) no_dynamic(r, s, x->args[k].buffer);
    if (x->op == CRT_STEP_FILL) no_dynamic(r, s, x->buffer);
    for (int k = 0; k < x->n_binds; k++) no_dynamic(r, s, x->binds[k].buffer);
    for (int k = 0; k < x->n_refs && x->op != CRT_STEP_PART; k++) no_dynamic(r, s, x->refs[k]);
    for (int k = 0; k < x->n_views; k++) no_dynamic(r, s, x->views[k].buffer);
  }
  for (int i = 0; i < a->n_buffers && !r->err; i++)
    if (a->buffers[i].kind == CRT_BUF_VIEW && a->buffers[a->buffers[i].of].dynamic) {
      set_path(r, "buffers[%d]", i);
      bad(r, NULL, "view '%s' of buffer %d, whose size is set at run time", a->buffers[i].name, a->buffers[i].of);
    }
}

/* Loops pair with their next steps both ways; a next jumps back to its
 * loop only, every other jump goes forward: a run ends (and
 * CRT_MAX_RUN_STEPS bounds how long). */
static void check_control(rd *r) {
  crt_artifact *a = r->a;
  for (int s = 0; s < a->n_steps && !r->err; s++) {
    const crt_step *x = &a->steps[s];
    set_path(r, "steps[%d].target", s);
    if (x->op == CRT_STEP_LOOP && (x->target >= a->n_steps || a->steps[x->target].op != CRT_STEP_NEXT ||
                                   a->steps[x->target].target != s))
      bad(r, NULL, "loop step %d's target %d is not its next step", s, x->target);
    if (x->op == CRT_STEP_NEXT && (x->target >= s || a->steps[x->target].op != CRT_STEP_LOOP ||
                                   a->steps[x->target].target != s))
      bad(r, NULL, "next step %d's target %d is not its loop step", s, x->target);
  }
  r->path[0] = '\0';
  int host = 0, part = 0;
  for (int s = 0; s < a->n_steps; s++) host |= a->steps[s].op == CRT_STEP_HOST, part |= a->steps[s].op == CRT_STEP_PART;
  if (!r->err && host && a->codelets_blob < 0) bad(r, NULL, "host steps call codelets; the artifact has no 'codelets'");
  if (!r->err && part && a->onnx_blob < 0) bad(r, NULL, "part steps run the model; the artifact has no 'onnx'");
  if (!r->err) check_dynamic(r);
}

static void read_steps(rd *r, const crt_json *root) {
  crt_artifact *a = r->a;
  const crt_json *arr = array_of(r, root, "steps", 1);
  if (!arr) return;
  a->n_steps = (int)arr->n;
  a->steps = rd_alloc(r, arr->n * sizeof *a->steps);
  if (!a->steps) return bad(r, arr, "out of memory");
  int npu = crt_device_of(a->backend) == CRT_DEV_NPU;
  static const char *launch_keys[] = {"op", "group", "label", "module", "kernel", "grid", "block", "shared_bytes",
                                      "args", NULL};
  static const char *fill_keys[] = {"op", "group", "label", "buffer", "offset", "bytes", "value", NULL};
  static const char *program_keys[] = {"op", "group", "label", "blob", "binds", NULL};
  for (size_t i = 0; i < arr->n && !r->err; i++) {
    const crt_json *o;
    int s = (int)i;
    set_path(r, "steps[%zu]", i);
    if (!obj_item(r, arr, i, &o)) break;
    crt_step *st = &a->steps[i];
    st->group = (int)int_of(r, o, "group", -1, INT32_MAX, 0, -1);
    st->label = str_of(r, o, "label", 0);
    if (!st->label) st->label = "";
    const char *op = str_of(r, o, "op", 1);
    if (r->err) break;
    st->module = st->buffer = st->blob = -1;
    if (!strcmp(op, "launch")) {
      st->op = CRT_STEP_LAUNCH;
      check_keys(r, o, launch_keys);
      if (npu) bad(r, o, "an %s artifact has no kernel launches", a->backend);
      st->module = (int)int_of(r, o, "module", 0, a->n_modules - 1, 1, 0);
      st->kernel = str_of(r, o, "kernel", 1);
      const char *dims[2] = {"grid", "block"};
      for (int d = 0; d < 2 && !r->err; d++) {
        const crt_json *v = array_of(r, o, dims[d], 1);
        if (v && v->n != 3) bad(r, v, "'%s' has 3 dimensions", dims[d]);
        for (size_t k = 0; v && k < v->n && !r->err; k++) {
          const crt_json *x = v->items[k];
          if (x->kind != CRT_JSON_NUMBER || !x->is_int || x->i < 1 || x->i > INT32_MAX)
            bad(r, x, "'%s' dimensions are integers in [1, 2^31)", dims[d]);
          else
            (d ? st->block : st->grid)[k] = (uint32_t)x->i;
        }
      }
      st->shared_bytes = (uint32_t)int_of(r, o, "shared_bytes", 0, 1 << 24, 1, 0);
      if (!r->err) read_args(r, o, st, s);
    } else if (!strcmp(op, "fill")) {
      st->op = CRT_STEP_FILL;
      check_keys(r, o, fill_keys);
      st->buffer = (int)int_of(r, o, "buffer", 0, a->n_buffers - 1, 1, 0);
      st->offset = (uint64_t)int_of(r, o, "offset", 0, (int64_t)CRT_MAX_BYTES, 0, 0);
      st->bytes = (uint64_t)int_of(r, o, "bytes", 0, (int64_t)CRT_MAX_BYTES, 1, 0);
      st->value = (unsigned)int_of(r, o, "value", 0, 255, 1, 0);
      if (!r->err) {
        const crt_buffer *b = &a->buffers[st->buffer];
        if (st->offset > b->bytes || st->bytes > b->bytes - st->offset)
          bad(r, o, "fill of bytes %" PRIu64 "..%" PRIu64 " outside buffer %d ('%s', %" PRIu64 " bytes)", st->offset,
              st->offset + st->bytes, st->buffer, b->name, b->bytes);
        else if (b->kind == CRT_BUF_WEIGHT)
          bad(r, o, "fill of weight '%s' (weights are constant)", b->name);
        else
          use_buffer(a, st->buffer, s);
      }
    } else if (!strcmp(op, "npu")) {
      st->op = CRT_STEP_NPU;
      check_keys(r, o, program_keys);
      if (!npu) bad(r, o, "only %s artifacts run NPU programs", crt_device_backend(CRT_DEV_NPU));
      st->blob = blob_ref(r, o, "blob", 1);
      const crt_json *bs = array_of(r, o, "binds", 1);
      if (r->err) break;
      st->n_binds = (int)bs->n;
      st->binds = rd_alloc(r, bs->n * sizeof *st->binds);
      if (!st->binds) return bad(r, bs, "out of memory");
      static const char *bind_keys[] = {"tensor", "buffer", NULL};
      for (size_t k = 0; k < bs->n && !r->err; k++) {
        const crt_json *g;
        set_path(r, "steps[%zu].binds[%zu]", i, k);
        if (!obj_item(r, bs, k, &g)) break;
        check_keys(r, g, bind_keys);
        st->binds[k].tensor = str_of(r, g, "tensor", 1);
        st->binds[k].buffer = (int)int_of(r, g, "buffer", 0, a->n_buffers - 1, 1, 0);
        if (!r->err) use_buffer(a, st->binds[k].buffer, s);
      }
    } else {
      read_control(r, o, st, s, op);
    }
  }
  if (!r->err) check_control(r);
}

/* The data section's bytes outside every blob (the 256-byte alignment
 * padding) are zero: no checksum covers them, so a nonzero byte there is
 * an edit or corruption the blob checksums would not catch. */
static int blob_start_cmp(const void *x, const void *y) {
  const uint64_t *a = x, *b = y;
  return a[0] < b[0] ? -1 : a[0] > b[0];
}

static void check_padding(rd *r) {
  crt_artifact *a = r->a;
  uint64_t *ranges = rd_alloc(r, ((size_t)a->n_blobs + 1) * 2 * sizeof *ranges);
  if (!ranges) return bad(r, NULL, "out of memory");
  for (int i = 0; i < a->n_blobs; i++)
    ranges[2 * i] = a->blobs[i].offset, ranges[2 * i + 1] = a->blobs[i].offset + a->blobs[i].bytes;
  ranges[2 * a->n_blobs] = ranges[2 * a->n_blobs + 1] = a->data_bytes; /* the end of the data section */
  qsort(ranges, (size_t)a->n_blobs + 1, 2 * sizeof *ranges, blob_start_cmp);
  uint64_t at = 0;
  for (int i = 0; i <= a->n_blobs; i++) {
    for (uint64_t k = at; k < ranges[2 * i]; k++)
      if (a->data[k]) {
        set_path(r, "blobs");
        return bad(r, NULL,
                   "byte %" PRIu64 " of the data section, padding outside every blob, is 0x%02x, not zero (the "
                   "file is corrupt or was edited)",
                   k, a->data[k]);
      }
    if (ranges[2 * i + 1] > at) at = ranges[2 * i + 1];
  }
}

/* The plan's dataflow that needs no program: every input buffer is named
 * by exactly one `inputs` entry and every output buffer by one `outputs`
 * entry (a buffer no entry names is never filled or never returned), an
 * output is written by some step, and an npu step binds its program to
 * buffers. What each step reads and writes is checked where the programs
 * are decoded (crt_npu.c): reads come after writes, every program tensor
 * is bound. */
static void check_plan(rd *r) {
  crt_artifact *a = r->a;
  int *named = rd_alloc(r, ((size_t)a->n_buffers + 1) * sizeof *named);
  if (!named) return bad(r, NULL, "out of memory");
  for (int i = 0; i < a->n_steps && !r->err; i++) {
    set_path(r, "steps[%d].binds", i);
    if (a->steps[i].op == CRT_STEP_NPU && a->steps[i].n_binds == 0)
      bad(r, NULL, "npu step %d ('%s') binds no buffer: its program would read and write nothing of the model", i,
          a->steps[i].label);
  }
  for (int k = 0; k < 2 && !r->err; k++)
    for (int i = 0; i < (k ? a->n_outputs : a->n_inputs) && !r->err; i++) {
      const crt_io *io = k ? &a->outputs[i] : &a->inputs[i];
      set_path(r, "%s[%d]", k ? "outputs" : "inputs", i);
      if (named[io->buffer]++)
        bad(r, NULL, "%s '%s' names buffer %d ('%s'), which another entry names too", k ? "output" : "input",
            io->name, io->buffer, a->buffers[io->buffer].name);
    }
  for (int i = 0; i < a->n_buffers && !r->err; i++) {
    const crt_buffer *b = &a->buffers[i];
    set_path(r, "buffers[%d]", i);
    if (b->kind == CRT_BUF_INPUT && !named[i])
      bad(r, NULL, "input buffer '%s' is named by no 'inputs' entry, so no run would fill it", b->name);
    else if (b->kind == CRT_BUF_OUTPUT && !named[i])
      bad(r, NULL, "output buffer '%s' is named by no 'outputs' entry", b->name);
    else if (b->kind == CRT_BUF_OUTPUT && b->first < 0)
      bad(r, NULL, "output '%s' is written by no step", b->name);
    else if (b->kind == CRT_BUF_INTERMEDIATE && b->first < 0)
      bad(r, NULL, "intermediate '%s' is used by no step", b->name);
  }
}

/* The strings of the manifest's head; npu-sim: the embedded ACG. */
static void read_head(rd *r, const crt_json *root) {
  crt_artifact *a = r->a;
  a->target = str_of(r, root, "target", 1);
  a->backend = str_of(r, root, "backend", 1);
  a->arch = str_of(r, root, "arch", 1);
  a->model = str_of(r, root, "model", 1);
  a->producer = str_of(r, root, "producer", 1);
  a->arena_bytes = (uint64_t)int_of(r, root, "arena_bytes", 0, (int64_t)CRT_MAX_BYTES, 1, 0);
  a->weight_bytes = (uint64_t)int_of(r, root, "weight_bytes", 0, (int64_t)CRT_MAX_BYTES, 1, 0);
  if (r->err) return;
  crt_device dev = crt_device_of(a->backend);
  if (dev == CRT_DEV_NONE)
    return bad(r, crt_json_get(root, "backend"), "unknown backend '%s' (%s)", a->backend, crt_device_backends());
  /* an NPU artifact's programs name the ACG they were built for: its target */
  set_path(r, "arch");
  if (dev == CRT_DEV_NPU && strcmp(a->target, a->arch))
    return bad(r, crt_json_get(root, "arch"), "an %s artifact's arch is its target's ACG, '%s', not '%s'",
               a->backend, a->target, a->arch);
  set_path(r, "acg");
  const crt_json *acg = crt_json_get(root, "acg");
  if (acg && dev != CRT_DEV_NPU)
    return bad(r, acg, "only %s artifacts embed an ACG", crt_device_backend(CRT_DEV_NPU));
  if (acg && a->version < CRT_FORMAT_VERSION_ACG)
    return bad(r, acg, "an embedded ACG needs format version %d; the artifact says %u", CRT_FORMAT_VERSION_ACG,
               a->version);
  r->path[0] = '\0';
}

static void read_manifest(rd *r, const crt_json *root) {
  crt_artifact *a = r->a;
  if (root->kind != CRT_JSON_OBJECT) return bad(r, root, "the manifest must be an object");
  static const char *keys[] = {"format", "version", "target", "backend", "arch", "model", "producer", "acg",
                               "codelets", "onnx", "missing", "arena_bytes", "weight_bytes", "blobs", "modules", "buffers", "inputs",
                               "outputs", "steps", NULL};
  const char *format = str_of(r, root, "format", 1);
  if (format && strcmp(format, "covenant-artifact"))
    return bad(r, crt_json_get(root, "format"), "format is '%s', not 'covenant-artifact'", format);
  int64_t v = int_of(r, root, "version", 0, INT32_MAX, 1, 0);
  if (!r->err && v != a->version)
    return bad(r, crt_json_get(root, "version"), "version %" PRId64 " differs from the header's %u", v, a->version);
  check_keys(r, root, keys);
  read_head(r, root);
  if (r->err) return;
  const crt_json *miss = array_of(r, root, "missing", 1);
  if (!miss) return;
  a->missing = rd_alloc(r, miss->n * sizeof *a->missing);
  if (!a->missing) return bad(r, miss, "out of memory");
  a->n_missing = (int)miss->n;
  for (size_t i = 0; i < miss->n; i++) {
    if (miss->items[i]->kind != CRT_JSON_STRING) {
      set_path(r, "missing[%zu]", i);
      return bad(r, miss->items[i], "expected a string");
    }
    a->missing[i] = miss->items[i]->str;
  }
  /* a section's path while its own member is looked up: a missing one is
   * reported at the root, not at the last item of the section before */
  r->path[0] = '\0';
  read_blobs(r, root);
  if (!r->err) check_padding(r);
  set_path(r, "acg");
  a->acg_blob = crt_json_get(root, "acg") ? blob_ref(r, root, "acg", 1) : -1;
  set_path(r, "codelets");
  a->codelets_blob = crt_json_get(root, "codelets") ? blob_ref(r, root, "codelets", 1) : -1;
  if (!r->err && a->codelets_blob >= 0 && a->version < CRT_FORMAT_VERSION_CONTROL)
    return bad(r, crt_json_get(root, "codelets"), "codelets need format version %d; the artifact says %u",
               CRT_FORMAT_VERSION_CONTROL, a->version);
  set_path(r, "onnx");
  a->onnx_blob = crt_json_get(root, "onnx") ? blob_ref(r, root, "onnx", 1) : -1;
  if (!r->err && a->onnx_blob >= 0 && a->version < CRT_FORMAT_VERSION_CONTROL)
    return bad(r, crt_json_get(root, "onnx"), "'onnx' needs format version %d; the artifact says %u",
               CRT_FORMAT_VERSION_CONTROL, a->version);
  if (!r->err) r->path[0] = '\0', read_modules(r, root);
  if (!r->err) r->path[0] = '\0', read_buffers(r, root);
  if (!r->err) r->path[0] = '\0', read_ios(r, root, 0);
  if (!r->err) r->path[0] = '\0', read_ios(r, root, 1);
  if (!r->err) r->path[0] = '\0', read_steps(r, root);
  if (!r->err) check_plan(r);
}

/* ---- the container -------------------------------------------------------- */

static cov_status container_error(const char *file, cov_code code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static cov_status container_error(const char *file, cov_code code, const char *fmt, ...) {
  char msg[512];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  cov_loc loc = {file, 0, 0, NULL};
  return cov_error(code, &loc, "%s", msg);
}

cov_status crt_artifact_read(const void *bytes, size_t size, const char *name, crt_artifact **out) {
  *out = NULL;
  const uint8_t *p = bytes;
  const char *file = name ? name : "<artifact>";
  if (size < 8 || memcmp(p, CRT_MAGIC, 8))
    return container_error(file, COV_INVALID_INPUT,
                           "not a covenant artifact (no '\\x7fCOVART' magic; %zu bytes)", size);
  if (size < CRT_HEADER_BYTES)
    return container_error(file, COV_INVALID_INPUT, "truncated: %zu bytes, the header alone is %d", size,
                           CRT_HEADER_BYTES);
  uint32_t version = crt_rd32(p + 8), hbytes = crt_rd32(p + 12);
  if (version < CRT_FORMAT_VERSION_MIN || version > CRT_FORMAT_VERSION)
    return container_error(file, COV_UNSUPPORTED,
                           "artifact format version %u; this runtime reads versions %d to %d (compile the model "
                           "again with the covenant that matches this runtime)",
                           version, CRT_FORMAT_VERSION_MIN, CRT_FORMAT_VERSION);
  uint64_t fbytes = crt_rd64(p + 16), moff = crt_rd64(p + 24), mbytes = crt_rd64(p + 32), mfnv = crt_rd64(p + 40),
           doff = crt_rd64(p + 48), dbytes = crt_rd64(p + 56);
  if (hbytes != CRT_HEADER_BYTES)
    return container_error(file, COV_INVALID_INPUT, "corrupt header: header size %u (expected %d)", hbytes,
                           CRT_HEADER_BYTES);
  if (fbytes != size)
    return container_error(file, COV_INVALID_INPUT, "%s: the header says %" PRIu64 " bytes, the file has %zu",
                           fbytes > size ? "truncated" : "trailing bytes", fbytes, size);
  if (moff != CRT_HEADER_BYTES || mbytes > CRT_MAX_MANIFEST_BYTES || mbytes > size - moff || doff < moff + mbytes ||
      doff % CRT_ALIGN || doff > size || dbytes != size - doff)
    return container_error(file, COV_INVALID_INPUT,
                           "corrupt header: manifest at %" PRIu64 " (%" PRIu64 " bytes), data at %" PRIu64
                           " (%" PRIu64 " bytes) do not lay out a %zu-byte file",
                           moff, mbytes, doff, dbytes, size);
  if (crt_fnv1a64(p + moff, (size_t)mbytes) != mfnv)
    return container_error(file, COV_INVALID_INPUT, "corrupt: the manifest's checksum does not match the header's");
  for (uint64_t k = moff + mbytes; k < doff; k++)
    if (p[k])
      return container_error(file, COV_INVALID_INPUT,
                             "corrupt: byte %" PRIu64 ", padding between the manifest and the data section, is not "
                             "zero",
                             k);
  crt_artifact *a = calloc(1, sizeof *a);
  priv *pv = calloc(1, sizeof *pv);
  uint8_t *copy = malloc(size + 1);
  if (!a || !pv || !copy) {
    free(a), free(pv), free(copy);
    return cov_error(COV_OUT_OF_MEMORY, NULL, "out of memory for %s (%zu bytes)", file, size);
  }
  memcpy(copy, p, size);
  pv->bytes = copy;
  a->priv_ = pv;
  rd r = {a, pv, NULL, NULL, ""};
  char *fname = rd_alloc(&r, strlen(file) + 1);
  /* the manifest as a C string: a copy with its NUL */
  char *text = rd_alloc(&r, (size_t)mbytes + 1);
  if (!fname || !text) {
    crt_artifact_free(a);
    return cov_error(COV_OUT_OF_MEMORY, NULL, "out of memory for %s", file);
  }
  memcpy(fname, file, strlen(file) + 1);
  memcpy(text, copy + moff, (size_t)mbytes);
  r.file = a->file = fname;
  a->version = version;
  a->manifest = text;
  a->manifest_bytes = (size_t)mbytes;
  a->data = copy + doff;
  a->data_bytes = dbytes;
  cov_status st = crt_json_parse(text, (size_t)mbytes, file, &pv->doc);
  if (st) {
    crt_artifact_free(a);
    return cov_status_annotate(st, "manifest: ");
  }
  read_manifest(&r, crt_json_root(pv->doc));
  if (r.err) {
    crt_artifact_free(a);
    return r.err;
  }
  *out = a;
  return NULL;
}

/* Regular files only (common_read_file): a FIFO or a device named as the
 * artifact is refused at once instead of blocking or never ending. */
cov_status crt_artifact_load(const char *path, crt_artifact **out) {
  *out = NULL;
  char *buf = NULL;
  size_t n = 0;
  COV_RETURN_IF_ERROR(common_read_file(path, (size_t)CRT_MAX_BYTES, &buf, &n));
  cov_status st = crt_artifact_read(buf, n, path, out);
  free(buf);
  return st;
}

void crt_artifact_free(crt_artifact *a) {
  if (!a) return;
  priv *pv = a->priv_;
  if (pv) {
    for (size_t i = 0; i < pv->n_allocs; i++) free(pv->allocs[i]);
    free(pv->allocs);
    crt_json_free(pv->doc);
    free(pv->bytes);
    free(pv);
  }
  free(a);
}

const uint8_t *crt_blob_data(const crt_artifact *a, int blob) { return a->data + a->blobs[blob].offset; }

int crt_buffer_root(const crt_artifact *a, int buffer) { return ((const priv *)a->priv_)->root[buffer]; }

uint64_t crt_weight_offset(const crt_artifact *a, int buffer) { return ((const priv *)a->priv_)->weight_off[buffer]; }
