/* tests/unit/test_tensor.c: f16/bf16 conversions (exhaustive where the
 * space allows), checked tensor sizes, and .npy files: round trips of every
 * dtype and rank, and malformed files that must be refused cleanly.
 *
 * Run as `test_tensor DIR` for the tests; `test_tensor --write DIR` and
 * `test_tensor --read FILE` serve npy_numpy.py, which checks the same files
 * against numpy. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "covenant/tensor.h"
#include "tests/check.h"

static float bits_f(uint32_t u) {
  float f;
  memcpy(&f, &u, 4);
  return f;
}

static uint32_t f_bits(float f) {
  uint32_t u;
  memcpy(&u, &f, 4);
  return u;
}

/* ---- f16 ------------------------------------------------------------------ */

/* Every f16 pattern widens exactly and narrows back to itself. */
static void test_f16_roundtrip_all(void) {
  int bad = 0;
  for (uint32_t h = 0; h < 65536; h++) {
    float f = cov_f16_to_f32((uint16_t)h);
    int is_nan = (h & 0x7c00) == 0x7c00 && (h & 0x3ff);
    if (is_nan) {
      bad += !isnan(f) || (cov_f32_to_f16(f) & 0x7c00) != 0x7c00 || !(cov_f32_to_f16(f) & 0x3ff);
      continue;
    }
    bad += cov_f32_to_f16(f) != h;
  }
  CHECK(bad == 0);
}

/* The reference rounding: the nearest f16 by exact comparison in double,
 * ties to the even pattern. Independent of half.c's bit manipulation. */
static uint16_t f16_nearest(float f) {
  if (isnan(f)) return 0x7e00;
  uint16_t sign = signbit(f) ? 0x8000 : 0;
  double a = fabs((double)f);
  if (a >= 65520.0) return sign | 0x7c00; /* halfway to the next binade rounds up to inf */
  uint16_t lo = 0, hi = 0x7bff;         /* largest finite */
  while (lo < hi) {                      /* largest pattern <= a */
    uint16_t mid = (uint16_t)((lo + hi + 1) / 2);
    if (cov_f16_to_f32(mid) <= a) lo = mid;
    else hi = (uint16_t)(mid - 1);
  }
  double below = cov_f16_to_f32(lo);
  if (below == a || lo == 0x7bff) return sign | lo;
  double above = cov_f16_to_f32((uint16_t)(lo + 1));
  if (a - below < above - a) return sign | lo;
  if (a - below > above - a) return sign | (uint16_t)(lo + 1);
  return sign | ((lo & 1) ? (uint16_t)(lo + 1) : lo);
}

static void test_f16_rounding(void) {
  int bad = 0;
  uint64_t s = 88172645463325252ull;
  /* every f32 whose exponent lands in or near the f16 range, sampled */
  for (int i = 0; i < 400000; i++) {
    s ^= s << 13, s ^= s >> 7, s ^= s << 17;
    uint32_t u = (uint32_t)s;
    uint32_t e = 100 + (uint32_t)((s >> 40) % 50); /* 2^-27 .. 2^22 */
    u = (u & 0x807fffffu) | (e << 23);
    if (i % 4 == 0) u &= ~0x1fffu, u |= 0x1000u; /* exact ties */
    float f = bits_f(u);
    if (cov_f32_to_f16(f) != f16_nearest(f)) bad++;
  }
  CHECK(bad == 0);
  CHECK(cov_f32_to_f16(65504.0f) == 0x7bff);
  CHECK(cov_f32_to_f16(65519.99f) == 0x7bff);
  CHECK(cov_f32_to_f16(65520.0f) == 0x7c00);
  CHECK(cov_f32_to_f16(INFINITY) == 0x7c00);
  CHECK(cov_f32_to_f16(-INFINITY) == 0xfc00);
  CHECK(cov_f32_to_f16(-0.0f) == 0x8000);
  CHECK(cov_f32_to_f16(5.9604645e-8f) == 0x0001);   /* smallest subnormal */
  CHECK(cov_f32_to_f16(2.9802322e-8f) == 0x0000);   /* half of it: tie to even 0 */
  CHECK(cov_f32_to_f16(2.9802326e-8f) == 0x0001);   /* just above half */
  CHECK(cov_f32_to_f16(1.0f + 1.0f / 2048) == 0x3c00); /* tie, even stays */
  CHECK(cov_f32_to_f16(1.0f + 3.0f / 2048) == 0x3c02); /* tie, odd rounds up */
  CHECK(isnan(cov_f16_to_f32(cov_f32_to_f16(NAN))));
}

