/* common/npy.c: reading and writing numpy .npy files (format 1.0 to 3.0).
 *
 * The header is a Python dict literal; this is a small parser for exactly
 * the literal numpy writes ({'descr': ..., 'fortran_order': ..., 'shape':
 * (...)}), not a Python evaluator. Sizes from the header are checked (dims
 * multiplied with overflow checks, against COV_TENSOR_MAX_BYTES and against
 * the bytes actually in the file) before any data buffer is allocated.
 * bf16 has no numpy dtype: it is stored as '<u2' with the note
 * "covenant:bf16" in a comment after the dict, which numpy ignores. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "covenant/tensor.h"
#include "common/fileio.h"
#include "common/loc.h"

#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "npy.c assumes a little-endian host"
#endif

#define NPY_MAGIC "\x93NUMPY"
#define NPY_MAX_HEADER 65536u
#define NPY_BF16_NOTE "covenant:bf16"

static const struct {
  const char *descr[2]; /* accepted spellings; [0] is what we write */
  cov_dtype dtype;
} k_npy_types[] = {
    {{"<f4", NULL}, COV_F32}, {{"<f2", NULL}, COV_F16},  {{"|i1", "<i1"}, COV_I8},
    {{"|u1", "<u1"}, COV_U8}, {{"<i4", NULL}, COV_I32},  {{"<i8", NULL}, COV_I64},
    {{"|b1", "<b1"}, COV_BOOL}, {{"<f8", NULL}, COV_F64},   {{"<i2", NULL}, COV_I16},
    {{"<u2", NULL}, COV_U16}, {{"<u4", NULL}, COV_U32},  {{"<u8", NULL}, COV_U64},
};
#define NPY_SUPPORTED \
  "<f4, <f2, |i1, |u1, <i4, <i8, |b1, <f8, <i2, <u2, <u4, <u8, and <u2 marked " NPY_BF16_NOTE

/* ---- header dict parser ----------------------------------------------- */

typedef struct hdr {
  const char *p, *end;
  char descr[16];
  int has_descr, has_order, has_shape;
  int fortran;
  int rank;
  int64_t shape[COV_MAX_RANK];
  const char *err; /* what went wrong, static text */
} hdr;

static void skip_ws(hdr *h) {
  while (h->p < h->end && (*h->p == ' ' || *h->p == '\t' || *h->p == '\n' || *h->p == '\r'))
    h->p++;
}

static int accept(hdr *h, char c) {
  skip_ws(h);
  if (h->p < h->end && *h->p == c) {
    h->p++;
    return 1;
  }
  return 0;
}

/* A quoted string into buf; fails on overlong strings. */
static int parse_str(hdr *h, char *buf, size_t size) {
  skip_ws(h);
  if (h->p >= h->end || (*h->p != '\'' && *h->p != '"')) return 0;
  char q = *h->p++;
  size_t n = 0;
  while (h->p < h->end && *h->p != q) {
    if (n + 1 >= size) return 0;
    buf[n++] = *h->p++;
  }
  if (h->p >= h->end) return 0;
  h->p++;
  buf[n] = '\0';
  return 1;
}

static int parse_word(hdr *h, const char *w) {
  skip_ws(h);
  size_t n = strlen(w);
  if ((size_t)(h->end - h->p) >= n && memcmp(h->p, w, n) == 0) {
    h->p += n;
    return 1;
  }
  return 0;
}

/* (d0, d1, ...) with an optional trailing comma; dims are non-negative. */
static int parse_shape(hdr *h) {
  if (!accept(h, '(')) return 0;
  h->rank = 0;
  for (;;) {
    if (accept(h, ')')) return 1;
    skip_ws(h);
    if (h->p >= h->end || *h->p < '0' || *h->p > '9') return 0;
    int64_t v = 0;
    while (h->p < h->end && *h->p >= '0' && *h->p <= '9') {
      if (__builtin_mul_overflow(v, 10, &v) || __builtin_add_overflow(v, *h->p - '0', &v)) {
        h->err = "a dimension in 'shape' is too large";
        return 0;
      }
      h->p++;
    }
    if (h->p < h->end && *h->p == 'L') h->p++; /* Python 2 longs in old files */
    if (h->rank == COV_MAX_RANK) {
      h->err = "'shape' has more dimensions than covenant supports (8)";
      return 0;
    }
    h->shape[h->rank++] = v;
    if (!accept(h, ',')) return accept(h, ')');
  }
}