/* ---- bf16 ----------------------------------------------------------------- */

static void test_bf16(void) {
  int bad = 0;
  for (uint32_t h = 0; h < 65536; h++) {
    float f = cov_bf16_to_f32((uint16_t)h);
    if (isnan(f)) continue;
    bad += cov_f32_to_bf16(f) != h;
    bad += f_bits(f) != h << 16;
  }
  CHECK(bad == 0);
  /* rounding, checked against exact neighbours */
  bad = 0;
  uint64_t s = 0x2545F4914F6CDD1Dull;
  for (int i = 0; i < 200000; i++) {
    s ^= s << 13, s ^= s >> 7, s ^= s << 17;
    float f = bits_f((uint32_t)s & 0x7effffffu);
    uint16_t r = cov_f32_to_bf16(f);
    double lo = cov_bf16_to_f32((uint16_t)(f_bits(f) >> 16));
    double hi = cov_bf16_to_f32((uint16_t)((f_bits(f) >> 16) + 1));
    double d = f, got = cov_bf16_to_f32(r);
    double best = (d - lo < hi - d) ? lo : (d - lo > hi - d) ? hi
                  : (((f_bits(f) >> 16) & 1) ? hi : lo);
    bad += got != best;
  }
  CHECK(bad == 0);
  CHECK(isnan(cov_bf16_to_f32(cov_f32_to_bf16(NAN))));
  CHECK(cov_f32_to_bf16(INFINITY) == 0x7f80);
  CHECK(cov_f32_to_bf16(3.4e38f) == 0x7f80); /* rounds past the largest finite */
}

/* ---- tensors ---------------------------------------------------------------- */

static void test_tensor_sizes(void) {
  cov_tensor t;
  int64_t shape[8] = {2, 3, 4};
  CHECK(cov_tensor_alloc(&t, COV_F32, 3, shape) == NULL);
  CHECK(cov_tensor_numel(&t) == 24 && t.data);
  CHECK(((float *)t.data)[23] == 0.0f);
  cov_tensor_release(&t);
  CHECK(t.data == NULL);
  CHECK(cov_tensor_alloc(&t, COV_F32, 0, NULL) == NULL && cov_tensor_numel(&t) == 1);
  cov_tensor_release(&t);
  int64_t empty[2] = {0, 5};
  CHECK(cov_tensor_alloc(&t, COV_I8, 2, empty) == NULL && cov_tensor_numel(&t) == 0 && t.data);
  cov_tensor_release(&t);

  int64_t huge[3] = {1 << 20, 1 << 20, 1 << 20};
  cov_status st = cov_tensor_alloc(&t, COV_F32, 3, huge);
  CHECK(cov_status_code(st) == COV_OUT_OF_RANGE && t.data == NULL);
  cov_status_free(st);
  int64_t overflow[3] = {INT64_MAX, INT64_MAX, 2};
  st = cov_tensor_alloc(&t, COV_I8, 3, overflow);
  CHECK(cov_status_code(st) == COV_OUT_OF_RANGE);
  cov_status_free(st);
  int64_t just[1] = {(int64_t)1 << 30}; /* exactly 4 GiB of f32 is allowed... */
  int64_t over[1] = {((int64_t)1 << 30) + 1}; /* ...one more element is not */
  (void)just;
  st = cov_tensor_alloc(&t, COV_F32, 1, over);
  CHECK(cov_status_code(st) == COV_OUT_OF_RANGE);
  cov_status_free(st);
  int64_t neg[1] = {-1};
  st = cov_tensor_alloc(&t, COV_F32, 1, neg);
  CHECK(cov_status_code(st) == COV_INVALID_ARGUMENT);
  cov_status_free(st);
  st = cov_tensor_alloc(&t, COV_F32, 9, shape);
  CHECK(cov_status_code(st) == COV_OUT_OF_RANGE);
  cov_status_free(st);
  cov_tensor bad = {.dtype = COV_F32, .rank = 2, .shape = {INT64_MAX, 4}};
  CHECK(cov_tensor_numel(&bad) == -1);
}

/* ---- .npy ------------------------------------------------------------------- */

static char g_dir[4096];

static const char *tmp_path(const char *name) {
  static char buf[4200];
  snprintf(buf, sizeof buf, "%s/%s", g_dir, name);
  return buf;
}

static void write_bytes(const char *path, const void *data, size_t n) {
  FILE *f = fopen(path, "wb");
  if (!f) return;
  fwrite(data, 1, n, f);
  fclose(f);
}

/* Fills a tensor with a recognisable pattern. */
static void fill(cov_tensor *t) {
  int64_t n = cov_tensor_numel(t);
  unsigned char *d = t->data;
  size_t es = cov_dtype_size(t->dtype);
  for (int64_t i = 0; i < n * (int64_t)es; i++) d[i] = (unsigned char)(i * 37 + 11);
  if (t->dtype == COV_BOOL)
    for (int64_t i = 0; i < n; i++) d[i] &= 1;
}

static void test_npy_roundtrip(void) {
  cov_dtype types[] = {COV_F32, COV_F16, COV_BF16, COV_I8, COV_U8, COV_I32, COV_I64, COV_BOOL};
  int64_t shapes[][3] = {{7, 0, 0}, {3, 5, 0}, {2, 3, 4}};
  for (size_t ti = 0; ti < sizeof types / sizeof *types; ti++) {
    for (int rank = 0; rank <= 3; rank++) {
      cov_tensor t, u;
      const int64_t *shape = rank ? shapes[rank - 1] : NULL;
      if (cov_tensor_alloc(&t, types[ti], rank, shape)) {
        CHECK(0);
        continue;
      }
      fill(&t);
      const char *p = tmp_path("rt.npy");
      cov_status st = cov_npy_write(p, &t);
      CHECK(st == NULL);
      cov_status_free(st);
      st = cov_npy_read(p, &u);
      CHECK(st == NULL);
      if (!st) {
        CHECK(u.dtype == t.dtype && u.rank == t.rank);
        CHECK(memcmp(u.shape, t.shape, sizeof(int64_t) * (size_t)rank) == 0);
        CHECK(memcmp(u.data, t.data, (size_t)cov_tensor_numel(&t) * cov_dtype_size(t.dtype)) == 0);
        cov_tensor_release(&u);
      }
      cov_status_free(st);
      cov_tensor_release(&t);
    }
  }
  /* the data start on a 64-byte boundary, as numpy writes them */
  cov_tensor t;
  int64_t s1[1] = {3};
  cov_tensor_alloc(&t, COV_F32, 1, s1);
  cov_status_free(cov_npy_write(tmp_path("align.npy"), &t));
  cov_tensor_release(&t);
  FILE *f = fopen(tmp_path("align.npy"), "rb");
  CHECK(f != NULL);
  if (f) {
    fseek(f, 0, SEEK_END);
    CHECK(ftell(f) % 64 == 12);
    fclose(f);
  }
}

/* A header as numpy would write it, with the given dict text. */
static size_t make_npy(unsigned char *buf, int major, const char *dict, size_t data_bytes) {
  size_t pre = major == 1 ? 10 : 12;
  size_t len = strlen(dict);
  size_t total = pre + len + 1;
  size_t pad = (64 - total % 64) % 64;
  size_t hlen = len + pad + 1;
  memcpy(buf, "\x93NUMPY", 6);
  buf[6] = (unsigned char)major;
  buf[7] = 0;
  if (major == 1) {
    buf[8] = (unsigned char)hlen;
    buf[9] = (unsigned char)(hlen >> 8);
  } else {
    buf[8] = (unsigned char)hlen;
    buf[9] = (unsigned char)(hlen >> 8);
    buf[10] = buf[11] = 0;
  }
  memcpy(buf + pre, dict, len);
  memset(buf + pre + len, ' ', pad);
  buf[pre + len + pad] = '\n';
  memset(buf + pre + hlen, 0x3f, data_bytes);
  return pre + hlen + data_bytes;
}

static void expect_read(const char *label, const unsigned char *bytes, size_t n, cov_code code,
                        const char *fragment) {
  const char *p = tmp_path("bad.npy");
  write_bytes(p, bytes, n);
  cov_tensor t;
  cov_status st = cov_npy_read(p, &t);
  int ok = code == COV_OK
               ? st == NULL && t.data != NULL
               : cov_status_code(st) == code &&
                     (!fragment || strstr(cov_status_message(st), fragment) != NULL) &&
                     cov_status_loc(st).file && strcmp(cov_status_loc(st).file, p) == 0 &&
                     t.data == NULL;
  if (!ok)
    fprintf(stderr, "%s: got %s: %s\n", label, cov_code_name(cov_status_code(st)),
            cov_status_message(st));
  CHECK(ok);
  cov_status_free(st);
  if (!st) cov_tensor_release(&t);
}