static int parse_dict(hdr *h) {
  if (!accept(h, '{')) return 0;
  for (;;) {
    if (accept(h, '}')) break;
    char key[32];
    if (!parse_str(h, key, sizeof key) || !accept(h, ':')) return 0;
    if (strcmp(key, "descr") == 0 && !h->has_descr) {
      if (!parse_str(h, h->descr, sizeof h->descr)) {
        h->err = "'descr' is not a simple dtype string (structured dtypes are not supported)";
        return 0;
      }
      h->has_descr = 1;
    } else if (strcmp(key, "fortran_order") == 0 && !h->has_order) {
      if (parse_word(h, "True")) h->fortran = 1;
      else if (!parse_word(h, "False")) return 0;
      h->has_order = 1;
    } else if (strcmp(key, "shape") == 0 && !h->has_shape) {
      if (!parse_shape(h)) return 0;
      h->has_shape = 1;
    } else {
      h->err = "unexpected or repeated key in the header";
      return 0;
    }
    if (!accept(h, ',')) {
      if (!accept(h, '}')) return 0;
      break;
    }
  }
  /* After the dict: spaces, an optional comment, the closing newline. */
  skip_ws(h);
  if (h->p < h->end && *h->p == '#') h->p = h->end;
  return h->p == h->end;
}

/* ---- reading ------------------------------------------------------------ */

static cov_status npy_fail(const char *path, cov_code code, const char *msg, const char *detail) {
  cov_loc loc = {.file = path};
  return cov_error(code, &loc, "%s%s%s", msg, detail ? ": " : "", detail ? detail : "");
}

static cov_status read_exact(FILE *f, void *buf, size_t n, const char *path, const char *what) {
  if (fread(buf, 1, n, f) != n) {
    cov_loc loc = {.file = path};
    return cov_error(COV_INVALID_INPUT, &loc, "truncated .npy file (while reading the %s)",
                     what);
  }
  return NULL;
}

static cov_status npy_read_stream(FILE *f, const char *path, long long file_size,
                                  cov_tensor *out) {
  unsigned char pre[10];
  COV_RETURN_IF_ERROR(read_exact(f, pre, 8, path, "magic string"));
  if (memcmp(pre, NPY_MAGIC, 6) != 0)
    return npy_fail(path, COV_INVALID_INPUT, "not a .npy file (no \\x93NUMPY magic string)",
                    NULL);
  unsigned major = pre[6];
  size_t hlen, pre_len;
  if (major == 1) {
    COV_RETURN_IF_ERROR(read_exact(f, pre + 8, 2, path, "header length"));
    hlen = (size_t)pre[8] | (size_t)pre[9] << 8;
    pre_len = 10;
  } else if (major == 2 || major == 3) {
    unsigned char l[4];
    COV_RETURN_IF_ERROR(read_exact(f, l, 4, path, "header length"));
    hlen = (size_t)l[0] | (size_t)l[1] << 8 | (size_t)l[2] << 16 | (size_t)l[3] << 24;
    pre_len = 12;
  } else {
    cov_loc loc = {.file = path};
    return cov_error(COV_UNSUPPORTED, &loc, ".npy format version %u.%u (expected 1.0 to 3.0)",
                     major, pre[7]);
  }
  if (hlen > NPY_MAX_HEADER)
    return npy_fail(path, COV_OUT_OF_RANGE, "the .npy header is larger than 64 KiB", NULL);
  char *text = malloc(hlen + 1);
  if (!text) return npy_fail(path, COV_OUT_OF_MEMORY, "out of memory", NULL);
  cov_status st = read_exact(f, text, hlen, path, "header");
  if (st) {
    free(text);
    return st;
  }
  text[hlen] = '\0';
  hdr h = {.p = text, .end = text + hlen};
  int ok = memchr(text, '\0', hlen) == NULL && parse_dict(&h);
  int bf16_note = strstr(text, NPY_BF16_NOTE) != NULL;
  free(text);
  if (!ok)
    return npy_fail(path, COV_INVALID_INPUT, "malformed .npy header",
                    h.err ? h.err : "expected {'descr': ..., 'fortran_order': ..., 'shape': (...)}");
  if (!h.has_descr || !h.has_order || !h.has_shape)
    return npy_fail(path, COV_INVALID_INPUT, "malformed .npy header",
                    "it must have the keys 'descr', 'fortran_order' and 'shape'");
  if (h.fortran && h.rank > 1)
    return npy_fail(path, COV_UNSUPPORTED,
                    "Fortran-order arrays are not supported (save with np.ascontiguousarray)",
                    NULL);
  /* bf16 travels as '<u2' with the note; without it '<u2' is u16. */
  cov_dtype dt = strcmp(h.descr, "<u2") == 0 && bf16_note ? COV_BF16 : COV_DTYPE_INVALID;
  for (size_t i = 0; i < sizeof k_npy_types / sizeof *k_npy_types && !dt; i++)
    for (int j = 0; j < 2; j++)
      if (k_npy_types[i].descr[j] && strcmp(k_npy_types[i].descr[j], h.descr) == 0)
        dt = k_npy_types[i].dtype;
  if (!dt) {
    cov_loc loc = {.file = path};
    return cov_error(COV_UNSUPPORTED, &loc, "unsupported .npy dtype '%s' (expected %s)", h.descr,
                     NPY_SUPPORTED);
  }
  cov_status ast = cov_tensor_alloc(out, dt, h.rank, h.shape);
  if (ast) { /* the same error, located at the file */
    cov_loc loc = {.file = path};
    cov_status located = cov_error(cov_status_code(ast), &loc, "%s", cov_status_message(ast));
    cov_status_free(ast);
    return located;
  }
  size_t bytes = (size_t)cov_tensor_numel(out) * cov_dtype_size(dt);
  long long expect = (long long)(pre_len + hlen) + (long long)bytes;
  if (file_size >= 0 && file_size != expect) {
    cov_tensor_release(out);
    cov_loc loc = {.file = path};
    return cov_error(COV_INVALID_INPUT, &loc,
                     ".npy file has %lld bytes but its header describes %lld", file_size,
                     expect);
  }
  st = read_exact(f, out->data, bytes, path, "data");
  if (st) cov_tensor_release(out);
  return st;
}