/* Whole files from a header dictionary (format version `major`) and
 * data_bytes bytes of data: read, or refused with `code` and `fragment`
 * in the message. */
static const struct npy_case {
  const char *label;
  int major;
  const char *dict;
  size_t data_bytes;
  cov_code code;
  const char *fragment;
} k_npy_cases[] = {
    {"good", 1, "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }", 24, COV_OK, NULL},
    {"version 2", 2, "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }", 24, COV_OK, NULL},
    {"version 3", 3, "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }", 24, COV_OK, NULL},
    {"version 4", 4, "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }", 24, COV_UNSUPPORTED, "version"},
    {"big endian", 1, "{'descr': '>f4', 'fortran_order': False, 'shape': (2, 3), }", 24, COV_UNSUPPORTED, "'>f4'"},
    {"complex64", 1, "{'descr': '<c8', 'fortran_order': False, 'shape': (2,), }", 16, COV_UNSUPPORTED, "'<c8'"},
    {"float64", 1, "{'descr': '<f8', 'fortran_order': False, 'shape': (2,), }", 16, COV_OK, NULL},
    {"uint16 without the bf16 note", 1, "{'descr': '<u2', 'fortran_order': False, 'shape': (2,), }", 4, COV_OK, NULL},
    {"bf16 note", 1, "{'descr': '<u2', 'fortran_order': False, 'shape': (2,), } # covenant:bf16", 4, COV_OK, NULL},
    {"fortran order", 1, "{'descr': '<f4', 'fortran_order': True, 'shape': (2, 3), }", 24, COV_UNSUPPORTED, "Fortran"},
    {"fortran order rank 1 is C order", 1,
     "{'descr': '<f4', 'fortran_order': True, 'shape': (6,), }", 24, COV_OK, NULL},
    {"dims overflow", 1,
     "{'descr': '<f4', 'fortran_order': False, 'shape': (4294967296, 4294967296), }", 0, COV_OUT_OF_RANGE, NULL},
    {"dim too large", 1,
     "{'descr': '<f4', 'fortran_order': False, 'shape': (99999999999999999999,), }", 0, COV_INVALID_INPUT, "too large"},
    {"rank 9", 1,
     "{'descr': '<f4', 'fortran_order': False, 'shape': (1,1,1,1,1,1,1,1,1), }", 4, COV_INVALID_INPUT,
     "more dimensions"},
    {"missing key", 1, "{'descr': '<f4', 'shape': (2,), }", 8, COV_INVALID_INPUT, "keys"},
    {"extra key", 1,
     "{'descr': '<f4', 'fortran_order': False, 'shape': (2,), 'x': 1}", 8, COV_INVALID_INPUT, "unexpected"},
    {"structured dtype", 1,
     "{'descr': [('a', '<f4')], 'fortran_order': False, 'shape': (2,), }", 8, COV_INVALID_INPUT, "structured"},
    {"unclosed dict", 1, "{'descr': '<f4', 'fortran_order': False, 'shape': (2,) ", 8, COV_INVALID_INPUT, "malformed"},
    {"negative dim", 1,
     "{'descr': '<f4', 'fortran_order': False, 'shape': (-2,), }", 8, COV_INVALID_INPUT, "malformed"},
};

static void test_npy_malformed(void) {
  unsigned char buf[1024];
  size_t n;
  for (size_t i = 0; i < sizeof k_npy_cases / sizeof *k_npy_cases; i++) {
    const struct npy_case *c = &k_npy_cases[i];
    n = make_npy(buf, c->major, c->dict, c->data_bytes);
    expect_read(c->label, buf, n, c->code, c->fragment);
  }
  /* the file cut short, or longer than its header says, or no file at all */
  const char *good = "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }";
  n = make_npy(buf, 1, good, 24);
  expect_read("truncated data", buf, n - 1, COV_INVALID_INPUT, "header describes");
  expect_read("trailing data", buf, make_npy(buf, 1, good, 25), COV_INVALID_INPUT,
              "header describes");
  expect_read("truncated header", buf, 30, COV_INVALID_INPUT, "truncated");
  expect_read("empty file", buf, 0, COV_INVALID_INPUT, "truncated");
  memcpy(buf, "\x93NUMPZ", 6);
  expect_read("bad magic", buf, 64, COV_INVALID_INPUT, "magic");
  cov_tensor t;
  cov_status st = cov_npy_read(tmp_path("does-not-exist.npy"), &t);
  CHECK(cov_status_code(st) == COV_NOT_FOUND);
  cov_status_free(st);
  st = cov_npy_read(g_dir, &t);
  CHECK(cov_status_code(st) == COV_IO_ERROR);
  cov_status_free(st);
  int64_t s1[1] = {2};
  cov_tensor_alloc(&t, COV_F32, 1, s1);
  st = cov_npy_write("/nonexistent-dir/x.npy", &t);
  CHECK(cov_status_code(st) == COV_IO_ERROR);
  cov_status_free(st);
  cov_tensor_release(&t);
}