cov_status cov_npy_read(const char *path, cov_tensor *out) {
  if (!path || !out) return cov_error(COV_INVALID_ARGUMENT, COV_AT_CALL("cov_npy_read"), "NULL argument");
  memset(out, 0, sizeof *out);
  cov_loc loc = {.file = path};
  FILE *f = fopen(path, "rb");
  if (!f)
    return cov_error(errno == ENOENT ? COV_NOT_FOUND : COV_IO_ERROR, &loc, "cannot open: %s",
                     strerror(errno));
  struct stat sb;
  long long size = -1;
  if (fstat(fileno(f), &sb) == 0) {
    if (S_ISDIR(sb.st_mode)) {
      fclose(f);
      return cov_error(COV_IO_ERROR, &loc, "is a directory, expected a .npy file");
    }
    if (S_ISREG(sb.st_mode)) size = (long long)sb.st_size;
  }
  cov_status st = npy_read_stream(f, path, size, out);
  fclose(f);
  return st;
}

/* ---- writing ------------------------------------------------------------ */

cov_status cov_npy_write(const char *path, const cov_tensor *t) {
  if (!path || !t) return cov_error(COV_INVALID_ARGUMENT, COV_AT_CALL("cov_npy_write"), "NULL argument");
  cov_loc loc = {.file = path};
  int64_t n = cov_tensor_numel(t);
  size_t esize = cov_dtype_size(t->dtype);
  if (n < 0 || !esize || (n > 0 && !t->data))
    return cov_error(COV_INVALID_ARGUMENT, &loc, "cannot write an invalid tensor");
  const char *descr = NULL;
  for (size_t i = 0; i < sizeof k_npy_types / sizeof *k_npy_types; i++)
    if (k_npy_types[i].dtype == t->dtype) descr = k_npy_types[i].descr[0];
  if (t->dtype == COV_BF16) descr = "<u2";
  if (!descr) return cov_error(COV_INTERNAL, &loc, "no .npy dtype for %s", cov_dtype_name(t->dtype));

  char dict[512];
  int len = snprintf(dict, sizeof dict, "{'descr': '%s', 'fortran_order': False, 'shape': (",
                     descr);
  for (int i = 0; i < t->rank; i++)
    len += snprintf(dict + len, sizeof dict - (size_t)len, "%s%lld", i ? ", " : "",
                    (long long)t->shape[i]);
  len += snprintf(dict + len, sizeof dict - (size_t)len, "%s), }%s", t->rank == 1 ? "," : "",
                  t->dtype == COV_BF16 ? "  # " NPY_BF16_NOTE : "");
  /* Pad with spaces so the data starts on a 64-byte boundary, as numpy does. */
  size_t total = 10 + (size_t)len + 1;
  size_t pad = (64 - total % 64) % 64;
  size_t hlen = (size_t)len + pad + 1;
  unsigned char pre[10];
  memcpy(pre, NPY_MAGIC, 6);
  pre[6] = 1;
  pre[7] = 0;
  pre[8] = (unsigned char)(hlen & 0xff);
  pre[9] = (unsigned char)(hlen >> 8);

  common_out o;
  COV_RETURN_IF_ERROR(common_out_open(path, &o));
  FILE *f = o.f;
  int bad = fwrite(pre, 1, 10, f) != 10 || fwrite(dict, 1, (size_t)len, f) != (size_t)len;
  for (size_t i = 0; i < pad && !bad; i++) bad = fputc(' ', f) == EOF;
  if (!bad) bad = fputc('\n', f) == EOF;
  size_t bytes = (size_t)n * esize;
  if (!bad && bytes) bad = fwrite(t->data, 1, bytes, f) != bytes;
  if (bad) {
    cov_status st = cov_error(COV_IO_ERROR, &loc, "write failed: %s", strerror(errno));
    common_out_abort(&o);
    return st;
  }
  return common_out_commit(&o);
}