/* ---- helpers for npy_numpy.py ----------------------------------------------- */

static int write_samples(const char *dir) {
  cov_dtype types[] = {COV_F32, COV_F16, COV_BF16, COV_I8, COV_U8, COV_I32, COV_I64, COV_BOOL};
  int64_t shape[2] = {2, 3};
  for (size_t i = 0; i < sizeof types / sizeof *types; i++) {
    cov_tensor t;
    if (cov_tensor_alloc(&t, types[i], 2, shape)) return 1;
    for (int k = 0; k < 6; k++) {
      float v = (float)k - 2.5f;
      unsigned char *d = t.data;
      switch (types[i]) {
        case COV_F32: memcpy(d + 4 * k, &v, 4); break;
        case COV_F16: { uint16_t h = cov_f32_to_f16(v); memcpy(d + 2 * k, &h, 2); break; }
        case COV_BF16: { uint16_t h = cov_f32_to_bf16(v); memcpy(d + 2 * k, &h, 2); break; }
        case COV_I8: d[k] = (unsigned char)(int8_t)(k - 3); break;
        case COV_U8: d[k] = (unsigned char)(k * 50); break;
        case COV_I32: { int32_t x = (k - 3) * 100000; memcpy(d + 4 * k, &x, 4); break; }
        case COV_I64: { int64_t x = ((int64_t)k - 3) * ((int64_t)1 << 40); memcpy(d + 8 * k, &x, 8); break; }
        case COV_BOOL: d[k] = (unsigned char)(k & 1); break;
        default: break;
      }
    }
    char path[4200];
    snprintf(path, sizeof path, "%s/%s.npy", dir, cov_dtype_name(types[i]));
    cov_status st = cov_npy_write(path, &t);
    cov_tensor_release(&t);
    if (st) {
      cov_status_print(stderr, st, 0);
      cov_status_free(st);
      return 1;
    }
  }
  return 0;
}

/* Prints dtype, shape and values, one per line, for the Python side. */
static int read_and_dump(const char *path) {
  cov_tensor t;
  cov_status st = cov_npy_read(path, &t);
  if (st) {
    cov_status_print(stderr, st, 0);
    cov_status_free(st);
    return 1;
  }
  printf("%s", cov_dtype_name(t.dtype));
  for (int i = 0; i < t.rank; i++) printf(" %lld", (long long)t.shape[i]);
  printf("\n");
  int64_t n = cov_tensor_numel(&t);
  const unsigned char *d = t.data;
  for (int64_t k = 0; k < n; k++) {
    double v = 0;
    switch (t.dtype) {
      case COV_F32: { float f; memcpy(&f, d + 4 * k, 4); v = f; break; }
      case COV_F16: { uint16_t h; memcpy(&h, d + 2 * k, 2); v = cov_f16_to_f32(h); break; }
      case COV_BF16: { uint16_t h; memcpy(&h, d + 2 * k, 2); v = cov_bf16_to_f32(h); break; }
      case COV_I8: v = (int8_t)d[k]; break;
      case COV_U8:
      case COV_BOOL: v = d[k]; break;
      case COV_I32: { int32_t x; memcpy(&x, d + 4 * k, 4); v = x; break; }
      case COV_I64: { int64_t x; memcpy(&x, d + 8 * k, 8); v = (double)x; break; }
      default: break;
    }
    printf("%.17g\n", v);
  }
  cov_tensor_release(&t);
  return 0;
}

int main(int argc, char **argv) {
  if (argc == 3 && strcmp(argv[1], "--write") == 0) return write_samples(argv[2]);
  if (argc == 3 && strcmp(argv[1], "--read") == 0) return read_and_dump(argv[2]);
  snprintf(g_dir, sizeof g_dir, "%s", argc > 1 ? argv[1] : ".");
  test_f16_roundtrip_all();
  test_f16_rounding();
  test_bf16();
  test_tensor_sizes();
  test_npy_roundtrip();
  test_npy_malformed();
  return check_summary();
}
